"""Promise: a grader that is broken knows it, and says so instead of giving zeros.

Before it grades a student, `make grade` grades the instructor's solution of
every assignment it grades as a submission of its own, through the same
sandbox, warm template, nbgrader Autograde and verification
(tools/grading/self_check.py). Where it loses a point, nobody is graded: nothing is
written to the gradebook, the run names the assignment, the cell and the error,
and it exits with status 3. Shown here with a grading environment whose
`tools` (which the hidden tests import) the sandbox cannot see: the grader's
Python takes `tools` from a copy of the course under /tmp (a clone, say), whose
venv's own `tools` is a folder the sandbox does not mount.

Once the grader has proved itself, what remains is judged per submission:
a hidden test that stops at an import of the grader's own modules is NOT
GRADED (never a 0, and never a free pass: it is flagged for the instructor);
integrity.csv flags a grade that verification finds too high or too low; and
make grade's exit status is 1 whenever anything was flagged or not graded.
"""

import csv
import os
import re
import shutil
import subprocess
import types

import pytest

from tests.plugins.environment import require_sandbox
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS

ASSIGNMENT = "ex01_by_hand"  # the cheapest to grade: NumPy only
RELEASE = EXERCISES / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
ANSWERS = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")

# Right where verification runs it, wrong in the notebook's kernel (a real IPython
# kernel's shell): nbgrader gives fewer points than verification confirms.
WORSE_IN_THE_KERNEL = ANSWERS["scores_by_hand"] + """
try:
    if type(get_ipython()).__name__ == "ZMQInteractiveShell":
        scores_by_hand = scores_by_hand + 1
except NameError:
    pass
"""
# A student who breaks the hidden tests' import of the grader's module, hoping for NOT GRADED instead of 0.
BREAKS_THE_GRADERS_MODULE = ANSWERS["score_gaps"] + """
import sys
sys.modules["tools.verification.in_kernel"] = None
"""


def grade(root, *assignments, env=None, cwd=ROOT):
    proc = subprocess.run([str(BIN / "python"), "-m", "tools.grading", "--course", str(root), "--jobs", "2",
                           *assignments], cwd=cwd, env=env, text=True, capture_output=True, timeout=900)
    return proc


def said(proc):
    return f"make grade said (exit status {proc.returncode}):\n{proc.stdout[-5000:]}\n{proc.stderr[-3000:]}"


def course_of(root, submissions):
    course = Course(root, [ASSIGNMENT])
    for student, cells in submissions.items():
        course.submit(student, ASSIGNMENT, fill_release(RELEASE, {**ANSWERS, **cells}))
    return course


