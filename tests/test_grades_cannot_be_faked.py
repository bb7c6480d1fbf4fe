"""Promise: grades that student code cannot fake.

nbgrader runs the hidden tests in the student's own Python process, so a
submission can defeat them: replace ``numpy.testing.assert_allclose`` or
``torch.testing.assert_close``, swallow exceptions, return objects that lie
when compared or converted, or memorise the answers. `make grade` therefore
verifies every submission outside its kernel (tools/verification/verify.py): the student's
solution cells run in a fresh sandboxed process, on inputs drawn afresh for
each run, and only plain numbers come back to be compared with the grader's
own references.

- Calibration: no honest submission is flagged. The solution, the untouched
  release and every realistic wrong answer of solutions/<assignment>/checks/wrong_implementations/
  get, in every test cell, at least the points nbgrader gave them.
- Attacks: every submission of solutions/<assignment>/checks/attacks/ (same format as the wrong
  implementations), graded by `make grade` together with honest ones
  (correct, partly wrong, blank, crashing), is flagged, or verification gives
  0 to the test cell after each cell it replaced. No honest submission is
  flagged, and every honest grade is what it is without the attackers.
- What crosses the sandbox is plain data: no pickle, no link, nothing
  oversized is read; no hidden test and no solution goes in.
"""

import csv
import io
import json
import os
import re
import shutil
import subprocess

import nbformat
import numpy as np
import pytest

from tests.plugins.environment import require_sandbox
from tests.plugins.selection import graded_assignments
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.leak_checks import hidden_lines
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import BIN, EXERCISES, SOLUTIONS, attacks, verification_spec, wrong_implementations
from tools.verification.probes import BadResult, ResultsFolder
from tools.sandbox.bubblewrap import SandboxUnavailable, check_available
from tools.verification.notebooks import source_steps, student_cells
from tools.verification.report import CSV_COLUMNS
from tools.verification.run import verify
from tools.verification.specs import load_spec, prepare, program

# `make check` runs this module after a change to an assignment (tests/make_check.py).
MAKE_CHECK = ("assignment",)

ATTACKS = [(a, path) for a in graded_assignments() for path in attacks(a)]
HONEST_KINDS = ("correct", "partly-wrong", "blank", "crashing", "own-cells")



def notebook(assignment):
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def attacked_cells(assignment, solution_ids):
    """The test cell that follows each replaced solution cell in the notebook."""
    steps, _, _ = source_steps(notebook(assignment))
    cells = set()
    for solution_id in solution_ids:
        index = next(i for i, s in enumerate(steps) if s.kind == "student" and s.name == solution_id)
        cells.add(next(s.name for s in steps[index:] if s.kind == "check"))
    return cells


# --- the checks match the notebooks --------------------------------------------


def test_a_check_judges_in_the_kernel_as_outside_it():
    """The hidden tests are the checks (tools/assignments/hidden_tests.py): run in a
    kernel's namespace by tools/verification/in_kernel.py, a check passes an
    honest answer and fails a wrong one with the judge's message, as an
    AssertionError that nbgrader scores and the feedback shows."""
    from tools.verification.in_kernel import run_check

    spec = load_spec("ex01_by_hand")
    ns = {}
    exec("import numpy as np\n"
         "def score_gaps(A, d_k):\n"
         "    return np.sqrt(d_k) * (np.log(A) - np.log(A[:, :1]))\n", ns)
    run_check("ex01_by_hand", "test_score_gaps", spec.CHECKS["test_score_gaps"], ns)
    exec("def score_gaps(A, d_k):\n"
         "    return np.sqrt(d_k) * (np.log(A) - np.log(A.max(axis=1, keepdims=True)))\n", ns)
    with pytest.raises(AssertionError, match="measure them from the row's first key"):
        run_check("ex01_by_hand", "test_score_gaps", spec.CHECKS["test_score_gaps"], ns)


@pytest.mark.parametrize("assignment", graded_assignments())
def test_every_graded_test_cell_has_a_check(assignment):
    spec = load_spec(assignment)
    assert spec is not None, f"{verification_spec(assignment)} is missing"
    _, points, _ = source_steps(notebook(assignment))
    assert list(spec.CHECKS) == list(points), "the checks must follow the notebook's test cells, in order"


