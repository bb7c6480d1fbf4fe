"""Feedback that tells students what failed without showing the hidden tests.

Stock ``nbgrader generate_feedback`` renders the autograded notebook, in which
the hidden tests are back in place (nbgrader issue 917): the feedback shows
their code, and the tracebacks of failing tests quote it again. The
``HideHiddenTests`` preprocessor, which nbgrader_config.py adds to
``GenerateFeedback.preprocessors`` after ``GetGrades``, changes only what the
student receives (the autograded notebook and the gradebook are untouched):

- in every code cell, the region between ``### BEGIN HIDDEN TESTS`` and
  ``### END HIDDEN TESTS`` becomes a one-line note;
- each test cell starts its output with its result — passed or failed, and the
  points — and an error keeps only its type and message (the assertion
  message), not the traceback, which would quote the test's code;
- any line of hidden-test code that still turns up in an output (a student's
  function can print its caller's source) is blanked out.
"""

from __future__ import annotations

import re

from jinja2 import BytecodeCache
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool, Integer, Unicode

NOTE = "# (Hidden tests ran here. Their code is not shown; their result is below.)"
REDACTED = "[hidden test code]"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def split_hidden(source: str, begin: str, end: str):
    """``(shown, hidden)``: the source without its hidden-test regions (each
    replaced by NOTE, indented like its marker), and the hidden lines."""
    shown, hidden, inside = [], [], False
    for line in source.splitlines():
        if not inside and begin in line:
            inside = True
            shown.append(line[: len(line) - len(line.lstrip())] + NOTE)
        elif inside and end in line:
            inside = False
        elif inside:
            hidden.append(line)
        else:
            shown.append(line)
    return "\n".join(shown), hidden


def _score_text(value):
    return f"{float(value or 0):g}"


class HideHiddenTests(Preprocessor):
    """Remove hidden tests, and what would reveal them, from the feedback."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled.").tag(config=True)

    begin_delimiter = Unicode("BEGIN HIDDEN TESTS", help="Marks the start of hidden tests.").tag(config=True)
    end_delimiter = Unicode("END HIDDEN TESTS", help="Marks the end of hidden tests.").tag(config=True)
    min_redacted_length = Integer(
        8, help="Hidden lines at least this long are blanked out wherever they appear in an output."
    ).tag(config=True)

    def preprocess(self, nb, resources):
        hidden = set()
        public = set()
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            cell.source, lines = split_hidden(cell.source, self.begin_delimiter, self.end_delimiter)
            hidden.update(line.strip() for line in lines if line.strip())
            public.update(line.strip() for line in cell.source.splitlines())
        # A line the student can see anyway (an import, a helper call) gives
        # nothing away, nor does one without a letter or digit (a lone "}").
        secret = [line for line in hidden - public if re.search(r"\w", line)]
        clean = Redactor(secret, self.min_redacted_length)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                cell.outputs = self._test_outputs(cell, meta)
            for output in cell.outputs:
                _redact(output, clean)
        return nb, resources

    def _test_outputs(self, cell, meta):
        """A test cell's outputs: its result, its printed output, its error message."""
        points = meta.get("points", 0)
        score = meta.get("score")
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if score is None:
            verdict = f"Needs a grader's review (worth {_score_text(points)} points)."
        elif errors or float(score) < float(points):
            verdict = f"Failed: {_score_text(score)} of {_score_text(points)} points."
        else:
            verdict = f"Passed: {_score_text(score)} of {_score_text(points)} points."
        outputs = [NotebookNode(output_type="stream", name="stdout", text=verdict + "\n")]
        for output in cell.outputs:
            if output.output_type == "error":
                message = f"{output.ename}: {output.evalue}" if output.evalue else output.ename
                outputs.append(
                    NotebookNode(output_type="error", ename=output.ename, evalue=output.evalue, traceback=[message])
                )
            else:
                outputs.append(output)
        return outputs


class Redactor:
    """Blanks out hidden lines in a text: long ones wherever they occur, short
    ones where they make up a whole line."""

    def __init__(self, lines, min_length):
        # Longest first, so that a line inside a longer one does not cut it up.
        # (Plain substring search: one regular expression of hundreds of
        # alternatives took up to half a second to compile, per feedback.)
        self.long = sorted({line for line in lines if len(line) >= min_length}, key=lambda x: (-len(x), x))
        self.short = {line for line in lines if len(line) < min_length}

    def __call__(self, text: str) -> str:
        for line in self.long:
            if line in text:
                text = text.replace(line, REDACTED)
        if self.short:
            text = "".join(
                REDACTED + "\n" if line.strip() in self.short else line for line in text.splitlines(keepends=True)
            )
        return text

    def finds(self, text: str) -> bool:
        return self(text) != text


