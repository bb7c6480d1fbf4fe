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

from tools.nbgrader_course import gives_nothing_away, protected_regions, public_lines
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


def visible_text(path):
    """A file's text as a reader or a search would meet it, whitespace squashed."""
    raw = path.read_text(errors="replace")
    if path.suffix == ".ipynb":
        raw = "\n".join(cell.source for cell in nbformat.reads(raw, as_version=4).cells)
    elif path.suffix == ".html":
        parser = _Text()
        parser.feed(raw)
        raw = html.unescape("".join(parser.parts))
    return squash(raw)


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
    passages = []
    for kind, lines in protected_regions(source):
        if kind == "SOLUTION":
            passages.append(" ".join(squash(line) for line in lines))
            continue
        for start in range(max(1, len(lines) - width + 1)):
            run = lines[start:start + width]
            if not all(gives_nothing_away(line, public) for line in run):
                passages.append(" ".join(squash(line) for line in run))
    return passages


@pytest.mark.parametrize("assignment", assignments())
def test_no_page_contains_solution_code_or_hidden_tests(book, assignment):
    source = SOLUTIONS / assignment / f"{assignment}.ipynb"
    passages = telling_passages(source)
    assert passages
    for path, text in site_texts():
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, path
        leaked = [p for p in passages if p in text]
        assert not leaked, f"{path.relative_to(BUILD_HTML)} shows text from solutions/{assignment}: {leaked[:2]}"


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
