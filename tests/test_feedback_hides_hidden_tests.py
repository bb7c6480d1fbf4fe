"""Promise: feedback tells students what failed, and never shows a hidden test.

Stock nbgrader puts the hidden tests' code into the feedback HTML (nbgrader
issue 917): in the test cells and again in the tracebacks. With the course's
nbgrader_config.py (tools/feedback/hide_hidden_tests.py), the feedback of every test cell shows
whether it passed, its points and the failure message — and no line of hidden
test code, and no solution code the student did not write.

The feedback comes from the real grading of every known-wrong implementation
by `make grade` (the session's `graded` fixture, shared with test_wrong_implementations_lose_points.py),
which generates it with nbgrader's GenerateFeedback. The same run grades a
student whose code prints the source of every cell it can — hidden tests
included (this module's GUEST_SUBMISSIONS).
"""

import functools
import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

from tests.conftest import graded_assignments, require_sandbox, submission_name
from tools.sandbox.bubblewrap import SandboxUnavailable, check_available
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.leak_checks import protected_regions
from tools.paths import EXERCISES, SOLUTIONS, wrong_implementations

ASSIGNMENTS = graded_assignments()
WRONG = [(a, path) for a in ASSIGNMENTS for path in wrong_implementations(a)]


@functools.lru_cache(maxsize=None)
def _notebook_lines(path, mtime_ns):
    return frozenset(line.strip() for cell in nbformat.read(path, as_version=4).cells
                     for line in cell.source.splitlines())


def notebook_lines(path):
    return _notebook_lines(Path(path), Path(path).stat().st_mtime_ns)


def secret_lines(assignment, kind, submission):
    """Lines of the source's `kind` regions ("HIDDEN TESTS" or "SOLUTION")
    that the student has not seen: not in the released notebook, not in their
    own submission, and with at least a letter or digit."""
    source = SOLUTIONS / assignment / f"{assignment}.ipynb"
    seen = notebook_lines(EXERCISES / assignment / f"{assignment}.ipynb") | notebook_lines(submission)
    return {
        line
        for region, lines in _protected_regions(source)
        if region == kind
        for line in lines
        if line not in seen and re.search(r"\w", line)
    }


