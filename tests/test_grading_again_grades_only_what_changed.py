"""Promise: running make grade again grades only what is missing or changed.

A submission is graded from its files, its assignment (source folder, hidden
tests, verification's checks, what the gradebook recorded of it) and the
grading configuration (tools/grading/graded_from.py); each merged result's key
is kept in graded-from.csv. A course of three students is graded; graded again
at once, nobody is graded and not a byte of the gradebook, grades.csv,
integrity.csv, causes.csv, autograded/ or feedback/ changes; one student hands
in again, and only that student is graded while everything of the others stays
as it was; the assignment's checks change, and every student is graded again.
That last run goes through a Dask scheduler (`dask scheduler` and `dask worker`
started as programs) that is killed as soon as one student's result is merged:
the run stops (exit status 4), keeps and records what it merged with its
integrity.csv rows, and the next run grades only the rest. ``FORCE=1``
(``--all``) grades everything again.
"""

import csv
import hashlib
import io
import re
import sqlite3
import subprocess

import pytest

from tests.plugins.dask_programs import DaskPrograms
from tests.plugins.environment import require_sandbox
from tests.test_grader_proves_itself_first import ANSWERS, RELEASE, course_of
from tools.assignments.answers import fill_release
from tools.paths import BIN, ROOT

ASSIGNMENT = "ex01_by_hand"
WRONG = {"scores_by_hand": ANSWERS["scores_by_hand"] + "\nscores_by_hand = scores_by_hand * 2\n"}
STUDENTS = {"alice": {}, "bob": WRONG, "carol": {}}
WRITTEN = ("gradebook.db", "grades.csv", "integrity.csv", "causes.csv", "graded-from.csv")


def files_of(root) -> dict:
    """Every file grading writes in the course folder, by hash (the logs aside: each run keeps its own)."""
    found = {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in WRITTEN if (root / name).exists()}
    for kind in ("autograded", "feedback"):
        for path in sorted((root / kind).rglob("*")):
            if path.is_file():
                found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def results_of(root, student) -> dict:
    """Everything of one student's result: gradebook rows, grades.csv, integrity.csv and causes.csv rows, files."""
    db = sqlite3.connect(root / "gradebook.db")
    try:
        grades = sorted(db.execute(
            "SELECT c.name, g.auto_score, g.manual_score, g.needs_manual_grade FROM grade g "
            "JOIN submitted_notebook sn ON g.notebook_id = sn.id "
            "JOIN submitted_assignment sa ON sn.assignment_id = sa.id "
            "JOIN base_cell c ON g.cell_id = c.id WHERE sa.student_id = ?", (student,)).fetchall())
    finally:
        db.close()
    left = {"gradebook": grades}
    for name in ("grades.csv", "integrity.csv", "causes.csv"):
        with open(root / name, newline="") as f:
            left[name] = [row for row in csv.DictReader(f) if row.get("student_id") == student]
    left["files"] = {k: v for k, v in files_of(root).items() if f"/{student}/" in f"/{k}"}
    return left


def graded_in(out: str) -> list:
    """The students a run printed a result of (graded or NOT GRADED)."""
    return sorted(re.findall(rf"^  {ASSIGNMENT}  (\S+): ", out, re.MULTILINE))


def grade_here(root):
    from tools.grading.run import grade

    out = io.StringIO()
    status = grade(root, [ASSIGNMENT], jobs=2, out=out)
    return status, out.getvalue()


