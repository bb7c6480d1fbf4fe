"""Promise: students get exactly the generated release, and nothing more.

exercises/ is what `nbgrader generate_assignment` makes from solutions/ — no
hand edits, no solution code, no hidden test, no file besides the notebook —
and each notebook states the points it is worth.
"""

import re

import nbformat
import pytest

from tools.assignments.leak_checks import hidden_lines
from tools.assignments import hidden_tests
from tools.paths import EXERCISES, SOLUTIONS, assignments, verification_spec
from tools.assignments import helper_cells as notebook_checks
from tools.assignments.release import generate_releases

ASSIGNMENTS = assignments()
MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS")
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


def released(assignment):
    return nbformat.read(EXERCISES / assignment / f"{assignment}.ipynb", as_version=4)


def comparable(nb):
    """What matters of a notebook for the comparison: cells' type, source and metadata."""
    return [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]


def test_every_assignment_is_released():
    assert ASSIGNMENTS, "no assignment found in solutions/"
    assert sorted(p.name for p in EXERCISES.iterdir() if p.is_dir()) == ASSIGNMENTS


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    """Every assignment generated afresh from solutions/, as `make release` does."""
    return generate_releases(ASSIGNMENTS, tmp_path_factory.mktemp("regenerated"))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_matches_regeneration(assignment, regenerated):
    fresh = nbformat.read(regenerated[assignment], as_version=4)
    assert comparable(released(assignment)) == comparable(fresh), (
        f"exercises/{assignment} differs from what solutions/{assignment} generates: run `make release`"
    )


def test_nbgrader_releases_nothing_of_the_checks(regenerated):
    """solutions/<assignment>/checks/ (verification, wrong implementations,
    attacks) sits next to the source notebook; nbgrader_config.py's
    CourseDirectory.ignore keeps it out of what nbgrader releases."""
    for assignment, notebook in regenerated.items():
        assert (SOLUTIONS / assignment / "checks" / "verification.py").is_file()
        others = sorted(str(p.relative_to(notebook.parent)) for p in notebook.parent.rglob("*") if p != notebook)
        assert not others, f"nbgrader released {others} with {assignment}"


def test_release_holds_only_notebooks():
    others = [p for p in EXERCISES.rglob("*") if p.is_file() and p.suffix != ".ipynb"]
    assert not others, f"only the notebooks may reach students, found {others}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_contains_no_solution_or_hidden_test(assignment):
    text = (EXERCISES / assignment / f"{assignment}.ipynb").read_text()
    assert not MARKERS.search(text)
    release_lines = {line.strip() for cell in released(assignment).cells for line in cell.source.splitlines()}
    hidden = hidden_lines(SOLUTIONS / assignment / f"{assignment}.ipynb")
    assert hidden, "the solution notebook should have solution and hidden-test regions"
    leaked = [line for line in hidden if line in release_lines]
    assert not leaked, f"solution or hidden-test lines appear in the release: {leaked[:3]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_solution_cell_raises_not_implemented(assignment):
    solution_cells = [
        c for c in released(assignment).cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    ]
    assert solution_cells
    for cell in solution_cells:
        assert "raise NotImplementedError()" in cell.source, cell.metadata["nbgrader"]["grade_id"]
        assert "### " not in cell.source


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_stated_total_matches_points(assignment):
    nb = released(assignment)
    points = [c.metadata["nbgrader"]["points"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    stated = re.search(r"Total: (\d+) points", nb.cells[0].source)
    assert stated, "the first cell must state 'Total: N points'"
    assert int(stated.group(1)) == sum(points)
    assert all(p > 0 for p in points)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_cells_share_one_set_of_helpers(assignment):
    """Every assignment's helper cell starts with the helpers of
    tools/notebook_checks.py it uses, word for word (`make release` copies
    them), and no cell defines one of them again."""
    notebook = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    source = notebook_checks.helper_cell(notebook).source
    assert source == notebook_checks.synced_source(notebook), (
        f"solutions/{assignment}'s helper cell differs from tools/notebook_checks.py: run `make release`"
    )
    _, _, own = notebook_checks.split_helper_cell(source)
    shared_names = set(re.findall(r"^def (\w+)", notebook_checks.shared_text(), re.M))
    again = shared_names & set(re.findall(r"^(?:def|class) (\w+)", own, re.M))
    assert not again, f"{assignment} defines shared helpers again: {sorted(again)}"
    for cell in notebook.cells[notebook.cells.index(notebook_checks.helper_cell(notebook)) + 1:]:
        redefined = shared_names & set(re.findall(r"^(?:def|class) (\w+)", cell.source, re.M))
        assert not redefined, f"a cell of {assignment} defines {sorted(redefined)}, a shared helper"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_test_and_helper_cells_are_folded_on_the_site(assignment):
    """The book shows an exercise as released; its helper and test cells carry
    the tag hide-input, so a reader of the site sees the tasks, with the test
    code one click away (in Jupyter the tag changes nothing)."""
    for notebook in (SOLUTIONS / assignment / f"{assignment}.ipynb", EXERCISES / assignment / f"{assignment}.ipynb"):
        for cell in nbformat.read(notebook, as_version=4).cells:
            nbgrader = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and (nbgrader.get("grade") and not nbgrader.get("solution")
                                             or nbgrader.get("grade_id") == notebook_checks.HELPER_CELL):
                assert "hide-input" in cell.metadata.get("tags", []), (
                    f"{notebook.relative_to(SOLUTIONS.parent)}: cell {nbgrader.get('grade_id')} lacks the tag "
                    "hide-input (add it in solutions/, then `make release`)"
                )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_hidden_tests_are_the_checks_written_once(assignment):
    """Each graded test cell's hidden tests are generated from its check in
    checks/verification.py (tools/assignments/hidden_tests.py), word for word: nbgrader and
    verification ask the same questions, and a check is edited in one place."""
    spec = verification_spec(assignment)
    notebook = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    graded = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")
              and not c.metadata["nbgrader"].get("solution")]
    assert graded and all(hidden_tests.GENERATED in c.source for c in graded)
    assert not hidden_tests.synced_notebook(notebook, assignment, spec), (
        f"solutions/{assignment}'s hidden tests differ from its checks: run `make release ASSIGNMENT={assignment}`"
    )


def test_a_generated_check_keeps_out_of_the_notebooks_names():
    """The generated hidden tests define their helpers inside a function: a
    check's own `expect_shape` never replaces the notebook's."""
    spec = hidden_tests.Spec(verification_spec("ex01_by_hand"))
    section = spec.hidden_section("ex01_by_hand", "test_scores_by_hand")
    top = [line for line in section.splitlines() if line and not line.startswith((" ", "#"))]
    assert top == ["def _hidden_test():", "from tools.verification.in_kernel import run_check as _run_check",
                   "_run_check('ex01_by_hand', 'test_scores_by_hand', _hidden_test(), globals())"]
    assert "    def expect_shape(" in section and "    def test_scores_by_hand(p):" in section
    assert "def test_score_gaps" not in section and "def reference_softmax" not in section  # only what it uses
