"""Promise: grading works by the settings of the course it grades.

`make grade COURSE=<folder>` reads that folder's nbgrader_config.py once
(tools/course_settings.py) and hands the same numbers to every part of the run:
the notebook's sandbox, the time each submission may take, and verification,
whose checks may be sized by them. ex07's check that ``padded_tiled_attention`` never
builds the score matrix gives it a sequence whose (T, T) float64 scores alone
exceed the sandbox's memory: with a course that raises that memory, the
sequence grows with it, or the check would no longer prove what
instructor/protections.md says.
"""

import csv
import subprocess

import pytest

from tests.conftest import require_sandbox
from tools.course_settings import CourseSettings, VerificationLimits
from tools.grading.run import NEEDS_A_LOOK
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import BIN, ROOT, SOLUTIONS, checks_folder

ASSIGNMENT = "ex07_efficient_attention"
MEMORY_CHECK = "test_padded_tiled_attention_memory"
RAISED = 8 * 1024**3  # the memory per process of the course below: 4 times this repository's
ATTACK = checks_folder(ASSIGNMENT) / "attacks" / "disable_op_recorder.py"


def course_with_memory(root, memory_bytes):
    """A course folder with ex07 and ``memory_bytes`` per sandboxed process."""
    course = Course(root, [ASSIGNMENT])
    config = root / "nbgrader_config.py"
    config.write_text(config.read_text() + f"\nc.SandboxedKernelManager.memory_bytes = {memory_bytes}\n")
    return course


def longest_input_rows(settings):
    """The number of tokens of the longest sequence ex07's memory check sends."""
    from tools.verification.probes import Plan
    from tools.verification.notebooks import source_steps
    from tools.verification.specs import load_spec

    steps, _, _ = source_steps(settings.layout.source_notebook(ASSIGNMENT))
    plan = Plan(ASSIGNMENT, 1, [s.code for s in steps if s.kind == "trusted"], settings.verification)
    plan.add_check(MEMORY_CHECK, load_spec(ASSIGNMENT).CHECKS[MEMORY_CHECK])
    return max(array.shape[-2] for array in plan.inputs.values() if array.ndim >= 2)


def test_settings_are_the_courses_own(tmp_path):
    settings = CourseSettings.read(ROOT)
    assert settings.verification == VerificationLimits(step_seconds=60.0, run_seconds=600.0, cpu_seconds=240,
                                                       memory_bytes=2 * 1024**3)
    course_with_memory(tmp_path, RAISED)
    raised = CourseSettings.read(tmp_path)
    assert raised.memory_bytes == raised.verification.memory_bytes == RAISED
    assert raised.layout.root == tmp_path.absolute()


@pytest.mark.parametrize("memory", [2 * 1024**3, RAISED])
def test_the_long_sequence_outgrows_the_courses_memory(tmp_path, memory):
    course_with_memory(tmp_path, memory)
    T = longest_input_rows(CourseSettings.read(tmp_path))
    assert T * T * 8 > memory, f"a ({T}, {T}) float64 matrix fits in the course's {memory} bytes"
    assert (T - 300) ** 2 * 8 <= memory, f"T = {T} is far longer than the course's memory calls for"


def test_make_grade_sizes_the_check_for_a_course_elsewhere(tmp_path):
    """A course folder outside the repository, with 8 GiB per process: an
    answer that hides a whole score matrix from the notebook's OpRecorder
    gets the notebook's points, and verification, sized for 8 GiB, takes
    them back (sized for the repository's 2 GiB, its 2.2 GB matrices fit and
    it would pass). The honest answer is confirmed in full."""
    require_sandbox("the course settings test")
    root = tmp_path / "course"
    course = course_with_memory(root, RAISED)
    release = course.generate(ASSIGNMENT)
    answers = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    course.submit("honest", ASSIGNMENT, fill_release(release, answers))
    attack = read_wrong_implementation(ATTACK)[1]
    course.submit("hides-its-matrix", ASSIGNMENT, fill_release(release, {**answers, **attack}))
    proc = subprocess.run([str(BIN / "python"), "-m", "tools.grading", "--course", str(root)],
                          cwd=tmp_path, text=True, capture_output=True, timeout=900)
    # The attack is flagged: make grade says so on its last line and with its exit status.
    assert proc.returncode == NEEDS_A_LOOK, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "make grade: ATTENTION: 0 not graded, 1 flagged" in proc.stdout, proc.stdout[-3000:]
    scores = course.scores(ASSIGNMENT)
    rows = {row["student_id"]: row for row in csv.DictReader(open(root / "integrity.csv", newline=""))}
    honest = rows["honest"]
    assert honest["flagged"] == "no" and float(honest["verified_score"]) == scores["honest"]["max_score"], honest
    attacked = rows["hides-its-matrix"]
    assert scores["hides-its-matrix"]["cells"][MEMORY_CHECK] > 0, "the notebook's tests should not see this attack"
    assert attacked["flagged"] == "yes" and MEMORY_CHECK in attacked["reason"], attacked


def test_a_setting_that_is_not_a_number_is_named(tmp_path):
    course_with_memory(tmp_path, RAISED)
    config = tmp_path / "nbgrader_config.py"
    config.write_text(config.read_text() + "\nc.SandboxedKernelManager.cpu_seconds = '120'\n")
    with pytest.raises(SystemExit, match=r"c\.SandboxedKernelManager\.cpu_seconds must be a positive number, not '120'"):
        CourseSettings.read(tmp_path)
    config.write_text(config.read_text() + "\nc.SandboxedKernelManager.cpu_seconds = 60\nc.Execute.timeout = None\n")
    assert CourseSettings.read(tmp_path).verification.step_seconds == 60.0  # no cell limit: verification's own
