"""Promise: the book builds cleanly, and nothing an instructor keeps from
students reaches the site.

The site is built once per test session with the same command as `make book`
(warnings are errors), from the chapters' committed outputs, which nbval proves
are what executing them produces: the `book` fixture of conftest.py, shared
with the browser tests of test_site_works_offline_in_a_browser.py. Then every file of
_build/html is searched for solution code and hidden-test text from every
notebook in solutions/.
"""

import html
import re
from html.parser import HTMLParser

import nbformat
import pytest
import yaml

from tools.assignments.leak_checks import gives_nothing_away, protected_regions, public_lines, public_text
from tools.paths import BUILD_HTML, ROOT, SOLUTIONS, assignments


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts = []

    def handle_data(self, data):
        self.parts.append(data)


def squash(text):
    return re.sub(r"\s+", " ", text).strip()


def site_texts():
    """(path, text) for every text file of the site; HTML reduced to its visible text."""
    for path in sorted(BUILD_HTML.rglob("*")):
        if not path.is_file() or path.suffix not in {".html", ".ipynb", ".txt", ".js", ".md", ".py", ".json"}:
            continue
        yield path, visible_text(path)


def visible_text(path, squashed=True):
    """A file's text as a reader or a search would meet it, whitespace squashed
    (or, with ``squashed=False``, with its line breaks, for ``code_tokens``)."""
    raw = path.read_text(errors="replace")
    if path.suffix == ".ipynb":
        raw = "\n".join(cell.source for cell in nbformat.reads(raw, as_version=4).cells)
    elif path.suffix == ".html":
        parser = _Text()
        parser.feed(raw)
        raw = html.unescape("".join(parser.parts))
    return squash(raw) if squashed else raw


# Code as a stream of tokens: names, numbers, operators and brackets, one by
# one. Line breaks, indentation, spaces and comments are not tokens, so a copy
# re-wrapped inside its parentheses, re-indented or re-commented reads the same.
TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\*\*=?|//=?|->|[-+*/%@<>=!&|^]=|<<|>>|\S")
COMMENT = re.compile(r"#[^\n]*")
# A run of this many tokens (two or three lines of code) shared with a page leaks
# an answer; a whole region shorter than SHORTEST (`return softmax(S)`) tells nothing.
WINDOW = 40
SHORTEST = 12
# Files in which a page can show code to a reader (scripts and data files of the
# site's libraries are left out: tens of MB of tokens, and no page shows them).
CODE_SUFFIXES = {".html", ".ipynb", ".py", ".md", ".txt"}


def code_tokens(text):
    """``text`` as code tokens, comments left out (in prose, what follows a "#"
    on its line is left out too: that only compares less)."""
    return TOKEN.findall(COMMENT.sub(" ", text))


def token_runs(tokens):
    """Every run of WINDOW tokens of ``tokens``, or all of them if fewer (None if fewer than SHORTEST)."""
    if len(tokens) < SHORTEST:
        return []
    if len(tokens) <= WINDOW:
        return [tuple(tokens)]
    return [tuple(tokens[i:i + WINDOW]) for i in range(len(tokens) - WINDOW + 1)]


class SiteCode:
    """Every run of tokens a page of the site shows, to look a run up in one step."""

    def __init__(self, texts):
        self.windows = {}   # hash of a WINDOW-token run -> the first file that shows it
        self.streams = []   # (path, "\x00"-joined tokens) for runs shorter than WINDOW
        for path, text in texts:
            tokens = code_tokens(text)
            for i in range(len(tokens) - WINDOW + 1):
                self.windows.setdefault(hash(tuple(tokens[i:i + WINDOW])), path)
            self.streams.append((path, "\x00" + "\x00".join(tokens) + "\x00"))

    def shows(self, run):
        """The file that shows ``run`` of tokens, or None."""
        if len(run) == WINDOW:
            return self.windows.get(hash(run))
        joined = "\x00" + "\x00".join(run) + "\x00"
        return next((path for path, stream in self.streams if joined in stream), None)


_SITE = {}


def site():
    """(texts, SiteCode) of the built site, read once per session: ``texts`` is site_texts()."""
    if "texts" not in _SITE:
        _SITE["texts"] = list(site_texts())
        _SITE["code"] = SiteCode((path, visible_text(path, squashed=False))
                                 for path, _ in _SITE["texts"] if path.suffix in CODE_SUFFIXES)
    return _SITE["texts"], _SITE["code"]


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [entry["file"] for entry in part.get("chapters", [])]
    return files


SPHINX_WARNING = re.compile(r"WARNING: .*")


def test_book_builds_without_warnings(book):
    # The build runs with --warningiserror; this also catches a warning that
    # --keep-going let through. (A kernel's own log line "[IPKernelApp] WARNING |"
    # is not a warning about the book.)
    warnings = SPHINX_WARNING.findall(book.stdout + book.stderr)
    assert not warnings, warnings[:5]


def test_every_toc_page_is_built(book):
    missing = [f for f in toc_files() if not (BUILD_HTML / f"{f}.html").is_file()]
    assert not missing


