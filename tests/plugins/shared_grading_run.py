"""Plugin: the shared grading run. Every assignment's solution, untouched release and known-wrong implementations
(and the guests of the collected test modules) are graded by one `make grade` run, started in the background as
soon as the session has collected its tests; the grading tests read it through the ``graded_course`` and
``graded`` fixtures, and each assignment's scores are written to _build/grading-report/ for the summary."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time

import nbformat
import pytest

from tests.plugins.cpu_seconds import in_cgroup, part_cgroup
from tests.plugins.dask_programs import DaskPrograms
from tests.plugins.selection import graded_assignments
from tools.grading.run import GRADED_CLEAN, NEEDS_A_LOOK
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import BIN, ROOT, SOLUTIONS, wrong_implementations

REPORT_DIR = ROOT / "_build" / "grading-report"


def submission_name(path):
    return "wrong-" + path.stem.replace("_", "-")


# Other submissions that test modules add to the shared graded course (their
# module-level GUEST_SUBMISSIONS(assignment) -> {student: notebook}): graded in
# the same `make grade` run, but not part of any assignment's scores below.
GUEST_BUILDERS = {}


class GradedAssignment:
    """One assignment's part of the graded course (``GradedCourse``): its
    scores in the gradebook, its rows of integrity.csv, and the course.
    Guests (``GUEST_BUILDERS``) are left out of ``scores`` and ``integrity``."""

    def __init__(self, assignment, graded_course, release, descriptions):
        self.assignment = assignment
        self.course = graded_course.course
        self.release = release
        self.descriptions = descriptions
        self.out = graded_course.out
        guests = graded_course.guests.get(assignment, set())
        self.scores = {s: r for s, r in self.course.scores(assignment).items() if s not in guests}
        self.integrity = {row["student_id"]: row for row in graded_course.integrity
                          if row["assignment"] == assignment and row["student_id"] not in guests}
        self._write_report()

    def _write_report(self):
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        report = {
            name: {**score, "description": self.descriptions.get(name, "")}
            for name, score in sorted(self.scores.items())
        }
        (REPORT_DIR / f"{self.assignment}.json").write_text(json.dumps(report, indent=1))


class GradedCourse:
    """Every assignment's solution, untouched release and known-wrong
    implementations, graded by one `make grade` run (tools/grading/run.py:
    nbgrader's autograde and feedback on the two workers of a Dask cluster
    started as programs, in the sandbox, then every grade verified outside the
    notebook into integrity.csv).
    One run for all assignments: the workers' start-up is paid once, and
    each added assignment adds only its submissions."""

    def __init__(self, workdir, names):
        self.course = Course(workdir, names)
        self.parts = {}
        releases = self.course.generate_all(names)
        for assignment in names:
            release = releases[assignment]
            answers = solution_code(SOLUTIONS / assignment / f"{assignment}.ipynb")
            self.course.submit("solution", assignment, fill_release(release, answers))
            self.course.submit("untouched-release", assignment, nbformat.read(release, as_version=4))
            descriptions = {}
            for path in wrong_implementations(assignment):
                description, cells = read_wrong_implementation(path)
                unknown = set(cells) - set(answers)
                if unknown:
                    raise ValueError(f"{path}: no solution cell called {sorted(unknown)} in {assignment}")
                name = submission_name(path)
                descriptions[name] = description
                self.course.submit(name, assignment, fill_release(release, {**answers, **cells}))
            self.parts[assignment] = (release, descriptions)
        self.guests = {}
        for build in GUEST_BUILDERS.values():
            for assignment in names:
                for student, nb in build(assignment).items():
                    if student in self.parts[assignment][1] or student in self.guests.get(assignment, ()) \
                            or student in ("solution", "untouched-release"):
                        raise ValueError(f"two submissions of {assignment} are called {student}")
                    self.course.submit(student, assignment, nb)
                    self.guests.setdefault(assignment, set()).add(student)
        # `make grade` runs in the background (``finish`` waits for it), so that
        # the tests that do not read its results run meanwhile (they are
        # ordered first: pytest_collection_modifyitems).
        # It grades on a Dask cluster of two workers started as programs, as instructor/cluster.md starts them
        # (make grade SCHEDULER=...), each in a namespace where the course's folder is empty: a worker is sent
        # bytes and returns bytes (tools/grading/task.py). ``worker_view`` records what the workers found there.
        self.workdir = workdir
        self.logs = {name: open(workdir.parent / f"{workdir.name}-{name}.txt", "w+") for name in ("stdout", "stderr")}
        self.started = time.monotonic()
        cgroup = part_cgroup("shared grading run")
        self.cluster = DaskPrograms(workers=2, hide=workdir.parent if shutil.which("bwrap") else None,
                                    wrap=lambda argv: in_cgroup(argv, cgroup))
        self.worker_view = {}
        try:
            self.process = subprocess.Popen(
                in_cgroup([BIN / "python", "-m", "tools.grading", "--course", workdir,
                           "--scheduler", self.cluster.address], cgroup),
                cwd=ROOT, text=True, stdout=self.logs["stdout"], stderr=self.logs["stderr"],
                start_new_session=True,  # its kernels are stopped with it (stop)
            )
        except BaseException:
            self.cluster.stop()
            raise
        self.finished = False

    def stop(self):
        """Stop `make grade`, its Dask cluster and their kernels."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        self.cluster.stop()

    def finish(self):
        """Wait for `make grade` and read what it wrote; raise if it failed."""
        if self.finished:
            return
        waiting = time.monotonic()
        try:
            self.process.wait(timeout=max(1.0, 3600 - (waiting - self.started)))
        except subprocess.TimeoutExpired:
            self.stop()
        SHARED_RUN["took"], SHARED_RUN["waited"] = time.monotonic() - self.started, time.monotonic() - waiting
        self.finished = True
        try:
            self.worker_view = self.cluster.ask_workers(os.listdir, str(self.workdir))
        finally:
            self.cluster.stop()
        written = {}
        for name, log in self.logs.items():
            log.seek(0)
            written[name] = log.read()
            log.close()
        self.out, stderr = written["stdout"], written["stderr"]
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        (REPORT_DIR / "timing.txt").write_text("".join(
            line + "\n" for line in self.out.splitlines()
            if line.startswith(("graded ", "worker seconds per phase", "largest worker", "verified "))
            or " submissions): kernel start" in line))
        # The attacks are flagged, so make grade ends with NEEDS_A_LOOK and says why on its last line; no
        # submission may fail to grade (the tests read every one) and nothing else may go wrong.
        closing = re.search(r"^make grade: ATTENTION: (\d+) not graded, \d+ flagged", self.out, re.MULTILINE)
        flagged_only = self.process.returncode == NEEDS_A_LOOK and closing and closing.group(1) == "0"
        if self.process.returncode != GRADED_CLEAN and not flagged_only:
            raise RuntimeError(f"make grade failed (exit status {self.process.returncode}):\n"
                               f"{self.out[-4000:]}\n{stderr[-4000:]}")
        self.integrity = []
        if (self.workdir / "integrity.csv").is_file():
            with open(self.workdir / "integrity.csv", newline="") as f:
                self.integrity = list(csv.DictReader(f))

    def get(self, assignment):
        release, descriptions = self.parts[assignment]
        return GradedAssignment(assignment, self, release, descriptions)


