"""What the feedback page and the formgrader's notebook view add to nbgrader's.

nbgrader renders both with nbconvert's HTML exporter and its own templates
(``feedback``, ``formgrade``). nbgrader_config.py points that exporter at
``tools/feedback/templates/course_page.html.j2``, which extends whichever of the two is
rendered, and registers this module's filters; it adds ``LateBy`` to the
feedback's preprocessors. What changes:

- **Math without a network.** nbgrader loads MathJax 2 from a CDN, which a
  hub behind a firewall, or a student reading the page offline, never
  reaches: the equations stay raw LaTeX. The pages carry MathJax 3 instead,
  from the PyPI package that the site's copy comes from (tools/site/offline_mathjax.py),
  written into the page (``tex-svg-full.js``: every TeX extension and its
  fonts, about 2.3 MB), so that a feedback page shows its equations wherever
  it is opened: on the hub, from an email, from a learning platform. The
  formgrader's own script expects MathJax 2's ``MathJax.Hub``: a few lines
  give it what it uses.
- **Error messages wrap** instead of running off to the right on one line.
- **Every test is named** in the feedback's summary by what it tests (the
  heading of the task above it, and, where a task has several test cells,
  the test's id in words) instead of nbgrader's "Test cell" for all.
- **Lateness is told to the student**: how long after the due date the
  submission came (tools/lateness.py), with nbgrader's penalty line.
- **Only the page's own scripts run.** Both pages show a student's notebook:
  its HTML outputs, its Javascript outputs and its Markdown, which can hold
  ``<script>`` elements and ``onerror=`` attributes. The formgrader's view is
  served by the instructor's own server, and a feedback page opened in his
  JupyterLab (*Trust HTML*) runs at his address too: a script of the student's
  there could read and change everything the instructor can. Each page
  therefore starts with a Content-Security-Policy (``page_policy``) that lets
  run only the scripts the page itself carries, marked with a number drawn
  afresh for each page (a nonce), plus the formgrader's two ``onclick``
  handlers by their hash; nothing from the notebook runs, and no ``<base>``,
  ``<object>``, frame or form of the student's works either.
"""

from __future__ import annotations

import functools
import html
import importlib.util
import hashlib
import json
import re
import secrets
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: The MathJax component written into each page: TeX input (every extension) and SVG output, fonts included.
MATHJAX_COMPONENT = "tex-svg-full.js"

MATHJAX_CONFIG = {
    "tex": {"inlineMath": [["$", "$"], ["\\(", "\\)"]], "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
            "processEscapes": True, "processEnvironments": True},
    "svg": {"fontCache": "global"},
    "options": {"ignoreHtmlClass": "tex2jax_ignore", "processHtmlClass": "tex2jax_process"},
}

# The part of MathJax 2's interface that nbgrader's formgrade.js calls.
MATHJAX2_SHIM = """
window.MathJax.Hub = {
  Startup: {signal: {Interest: function (listener) {
    MathJax.startup.promise.then(function () { listener("End"); });
  }}},
  Queue: function () { return MathJax.typesetPromise ? MathJax.typesetPromise() : null; }
};
"""


def mathjax_file() -> Path:
    spec = importlib.util.find_spec("mathjax")
    path = Path(spec.origin).parent / "static" / "mathjax" / "es5" / MATHJAX_COMPONENT if spec and spec.origin else None
    if path is None or not path.is_file():
        raise FileNotFoundError(f"MathJax's {MATHJAX_COMPONENT} is not installed: expected the PyPI package "
                                "django-static-mathjax (requirements.txt; `make venv` installs it)")
    return path


@functools.lru_cache(maxsize=1)
def _mathjax_scripts() -> str:
    source = mathjax_file().read_text(encoding="utf-8")
    if "</script" in source.lower():  # would end the inline script early
        raise ValueError(f"{MATHJAX_COMPONENT} cannot be written inside a <script> element")
    return (f"<script>window.MathJax = {json.dumps(MATHJAX_CONFIG)};</script>\n"
            f"<script>{source}</script>\n<script>{MATHJAX2_SHIM}</script>\n")


def mathjax_scripts(_ignored="", nonce=None) -> str:
    """Jinja filter ``course_mathjax``: the scripts that typeset the page's math offline
    (each marked with ``nonce``, if given: see page_policy)."""
    scripts = _mathjax_scripts()
    return scripts if nonce is None else scripts.replace("<script>", f'<script nonce="{nonce}">')


#: The inline event handlers of nbgrader 0.9.6's formgrader page (formgrade_macros.html.j2, the eye that shows
#: and hides the student's name): allowed by their hash, so that a student's ``onclick`` of other text never runs.
FORMGRADER_HANDLERS = ("toggle_name(true);", "toggle_name(false);")
SCRIPT_TAG = re.compile(r"<script\b", re.IGNORECASE)


def page_policy(nonce: str) -> str:
    """The Content-Security-Policy of a page that shows a student's notebook: only scripts marked with ``nonce``
    (and nbgrader's formgrader handlers) run; no plug-in, frame, form or ``<base>`` of the notebook's works."""
    hashes = " ".join("'sha256-%s'" % _sha256(handler) for handler in FORMGRADER_HANDLERS)
    return (f"script-src 'nonce-{nonce}' 'unsafe-hashes' {hashes}; object-src 'none'; "
            "base-uri 'none'; form-action 'none'; frame-src 'none'")