def _redact(output, clean):
    """Blank out hidden lines wherever an output can hold text: the stream,
    the error's name, message and traceback, and every string of its data and
    metadata, of any type (an SVG image is text too)."""
    if output.output_type == "stream":
        output.text = clean(output.text)
    elif output.output_type == "error":
        output.ename = clean(str(output.ename))
        output.evalue = clean(str(output.evalue))
        # Tracebacks are coloured with ANSI codes that split the code's tokens:
        # match on the plain text, and keep only the message if anything matched.
        if clean.finds(ANSI.sub("", "\n".join(map(str, output.traceback)))):
            output.traceback = [f"{output.ename}: {output.evalue}"]
    for key in ("data", "metadata"):
        if key in output:
            output[key] = _clean_all(output[key], clean)


def _clean_all(value, clean):
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [_clean_all(item, clean) for item in value]
    if isinstance(value, dict):
        return type(value)((k, _clean_all(item, clean)) for k, item in value.items())
    return value


class _CompiledTemplates(BytecodeCache):
    """Jinja's compiled templates, kept for the life of the process (keyed by
    template and checked against its source by Jinja)."""

    def __init__(self):
        self.store = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.store:
            bucket.bytecode_from_string(self.store[bucket.key])

    def dump_bytecode(self, bucket):
        self.store[bucket.key] = bucket.bytecode_to_string()


_COMPILED = _CompiledTemplates()


# The private method of nbconvert's exporter that this class overrides, and the conversion it copies,
# are listed with nbconvert's version in tools/nbgrader_patches.py (PATCHES).
class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, as nbgrader's GenerateFeedback uses it, that
    compiles its templates once per process rather than once per notebook
    (nbgrader makes a new exporter for every submission; compiling the
    feedback template takes about 0.15 s). The HTML is the same."""

    def __init__(self, config=None, **kwargs):
        # nbgrader's GenerateFeedback sets HTMLExporter.extra_template_paths (its CSS), which
        # replaces the course's: add the course's template folder (tools/feedback/page.py).
        import copy

        from traitlets.config import Config

        from .page import TEMPLATES

        config = copy.deepcopy(config) if config is not None else Config()
        paths = list(config.HTMLExporter.get("extra_template_paths", []))
        config.FeedbackExporter.extra_template_paths = [*paths, str(TEMPLATES)]
        super().__init__(config=config, **kwargs)

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = _COMPILED
        return environment

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter's conversion (nbconvert 7.17) without its last step,
        which parses and re-writes the whole page with BeautifulSoup (up to
        0.7 s a page, 2.3 MB of MathJax included) to give every image an alt
        text and, in the lab template only, cells a tab index. The feedback's
        classic template has no lab cells: images get their alt text here."""
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        self.register_filter("highlight_code",
                             self.filters.get("highlight_code", RememberedHighlight(pygments_lexer=lexer, parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return IMAGE_WITHOUT_ALT.sub(r'\1 alt="No description has been provided for this image"', page), resources


class RememberedHighlight(Highlight2HTML):
    """nbconvert's code highlighting, which remembers what it has highlighted in this process. Every submission of
    an assignment repeats the cells the release gives (locked cells, visible tests), and a grading worker writes the
    feedback of many submissions: Pygments takes about 0.1 s a page, mostly on those same cells. Only sources up to
    HIGHLIGHT_SOURCE_CHARS are kept, HIGHLIGHT_KEPT_CHARS in all: a student's code can be of any size."""

    def __call__(self, source, language=None, metadata=None):
        magics = metadata.get("magics_language") if metadata else None
        key = (source, language, magics, self.pygments_lexer, repr(sorted(self.extra_formatter_options.items())))
        html = _HIGHLIGHTED.get(key)
        if html is None:
            html = super().__call__(source, language, metadata)
            if len(source) <= HIGHLIGHT_SOURCE_CHARS and _HIGHLIGHTED_CHARS[0] + len(source) <= HIGHLIGHT_KEPT_CHARS:
                _HIGHLIGHTED[key] = html
                _HIGHLIGHTED_CHARS[0] += len(source)
        return html


HIGHLIGHT_SOURCE_CHARS = 64 * 1024
HIGHLIGHT_KEPT_CHARS = 4 * 1024**2
_HIGHLIGHTED = {}
_HIGHLIGHTED_CHARS = [0]


# An <img> tag that has no alt attribute (a data URL holds no ">").
IMAGE_WITHOUT_ALT = re.compile(r"(<img\b)(?![^>]*\salt\s*=)", re.IGNORECASE)