# The shared grading run: started once collection is done (start_shared_run),
# or on first use; {"course": GradedCourse or the error that stopped it}, and
# how long it took and how long the suite waited for it.
SHARED_RUN = {}
SHARED_FIXTURES = {"graded", "graded_course"}


def start_shared_run(tmp_path_factory):
    if "course" not in SHARED_RUN:
        try:
            SHARED_RUN["course"] = GradedCourse(tmp_path_factory.mktemp("graded-course"), graded_assignments())
        except Exception as error:  # graded once: every later test reports the same failure
            SHARED_RUN["course"] = error


@pytest.fixture(scope="session")
def graded_course(tmp_path_factory):
    """graded_course() -> the GradedCourse: every assignment graded by one
    `make grade` run, with the guests of the collected test modules, started in
    the background once the session has collected its tests, waited for on
    first use."""

    def get():
        start_shared_run(tmp_path_factory)
        course = SHARED_RUN["course"]
        if isinstance(course, GradedCourse):
            try:
                course.finish()
            except Exception as error:  # noqa: BLE001
                SHARED_RUN["course"] = course = error
        if isinstance(course, Exception):
            raise RuntimeError("grading the course failed (the first test that used it shows why)") from course
        return course

    return get


@pytest.fixture(scope="session")
def graded(graded_course):
    """graded(assignment) -> GradedAssignment, from the shared graded course."""
    cache = {}

    def get(assignment):
        if assignment not in cache:
            cache[assignment] = graded_course().get(assignment)
        return cache[assignment]

    return get


def reads_shared_run(item):
    return bool(SHARED_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_sessionstart(session):
    # A session that a test starts inside the suite (tests/test_hub_term_as_the_guide_tells_it.py through
    # sudo) keeps the outer session's grading report.
    if os.environ.get("COURSE_NESTED_SESSION") != "1":
        shutil.rmtree(REPORT_DIR, ignore_errors=True)


def pytest_collection_finish(session):
    """Collect the guests of the collected modules, then start the shared run if a selected test reads it."""
    for module in {item.module for item in session.items if getattr(item, "module", None) is not None}:
        build = getattr(module, "GUEST_SUBMISSIONS", None)
        if build is not None:
            GUEST_BUILDERS[module.__name__] = build
    if not session.config.option.collectonly and any(reads_shared_run(item) for item in session.items):
        start_shared_run(session.config._tmp_path_factory)


def pytest_sessionfinish(session):
    """A session stopped early (-x, Ctrl-C) leaves no grading run behind."""
    course = SHARED_RUN.get("course")
    if isinstance(course, GradedCourse):
        course.stop()
