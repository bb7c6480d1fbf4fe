"""Promise: make grade SCHEDULER=tcp://host:8786 grades on a Dask cluster exactly as it grades here.

The suite's shared course (tests/plugins/shared_grading_run.py: every assignment, all its wrong implementations and
attacks, read by most of the suite's grading tests) is itself graded this way, on two workers that cannot see it.

A scheduler and two workers are started as separate programs (`dask
scheduler`, `dask worker`), each worker in a bubblewrap namespace in which the
course folder is an empty folder: a worker is sent bytes and returns bytes
(tools/grading/task.py), it never reads the course. A small course of
ex01_by_hand (the cheapest assignment) is graded through `SCHEDULER=`; while
a student's task runs, the test kills the worker process running it by its
process id. Every grade, feedback page and integrity.csv row must then be
present once and equal to those of an undisturbed run on the local pool. One
more submission stands for one whose grading kills its worker every time (a
worker plugin the test registers kills the worker that starts its task:
nothing a sandboxed notebook can do should, which is why it is simulated); it
ends NOT GRADED, saying how often its worker died, and the run goes on.
"""

import csv
import hashlib
import os
import re
import signal
import subprocess
import sys
import time

import cloudpickle
import pytest
from distributed import Client, WorkerPlugin

from tests.conftest import require_sandbox
from tests.plugins.dask_programs import DaskPrograms
from tests.test_grader_proves_itself_first import ANSWERS, course_of
from tools.grading.self_check import REFERENCE_STUDENT
from tools.paths import ROOT

ASSIGNMENT = "ex01_by_hand"
POISON = "poison"  # the student whose task kills its worker
WRONG = {"scores_by_hand": ANSWERS["scores_by_hand"] + "\nscores_by_hand = scores_by_hand * 2\n"}
STUDENTS = {"alice": {}, "bob": WRONG, POISON: {}}


class KillsPoisonsWorker(WorkerPlugin):
    """Kills the worker process that starts a task of the poison submission
    (registered by the test; a restarted worker gets it again)."""

    name = "test-kills-poisons-worker"

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and f"-{POISON}-" in str(key):
            os.kill(os.getpid(), signal.SIGKILL)


def what_it_left(root, students):
    """grades.csv and integrity.csv rows, and every feedback file's hash, of ``students``."""
    left = {}
    for name in ("grades.csv", "integrity.csv"):
        with open(root / name, newline="") as f:
            rows = [row for row in csv.DictReader(f) if row.get("student_id") in students]
        # (each run names itself in integrity.csv's run column: that one must differ)
        left[name] = sorted(tuple(sorted((k, v) for k, v in row.items() if "second" not in k and k != "run"))
                            for row in rows)
    for path in sorted((root / "feedback").rglob("*")):
        if path.is_file() and path.relative_to(root / "feedback").parts[0] in students:
            # (each page's Content-Security-Policy nonce is new every time it is written)
            page = re.sub(rb"nonce(-|=\")[A-Za-z0-9_+/-]+", b"nonce", path.read_bytes())
            left[str(path.relative_to(root))] = hashlib.sha256(page).hexdigest()
    return left


def make_grade(root, *extra):
    # (one verification seed for both runs: integrity.csv names it, and the two runs' rows must be equal)
    return subprocess.Popen(["make", "--no-print-directory", "grade", f"COURSE={root}", "JOBS=2", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "VERIFY_SEED": "20261129"})


