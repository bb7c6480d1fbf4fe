"""make grade on Dask distributed: a local cluster, or one that is running elsewhere.

``open_cluster(scheduler, jobs, ...)`` gives a distributed Client: with
``scheduler`` "local", a LocalCluster of ``jobs`` single-threaded worker
processes on this machine; with an address (``make grade
SCHEDULER=tcp://host:8786``), the cluster of that scheduler
(instructor/cluster.md). Either way each worker gets its warm template from
``GradingWorkerPlugin`` when it starts, and ``grade_with_dask`` sends each
submission as one task running tools/grading/task.py's ``grade_task``, the
same function the local pool of tools/grading/run.py runs: bytes in, bytes
out, merged by the grading process alone.

Faults: the scheduler gives the task of a worker that died to another
worker; one whose worker died ``distributed.scheduler.allowed-failures + 1``
times (Dask's default: 3 + 1) raises KilledWorker, and that submission is
graded once more, alone, after the others (Dask counts a death against every
task the worker held, an honest one waiting behind the culprit too); if it
kills its worker as often again, it is NOT GRADED, saying so. A Dask worker
runs its tasks in a thread, where no alarm can stop a submission at its
deadline: ``grade_with_dask`` watches each
task from the grading process instead, and one still running
``GRACE_SECONDS`` past the submission's deadline is cancelled, its worker
restarted through its nanny (``Client.restart_workers``), and the submission
NOT GRADED, saying why. If the scheduler goes away, ``SchedulerGone`` names what
is left; what was merged stays merged.
"""

from __future__ import annotations

import logging
import re
import tempfile
import traceback
from pathlib import Path

from distributed import Client, LocalCluster, WorkerPlugin, as_completed

from .run import next_unheld, submission_of, unpacked

# How long past its deadline a submission's task may run before its worker is restarted (the local pool's margin).
GRACE_SECONDS = 60
# A grading worker waits on its sandboxed kernel most of the time; what Dask does meanwhile by default costs CPU that
# grading needs: a statistical profiler sampling every thread every 10 ms, an event-loop check every 20 ms, the GIL
# polled every millisecond, the system and memory monitors every 500 and 100 ms. A local cluster's workers and
# scheduler run with these settings (measured in instructor/cluster.md); a cluster started elsewhere takes them as
# environment variables (QUIET_ENVIRONMENT, which the guide's commands set).
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.tick.interval": "500ms",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
    # Fewer submissions waiting on one worker, whose death counts against every task it holds (Dask queues only
    # large groups of like tasks on the scheduler: grade_with_dask also grades a submission given up once more, alone).
    "distributed.scheduler.worker-saturation": 1.0,
}
QUIET_ENVIRONMENT = {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
                     for key, value in QUIET.items()}
# How often the grading process looks at what the workers are running.
WATCH_SECONDS = 2.0


class GradingWorkerPlugin(WorkerPlugin):
    """A Dask worker plugin: a worker that joins the run gets its folder (in
    TMPDIR: the worker's local directory is too deep for the kernels' unix
    sockets, whose paths may not exceed 107 bytes) and starts its warm template at once. The template
    is started in the thread that runs the worker's tasks (its "default"
    executor: one thread, as make grade's workers have): bubblewrap stops a
    sandbox when the thread that started it ends (--die-with-parent), and the
    plugin's own thread does not last; nor may the worker's event loop wait
    for the template's imports."""

    name = "course-grading"

    def __init__(self, preload=(), memory_bytes=0):
        self.preload, self.memory_bytes = tuple(preload), int(memory_bytes)

    def setup(self, worker):
        from .task import ready_worker

        executor = getattr(worker, "executors", {}).get("default")
        if executor is not None:
            executor.submit(ready_worker, self.preload, self.memory_bytes)
        # (else the first task starts it: grade_task calls ready_worker)

    def teardown(self, worker):
        from .task import close_worker

        close_worker()


