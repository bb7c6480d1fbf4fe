"""Promise: returned feedback teaches, it does not tell.

A failed test says which function failed, on what kind of input, how far off
and the likely cause — never the expected numbers. The feedback students get
back (`nbgrader generate_feedback`, through tools/feedback/hide_hidden_tests.py) of every known-wrong
implementation of every assignment is read as the student reads it:

- no failure message carries a dump of expected values: NumPy's
  ``ACTUAL``/``DESIRED`` and ``x: array(...)``/``y: array(...)``, or an
  ``Expected ...`` followed by numbers;
- a failure in a hidden test prints no array, tensor or list of numbers at all
  (a visible test may quote the student's own output on the visible example);
- in ex01, whose inputs every student has, no number in any failure message is
  an entry of the worked example's reference weights A or output Z.

Which part of a test cell failed comes from the traceback, as in
test_visible_tests_warn_at_the_mistake.py. The feedback is the one test_feedback_hides_hidden_tests.py generates
(made here if this module runs alone).
"""

import re

import nbformat
import numpy as np
import pytest

from tests.plugins.environment import require_sandbox
from tests.plugins.selection import graded_assignments
from tests.plugins.shared_grading_run import submission_name
from tests.test_feedback_hides_hidden_tests import feedback_text, paths
from tests.test_visible_tests_warn_at_the_mistake import failed_part, graded_test_cells
from tools.paths import SOLUTIONS, wrong_implementations

# `make check` runs this module after a change to an assignment (tests/make_check.py).
MAKE_CHECK = ("assignment",)

ASSIGNMENTS = graded_assignments()
WRONG = [(a, path) for a in ASSIGNMENTS for path in wrong_implementations(a)]

DUMPS = [
    re.compile(r"\bACTUAL\b"), re.compile(r"\bDESIRED\b"),
    re.compile(r"\b[xy]: (array|tensor)\("),
    re.compile(r"\b[Ee]xpected\b[^.]{0,40}?(array|tensor|\[)\s*\[?\s*-?\d"),
]
# Two or more decimal numbers in a row, as an array, a tensor or a list prints them.
NUMBER = r"-?(?:\d+\.\d*|\.\d+)(?:e[-+]?\d+)?"
VALUE_LIST = re.compile(rf"(array|tensor)\(\s*\[|[\[(]\s*{NUMBER}\s*,\s*{NUMBER}")
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?")


@pytest.fixture(scope="module")
def returned(graded):
    """returned(assignment): the graded course, with the feedback generated once."""
    require_sandbox("the feedback tests")
    done = set()

    def get(assignment):
        result = graded(assignment)
        students = ["solution", *map(submission_name, wrong_implementations(assignment))]
        if assignment not in done and not all(paths(result.course, s, assignment)[2].is_file() for s in students):
            result.course.nbgrader("generate_feedback", assignment, "--force")
        done.add(assignment)
        return result

    return get


def failure_messages(autograded):
    """[(grade_id, "visible" or "hidden", message)] of the failed test cells."""
    found = []
    for grade_id, cell in graded_test_cells(nbformat.read(autograded, as_version=4)):
        part = failed_part(cell)
        if part:
            error = next(o for o in cell.outputs if o.output_type == "error")
            found.append((grade_id, part, f"{error.ename}: {error.evalue}" if error.evalue else error.ename))
    return found


def worked_example_references():
    """The entries of A and Z of ex01's worked example, whose inputs every student has (its scores S
    are small whole numbers, and S / sqrt(3) is a multiple of sqrt(3) / 3, a number messages may name)."""
    notebook = nbformat.read(SOLUTIONS / "ex01_by_hand" / "ex01_by_hand.ipynb", as_version=4)
    space = {}
    exec(next(c.source for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"), space)
    X, W_q, W_k, W_v = (space[name] for name in ("X", "W_q", "W_k", "W_v"))
    S = (X @ W_q) @ (X @ W_k).T
    e = np.exp(S / np.sqrt(3) - (S / np.sqrt(3)).max(axis=1, keepdims=True))
    A = e / e.sum(axis=1, keepdims=True)
    values = np.concatenate([A.ravel(), (A @ X @ W_v).ravel()])
    return values[(np.abs(values) > 1e-3) & (np.abs(values - np.round(values)) > 1e-6)]  # whole numbers tell nothing


def reference_numbers_in(message, references):
    """Decimal numbers of at least 3 significant digits in ``message`` that equal a reference entry."""
    found = []
    for text in DECIMAL.findall(message):
        digits = len(re.sub(r"[^\d]", "", text.split("e")[0]).lstrip("0"))
        if digits >= 3 and np.any(np.isclose(float(text), references, rtol=5e-4, atol=0)):
            found.append(text)
    return found


@pytest.mark.parametrize("assignment, path", WRONG, ids=[f"{a}-{p.stem}" for a, p in WRONG])
def test_feedback_shows_no_reference_values(returned, assignment, path):
    course = returned(assignment).course
    _, autograded, html = paths(course, submission_name(path), assignment)
    messages = failure_messages(autograded)
    assert messages, f"{path.name} failed no test cell"
    text = "\n".join(feedback_text(html))
    references = worked_example_references() if assignment == "ex01_by_hand" else None
    for grade_id, part, message in messages:
        shown = message.splitlines()[0].strip()
        assert shown in text, f"{grade_id}: the failure message is not in the feedback: {shown!r}"
        dumps = [p.pattern for p in DUMPS if p.search(message)]
        assert not dumps, f"{grade_id} ({part} test) dumps expected values ({dumps}): {message[:500]}"
        if part == "hidden":
            assert not VALUE_LIST.search(message), (
                f"{grade_id}: a hidden test prints a list of values: {message[:500]}"
            )
        if references is not None:
            leaked = reference_numbers_in(message, references)
            assert not leaked, (
                f"{grade_id}: the message shows worked-example reference values {leaked}: {message[:500]}"
            )
    for pattern in DUMPS:
        assert not pattern.search(text), f"the feedback page dumps expected values ({pattern.pattern})"


def test_the_checks_see_a_dump():
    numpy_dump = ""
    try:
        np.testing.assert_allclose(np.array([0.1234, 0.5]), np.array([0.2345, 0.5]))
    except AssertionError as error:
        numpy_dump = str(error)
    assert any(p.search(numpy_dump) for p in DUMPS)
    assert VALUE_LIST.search("got tensor([0.1000, 0.2000])") and VALUE_LIST.search("yours are [0.25, 0.25]")
    assert not VALUE_LIST.search("the largest difference is 0.553, at index (2, 0)")
    assert not VALUE_LIST.search("a (2, 3, 5) tensor, dim=1")
    references = worked_example_references()
    assert reference_numbers_in(f"A[0, 0] should be {references[0]:.4f}", references)
    assert not reference_numbers_in("divided by 1, rows 2 and 3, tolerance 1e-06", references)
