"""Promise: grading works by the settings of the course it grades.

`make grade COURSE=<folder>` reads that folder's nbgrader_config.py once
(tools/course_settings.py) and hands the same numbers to every part of the run:
the notebook's sandbox, the time each submission may take, and verification,
whose checks may be sized by them. ex07's check that ``padded_tiled_attention`` never
builds the score matrix gives it a sequence whose (T, T) float64 scores alone
exceed the sandbox's memory: with a course that raises that memory, the
sequence grows with it, or the check would no longer prove what
instructor/protections.md says.

The switches of a run that the environment may flip (GRADING_SANDBOX,
GRADING_WARM, GRADING_VERIFY, VERIFY_SEED) arrive as settings too, read by one
reader (tools/course_settings.py, Switches) and by no other module; and a
grading worker is handed the configuration the run read instead of running
nbgrader_config.py again for each submission.
"""

import csv
import multiprocessing
import re
import shutil
import subprocess
from concurrent.futures import ProcessPoolExecutor

import pytest

from tests.plugins.environment import require_sandbox
from tools.course_settings import CourseSettings, VerificationLimits
from tools.grading.run import NEEDS_A_LOOK
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS, checks_folder

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


SWITCHES = ("GRADING_SANDBOX", "GRADING_WARM", "GRADING_VERIFY", "VERIFY_SEED")


def test_the_environments_switches_arrive_as_settings(tmp_path, monkeypatch):
    course_with_memory(tmp_path, RAISED)
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    plain = CourseSettings.read(tmp_path)
    assert (plain.sandbox, plain.warm, plain.verify, plain.verify_seed) == (True, True, True, None)
    monkeypatch.setenv("GRADING_WARM", "off")
    monkeypatch.setenv("GRADING_VERIFY", "off")
    monkeypatch.setenv("VERIFY_SEED", "0x2a")
    switched = CourseSettings.read(tmp_path)
    assert (switched.sandbox, switched.warm, switched.verify, switched.verify_seed) == (True, False, False, 42)
    # ... and in the configuration nbgrader's own classes (the kernel's manager) are given.
    assert switched.config.SandboxedKernelManager.warm is False
    monkeypatch.setenv("GRADING_SANDBOX", "off")
    monkeypatch.setenv("GRADING_WARM", "on")
    unsandboxed = CourseSettings.read(tmp_path)
    assert (unsandboxed.sandbox, unsandboxed.warm) == (False, False)  # no template without the sandbox
    monkeypatch.setenv("GRADING_VERIFY", "no")
    with pytest.raises(SystemExit, match=r"GRADING_VERIFY must be on or off \(or unset: on\), not 'no'"):
        CourseSettings.read(tmp_path)
    monkeypatch.setenv("GRADING_VERIFY", "on")
    monkeypatch.setenv("VERIFY_SEED", "12 34")
    with pytest.raises(SystemExit, match=r"VERIFY_SEED must be a whole number .*, not '12 34'"):
        CourseSettings.read(tmp_path)


def test_no_module_reads_the_switches_from_the_environment():
    """Only tools/course_settings.py reads them (nbgrader_config.py through it)."""
    reading = re.compile(r"(environ|getenv)\b[^\n]*\b(" + "|".join(SWITCHES) + r")\b")
    modules = [*(ROOT / "tools").rglob("*.py"), ROOT / "nbgrader_config.py"]
    readers = sorted(str(path.relative_to(ROOT)) for path in modules
                     if path != ROOT / "tools" / "course_settings.py" and reading.search(path.read_text()))
    assert not readers, f"these read a grading switch from the environment, not from the settings: {readers}"


def loads_in_a_worker(bundle, submission, private):
    """In a grading worker (forked, started as make grade starts its workers): grade one submission
    (grade_in_private_course, on the bytes a task carries), with nbgrader's converters standing in by recording
    what they were given. Returns the configuration files read meanwhile, what each converter was given, and the
    result's log."""
    from nbgrader.converters import Autograde, GenerateFeedback
    from traitlets.config.loader import PyFileConfigLoader

    from tools.grading import run

    loaded, given = [], []
    load = PyFileConfigLoader.load_config

    def counted(self):
        loaded.append(self.full_filename)
        return load(self)

    def start(self):
        given.append((type(self).__name__, self.coursedir.root, self.coursedir.db_url,
                      list(self.config.Autograde.autograde_preprocessors), self.config.SandboxedKernelManager.warm))

    PyFileConfigLoader.load_config = counted
    Autograde.start = GenerateFeedback.start = start
    result = run.grade_in_private_course(bundle, submission, private)
    return loaded, given, result["log"]


def test_a_worker_grades_with_the_runs_configuration(tmp_path, monkeypatch):
    """No grading worker runs nbgrader_config.py again (it did twice per submission: once for autograde, once
    for the feedback): its converters get the run's configuration, with the private course's folder and gradebook,
    and the run's switches (here GRADING_WARM=off, as the run read it)."""
    from tools.grading.run import make_bundles, submission_of

    monkeypatch.delenv("GRADING_SANDBOX", raising=False)
    monkeypatch.setenv("GRADING_WARM", "off")
    settings = CourseSettings.read(ROOT)
    monkeypatch.delenv("GRADING_WARM")  # (what the worker sees is what the run read)
    submission = tmp_path / "submission"
    submission.mkdir()
    shutil.copy(EXERCISES / "ex01_by_hand" / "ex01_by_hand.ipynb", submission)
    snapshot = tmp_path / "gradebook.db"
    snapshot.write_bytes(b"")
    bundle = make_bundles(settings, ["ex01_by_hand"], snapshot, (), None, 600.0)["ex01_by_hand"]
    task = submission_of(settings.layout, "ex01_by_hand", "student", source=submission)
    private = tmp_path / "staging" / "submission-1"
    private.mkdir(parents=True)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        loaded, given, log = pool.submit(loads_in_a_worker, bundle, task, private).result(timeout=300)
    assert loaded == [], f"a worker read its configuration {len(loaded)} time(s) for one submission: {loaded}"
    db_url = f"sqlite:///{private / 'gradebook.db'}"
    preprocessors = list(settings.config.Autograde.autograde_preprocessors)
    assert "tools.sandbox.kernel.SandboxedExecute" in preprocessors
    assert given == [(name, str(private), db_url, preprocessors, False)
                     for name in ("Autograde", "GenerateFeedback")], log
    assert settings.config.CourseDirectory.root == str(ROOT)  # (the run's own is left as it was)
