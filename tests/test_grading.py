"""Promise: the grades mean something.

Every assignment goes through a real `nbgrader autograde` in a throw-away
course folder. The solution submitted as a student scores full marks; the
untouched student notebook scores 0 without breaking the run; and every
realistic wrong implementation kept in tests/wrong_implementations/ loses
points.
"""

import pytest

from tests.conftest import submission_name, wrong_implementations
from tools.nbgrader_course import read_wrong_implementation
from tools.paths import assignments

WRONG = [(a, path) for a in assignments() for path in wrong_implementations(a)]


@pytest.mark.parametrize("assignment", assignments())
def test_solution_scores_full_marks(graded, assignment):
    result = graded(assignment).scores["solution"]
    lost = {cell: score for cell, score in result["cells"].items() if score is not None}
    assert result["max_score"] > 0
    assert result["score"] == result["max_score"], f"the reference solution lost points: {lost}"


@pytest.mark.parametrize("assignment", assignments())
def test_untouched_release_scores_zero(graded, assignment):
    result = graded(assignment).scores["untouched-release"]
    assert result["score"] == 0, f"a blank submission earned points: {result['cells']}"


@pytest.mark.parametrize("assignment", assignments())
def test_every_submission_was_graded(graded, assignment):
    graded_assignment = graded(assignment)
    expected = {"solution", "untouched-release"} | {submission_name(p) for p in wrong_implementations(assignment)}
    assert set(graded_assignment.scores) == expected


@pytest.mark.parametrize("assignment", assignments())
def test_each_assignment_keeps_known_wrong_implementations(assignment):
    assert len(wrong_implementations(assignment)) >= 5, (
        f"{assignment} needs realistic wrong implementations in tests/wrong_implementations/{assignment}/"
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