def grade_with_dask(client, bundles, layout, staging, todo, finished, sources=None, stop=lambda: False,
                    window=None, hold=lambda key: False, deadline=None):
    """Grade ``todo`` on the Dask cluster of ``client`` (distributed), each
    submission a task running tools/grading/task.py's grade_task, as
    grade_with_pool does locally; return [] (what a worker left undone Dask
    gives to another worker). A submission whose task killed its worker more
    often than the scheduler allows (distributed.scheduler.allowed-failures)
    is tried again alone once the others are done, and NOT GRADED if it does
    so again, saying so; so is one whose task runs more than
    ``deadline`` seconds on one worker, which is restarted. If the scheduler
    goes away, raises SchedulerGone naming what was not graded yet; what was
    merged stays. A key for which ``hold(key)`` is true waits; if only such
    keys are left, they are returned."""
    import time
    import uuid

    from .task import grade_task

    # Each bundle is a task of its own (its bytes are its recipe: a worker that held it and died costs a
    # recomputation, never a lost input); every grading task of its assignment depends on it.
    run = uuid.uuid4().hex[:8]
    bundle_futures = {a: client.submit(_bundle, bundle, key=f"bundle-{a}-{run}", pure=False)
                      for a, bundle in bundles.items()}
    window = window or 2 * max(1, sum(client.nthreads().values()))
    allowed = allowed_failures(client)
    waiting = list(todo)
    futures = {}
    queue = as_completed()
    # Dask counts a worker's death against every task it held, the one that killed it and those waiting behind it:
    # an honest submission that waited on the worker of one that kills it can be given up with it. A submission
    # given up so (KilledWorker) is graded once more, alone, once everything else is done: an honest one then
    # passes, and one that kills its worker every time is NOT GRADED.
    suspects, alone = [], set()

    def submit_more():
        if not futures and suspects and not any(not hold(key) for key in waiting):
            waiting.insert(0, suspects.pop(0))  # the second chance, alone: nothing else is in flight
            alone.add(waiting[0])
        limit = 1 if alone else window
        while len(futures) < limit and (key := next_unheld(waiting, hold)) is not None:
            assignment, student = key
            submission = submission_of(layout, assignment, student, (sources or {}).get((assignment, student)))
            if isinstance(submission, dict):  # refused before grading
                finished(assignment, student, Path(tempfile.mkdtemp(prefix="submission-", dir=staging)), submission)
                continue
            named = re.sub(r"[^\w.-]", "_", student)  # (the dashboard's and the scheduler's name of the task)
            future = client.submit(grade_task, bundle_futures[assignment], submission, pure=False,
                                   key=f"grade-{assignment}-{named}-{uuid.uuid4().hex[:12]}")
            futures[future] = (assignment, student)
            queue.add(future)

    running = {}  # a task's key -> (since when, on which worker) the scheduler has had it processing

    def give_up_overruns():
        """Cancel each task that ran past ``deadline`` on its worker, restart that worker, and say so."""
        if client.status != "running":  # (the scheduler is going away: the results say so)
            return
        now = time.monotonic()
        try:
            processing = client.processing()
        except Exception as error:  # noqa: BLE001 - the scheduler went away: the next result says so
            raise SchedulerGone(error, [*futures.values(), *waiting, *suspects]) from error
        by_key = {future.key: future for future in futures}
        overran = {}
        for worker, keys in processing.items():
            for key in keys:
                if key in by_key:
                    if running.get(key, (0, None))[1] != worker:  # (given to another worker: its clock starts again)
                        running[key] = (now, worker)
                    if now - running[key][0] > deadline:
                        overran.setdefault(worker, []).append(by_key[key])
        for worker, stuck in overran.items():
            for future in stuck:
                assignment, student = futures.pop(future)
                future.cancel()
                finished(assignment, student, Path(tempfile.mkdtemp(prefix="submission-", dir=staging)), {
                    "success": False, "log": "", "seconds": now - running.pop(future.key)[0],
                    "reason": f"its grading task ran more than {deadline:g} s on its Dask worker, which was restarted"})
            restart_worker(client, worker)

    try:
        submit_more()
        while futures:
            if deadline is not None:
                while not queue.has_ready():
                    give_up_overruns()
                    if not futures or queue.has_ready():
                        break
                    time.sleep(WATCH_SECONDS)
                submit_more()
                if not futures:
                    break
            future = next(queue)
            if future not in futures:  # (one given up meanwhile)
                continue
            assignment, student = futures.pop(future)
            running.pop(future.key, None)
            try:
                result = future.result()
            except Exception as error:  # noqa: BLE001 - the task failed: a worker it killed, or the cluster
                if is_killed_worker(error) and (assignment, student) not in alone:
                    suspects.append((assignment, student))
                    future.release()
                    submit_more()
                    continue
                if is_killed_worker(error):
                    result = {"success": False, "log": "", "seconds": 0.0,
                              "reason": f"its grading worker died each of the {allowed + 1} times it was graded, "
                                        f"and {allowed + 1} times more when it was graded alone (the scheduler's "
                                        f"distributed.scheduler.allowed-failures is {allowed})"}
                elif client.status != "running" or is_comm_error(error):
                    waiting.insert(0, (assignment, student))
                    raise SchedulerGone(error, [*futures.values(), *waiting, *suspects]) from error
                else:
                    result = {"success": False, "log": "".join(traceback.format_exception(error)), "seconds": 0.0,
                              "reason": f"its grading task failed: {type(error).__name__}: {error}"}
            finished(assignment, student, *unpacked(layout, staging, assignment, student, result))
            future.release()
            if stop():
                for future in futures:
                    future.cancel()
                return []
            submit_more()
        return waiting  # (empty, or only what ``hold`` keeps back)
    finally:
        for future in bundle_futures.values():
            future.release()