def started_by(pid, roots) -> bool:
    """Whether process ``pid`` descends from one of the processes ``roots`` (read from /proc, parent by parent)."""
    seen = set()
    while pid > 1 and pid not in seen:
        if pid in roots:
            return True
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])  # (the name in parentheses may hold spaces)
        except (OSError, ValueError, IndexError):
            return False
    return False

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_sandbox("the Dask grading test")
    undisturbed = tmp_path_factory.mktemp("pool-course")
    course_of(undisturbed, STUDENTS)
    on_dask = tmp_path_factory.mktemp("dask-course")
    course_of(on_dask, STUDENTS)
    pool = make_grade(undisturbed)

    # Each worker's namespace shows the course folder's parent as an empty folder; QUIET_ENVIRONMENT, as
    # instructor/cluster.md says to start them (a worker is sent one submission at a time).
    cluster = DaskPrograms(workers=2, hide=on_dask.parent)
    address = cluster.address
    try:
        client = Client(address, timeout="60s")
        client.wait_for_workers(2, timeout=120)
        cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (the workers cannot import tests/)
        client.register_plugin(KillsPoisonsWorker())
        seen_by_workers = client.run(lambda path=str(on_dask): os.path.exists(path))
        graded = make_grade(on_dask, f"SCHEDULER={address}")
        killed, errors = None, []
        deadline = time.monotonic() + 600
        while killed is None and graded.poll() is None and time.monotonic() < deadline:
            for worker, keys in client.processing().items():
                if any(str(k).startswith(f"grade-{ASSIGNMENT}-") and f"-{POISON}-" not in str(k)
                       and f"-{REFERENCE_STUDENT}-" not in str(k) for k in keys):
                    try:
                        pid = client.run(os.getpid, workers=[worker])[worker]
                        if not started_by(pid, {program.pid for program in cluster.workers}):
                            # (a worker of this test's, nothing else: its nanny, under bubblewrap, started it)
                            raise RuntimeError(f"pid {pid} is not a process of this test's Dask workers")
                        os.kill(pid, signal.SIGKILL)
                    except Exception as error:  # noqa: BLE001 - that worker is gone already (the poison's): another
                        errors.append(repr(error))
                        continue
                    killed = (worker, pid, keys)
                    break
            time.sleep(0.2)
        dask_out, _ = graded.communicate(timeout=900)
        client.close()
    finally:
        cluster.stop()
    pool_out, _ = pool.communicate(timeout=900)
    return {"pool": (undisturbed, pool, pool_out), "dask": (on_dask, graded, dask_out), "killed": killed,
            "seen": seen_by_workers, "errors": errors}


def test_a_worker_cannot_read_the_course_folder(runs):
    course = runs["dask"][0]
    assert course.is_dir()
    assert runs["seen"] and not any(runs["seen"].values()), f"a worker sees {course}: {runs['seen']}"


def test_grades_feedback_and_integrity_equal_an_undisturbed_runs(runs):
    (pool_root, pool, pool_out), (dask_root, graded, dask_out) = runs["pool"], runs["dask"]
    assert runs["killed"], f"no worker was killed mid-run ({runs['errors']}):\n{dask_out[-4000:]}"
    honest = {student for student in STUDENTS if student != POISON}
    assert what_it_left(dask_root, honest) == what_it_left(pool_root, honest), dask_out[-4000:]
    for student in honest:  # once each
        assert dask_out.count(f"  {ASSIGNMENT}  {student}: ") == 1, dask_out[-4000:]


def test_a_submission_that_kills_its_worker_every_time_is_not_graded(runs):
    dask_root, graded, dask_out = runs["dask"]
    assert graded.returncode != 0, dask_out[-4000:]  # (make's own status: 2)
    assert f"  {ASSIGNMENT}  {POISON}: NOT GRADED (its grading worker died each of the" in dask_out, dask_out[-4000:]
    assert re.search(r"^make grade: ATTENTION: 1 not graded, 0 flagged, of 3 submission\(s\).*exit status 1$",
                     dask_out, re.MULTILINE), dask_out[-2000:]


def test_the_shared_course_is_graded_on_workers_that_cannot_read_it(graded_course):
    """`make test`'s shared course (every assignment's solution, untouched release, wrong implementations and
    attacks: tests/plugins/shared_grading_run.py) is graded through `SCHEDULER=` too, on two `dask worker` programs
    whose namespace shows the course's folder empty: each worker that tried to list it failed, while it is here."""
    require_sandbox("the shared course on Dask workers")
    course = graded_course()
    assert re.search(r"^Dask scheduler tcp://127\.0\.0\.1:\d+: \d+ worker\(s\)", course.out, re.MULTILINE), \
        course.out[:2000]
    assert len(course.worker_view) == 2, course.worker_view
    for worker, seen in course.worker_view.items():
        assert isinstance(seen, FileNotFoundError), f"the worker at {worker} listed the course folder: {seen}"
    assert (course.workdir / "gradebook.db").is_file() and (course.workdir / "feedback").is_dir()
