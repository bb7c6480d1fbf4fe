"""Promise: on Dask, a submission whose grading hangs its worker costs that submission only.

A Dask worker runs its tasks in a thread, where no alarm can stop a submission
at its deadline (the local pool's workers set one). make grade's grading
process watches each task instead (tools/grading/cluster.py): a task still
running past the submission's deadline and a grace period is cancelled, its
worker restarted through its nanny, and the submission is NOT GRADED, saying
why; the other submissions are graded, and the run ends long before the hang
would have. The hang is simulated (a worker plugin the test registers makes
the grading task of one student sleep: nothing a sandboxed notebook can do
should hang a worker, which is why it is simulated), and the deadline is made
short for the test.
"""

import io
import re
import sys
import time

import cloudpickle
from distributed import WorkerPlugin

from tests.plugins.environment import require_sandbox
from tests.test_grader_proves_itself_first import course_of

ASSIGNMENT = "ex01_by_hand"
STUCK = "stuck"  # the student whose grading task hangs its worker
HANG_SECONDS = 240.0  # how long it would hang: far past the deadline
DEADLINE = 60.0  # the submission's deadline in this test (long enough for an honest one on a loaded machine)


class HangsTheStuckTask(WorkerPlugin):
    """Makes the grading task of STUCK sleep in the worker's thread (registered by the test)."""

    name = "test-hangs-the-stuck-task"

    def setup(self, worker):
        import tools.grading.task as task

        if getattr(task.grade_task, "hangs", False):
            return
        original = task.grade_task

        def grade_task(bundle, submission):
            if submission.student == STUCK:
                time.sleep(HANG_SECONDS)
            return original(bundle, submission)

        grade_task.hangs = True
        task.grade_task = grade_task  # (what a task names by reference, tools.grading.task.grade_task, is this)


def test_a_task_past_its_deadline_is_not_graded_and_its_worker_restarted(tmp_path, monkeypatch):
    require_sandbox("the test of a stuck Dask task")
    from tools.course_settings import CourseSettings
    from tools.grading import cluster, run

    course_of(tmp_path, {"alice": {}, STUCK: {}})
    monkeypatch.setattr(CourseSettings, "submission_seconds", property(lambda self: DEADLINE))
    # (raising=False: a grading process without the watch is shown failing the test, not the set-up)
    monkeypatch.setattr(cluster, "GRACE_SECONDS", 0, raising=False)
    opened = cluster.open_cluster

    def open_with_the_hang(*args, **kwargs):
        client, local = opened(*args, **kwargs)
        client.register_plugin(HangsTheStuckTask())
        return client, local

    monkeypatch.setattr(cluster, "open_cluster", open_with_the_hang)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (the workers cannot import tests/)
    out = io.StringIO()
    started = time.monotonic()
    status = run.grade(tmp_path, [ASSIGNMENT], jobs=2, out=out, scheduler="local")
    elapsed = time.monotonic() - started
    said = out.getvalue()
    assert (f"  {ASSIGNMENT}  {STUCK}: NOT GRADED (its grading task ran more than {DEADLINE:g} s on its Dask "
            f"worker, which was restarted)") in said, said[-4000:]
    assert re.search(rf"^  {ASSIGNMENT}  alice: 10 / 10 ", said, re.MULTILINE), said[-4000:]
    assert status == run.NEEDS_A_LOOK, said[-2000:]
    assert elapsed < HANG_SECONDS, f"the run waited {elapsed:.0f} s, for the hang to end"