def _bundle(bundle):
    return bundle


def restart_worker(client, worker: str):
    """Stop what ``worker`` is running: its nanny restarts it (a worker
    without one is told to exit, and the cluster goes on without it)."""
    import os

    try:
        status = client.restart_workers([worker], raise_for_error=False).get(worker)
    except Exception:  # noqa: BLE001 - (no nanny, or the worker is gone already)
        status = None
    if status != "OK":
        try:
            client.run(os._exit, 1, workers=[worker], wait=False)
        except Exception:  # noqa: BLE001 - gone already
            pass


class SchedulerGone(RuntimeError):
    """The Dask scheduler went away during the run."""

    def __init__(self, error, left):
        super().__init__(f"{type(error).__name__}: {error}")
        self.left = left


def is_killed_worker(error) -> bool:
    from distributed.scheduler import KilledWorker

    return isinstance(error, KilledWorker)


def is_comm_error(error) -> bool:
    from distributed.comm.core import CommClosedError

    return isinstance(error, (CommClosedError, OSError, TimeoutError)) or type(error).__name__ in (
        "CancelledError", "FutureCancelledError")


def allowed_failures(client) -> int:
    """How often the scheduler lets a task's worker die before it gives the task up."""
    try:
        return int(client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures))
    except Exception:  # noqa: BLE001 - (the scheduler's configuration, as this machine would have it)
        import dask

        return int(dask.config.get("distributed.scheduler.allowed-failures"))


def open_cluster(scheduler: str, jobs: int, preload, memory_bytes, out):
    """(client, cluster or None): a Client of the scheduler at ``scheduler``,
    or of a new LocalCluster of ``jobs`` single-threaded worker processes if
    it is "local"; every worker of it runs GradingWorkerPlugin."""
    cluster = None
    if scheduler == "local":
        # No dashboard on a laptop's run (a port of its own would clash with another run's); one thread per
        # worker: grading is CPU-bound, and a worker's warm template serves one kernel at a time.
        import dask

        with dask.config.set(QUIET):
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                                   scheduler_port=0, silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError) as error:
            raise SystemExit(f"make grade: no Dask scheduler answers at {scheduler} ({error}); start one "
                             f"(instructor/cluster.md) or run make grade without SCHEDULER=") from None
    client.register_plugin(GradingWorkerPlugin(preload, memory_bytes))
    link = getattr(client, "dashboard_link", None) if cluster is None else None
    workers = len(client.scheduler_info().get("workers", {}))
    print(f"Dask scheduler {client.scheduler.address}: {workers} worker(s)"
          + (f"; dashboard {link}" if link else ""), file=out, flush=True)
    if cluster is None:
        try:
            saturation = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION)
        except Exception:  # noqa: BLE001 - (a scheduler of another version: nothing to say)
            saturation = 1.0
        if saturation != 1.0:
            print(f"make grade: WARNING: this scheduler's worker-saturation is {saturation:g}: a worker holds "
                  f"submissions waiting behind the one it grades, and if a submission kills that worker, Dask counts "
                  f"the death against them too (an honest submission may end NOT GRADED); start the scheduler with "
                  f"DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=1.0 (instructor/cluster.md)", file=out, flush=True)
    return client, cluster


def close_cluster(client, cluster):
    # (a client whose scheduler went away logs its attempts to reconnect: the run has said so in one line)
    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()