def integrity(root):
    with open(root / "integrity.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """One assignment graded by a grader whose `tools` the sandbox cannot import."""
    require_sandbox("the grader's self-check tests")
    root = tmp_path_factory.mktemp("broken-grader-course")
    # (no submission is the reference itself: the self-check grades one of its own)
    commented = {"score_gaps": ANSWERS["score_gaps"] + "\n# Checked on paper too.\n"}
    course = course_of(root, {"honest": commented, "blank": {name: "" for name in ANSWERS}})
    # Another copy of the course under /tmp, whose tools/ the grader's Python imports first and whose .venv is
    # this one: inside the sandbox (a /tmp of its own), that venv's `tools` is a folder nothing mounts.
    clone = tmp_path_factory.mktemp("clone")
    shutil.copytree(ROOT / "tools", clone / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(ROOT / ".venv", clone / ".venv")
    env = {**os.environ, "PYTHONPATH": str(clone)}
    proc = grade(root, ASSIGNMENT, env=env, cwd=clone)
    return {"proc": proc, "course": course, "root": root}


def test_a_broken_grader_grades_nobody_and_says_why(broken):
    proc = broken["proc"]
    assert proc.returncode == 3, said(proc)
    assert "NOBODY GRADED" in proc.stdout, said(proc)
    failed = [line for line in proc.stdout.splitlines() if line.strip().startswith(f"{ASSIGNMENT}: FAILED")]
    assert failed and "stood in" not in failed[0], said(proc)
    assert re.search(r"cell test_\w+ 0 / \d+ \(ModuleNotFoundError: No module named 'tools", failed[0]), said(proc)
    assert broken["course"].scores(ASSIGNMENT) == {}, "a student was graded by a grader that failed its self-check"
    for written in ("grades.csv", "integrity.csv", "autograded", "feedback"):
        assert not (broken["root"] / written).exists(), f"{written} was written: {said(proc)}"


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A working grader: the reference passes; one submission is graded lower
    in the notebook than verification confirms, one breaks the hidden tests'
    import of the grader's module."""
    require_sandbox("the grader's self-check tests")
    root = tmp_path_factory.mktemp("judged-course")
    course = course_of(root, {"honest": {}, "worse-in-the-kernel": {"scores_by_hand": WORSE_IN_THE_KERNEL},
                              "breaks-the-graders-module": {"score_gaps": BREAKS_THE_GRADERS_MODULE}})
    return {"proc": grade(root), "course": course, "root": root}


def test_the_self_check_passes_first_and_is_reported(judged):
    """Here "honest" submitted the reference notebook itself: it stands in for
    the reference (graded once), and is graded as a student's too."""
    out = judged["proc"].stdout
    assert re.search(rf"self-check: .*\(passed\):\n  {ASSIGNMENT}: full marks \([\d.]+ s; honest's identical "
                     rf"submission stood in\)", out), said(judged["proc"])
    assert out.index("self-check:") < out.index(f"{ASSIGNMENT}  honest: 10 / 10"), said(judged["proc"])


def test_a_grade_lower_than_verified_is_flagged(judged):
    rows = integrity(judged["root"])
    assert rows["honest"]["flagged"] == "no", rows["honest"]
    row = rows["worse-in-the-kernel"]
    assert (row["flagged"], row["nbgrader_score"], row["verified_score"]) == ("yes", "7", "10"), row
    assert "test_scores_by_hand: nbgrader 0, verified 3 (nbgrader gave fewer points" in row["reason"], row


def test_a_hidden_test_stopped_at_the_graders_module_is_not_graded_and_flagged(judged):
    proc = judged["proc"]
    line = next((line for line in proc.stdout.splitlines() if "breaks-the-graders-module: NOT GRADED" in line), "")
    assert "reason that is the grader's" in line and "tools.verification.in_kernel" in line, said(proc)
    assert "breaks-the-graders-module" not in judged["course"].scores(ASSIGNMENT), "it was given a grade"
    row = integrity(judged["root"])["breaks-the-graders-module"]
    assert row["flagged"] == "yes" and "not graded this run" in row["reason"], row


def test_make_grade_exits_non_zero_when_anything_needs_a_look(judged):
    proc = judged["proc"]
    assert proc.returncode == 1, said(proc)
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("make grade: ATTENTION: 1 not graded, 1 flagged, of 3 submission(s)"), said(proc)


@pytest.mark.parametrize("head, graders", [
    ("ModuleNotFoundError: No module named 'tools'", True),
    ("ModuleNotFoundError: No module named 'tools.verification'; 'tools' is not a package", True),
    ("ModuleNotFoundError: import of tools.verification.in_kernel halted; None in sys.modules", True),
    ("ImportError: cannot import name 'run_check' from 'tools.verification.in_kernel' (/x/in_kernel.py)", True),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/scratch/sentence.txt'", True),  # a file of the release
    ("ModuleNotFoundError: No module named 'helpers'", False),  # the student's own module
    ("ModuleNotFoundError: No module named 'toolsmith'", False),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'my_notes.txt'", False),
    ("AssertionError: No module named 'tools'", False),  # a failed check that merely says so
])
def test_only_the_graders_own_failures_are_the_graders(head, graders):
    from tools.grading.self_check import grader_failure

    found = grader_failure({"test_a": head, "solution_b": "ModuleNotFoundError: No module named 'tools'"},
                           ["test_a"], {"tools", "course_helpers"}, {"sentence.txt"})
    assert found == (f"cell test_a: {head}" if graders else ""), found


def test_only_the_reference_itself_alone_in_its_folder_stands_in_for_it(tmp_path):
    """A student's submission is graded in place of the reference only if it is
    the same notebook with nothing beside it but nbgrader's own files: a module
    of the student's next to it could change what the hidden tests import."""
    import nbformat

    from tools.course_settings import CourseSettings
    from tools.grading.self_check import same_as_reference, write_references

    reference = write_references(CourseSettings.read(ROOT).layout, [ASSIGNMENT], tmp_path / "references")[ASSIGNMENT]
    notebook = fill_release(RELEASE, ANSWERS)

    def submitted(name, nb=notebook, beside=()):
        folder = tmp_path / name
        folder.mkdir()
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
        for file in ("timestamp.txt", *beside):
            (folder / file).write_text("2026-01-01 00:00:00.000000 UTC\n")
        return folder

    assert same_as_reference(submitted("same"), reference)
    assert not same_as_reference(submitted("with-a-module", beside=["tools.py"]), reference)
    assert not same_as_reference(submitted("commented", fill_release(RELEASE, {**ANSWERS, "score_gaps": "# mine\n"
                                                                                + ANSWERS["score_gaps"]})), reference)
    linked = submitted("linked")
    (linked / f"{ASSIGNMENT}.ipynb").unlink()
    (linked / f"{ASSIGNMENT}.ipynb").symlink_to(reference / f"{ASSIGNMENT}.ipynb")
    assert not same_as_reference(linked, reference)


def timed_task(bundle, submission):
    """A stand-in for grade_task (tools/grading/task.py) in a local pool's worker: when it ran, by the machine's
    monotonic clock (the same in every process)."""
    import time

    began = time.monotonic()
    # (the second reference takes longer: without the hold, a student starts when the first one ends)
    time.sleep({"ex01_by_hand": 0.4, "ex02_softmax_masking": 0.8}[submission[0]] if submission[1] == "reference"
               else 0.05)
    return {"success": True, "log": "", "seconds": 0.0, "began": began, "ended": time.monotonic()}


@pytest.fixture
def timed_pool(tmp_path, monkeypatch):
    """grade_with_pool(jobs, todo, finished, hold) -> what it returned: the local pool's own loop, with two
    worker processes running timed_task, and none of grading's reading, writing or templates."""
    import multiprocessing

    from tools.grading import run, task

    monkeypatch.setattr(run, "_start_local_worker", lambda *args: None)
    monkeypatch.setattr(run, "submission_of", lambda layout, assignment, student, source: (assignment, student))
    monkeypatch.setattr(run, "unpacked", lambda layout, staging, assignment, student, result: (tmp_path, result))
    monkeypatch.setattr(task, "grade_task", timed_task)
    bundle = types.SimpleNamespace(preload=(), memory_bytes=0)

    def grade(todo, finished, hold):
        bundles = {assignment: bundle for assignment, _ in todo}
        return run.grade_with_pool(multiprocessing.get_context("fork"), 2, bundles, None, tmp_path, todo, 60,
                                   finished, hold=hold)

    return grade


@pytest.mark.parametrize("holding", [True, False], ids=["held-back", "not-held-back"])
def test_no_student_starts_before_the_self_check_has_passed(timed_pool, holding):
    """The pool grades the references alone: a student's submission starts only once every reference's result
    has arrived and passed, so that nothing a student's code does beside them (an endless loop, a fork bomb)
    slows the instructor's solution past a cell's time limit and fails the self-check for everyone. Without
    the hold (the second case) students start beside the references: what this test would see if it broke."""
    references = {("ex01_by_hand", "reference"), ("ex02_softmax_masking", "reference")}
    todo = sorted(references) + [("ex01_by_hand", f"student-{i}") for i in range(6)]
    results, passed = {}, []

    def arrived(assignment, student, private, result):
        results[assignment, student] = result
        if references <= set(results):
            passed.append(True)

    def hold(key):
        return holding and not passed and key not in references

    left = timed_pool(todo, arrived, hold)
    assert left == [] and set(results) == set(todo)
    last_reference = max(results[key]["ended"] for key in references)
    first_student = min(r["began"] for key, r in results.items() if key not in references)
    assert (first_student >= last_reference) == holding, (first_student, last_reference)


def test_what_is_held_back_with_nothing_left_to_run_is_handed_back(timed_pool):
    """If every key still waiting is held back and nothing runs (a reference's stand-in failed, and the
    reference itself is not queued yet), the pool returns them to the run, which queues the reference first."""
    todo = [("ex01_by_hand", "stand-in"), ("ex01_by_hand", "student-0"), ("ex01_by_hand", "student-1")]
    results = {}
    left = timed_pool(todo, lambda a, s, p, r: results.setdefault((a, s), r), lambda key: key[1].startswith("student"))
    assert set(results) == {("ex01_by_hand", "stand-in")}
    assert left == todo[1:]