# A script or style element, which a reader does not see: left out before parsing
# (MathJax alone is 2.3 MB of every page), as the parser would end it.
UNSEEN = re.compile(r"<(script|style)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)


_protected_regions = functools.lru_cache(maxsize=None)(protected_regions)


def feedback_text(html_path):
    """The text a student reads in a feedback page, line by line (read once per
    page and session: several tests read every page)."""
    return list(_feedback_text(Path(html_path), Path(html_path).stat().st_mtime_ns))


@functools.lru_cache(maxsize=None)
def _feedback_text(html_path, mtime_ns):
    soup = BeautifulSoup(UNSEEN.sub("", html_path.read_text()), "html.parser")
    for tag in soup(["style", "script"]):
        tag.decompose()
    lines = []
    for pre in soup.find_all("pre"):  # code and outputs: keep their lines whole
        lines += pre.get_text().splitlines()
        pre.decompose()
    lines += soup.get_text("\n").splitlines()
    return tuple(line.strip() for line in lines if line.strip())


@pytest.fixture(scope="session")
def feedback(graded):
    """feedback(assignment) -> the graded course, whose feedback make grade
    generated (nbgrader's GenerateFeedback with the course's preprocessors;
    tests/test_make_grade_matches_stock_nbgrader.py runs `nbgrader generate_feedback` on its own)."""
    require_sandbox("the feedback tests")
    return graded


def paths(course, student, assignment):
    submitted = course.root / "submitted" / student / assignment / f"{assignment}.ipynb"
    autograded = course.root / "autograded" / student / assignment / f"{assignment}.ipynb"
    html = course.root / "feedback" / student / assignment / f"{assignment}.html"
    return submitted, autograded, html


def failing_test_cells(autograded):
    """[(grade_id, points, first line of the error message)] for the test cells that failed."""
    failing = []
    for cell in nbformat.read(autograded, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if errors:
                message = (errors[0].evalue.strip().splitlines() or [errors[0].ename])[0].strip()
                failing.append((meta["grade_id"], meta["points"], message))
    return failing


@pytest.mark.parametrize("assignment, path", WRONG, ids=[f"{a}-{p.stem}" for a, p in WRONG])
def test_feedback_shows_each_failed_test_its_points_and_message(feedback, assignment, path):
    course = feedback(assignment).course
    _, autograded, html = paths(course, submission_name(path), assignment)
    failing = failing_test_cells(autograded)
    assert failing, f"{path.name} failed no test cell"
    text = "\n".join(feedback_text(html))
    for grade_id, points, message in failing:
        assert f"Failed: 0 of {points:g} points." in text, f"{grade_id}: no result line in the feedback"
        assert f"Score: 0.0 / {float(points)}" in text, f"{grade_id}: no score in the feedback"
        assert message in text, f"{grade_id}: the failure message {message!r} is not in the feedback"


@pytest.mark.parametrize("assignment, path", WRONG, ids=[f"{a}-{p.stem}" for a, p in WRONG])
def test_feedback_contains_no_hidden_test_and_no_unwritten_solution(feedback, assignment, path):
    course = feedback(assignment).course
    submitted, autograded, html = paths(course, submission_name(path), assignment)
    hidden = secret_lines(assignment, "HIDDEN TESTS", submitted)
    solution = secret_lines(assignment, "SOLUTION", submitted)
    # The check can see a leak: the notebook the feedback is made from has the hidden tests.
    assert hidden & notebook_lines(autograded), "nothing to hide: is the test looking at the right lines?"
    shown = set(feedback_text(html))
    assert not hidden & shown, f"hidden-test lines in the feedback: {sorted(hidden & shown)[:5]}"
    assert not solution & shown, f"solution lines the student did not write: {sorted(solution & shown)[:5]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_of_the_reference_solution_shows_every_test_passed(feedback, assignment):
    course = feedback(assignment).course
    _, autograded, html = paths(course, "solution", assignment)
    text = "\n".join(feedback_text(html))
    for cell in nbformat.read(autograded, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            assert f"Passed: {meta['points']:g} of {meta['points']:g} points." in text


ECHO = '''
import sys as _sys
def _echo(result):
    # Print the source of every cell that ran, hidden tests included.
    print(result.info.raw_cell)
    print(result.info.raw_cell, file=_sys.stderr)
get_ipython().events.register("post_run_cell", _echo)
'''


def GUEST_SUBMISSIONS(assignment):
    """One student, "echo", whose first answer cell makes every later cell
    print its own source: graded in the shared `make grade` run (conftest)."""
    try:
        check_available()
    except SandboxUnavailable:
        return {}  # the test below skips: it needs the sandbox
    answers = solution_code(SOLUTIONS / assignment / f"{assignment}.ipynb")
    first = next(iter(answers))
    release = EXERCISES / assignment / f"{assignment}.ipynb"
    return {"echo": fill_release(release, {**answers, first: ECHO + answers[first]})}


@pytest.fixture(scope="module")
def echo_course(graded_course):
    require_sandbox("the feedback tests")
    return graded_course().course


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_hides_hidden_tests_that_student_code_prints(echo_course, assignment):
    submitted, autograded, html = paths(echo_course, "echo", assignment)
    hidden = secret_lines(assignment, "HIDDEN TESTS", submitted)
    printed = {
        line.strip()
        for cell in nbformat.read(autograded, as_version=4).cells
        for output in cell.get("outputs", [])
        if output.output_type == "stream"
        for line in output.text.splitlines()
    }
    assert hidden & printed, "the student's code did not manage to print the hidden tests"
    shown = set(feedback_text(html))
    assert not hidden & shown, f"hidden-test lines in the feedback: {sorted(hidden & shown)[:5]}"
