"""Shared fixtures for expensive set-ups, each done once per test session: the
book is built once (test_book_builds_and_keeps_answers_out.py and test_site_works_offline_in_a_browser.py read it), and every
assignment is graded by one `make grade` run (autograde, feedback and
verification) whose results every grading test reads."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from tools.site.book import build
from tools.grading.run import GRADED_CLEAN, NEEDS_A_LOOK
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import BIN, ROOT, SOLUTIONS, assignments, wrong_implementations
from tools.sandbox.bubblewrap import SandboxUnavailable, check_available

# Every nbgrader call needs the venv's `alembic` on PATH.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"

# The grading tests (wrong implementations lose points, feedback, make grade)
# are about scores, not the sandbox: on a machine without bubblewrap they run
# on stock nbgrader execution, and test_submissions_cannot_harm_grading.py skips saying what to
# install. CI installs bubblewrap (.ci/run) and runs everything sandboxed.
try:
    check_available()
except SandboxUnavailable:
    if os.environ.get("CI") != "true":
        os.environ["GRADING_SANDBOX"] = "off"

def require_sandbox(what):
    """Skip a test that needs the sandbox where bubblewrap is missing, saying
    what to install; under CI=true, fail instead: CI must run ``what``."""
    try:
        check_available()
    except SandboxUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run {what}: {error}")
        pytest.skip(f"{error}; then run these tests again")


REPORT_DIR = ROOT / "_build" / "grading-report"
# Written by test_site_works_offline_in_a_browser.py: each page's load time and size (printed if this session wrote it).
SITE_REPORT = ROOT / "_build" / "site-report.md"
SESSION = {"start": 0.0}


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
    nbgrader's autograde and feedback in parallel workers, in the sandbox,
    then every grade verified outside the notebook into integrity.csv).
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
        self.workdir = workdir
        self.logs = {name: open(workdir.parent / f"{workdir.name}-{name}.txt", "w+") for name in ("stdout", "stderr")}
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [str(BIN / "python"), "-m", "tools.grading", "--course", str(workdir)],
            cwd=ROOT, text=True, stdout=self.logs["stdout"], stderr=self.logs["stderr"],
            start_new_session=True,  # its workers and kernels are stopped with it (stop)
        )
        self.finished = False

    def stop(self):
        """Stop `make grade`, its workers and their kernels."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()

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


@pytest.fixture(scope="session")
def book():
    """The site, built into _build/html once per session as `make book` builds it,
    from the chapters' committed outputs: nbval re-executes every chapter in the
    same session and fails if an output differs (tools/site/book.py)."""
    result = build(capture=True, execute=False)
    assert result.returncode == 0, f"the book did not build:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def graded_assignments():
    """Every assignment, or those named in COURSE_ASSIGNMENTS (comma-separated),
    to grade only what you are working on: ``COURSE_ASSIGNMENTS=ex05_positions
    .venv/bin/python -m pytest tests/test_wrong_implementations_lose_points.py -k ex05_positions``."""
    chosen = [a for a in os.environ.get("COURSE_ASSIGNMENTS", "").split(",") if a]
    unknown = set(chosen) - set(assignments())
    if unknown:
        raise ValueError(f"COURSE_ASSIGNMENTS names no assignment called {sorted(unknown)}")
    return chosen or assignments()


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


def pytest_terminal_summary(terminalreporter):
    """Print, for the record, each page's load time and size, and the points each
    known-wrong implementation lost; last, in one line, what was not checked
    here and why (a program this machine lacks)."""
    try:
        _report(terminalreporter)
    finally:
        skipped = {}
        for report in terminalreporter.stats.get("skipped", []):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            reason = reason.removeprefix("Skipped: ")
            skipped[reason] = skipped.get(reason, 0) + 1
        if skipped:
            terminalreporter.write_line(
                f"NOT CHECKED HERE: {sum(skipped.values())} test(s): "
                + "; ".join(f"{count} because {reason}" for reason, count in sorted(skipped.items())),
                yellow=True, bold=True)