PREPARED = {}


def prepared_once(assignment, seed, tmp_path_factory):
    """The verification of ``assignment`` prepared with ``seed``, once per session (ex06's takes seconds: it trains
    its reference models)."""
    if (assignment, seed) not in PREPARED:
        folder = tmp_path_factory.mktemp(f"prepared-{assignment}-{seed}")
        PREPARED[assignment, seed] = prepare(assignment, notebook(assignment), seed, folder)
    return PREPARED[assignment, seed]


@pytest.mark.parametrize("assignment", graded_assignments())
def test_no_hidden_test_or_solution_enters_the_sandbox(assignment, tmp_path_factory):
    """The program and inputs of an untouched release hold no line of the hidden tests or solutions."""
    prepared = prepared_once(assignment, 1, tmp_path_factory)
    release = EXERCISES / assignment / f"{assignment}.ipynb"
    cells, added = student_cells(release, prepared.solution_ids, [step.name for step in prepared.steps])
    assert set(cells) == set(prepared.solution_ids) and added, "the release's cells were not all found"
    sent = json.dumps(program(prepared, cells, added))
    leaked = [line for line in hidden_lines(notebook(assignment)) if line in sent]
    assert not leaked, f"the sandbox would see protected lines: {leaked[:3]}"


@pytest.mark.parametrize("assignment", graded_assignments())
def test_inputs_are_fresh_for_each_seed_and_repeatable(assignment, tmp_path, tmp_path_factory):
    def inputs(prepared):
        return {p.name: np.load(p) for p in sorted(prepared.inputs.glob("*.npy"))}

    first = inputs(prepared_once(assignment, 1, tmp_path_factory))
    again = inputs(prepare(assignment, notebook(assignment), 1, tmp_path / "again"))  # prepared anew: repeatable
    other = inputs(prepared_once(assignment, 2, tmp_path_factory))
    assert first.keys() == again.keys() and all(np.array_equal(first[k], again[k]) for k in first)
    assert any(not np.array_equal(first[k], other[k]) for k in first if first[k].dtype.kind == "f")


# --- what comes back is read as plain data ---------------------------------------


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    return folder