def _sha256(text):
    import base64

    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def page_nonce(resources) -> str:
    """The nonce of the page being rendered: drawn once per page (kept in its ``resources``)."""
    if not isinstance(resources, dict):
        raise TypeError(f"expected the page's resources (a dict), got {type(resources).__name__}")
    return resources.setdefault("course_nonce", secrets.token_urlsafe(18))


def page_header(header: str, mathjax_macro: str, css: str, resources) -> str:
    """Jinja filter ``course_header``, on nbgrader's header of a page (the formgrader's or the feedback's): its
    MathJax 2 from a CDN replaced by MathJax 3 inside the page, the course's CSS added, every script of the
    header (nbgrader's own: no part of a notebook is in it) marked with the page's nonce, and page_policy first
    in ``<head>``, so that it applies to everything after it."""
    nonce = page_nonce(resources)
    mark = "<!-- course: MathJax -->"
    header = header.replace(mathjax_macro, mark) if mathjax_macro else header
    header = SCRIPT_TAG.sub(f'<script nonce="{nonce}"', header)
    header = header.replace(mark, mathjax_scripts(nonce=nonce)).replace("</head>", css + "\n</head>", 1)
    start = re.search(r"<head\b[^>]*>", header, re.IGNORECASE)
    if start is None:
        raise ValueError("the page's header has no <head> element to put its Content-Security-Policy in")
    meta = f'\n<meta http-equiv="Content-Security-Policy" content="{html.escape(page_policy(nonce), quote=False)}">'
    return header[:start.end()] + meta + header[start.end():]


def page_body_scripts(body: str, resources) -> str:
    """Jinja filter ``course_body_scripts``: in the formgrader's page, the scripts of nbgrader's navigation bar,
    which comes before the notebook (``<div id="notebook"``), get the page's nonce; nothing else does."""
    if not isinstance(resources, dict) or "submission_id" not in resources:
        return body  # not the formgrader's page
    end = body.find('<div id="notebook"')
    if end < 0:
        return body
    return SCRIPT_TAG.sub(f'<script nonce="{page_nonce(resources)}"', body[:end]) + body[end:]


POINTS = re.compile(r"\s*\([^()]*\bpoints?\b[^()]*\)\s*$")


def test_names(cells) -> dict:
    """{grade_id: name} for the test cells of a notebook: the heading of the
    task above each (without its points), and, where a task has more than one
    test cell, the test's id in words after it."""
    heading, found = None, []
    for cell in cells:
        if cell.cell_type == "markdown":
            lines = [line for line in cell.source.splitlines() if line.startswith("#")]
            if lines:
                heading = POINTS.sub("", lines[0].lstrip("#").strip())
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            found.append((heading, meta.get("grade_id", "")))
    per_heading = {}
    for heading, _ in found:
        per_heading[heading] = per_heading.get(heading, 0) + 1
    names = {}
    for heading, grade_id in found:
        words = re.sub(r"^test_", "", grade_id).replace("_", " ")
        if heading is None:
            names[grade_id] = words
        else:
            names[grade_id] = heading if per_heading[heading] == 1 else f"{heading}: {words}"
    return names


def feedback_summary(body: str, nb, resources) -> str:
    """Jinja filter ``course_feedback_summary``, on the body of a page: in a
    feedback page (whose resources hold nbgrader's scores), each "Test cell"
    of the summary at the top takes its test's name (test_names), and a line
    says how late a late submission came. Any other page is left as it is."""
    info = resources.get("nbgrader") if isinstance(resources, dict) else None
    if not info or "max_score" not in info:
        return body
    names = test_names(nb.cells)

    def named(match):
        grade_id = html.unescape(match.group(1))
        return f'<a href="#{match.group(1)}">{html.escape(names.get(grade_id, "Test cell"))}</a>'

    body = re.sub(r'<a href="#([^"]*)">Test cell</a>', named, body)
    if info.get("late_by"):
        note = f'<li class="late-by">Submitted {html.escape(info["late_by"])} after the due date</li>\n'
        start = body.find('<div id="toc">')
        end = body.find('<li class="late-penalty">', start)  # before nbgrader's penalty line, if any
        end = body.find("</ol>", start) if end < 0 else end
        if start >= 0 and end >= 0:
            body = body[:end] + note + body[end:]
    return body


class LateBy(Preprocessor):
    """For the feedback: how late a late submission came (``resources.nbgrader.late_by``)."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when it is enabled.").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        if {"db_url", "assignment", "student"} <= set(info):
            from nbgrader.api import Gradebook, MissingEntry

            from ..lateness import duration, seconds_late

            with Gradebook(info["db_url"]) as gb:
                try:
                    late = seconds_late(gb.find_submission(info["assignment"], info["student"]))
                except MissingEntry:
                    late = 0
            if late:
                info["late_by"] = duration(late)
        return nb, resources