def test_every_exercise_is_a_page(book):
    for assignment in assignments():
        assert f"exercises/{assignment}/{assignment}" in toc_files()


def test_no_page_comes_from_solutions(book):
    assert not (BUILD_HTML / "solutions").exists()
    assert not list(BUILD_HTML.rglob("*solutions*"))


def telling_passages(source, width=3):
    """What would give a student's work away if a page showed it.

    For a hidden-test region, every run of `width` consecutive lines; for a
    solution region, the whole region. Single lines are not telling (a chapter
    may well teach `e / e.sum(...)`), and a chapter that builds the same layers
    as an exercise shares some of its lines, but a page that shows a whole
    answer, or three lines of a hidden test, leaks. A run whose every line
    gives nothing away (imports, lines the student's notebook shows too: a
    hidden test repeats the visible one's set-up) is not telling.
    """
    public = public_lines(source)
    shown = squash(public_text(source, cell_types=("code",)))  # what the student sees, however it is wrapped
    passages = []
    for kind, lines in protected_regions(source):
        if kind == "SOLUTION":
            passages.append(" ".join(squash(line) for line in lines))
            continue
        for start in range(max(1, len(lines) - width + 1)):
            run = lines[start:start + width]
            if not all(gives_nothing_away(line, public) for line in run):
                passage = " ".join(squash(line) for line in run)
                if passage not in shown:
                    passages.append(passage)
    return passages


def telling_token_runs(source):
    """The same, token for token (``code_tokens``): every run of WINDOW tokens of
    a solution region, and of each stretch of a hidden-test region whose lines
    give something away; a shorter region or stretch whole."""
    public = public_lines(source)
    # What the student's own notebook shows gives nothing away either: a hidden
    # test repeats its visible test's set-up and messages, wrapped differently.
    shown = SiteCode([(source, public_text(source, cell_types=("code",)))])
    runs = []
    for kind, lines in protected_regions(source):
        stretches = [lines] if kind == "SOLUTION" else [[]]
        if kind != "SOLUTION":
            for line in lines:
                if gives_nothing_away(line, public):
                    stretches.append([])
                else:
                    stretches[-1].append(line)
        for stretch in stretches:
            runs += [run for run in token_runs(code_tokens("\n".join(stretch))) if shown.shows(run) is None]
    return runs


@pytest.mark.parametrize("assignment", assignments())
def test_no_page_contains_solution_code_or_hidden_tests(book, assignment):
    source = SOLUTIONS / assignment / f"{assignment}.ipynb"
    passages = telling_passages(source)
    assert passages
    texts, code = site()
    for path, text in texts:
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, path
        leaked = [p for p in passages if p in text]
        assert not leaked, f"{path.relative_to(BUILD_HTML)} shows text from solutions/{assignment}: {leaked[:2]}"
    runs = telling_token_runs(source)
    assert runs
    for run in runs:
        path = code.shows(run)
        assert path is None, (f"{path.relative_to(BUILD_HTML)} shows code from solutions/{assignment}, token for "
                              f"token (line breaks, spaces and comments aside): {' '.join(run)}")


def test_exercise_pages_link_only_to_student_notebooks(book):
    for assignment in assignments():
        page = (BUILD_HTML / "exercises" / assignment / f"{assignment}.html").read_text()
        assert "solutions/" not in page
        assert f"exercises/{assignment}/{assignment}.ipynb" in page  # launch and download buttons


@pytest.mark.parametrize("assignment", assignments())
def test_leak_check_catches_a_published_solution(tmp_path, assignment):
    """The check above can fail: a page showing the solution notebook is caught."""
    source = SOLUTIONS / assignment / f"{assignment}.ipynb"
    code = "\n".join(c.source for c in nbformat.read(source, as_version=4).cells if c.cell_type == "code")
    page = tmp_path / "page.html"
    page.write_text("<html><body><pre>" + html.escape(code).replace("_", "<span>_</span>", 3) + "</pre></body></html>")
    text = visible_text(page)
    for kind, lines in protected_regions(source):
        assert any(p in text for p in telling_passages(source)), kind


@pytest.mark.parametrize("assignment", assignments())
def test_token_check_catches_a_rewrapped_solution(tmp_path, assignment):
    """The token check above can fail: a page showing a solution re-wrapped
    inside its brackets, re-indented and with other comments is caught, while
    the squashed-text check misses it."""
    source = SOLUTIONS / assignment / f"{assignment}.ipynb"
    regions = [lines for kind, lines in protected_regions(source)
               if kind == "SOLUTION" and len(code_tokens("\n".join(lines))) >= SHORTEST]
    assert regions
    for lines in regions:
        code = COMMENT.sub("# in other words", "\n".join(lines))
        code = re.sub(r"([(,\[])[ \t]*", "\\1\n            ", code)
        page = tmp_path / "page.html"
        page.write_text("<html><body><pre>" + html.escape(code) + "</pre></body></html>")
        shown = SiteCode([(page, visible_text(page, squashed=False))])
        assert any(shown.shows(run) for run in token_runs(code_tokens("\n".join(lines)))), lines[:3]