def test_results_refuse_pickles(results):
    np.save(results / "step-0-0.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with ResultsFolder(results) as folder, pytest.raises(BadResult, match="not a valid .npy"):
        folder.array("step-0-0.npy")


def test_results_refuse_links_and_odd_names(results, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"probes": []}')
    (results / "step-0.json").symlink_to(secret)
    os.mkfifo(results / "step-1.json")
    with ResultsFolder(results) as folder:
        with pytest.raises(BadResult):
            folder.step(0)
        with pytest.raises(BadResult, match="not a regular file"):
            folder.step(1)
        with pytest.raises(BadResult, match="bad array file name"):
            folder.array("../secret.npy")


def test_results_refuse_oversized_files(results):
    with open(results / "step-0.json", "wb") as f:
        f.truncate(64 * 1024**2)
    with ResultsFolder(results) as folder, pytest.raises(BadResult, match="more than the limit"):
        folder.step(0)


def test_results_refuse_arrays_of_other_dtypes(results):
    np.save(results / "step-0-0.npy", np.array(["text"]))
    with ResultsFolder(results) as folder, pytest.raises(BadResult, match="dtype"):
        folder.array("step-0-0.npy")


def test_integrity_csv_keeps_no_earlier_row_of_what_a_run_covered(tmp_path):
    """A run's rows name its seed and run; an earlier row (of the old columns too) stays only for a submission the
    run did not cover: not for one it verified, nor for one it graded without verifying (then it has no row)."""
    from tools.verification.judging import CellVerdict, Verdict
    from tools.verification.report import EARLIER_COLUMNS, forget_rows, write_csv

    path = tmp_path / "integrity.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=EARLIER_COLUMNS)
        writer.writeheader()
        for student in ("verified-again", "graded-again", "not-graded-now"):
            writer.writerow({"assignment": "ex01_by_hand", "student_id": student, "nbgrader_score": "10",
                             "verified_score": "6", "max_score": "10", "flagged": "yes", "reason": "old"})
    verdict = Verdict("ex01_by_hand", "verified-again", 10.0, cells=[CellVerdict("test_a", 10.0, 10.0, 10.0)])
    write_csv(path, [verdict], seed=7, run="run-2",
              covered=[("ex01_by_hand", "verified-again"), ("ex01_by_hand", "graded-again")])
    rows = integrity_rows(path)
    assert set(rows) == {("ex01_by_hand", "verified-again"), ("ex01_by_hand", "not-graded-now")}
    assert rows["ex01_by_hand", "verified-again"] == {
        "assignment": "ex01_by_hand", "student_id": "verified-again", "nbgrader_score": "10", "verified_score": "10",
        "max_score": "10", "flagged": "no", "reason": "", "seed": "7", "run": "run-2"}
    assert rows["ex01_by_hand", "not-graded-now"]["reason"] == "old"
    assert (rows["ex01_by_hand", "not-graded-now"]["seed"], rows["ex01_by_hand", "not-graded-now"]["run"]) == ("", "")
    # A later run that covers it replaces it; nothing else changes.
    write_csv(path, [], seed=8, run="run-3", covered=[("ex01_by_hand", "not-graded-now")])
    assert set(integrity_rows(path)) == {("ex01_by_hand", "verified-again")}
    # A run that grades without verifying (GRADING_VERIFY=off) leaves no earlier row of what it graded either.
    out = io.StringIO()
    assert forget_rows(tmp_path, [("ex01_by_hand", "verified-again"), ("ex02_softmax_masking", "x")], out) == 1
    assert integrity_rows(path) == {} and "1 row(s) of earlier runs removed" in out.getvalue()
    assert forget_rows(tmp_path / "elsewhere", [("ex01_by_hand", "verified-again")], out) == 0  # (no file: none made)
    assert not (tmp_path / "elsewhere").exists()



def test_causes_csv_keeps_the_cells_of_what_a_run_did_not_cover(tmp_path):
    """causes.csv, merged as integrity.csv is: a run's cells replace every earlier cell of the submissions it
    verified or covered (a cell it no longer has included); a submission NOT GRADED this run keeps its old cells."""
    from tools.verification.judging import CellVerdict, Verdict
    from tools.verification.report import CAUSES_CSV, forget_rows, write_causes

    path = tmp_path / CAUSES_CSV

    def cells():
        with open(path, newline="") as f:
            return {(r["student_id"], r["grade_id"]): r["cause"] for r in csv.DictReader(f)}

    old = [Verdict("ex01_by_hand", student, 10.0, cells=[CellVerdict(cell, 5.0, 0.0, 5.0, cause="old")
                                                       for cell in ("test_a", "test_b")])
           for student in ("again", "kept", "failed-now")]
    write_causes(path, old)
    assert len(cells()) == 6
    new = Verdict("ex01_by_hand", "again", 10.0, cells=[CellVerdict("test_a", 5.0, 5.0, 5.0)])
    failed = Verdict("ex01_by_hand", "failed-now", None, not_graded="its worker died")
    write_causes(path, [new, failed])
    assert cells() == {("again", "test_a"): "", ("kept", "test_a"): "old", ("kept", "test_b"): "old",
                       ("failed-now", "test_a"): "old", ("failed-now", "test_b"): "old"}
    (tmp_path / "integrity.csv").write_text("assignment,student_id\n")
    forget_rows(tmp_path, [("ex01_by_hand", "kept")], io.StringIO())
    assert set(cells()) == {("again", "test_a"), ("failed-now", "test_a"), ("failed-now", "test_b")}

# --- calibration: honest code is never flagged -----------------------------------


@pytest.mark.parametrize("assignment", graded_assignments())
def test_no_honest_submission_is_flagged(graded, assignment):
    """The solution, the untouched release and every wrong implementation, as
    graded by make grade (the `graded` fixture), verified with that run's
    fresh seed."""
    require_sandbox("the integrity tests")
    result = graded(assignment)
    seed = re.search(r"VERIFY_SEED=(\d+)", result.out).group(1)
    rows = result.integrity
    assert set(rows) == set(result.scores), result.out[-3000:]
    stricter = {student: row["reason"] for student, row in rows.items() if row["flagged"] != "no"}
    assert not stricter, f"verification is stricter than the hidden tests (VERIFY_SEED={seed}): {stricter}"
    # Not flagged: no cell verified below nbgrader. Nor above: the checks ask what the visible tests ask too.
    laxer = {student: (row["nbgrader_score"], row["verified_score"]) for student, row in rows.items()
             if float(row["verified_score"]) > float(row["nbgrader_score"])}
    assert not laxer, f"verification grants more than nbgrader (VERIFY_SEED={seed}): {laxer}"
    assert rows["solution"]["verified_score"] == rows["solution"]["max_score"], rows["solution"]
    assert rows["untouched-release"]["verified_score"] == "0", rows["untouched-release"]


# --- attacks, graded by make grade next to honest submissions --------------------


def honest_submissions(assignment):
    """{student: notebook}: correct, partly wrong, blank, crashing, and correct
    with an answer in a cell of the student's own."""
    release = EXERCISES / assignment / f"{assignment}.ipynb"
    answers = solution_code(notebook(assignment))
    wrong = read_wrong_implementation(wrong_implementations(assignment)[0])[1]
    ids = list(answers)
    crashing = dict(answers)
    crashing[ids[1]] = "answer = undefined_name + 1\n" + answers[ids[1]]  # a NameError at the top of a cell
    crashing[ids[-1]] = "import os\nos._exit(3)\n"  # the notebook's Python process dies here
    # Correct, but the last answer is written in a cell the student added above
    # its solution cell, which only says so: nbgrader runs both.
    own_cells = fill_release(release, {**answers, ids[-1]: "# My answer is in the cell above.\n"})
    index = next(i for i, cell in enumerate(own_cells.cells)
                 if cell.metadata.get("nbgrader", {}).get("grade_id") == ids[-1])
    own_cells.cells.insert(index, nbformat.v4.new_code_cell(answers[ids[-1]], id="my-own-answer"))
    return {
        "own-cells": own_cells,
        "correct": fill_release(release, answers),
        "partly-wrong": fill_release(release, {**answers, **wrong}),
        "blank": nbformat.read(release, as_version=4),
        "crashing": fill_release(release, crashing),
    }


def attack_name(path):
    return "attack-" + path.stem.replace("_", "-")


def grade_course(root, verify_too=True):
    """A course of every assignment's honest submissions graded by make grade's
    entry point; returns what it printed, the scores and integrity.csv's rows."""
    from tools.grading.run import grade

    course = Course(root, graded_assignments())
    for assignment in graded_assignments():
        for kind, nb in honest_submissions(assignment).items():
            course.submit(f"{assignment[:4]}-{kind}", assignment, nb)
    out = io.StringIO()
    environ = dict(os.environ)
    if not verify_too:
        os.environ["GRADING_VERIFY"] = "off"
    try:
        failures = grade(root, jobs=None, out=out)
    finally:
        os.environ.clear()
        os.environ.update(environ)
    rows = {}
    if (root / "integrity.csv").is_file():
        with open(root / "integrity.csv", newline="") as f:
            reader = csv.DictReader(f)
            assert reader.fieldnames == CSV_COLUMNS
            rows = {(r["assignment"], r["student_id"]): r for r in reader}
    scores = {a: course.scores(a) for a in graded_assignments()}
    return {"course": course, "out": out.getvalue(), "failures": failures, "scores": scores, "rows": rows}


def GUEST_SUBMISSIONS(assignment):
    """The honest submissions and the attacks of ``assignment``, graded in the
    shared `make grade` run (tests/plugins/shared_grading_run.py) next to every other submission."""
    try:
        check_available()
    except SandboxUnavailable:
        return {}  # the attack tests skip: they need the sandbox
    guests = {f"{assignment[:4]}-{kind}": nb for kind, nb in honest_submissions(assignment).items()}
    release = EXERCISES / assignment / f"{assignment}.ipynb"
    answers = solution_code(notebook(assignment))
    for a, path in ATTACKS:
        if a == assignment:
            cells = read_wrong_implementation(path)[1]
            guests[attack_name(path)] = fill_release(release, {**answers, **cells})
    return guests


@pytest.fixture(scope="module")
def attacked(graded_course):
    """The shared graded course, where the attacks were graded next to the
    honest submissions of every assignment and every other submission."""
    require_sandbox("the integrity tests")
    whole = graded_course()
    with open(whole.course.root / "integrity.csv", newline="") as f:
        assert csv.DictReader(f).fieldnames == CSV_COLUMNS
    rows = {(r["assignment"], r["student_id"]): r for r in whole.integrity}
    scores = {a: whole.course.scores(a) for a in graded_assignments()}
    # make grade said no submission failed to grade (GradedCourse checks its last line and exit status).
    return {"course": whole.course, "out": whole.out, "failures": 0, "scores": scores, "rows": rows}


@pytest.fixture(scope="module")
def honest_alone(tmp_path_factory):
    require_sandbox("the integrity tests")
    return grade_course(tmp_path_factory.mktemp("integrity-honest"), verify_too=False)


def test_make_grade_verifies_every_submission(attacked):
    assert attacked["failures"] == 0, attacked["out"]
    graded = {(a, s) for a, scores in attacked["scores"].items() for s in scores}
    assert set(attacked["rows"]) == graded, attacked["out"]
    assert "VERIFY_SEED=" in attacked["out"]


def taken_back(row) -> bool:
    """Whether verification flagged the row for points nbgrader gave and it could not confirm."""
    return row["flagged"] == "yes" and float(row["verified_score"]) < float(row["nbgrader_score"])


@pytest.fixture(scope="module")
def reverified(attacked, tmp_path_factory):
    """{(assignment, student): Verdict}: the run's verification repeated, with its
    logged seed, for every attack whose points it did not take back (in one
    verify run, on a copy of the course)."""
    todo = [(a, attack_name(path)) for a, path in ATTACKS if not taken_back(attacked["rows"][(a, attack_name(path))])]
    if not todo:
        return {}
    seed = re.search(r"VERIFY_SEED=(\d+)", attacked["out"]).group(1)
    copy = tmp_path_factory.mktemp("reverified") / "course"
    shutil.copytree(attacked["course"].root, copy, ignore=shutil.ignore_patterns("autograded", "feedback"))
    return {(v.assignment, v.student): v for v in verify(copy, todo=todo, seed=seed, out=io.StringIO())}


@pytest.mark.parametrize("assignment, path", ATTACKS, ids=[f"{a}-{p.stem}" for a, p in ATTACKS])
def test_attack_is_flagged_or_scores_nothing(attacked, reverified, assignment, path):
    description, cells = read_wrong_implementation(path)
    student = attack_name(path)
    row = attacked["rows"][(assignment, student)]
    if taken_back(row):
        assert row["reason"], row
        return
    targets = attacked_cells(assignment, cells)
    # Not flagged for points verification took back (a flag for points nbgrader withheld, where an attack broke
    # the notebook's own test of another cell, says nothing of the attack): verification itself must give the
    # attacked cells nothing.
    verdict = reverified[assignment, student]
    assert f"{verdict.verified_score:g}" == row["verified_score"], "the logged seed does not repeat the run"
    earned = {c.grade_id: c.verified for c in verdict.cells if c.grade_id in targets and c.verified > 0}
    assert not earned, f"'{description}' earned verified points on {earned} and was not flagged: {row}"


def test_no_honest_submission_is_flagged_next_to_attackers(attacked):
    # (test_feedback_hides_hidden_tests.py's "echo" student hooks into IPython, which verification
    # does not run: not an honest submission either.)
    flagged = {key: row["reason"] for key, row in attacked["rows"].items()
               if not key[1].startswith("attack-") and key[1] != "echo" and row["flagged"] != "no"}
    assert not flagged, flagged


def integrity_rows(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == CSV_COLUMNS
        return {(r["assignment"], r["student_id"]): r for r in reader}


def test_a_flag_is_repeated_from_its_row(attacked, tmp_path):
    """Each row of integrity.csv names the seed and the run it came from (this run's, every row: the course was
    graded once); the run's log, beside it, holds what make grade printed after the settings it graded with; and
    the command instructor/integrity.md gives repeats a flagged row from its seed: the same flag, for the same
    reason (which quotes the inputs drawn from the seed), on a copy of the course."""
    rows = attacked["rows"]
    started = re.search(r"^run (\S+); what follows is kept in (.+)$", attacked["out"], re.MULTILINE)
    assert started, attacked["out"][:3000]
    run = started.group(1)
    seed = re.search(r"with seed (\d+) \(VERIFY_SEED=", attacked["out"]).group(1)
    assert {(row["seed"], row["run"]) for row in rows.values()} == {(seed, run)}
    root = attacked["course"].root
    log = root / "grading-logs" / f"{run}.log"
    assert started.group(2) == str(log) and log.is_file()
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[1].startswith(f"settings of {root / 'nbgrader_config.py'}: cell 30 s, notebook 300 s"), lines[:3]
    printed = set(attacked["out"].splitlines())
    assert all(line in printed for line in lines[2:]), "the log holds lines make grade did not print"
    for wanted in (f"with seed {seed} ", "make grade: ATTENTION: "):
        assert any(wanted in line for line in lines), f"the log lacks {wanted!r}"
    # A flag for points verification took back (a flag for points nbgrader withheld quotes nbgrader's error,
    # which only make grade reads).
    key = min(key for key, row in rows.items() if key[1].startswith("attack-") and taken_back(row)
              and "gave fewer points" not in row["reason"])
    copy = tmp_path / "course"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("autograded", "feedback", "grading-logs"))
    assignment, student = key
    environ = {name: value for name, value in os.environ.items() if name != "VERIFY_SEED"}
    # instructor/integrity.md, "To look again at a flagged submission": the command, with the row's seed.
    proc = subprocess.run([str(BIN / "python"), "-m", "tools.verification.verify", assignment,
                           "--student", student, "--seed", rows[key]["seed"], "--course", "."],
                          cwd=copy, env=environ, text=True, capture_output=True, timeout=600)
    assert proc.returncode == 1, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    again = integrity_rows(copy / "integrity.csv")
    assert again[key]["run"] != run
    assert {k: v for k, v in again[key].items() if k != "run"} == {k: v for k, v in rows[key].items() if k != "run"}
    # Only that submission was verified again: every other row is the run's, as it was.
    assert {k: r for k, r in again.items() if k != key} == {k: r for k, r in rows.items() if k != key}


def test_honest_grades_are_the_same_without_attackers(attacked, honest_alone):
    assert honest_alone["failures"] == 0, honest_alone["out"]
    for assignment, scores in honest_alone["scores"].items():
        for student, result in scores.items():
            assert attacked["scores"][assignment][student]["cells"] == result["cells"], (
                f"{assignment} {student}: the attackers changed this grade"
            )
    assert any(row["verified_score"] != "0" for key, row in attacked["rows"].items() if "correct" in key[1])


def test_crashing_submission_keeps_the_points_before_the_crash(attacked):
    for assignment in graded_assignments():
        row = attacked["rows"][(assignment, f"{assignment[:4]}-crashing")]
        assert float(row["nbgrader_score"]) > 0 and row["flagged"] == "no", row
        assert float(row["verified_score"]) >= float(row["nbgrader_score"]), row


def test_attacks_leave_other_students_files_alone(attacked):
    root = attacked["course"].root
    for assignment in graded_assignments():
        for kind, nb in honest_submissions(assignment).items():
            path = root / "submitted" / f"{assignment[:4]}-{kind}" / assignment / f"{assignment}.ipynb"
            assert nbformat.read(path, as_version=4).cells == nb.cells, f"{path} was changed"
            feedback = root / "feedback" / f"{assignment[:4]}-{kind}" / assignment / f"{assignment}.html"
            assert feedback.is_file(), f"{feedback} is missing"


def test_make_grade_lists_flagged_submissions(attacked):
    flagged = [key for key, row in attacked["rows"].items() if row["flagged"] == "yes"]
    assert flagged, "no attack was flagged"
    table = attacked["out"].split("FLAGGED", 1)[-1]
    for assignment, student in flagged:
        assert re.search(rf"{re.escape(assignment)}\s+{re.escape(student)}\s", table), (assignment, student)


def test_answers_in_cells_of_the_students_own_are_verified(attacked):
    """Verification runs the cells a student added, as nbgrader does."""
    for assignment in graded_assignments():
        row = attacked["rows"][(assignment, f"{assignment[:4]}-own-cells")]
        assert row["nbgrader_score"] == row["max_score"], row
        assert row["verified_score"] == row["max_score"] and row["flagged"] == "no", row
