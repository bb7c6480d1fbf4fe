"""Promise: `make grade` grades a class in one command, and can be run again.

`make grade COURSE=<folder>` autogrades every submission under
submitted/<student>/<assignment>/ in parallel, writes the feedback and exports
grades.csv in nbgrader's own format. Its scores are exactly those of stock,
sequential `nbgrader autograde`. Running it again with FORCE=1 regrades every
submission without losing anything: manual grades from the formgrader stay, new
submissions are added, and the gradebook stays consistent. ASSIGNMENT=...
limits it to one assignment.
"""

import shutil
import sqlite3
import subprocess

import nbformat
import pytest

from tests.plugins.shared_grading_run import submission_name
from tests.plugins.environment import require_sandbox
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.nbgrader_patches import alembic_head, metadata_schema_checked_once
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS, assignments, wrong_implementations

ASSIGNMENT = "ex01_by_hand"
OTHER = "ex01_again"  # a second assignment: a copy of the first under another name


def make_grade(root, *variables):
    return subprocess.run(
        ["make", "--no-print-directory", "grade", f"COURSE={root}", *variables],
        cwd=ROOT, text=True, capture_output=True, timeout=900,
    )


def other_assignment(root):
    """solutions/ex01_again/ex01_again.ipynb, a copy of ex01_by_hand."""
    folder = root / "solutions" / OTHER
    folder.mkdir(parents=True)
    shutil.copy(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", folder / f"{OTHER}.ipynb")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course graded twice: first ASSIGNMENT=ex01_by_hand JOBS=2, then, after a
    manual grade and a new submission, everything (FORCE=1)."""
    require_sandbox("the make grade tests")
    root = tmp_path_factory.mktemp("make-grade-course")
    course = Course(root, [ASSIGNMENT])
    other_assignment(root)
    release = EXERCISES / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    answers = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    course.submit("solution", ASSIGNMENT, fill_release(release, answers))
    course.submit("untouched-release", ASSIGNMENT, nbformat.read(release, as_version=4))
    for path in wrong_implementations(ASSIGNMENT)[:3]:
        wrong = fill_release(release, {**answers, **read_wrong_implementation(path)[1]})
        course.submit(submission_name(path), ASSIGNMENT, wrong)
    course.submit("solution", OTHER, fill_release(release, answers))

    # The same submissions, graded by stock, sequential `nbgrader autograde`
    # and `nbgrader generate_feedback` on their own (still sandboxed by the
    # course's nbgrader_config.py).
    stock = Course(root.parent / f"{root.name}-stock", [ASSIGNMENT])
    stock.generate(ASSIGNMENT)
    shutil.copytree(root / "submitted", stock.root / "submitted")
    shutil.rmtree(stock.root / "submitted" / "solution" / OTHER)
    stock.autograde(ASSIGNMENT)
    stock.nbgrader("generate_feedback", ASSIGNMENT, "--force")

    first = make_grade(root, f"ASSIGNMENT={ASSIGNMENT}", "JOBS=2")
    assert first.returncode == 0, f"{first.stdout[-3000:]}\n{first.stderr[-3000:]}"
    after_first = {"scores": course.scores(ASSIGNMENT), "other": course.scores(OTHER),
                   "csv": (root / "grades.csv").read_text()}
    stock_csv = root.parent / f"{root.name}-stock-export.csv"
    course.nbgrader("export", f"--to={stock_csv}")
    after_first["stock_csv"] = stock_csv.read_text()

    # Between the runs: a grader overrides a score in the formgrader, and a
    # late student hands in.
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        gb.find_grade("test_score_gaps", ASSIGNMENT, ASSIGNMENT, "solution").manual_score = 1
        gb.db.commit()
    course.submit("late-student", ASSIGNMENT, fill_release(release, answers))

    second = make_grade(root, "FORCE=1")  # (without it the unchanged submissions would be skipped)
    assert second.returncode == 0, f"{second.stdout[-3000:]}\n{second.stderr[-3000:]}"
    return {"course": course, "root": root, "first": after_first, "second_stdout": second.stdout, "stock": stock}


def test_make_grade_scores_every_submission_as_stock_nbgrader_does(course):
    """course["stock"] is stock, sequential `nbgrader autograde` over the same submissions."""
    stock = course["stock"].scores(ASSIGNMENT)
    ours = course["first"]["scores"]
    assert ours, "nothing was graded"
    assert set(ours) == set(stock)
    for student, result in ours.items():
        assert result["cells"] == stock[student]["cells"], f"{student}: make grade and nbgrader autograde disagree"


def test_nbgrader_generate_feedback_on_its_own_writes_every_feedback(course):
    stock = course["stock"]
    for student in stock.scores(ASSIGNMENT):
        html = stock.root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        assert html.is_file(), f"{html} is missing"
        assert "BEGIN HIDDEN TESTS" not in html.read_text()


def test_assignment_variable_grades_only_that_assignment(course):
    assert course["first"]["other"] == {}
    assert set(course["course"].scores(OTHER)) == {"solution"}


def test_grades_csv_is_nbgraders_export(course):
    assert course["first"]["csv"] == course["first"]["stock_csv"]
    assert course["first"]["csv"].startswith("assignment,duedate,timestamp,student_id,")


def test_every_graded_submission_gets_feedback(course):
    root = course["root"]
    for student in course["course"].scores(ASSIGNMENT):
        assert (root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file(), student
        assert (root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), student


def test_regrading_keeps_manual_grades(course):
    from nbgrader.api import Gradebook

    with Gradebook(course["course"].db_url) as gb:
        grade = gb.find_grade("test_score_gaps", ASSIGNMENT, ASSIGNMENT, "solution")
        assert grade.manual_score == 1
        assert grade.auto_score == 4
        assert grade.score == 1


def test_regrading_changes_no_automatic_score_and_adds_new_submissions(course):
    before = course["first"]["scores"]
    after = course["course"].scores(ASSIGNMENT)
    assert set(after) == set(before) | {"late-student"}
    assert after["late-student"]["score"] == 10
    for student in before:
        if student != "solution":
            assert after[student] == before[student], f"{student}'s grades changed on regrading"


def test_gradebook_holds_one_submission_per_student_and_assignment(course):
    from nbgrader.api import Gradebook, SubmittedAssignment

    with Gradebook(course["course"].db_url) as gb:
        pairs = [(s.assignment.name, s.student.id) for s in gb.db.query(SubmittedAssignment)]
    assert len(pairs) == len(set(pairs)) == len(course["course"].scores(ASSIGNMENT)) + 1  # + ex01_again


def test_a_new_gradebook_gets_the_revision_nbgrader_would_give_it(tmp_path):
    """The course's tools stamp a new gradebook with nbgrader's migration head read in
    their own process (tools/nbgrader_patches.py, alembic_head_in_process): the revision
    nbgrader's own `alembic heads` subprocess gives, so that nbgrader's `db upgrade`
    finds a gradebook it knows."""
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini(f"sqlite:///{tmp_path / 'gradebook.db'}") as ini:
        printed = subprocess.run([str(BIN / "alembic"), "-c", ini, "heads"], capture_output=True, text=True,
                                 check=True).stdout
    assert alembic_head() == printed.split("\n")[0].split(" ")[0]
    course = Course(tmp_path / "course", [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    with sqlite3.connect(course.root / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(alembic_head(),)]
    upgraded = course.nbgrader("db", "upgrade")
    assert "Running upgrade" not in upgraded.stdout + upgraded.stderr


def test_cell_metadata_is_judged_as_nbgrader_judges_it():
    """make grade checks nbgrader's cell-metadata schema once per process (tools/nbgrader_patches.py,
    metadata_schema_checked_once): every cell of every solution and release passes as with stock nbgrader, and
    broken metadata fails with the same error, or the same too-old or too-new schema."""
    import copy

    from nbgrader.nbgraderformat import MetadataValidator, ValidationError, common
    from nbgrader.nbgraderformat.common import SchemaTooNewError, SchemaTooOldError

    cells = [c for a in assignments() for path in (SOLUTIONS / a / f"{a}.ipynb", EXERCISES / a / f"{a}.ipynb")
             for c in nbformat.read(path, as_version=4).cells]
    model = next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade"))
    broken = []
    for change in [{"points": "three"}, {"grade_id": 7}, {"solution": "yes"}, {"schema_version": 1},
                   {"schema_version": 9}, {"locked": None, "grade": 1}, {"points": -1, "checksum": "short"},
                   {"grade_id": "a b", "extra": True}]:
        cell = copy.deepcopy(model)
        cell.metadata.nbgrader.update(change)
        broken.append(cell)
    cell = copy.deepcopy(model)
    del cell.metadata.nbgrader["locked"]
    broken.append(cell)

    def verdicts(validate_cell):
        found = []
        for cell in cells + broken:
            try:
                validate_cell(MetadataValidator(), cell)
                found.append("valid")
            except (ValidationError, SchemaTooOldError, SchemaTooNewError) as error:
                found.append(f"{type(error).__name__}: {error}")
        return found

    metadata_schema_checked_once()
    once = common.BaseMetadataValidator.validate_cell
    stock = verdicts(once.stock)
    assert verdicts(once) == stock
    assert stock.count("valid") == len(cells), [v for v in stock if v != "valid"][:3]
    assert len(set(stock[len(cells):])) == len(broken), stock[len(cells):]