def _report(terminalreporter):
    if SITE_REPORT.is_file() and SITE_REPORT.stat().st_mtime >= SESSION["start"]:
        terminalreporter.section("site report (_build/site-report.md)")
        for line in SITE_REPORT.read_text().splitlines():
            terminalreporter.write_line(line)
    every_cpu = sys.modules.get("tests.test_every_cpu")
    if every_cpu is not None and every_cpu.TIMINGS:
        terminalreporter.section("chapters on other CPUs (tests/test_every_cpu.py)")
        for run, (took, waited) in every_cpu.TIMINGS.items():
            terminalreporter.write_line(f"{run}: ran {took:.0f} s in the background; the suite waited {waited:.0f} s for it")
    if not REPORT_DIR.is_dir():
        return
    timing = REPORT_DIR / "timing.txt"
    if timing.is_file():
        terminalreporter.section("the shared grading run (tools/grading/run.py's own account)")
        if "took" in SHARED_RUN:
            terminalreporter.write_line(f"ran {SHARED_RUN['took']:.0f} s in the background; "
                                        f"the suite waited {SHARED_RUN['waited']:.0f} s for it")
        for line in timing.read_text().splitlines():
            terminalreporter.write_line(line)
    for path in sorted(REPORT_DIR.glob("*.json")):
        rows = json.loads(path.read_text())
        terminalreporter.section(f"grading of {path.stem}")
        for name, row in rows.items():
            terminalreporter.write_line(f"{row['score']:5.1f} / {row['max_score']:.0f}  {name}")


def pytest_sessionstart(session):
    # A session that a test starts inside the suite (tests/test_hub_term_as_the_guide_tells_it.py through
    # sudo) keeps the outer session's grading report.
    if os.environ.get("COURSE_NESTED_SESSION") != "1":
        shutil.rmtree(REPORT_DIR, ignore_errors=True)
    SESSION["start"] = time.time()


# Modules whose checks run as programs of their own, each started in the background (its start_runs()) once the
# session has collected it, at the lowest priority (nice 19, and their kernels' sessions too: background_kernel),
# so that they take the CPU the rest of the suite leaves idle, as at its single-threaded end; their tests wait for
# the results and run last.
IN_BACKGROUND = (
    "tests/test_chapter_code_earns_nothing.py",
    "tests/test_every_cpu.py",
    "tests/test_launch_buttons_open_what_works.py",
)


def background_kernel(python):
    """The argv of a kernelspec for the Jupyter kernels of a background program (IN_BACKGROUND): ``python``'s
    ipykernel, at the lowest priority. Linux's autogroups (on in Debian's and Ubuntu's kernels) share the CPU out
    session by session, whatever the nice values inside a session, and jupyter_client starts every kernel in a
    session of its own: such a kernel would otherwise weigh as much as the whole foreground. The shell first lowers
    its session's weight as low as it goes (/proc/self/autogroup, which any user may lower); where the kernel has no
    autogroups the write fails quietly and the nice value the kernel inherits does the same."""
    return ["/bin/sh", "-c", 'echo 19 > /proc/self/autogroup 2>/dev/null; exec "$0" -m ipykernel_launcher -f "$1"',
            str(python), "{connection_file}"]


def reads_runs(item):
    """Whether a selected test of an IN_BACKGROUND module reads the module's background runs: every test does, unless
    the module names the fixture its readers use (RUNS_FIXTURE); `-k binder` then starts no run."""
    fixture = getattr(item.module, "RUNS_FIXTURE", None)
    return fixture is None or fixture in getattr(item, "fixturenames", ())


def reads_shared_run(item):
    return bool(SHARED_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(session, config, items):
    """Run the tests that read the shared grading run after all the others, and
    those of IN_BACKGROUND after them: all start in the background once
    collection is done and overlap the rest of the suite. A module that sets
    RUN_ALONE, and a test marked run_alone, go last of all, once every background run has been waited for."""
    items.sort(key=lambda item: (bool(getattr(getattr(item, "module", None), "RUN_ALONE", False)
                                      or item.get_closest_marker("run_alone")),
                                 item.nodeid.startswith(IN_BACKGROUND), reads_shared_run(item)))


def pytest_collection_finish(session):
    for module in {item.module for item in session.items if getattr(item, "module", None) is not None}:
        build = getattr(module, "GUEST_SUBMISSIONS", None)
        if build is not None:
            GUEST_BUILDERS[module.__name__] = build
    if any(reads_shared_run(item) for item in session.items):
        start_shared_run(session.config._tmp_path_factory)
    started = {item.module for item in session.items if item.nodeid.startswith(IN_BACKGROUND) and reads_runs(item)}
    for module in sorted(started, key=lambda module: module.__name__):
        module.start_runs()


def pytest_sessionfinish(session):
    """A session stopped early (-x, Ctrl-C) leaves no grading run behind."""
    course = SHARED_RUN.get("course")
    if isinstance(course, GradedCourse):
        course.stop()