def stopped_midway(root):
    """make grade through a Dask scheduler (a program of its own, with one
    worker) that is killed once the first student's result is merged; what it printed and its exit status."""
    cluster = DaskPrograms(workers=1)
    lines = []
    try:
        graded = subprocess.Popen([str(BIN / "python"), "-m", "tools.grading", "--course", str(root),
                                   "--scheduler", cluster.address, ASSIGNMENT], cwd=ROOT, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        for line in graded.stdout:
            lines.append(line)
            if graded_in(line) and cluster.scheduler.poll() is None:
                cluster.scheduler.kill()  # the scheduler goes away, by its process id
        graded.wait(timeout=600)
    finally:
        cluster.stop()
    return graded.returncode, "".join(lines)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_sandbox("the tests of grading again")
    root = tmp_path_factory.mktemp("grading-again")
    course = course_of(root, STUDENTS)
    found = {}
    found["first"] = grade_here(root)
    found["first files"] = files_of(root)
    found["first results"] = {student: results_of(root, student) for student in STUDENTS}
    found["again"] = grade_here(root)
    found["again files"] = files_of(root)
    # bob hands in again: the answers of the others
    course.submit("bob", ASSIGNMENT, fill_release(RELEASE, ANSWERS))
    found["bob"] = grade_here(root)
    found["bob results"] = {student: results_of(root, student) for student in STUDENTS}
    # The assignment's checks change (a comment is enough: their file is what grading reads), then the run that
    # grades them again is stopped midway, and run once more.
    checks = root / "solutions" / ASSIGNMENT / "checks" / "verification.py"
    checks.write_text(checks.read_text() + "\n# Checked again for the second term.\n")
    found["stopped"] = stopped_midway(root)
    found["stopped integrity"] = {row["student_id"]: row for row in csv.DictReader(open(root / "integrity.csv"))}
    found["rest"] = grade_here(root)
    forced = subprocess.run([str(BIN / "python"), "-m", "tools.grading", "--course", str(root), "--jobs", "2",
                             "--all", ASSIGNMENT], cwd=ROOT, text=True, capture_output=True, timeout=900)
    found["forced"] = forced.returncode, forced.stdout + forced.stderr
    return found


def test_grading_again_at_once_grades_nobody_and_changes_nothing(runs):
    status, out = runs["again"]
    assert graded_in(runs["first"][1]) == sorted(STUDENTS), runs["first"][1][-3000:]
    assert graded_in(out) == [], out[-3000:]
    assert "3 submission(s) unchanged since they were graded, skipped" in out, out[-3000:]
    assert runs["again files"] == runs["first files"]
    # (bob's wrong answer is flagged by nobody: the same exit status as the run that graded it)
    assert status == runs["first"][0] == 0, out[-3000:]


def test_a_submission_handed_in_again_is_the_only_one_graded(runs):
    status, out = runs["bob"]
    assert graded_in(out) == ["bob"], out[-3000:]
    assert "2 submission(s) unchanged since they were graded, skipped" in out, out[-3000:]
    for student in ("alice", "carol"):  # exactly as they were: rows, run ids, files
        assert runs["bob results"][student] == runs["first results"][student], student
    assert runs["bob results"]["bob"]["gradebook"] != runs["first results"]["bob"]["gradebook"]


def test_changed_checks_grade_everyone_again_and_a_stopped_run_is_finished_by_the_next(runs):
    status, out = runs["stopped"]
    assert status == 4 and "make grade: STOPPED: the Dask scheduler" in out, out[-3000:]
    merged = graded_in(out)
    assert merged and len(merged) < len(STUDENTS), f"the scheduler was not stopped midway:\n{out[-3000:]}"
    run = re.search(r"^run (\S+);", out, re.MULTILINE).group(1)
    for student in merged:  # what it merged has its integrity.csv row of this run
        assert runs["stopped integrity"][student]["run"] == run, runs["stopped integrity"]
    status, out = runs["rest"]
    assert graded_in(out) == sorted(set(STUDENTS) - set(merged)), out[-3000:]
    assert f"{len(merged)} submission(s) unchanged since they were graded, skipped" in out, out[-3000:]
    assert status == 0, out[-3000:]


def test_force_grades_everything_again(runs):
    status, out = runs["forced"]
    assert status == 0 and graded_in(out) == sorted(STUDENTS) and "skipped" not in out, out[-3000:]
    make = subprocess.run(["make", "-n", "--no-print-directory", "grade", "FORCE=1", "COURSE=/nowhere"], cwd=ROOT,
                          text=True, capture_output=True)
    assert " --all " in make.stdout, make.stdout
