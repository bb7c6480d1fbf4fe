"""Promise: the grades mean something.

Every assignment goes through a real `make grade` (nbgrader's autograde, in
parallel workers) in a throw-away course folder. The solution submitted as a student scores full marks; the
untouched student notebook scores 0 without breaking the run; and every
realistic wrong implementation kept in solutions/<assignment>/checks/wrong_implementations/ loses
points. Each file there holds one mistake: a whole cell, or a patch of the
reference solution that shows the mistake and nothing else.
"""

import pytest

from tests.conftest import graded_assignments, submission_name
from tools.assignments.answers import solution_code
from tools.assignments.wrong_implementations import apply_patch, read_wrong_implementation
from tools.paths import SOLUTIONS, checks_folder, wrong_implementations

WRONG = [(a, path) for a in graded_assignments() for path in wrong_implementations(a)]


@pytest.mark.parametrize("assignment", graded_assignments())
def test_solution_scores_full_marks(graded, assignment):
    result = graded(assignment).scores["solution"]
    lost = {cell: score for cell, score in result["cells"].items() if score is not None}
    assert result["max_score"] > 0
    assert result["score"] == result["max_score"], f"the reference solution lost points: {lost}"


@pytest.mark.parametrize("assignment", graded_assignments())
def test_untouched_release_scores_zero(graded, assignment):
    result = graded(assignment).scores["untouched-release"]
    assert result["score"] == 0, f"a blank submission earned points: {result['cells']}"


@pytest.mark.parametrize("assignment", graded_assignments())
def test_every_submission_was_graded(graded, assignment):
    graded_assignment = graded(assignment)
    expected = {"solution", "untouched-release"} | {submission_name(p) for p in wrong_implementations(assignment)}
    assert set(graded_assignment.scores) == expected


@pytest.mark.parametrize("assignment", graded_assignments())
def test_each_assignment_keeps_known_wrong_implementations(assignment):
    assert len(wrong_implementations(assignment)) >= 5, (
        f"{assignment} needs realistic wrong implementations in {checks_folder(assignment)}/wrong_implementations/"
    )


@pytest.mark.parametrize(
    "assignment, path", WRONG, ids=[f"{a}-{p.stem}" for a, p in WRONG]
)
def test_wrong_implementation_loses_points(graded, assignment, path):
    description, _ = read_wrong_implementation(path)
    result = graded(assignment).scores[submission_name(path)]
    assert result["score"] < result["max_score"], (
        f"'{description}' scored full marks ({result['score']}/{result['max_score']})"
    )


# --- the format of solutions/<assignment>/checks/wrong_implementations/ -----------

CELL = "def f(x):\n    y = x + 1\n    return y\n\ndef g(x):\n    return x\n"


def test_patch_replaces_the_lines_it_names():
    patch = "-    y = x + 1\n+    y = x - 1\n\n def g(x):\n-    return x\n+    return -x\n"
    assert apply_patch(CELL, patch) == "def f(x):\n    y = x - 1\n    return y\n\ndef g(x):\n    return -x\n"


@pytest.mark.parametrize("patch, complaint", [
    ("-    y = x + 2\n+    y = 0\n", "is not in the solution cell"),  # a line the solution does not have
    ("-    return x\n+    return 0\n", "is 2 times in"),               # g's and h's: which one?
    ("+    z = 1\n", "needs a kept line"),                             # where would it go?
    ("     y = x + 1\n", "changes nothing"),
    ("y = x\n", "neither"),
])
def test_a_patch_that_does_not_fit_the_solution_is_an_error(patch, complaint):
    cell = CELL + "\ndef h(x):\n    return x\n"
    with pytest.raises(ValueError, match=complaint):
        apply_patch(cell, patch)


def test_kept_lines_make_a_hunk_unique():
    cell = CELL + "\ndef h(x):\n    return x\n"
    patched = apply_patch(cell, " def h(x):\n-    return x\n+    return 0\n")
    assert patched.endswith("def h(x):\n    return 0\n") and "def g(x):\n    return x\n" in patched


@pytest.mark.parametrize("assignment", graded_assignments())
def test_every_patched_mistake_still_differs_from_the_solution(assignment):
    answers = solution_code(SOLUTIONS / assignment / f"{assignment}.ipynb")
    for path in wrong_implementations(assignment):
        _, cells = read_wrong_implementation(path)
        same = [grade_id for grade_id, code in cells.items() if code == answers[grade_id]]
        assert not same, f"{path.name}: cells {same} are the solution itself"
