"""How fast does a class get graded? Stock nbgrader against `make grade`.

Usage: ``.venv/bin/python benchmarks/grading.py [--submissions 12] [--assignment NAME ...] [--jobs N]
[--dask-workers 1,2,4] [--pool-and-dask-only]``

For every assignment (or those named), builds N synthetic submissions —
correct, partly wrong (the known-wrong implementations of
solutions/<assignment>/checks/wrong_implementations/), blank, and crashing (answer cells that raise) —
in identical temporary courses, and grades each course once, timing the whole
job: autograde, feedback, grades.csv and, for `make grade`, verification.

- stock: sequential nbgrader, as its documentation has you run it:
  `nbgrader autograde`, `nbgrader generate_feedback`, `nbgrader export`, with
  nbgrader's own Execute and feedback preprocessors (no sandbox);
- make grade, as instructors run it (sandboxed, every grade verified outside
  the notebook: tools/verification/verify.py), with JOBS=1 and JOBS=N (default: the number
  of cores): kernels and verifications forked from one warm template, which
  every worker shares (tools/sandbox/warm.py);
- the same with GRADING_WARM=off: every kernel and every verification starts
  a fresh sandboxed Python (as before the templates; verification still runs
  in the worker, right after grading);
- make grade on a local Dask cluster (``SCHEDULER=local``, tools/grading/cluster.py) of 1, 2 and 4
  single-threaded worker processes (``--dask-workers``), the same tasks as the local pool's;
- and Dask's own cost per task: the seconds a LocalCluster of one worker takes per task whose
  bytes in and out are those of a real grading task of the assignment, doing no grading.

``--pool-and-dask-only`` times only make grade's local pool (JOBS=N) and the
Dask clusters, and compares their scores with the pool's: what a measurement
of Dask's cost at size needs.

It prints, per assignment, the seconds and the speed-up over stock of each
run, the CPU-seconds of each make grade run (every process it started, counted
by a cgroup v2 of the benchmark's own where one can be made: ``children_cpu``), the seconds per phase that `make grade` reports (worker seconds summed
over submissions: kernel start, cells, kernel stop, verification, nbgrader's
own work, feedback; and the wall clock of it all), and checks that every
submission gets exactly the same score in every cell from all runs, and that
verification flags none of these honest submissions.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from tools.course_settings import default_jobs
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import EXERCISES, ROOT, SOLUTIONS, assignments, wrong_implementations


def stock_config() -> str:
    """Configuration lines that put back stock nbgrader's own autograde and
    feedback preprocessors (no sandbox, hidden tests in the feedback), read
    from nbgrader itself so that "stock" means what nbgrader ships."""
    from nbgrader.converters import Autograde, GenerateFeedback

    def default(converter, trait):
        return [f"{cls.__module__}.{cls.__name__}" for cls in converter.class_traits()[trait].default()]

    return (f"\nc.Autograde.autograde_preprocessors = {default(Autograde, 'autograde_preprocessors')!r}\n"
            f"c.GenerateFeedback.preprocessors = {default(GenerateFeedback, 'preprocessors')!r}\n")


def synthetic_submissions(assignment: str, count: int):
    """[(student, notebook)]: correct, partly wrong, blank and crashing, in turn."""
    release = EXERCISES / assignment / f"{assignment}.ipynb"
    answers = solution_code(SOLUTIONS / assignment / f"{assignment}.ipynb")
    wrong = itertools.cycle(wrong_implementations(assignment) or [None])
    crashing = {
        grade_id: (f'raise RuntimeError("this answer crashes")\n' if i % 2 else "") + code
        for i, (grade_id, code) in enumerate(answers.items())
    }
    result = []
    for i in range(count):
        kind = ("correct", "wrong", "blank", "crashing")[i % 4]
        if kind == "correct":
            notebook = fill_release(release, answers)
        elif kind == "wrong":
            path = next(wrong)
            cells = read_wrong_implementation(path)[1] if path else {}
            notebook = fill_release(release, {**answers, **cells})
        elif kind == "blank":
            notebook = nbformat.read(release, as_version=4)
        else:
            notebook = fill_release(release, crashing)
        result.append((f"student-{i:03d}-{kind}", notebook))
    return result


def new_course(folder: Path, assignment: str, submissions, extra_config=""):
    course = Course(folder, [assignment])
    if extra_config:
        with open(folder / "nbgrader_config.py", "a") as config:
            config.write(extra_config)
    # Record the assignment in the gradebook before the clock starts.
    course.generate(assignment)
    for student, notebook in submissions:
        course.submit(student, assignment, notebook)
    return course


def timed(command, cwd, env=None):
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, text=True, capture_output=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds


def cell_scores(course, assignment):
    return {student: result["cells"] for student, result in course.scores(assignment).items()}


PHASES = re.compile(r"worker seconds per phase, all submissions: (.*)")
GRADED = re.compile(r"graded \d+ of \d+ in ([\d.]+) s")


CGROUP = {}


def children_cpu() -> float:
    """CPU-seconds used so far by this process and every process it started: its own cgroup v2's usage (made on
    first use, as the suite makes one: tests/plugins/cpu_seconds.py; it counts the kernels under bubblewrap and the
    processes their parents left), or, where no cgroup can be made, getrusage's of this process and the children it
    waited for (which misses those)."""
    if "own" not in CGROUP:
        try:
            if str(ROOT) not in sys.path:  # (tests/ is not a package the venv installs)
                sys.path.insert(0, str(ROOT))
            from tests.plugins.cpu_seconds import enter_own_cgroup

            CGROUP["own"], CGROUP["parent"] = enter_own_cgroup()
            import atexit

            atexit.register(leave_own_cgroup)
        except (OSError, ImportError):
            CGROUP["own"] = None
    if CGROUP["own"] is not None:
        from tests.plugins.cpu_seconds import read_cpu_stat

        return read_cpu_stat(CGROUP["own"])["usage_usec"] / 1e6
    mine, theirs = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + theirs.ru_utime + theirs.ru_stime


def leave_own_cgroup():
    try:
        (CGROUP["parent"] / "cgroup.procs").write_text(str(os.getpid()))
        CGROUP["own"].rmdir()
    except OSError:
        pass


def make_grade(course, jobs, warm=True, scheduler=None):
    """Seconds, what make grade printed, per phase, and integrity rows."""
    env = {**os.environ, "GRADING_WARM": "on" if warm else "off"}
    cpu = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(["make", "--no-print-directory", "grade", f"COURSE={course.root}", f"JOBS={jobs}"]
                          + ([f"SCHEDULER={scheduler}"] if scheduler else []),
                          cwd=ROOT, text=True, capture_output=True, env=env)
    seconds = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit(f"make grade failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    phases = {"CPU-seconds, every process of the run": cpu}
    match = PHASES.search(proc.stdout)
    if match:
        for part in match.group(1).split("; "):
            name, _, value = part.rpartition(" ")
            phases[name] = float(value)
    graded = GRADED.search(proc.stdout)
    phases["autograde + feedback + verification, wall clock"] = float(graded.group(1)) if graded else float("nan")
    with open(course.root / "integrity.csv", newline="") as f:
        integrity = list(csv.DictReader(f))
    return seconds, phases, integrity


def dask_overhead(course, assignment, tasks=40) -> float:
    """Seconds Dask adds per task: a LocalCluster of one single-threaded
    worker runs ``tasks`` tasks carrying a real task's bundle and submission
    (tools/grading/task.py) and returning a graded submission's folders (of
    this course's first student, graded), doing no grading; the same calls
    made directly take the rest."""
    from distributed import Client, LocalCluster

    from tools.course_settings import CourseSettings
    from tools.grading.run import make_bundles, snapshot_gradebook, submission_of
    from tools.grading.task import read_regular

    settings = CourseSettings.read(course.root)
    layout = settings.layout
    with tempfile.TemporaryDirectory() as tmp:
        snapshot = Path(tmp) / "gradebook.db"
        snapshot_gradebook(layout, snapshot)  # (the course was graded: its gradebook exists)
        bundle = make_bundles(settings, [assignment], snapshot, (), None, 600)[assignment]
    student = layout.submissions([assignment])[0][1]
    submission = submission_of(layout, assignment, student)
    made = {kind: read_regular(layout.folder(kind, student, assignment))[0] for kind in ("autograded", "feedback")}
    made["gradebook.db"] = bundle.gradebook
    start = time.perf_counter()
    for _ in range(tasks):
        echo_task(bundle, submission, made)
    direct = time.perf_counter() - start
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      scheduler_port=0) as cluster, Client(cluster) as client:
        held = client.submit(lambda b: b, bundle, pure=False)
        [made_there] = client.scatter([made])
        client.gather(client.submit(echo_task, held, submission, made_there, pure=False))  # (the worker is warm)
        start = time.perf_counter()
        client.gather([client.submit(echo_task, held, submission, made_there, pure=False) for _ in range(tasks)])
        through_dask = time.perf_counter() - start
    return (through_dask - direct) / tasks


def echo_task(bundle, submission, made):
    """A task of a real one's bytes that grades nothing."""
    return {"files": made, "success": True, "log": ""}


def benchmark(assignment, n, jobs, tmp: Path, out=sys.stdout, dask_workers=(), pool_and_dask_only=False):
    """{run name: (seconds, phases, scores)} for one assignment; raises if scores differ."""
    submissions = synthetic_submissions(assignment, n)
    runs = {}
    problems = []
    if pool_and_dask_only:
        plan, baseline_name = [(jobs, True)], f"make grade JOBS={jobs}"
    else:
        plan, baseline_name = [(j, True) for j in sorted({1, jobs})] + [(jobs, False)], "stock nbgrader"
        stock_run(assignment, submissions, tmp, runs, out)
    for j, warm in plan:
        name = f"make grade JOBS={j}" + ("" if warm else ", GRADING_WARM=off")
        course = new_course(tmp / f"{assignment}-{j}-{warm}", assignment, submissions)
        seconds, phases, integrity = make_grade(course, j, warm)
        runs[name] = (seconds, phases, cell_scores(course, assignment))
        flagged = [row["student_id"] for row in integrity if row["flagged"] != "no"]
        if len(integrity) != n or flagged:
            problems.append(f"{name}: {len(integrity)} of {n} verified; flagged: {flagged}")
        print(f"  {assignment}: {name} {seconds:.1f} s", file=out, flush=True)
    for j in dask_workers:
        name = f"make grade SCHEDULER=local JOBS={j}"
        course = new_course(tmp / f"{assignment}-dask-{j}", assignment, submissions)
        seconds, phases, integrity = make_grade(course, j, scheduler="local")
        runs[name] = (seconds, phases, cell_scores(course, assignment))
        flagged = [row["student_id"] for row in integrity if row["flagged"] != "no"]
        if len(integrity) != n or flagged:
            problems.append(f"{name}: {len(integrity)} of {n} verified; flagged: {flagged}")
        print(f"  {assignment}: {name} {seconds:.1f} s", file=out, flush=True)
    if dask_workers:
        overhead = dask_overhead(course, assignment)
        runs["Dask's cost per task"] = (overhead, {}, runs[baseline_name][2])
        print(f"  {assignment}: Dask's cost per task {overhead * 1000:.1f} ms", file=out, flush=True)
    baseline = runs[baseline_name][2]
    for name, (_, _, scores) in runs.items():
        for student in sorted(baseline):
            if scores.get(student) != baseline[student]:
                problems.append(f"{name}: {student}: {scores.get(student)} != stock {baseline[student]}")
    return runs, problems


def stock_run(assignment, submissions, tmp: Path, runs: dict, out):
    """Stock, sequential nbgrader over ``submissions``, into ``runs``."""
    stock = new_course(tmp / f"{assignment}-stock", assignment, submissions, stock_config())
    seconds = 0.0
    for step in (["autograde", assignment], ["generate_feedback", assignment], ["export"]):
        seconds += timed([str(ROOT / ".venv" / "bin" / "nbgrader"), *step], stock.root)
    runs["stock nbgrader"] = (seconds, {}, cell_scores(stock, assignment))
    print(f"  {assignment}: stock nbgrader {seconds:.1f} s", file=out, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=12)
    parser.add_argument("--assignment", action="append", default=None,
                        help="an assignment to time (repeatable; default: every assignment)")
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--dask-workers", default="1,2,4",
                        help="worker processes of the local Dask clusters to time, comma-separated ('' for none)")
    parser.add_argument("--pool-and-dask-only", action="store_true",
                        help="time only make grade's local pool (JOBS=N) and the Dask clusters")
    args = parser.parse_args(argv)
    dask_workers = [int(j) for j in args.dask_workers.split(",") if j.strip()]
    n = args.submissions
    names = args.assignment or assignments()
    os.environ["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    results, problems = {}, []
    print(f"{n} submissions of each of {', '.join(names)} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="grading-benchmark-") as tmp:
        for assignment in names:
            results[assignment], found = benchmark(assignment, n, args.jobs, Path(tmp), dask_workers=dask_workers,
                                                   pool_and_dask_only=args.pool_and_dask_only)
            problems += found

    print(f"\n| grading {n} notebooks | seconds | notebooks/s | speed vs stock | same scores as stock |")
    print("| --- | ---: | ---: | ---: | --- |")
    for assignment, runs in results.items():
        stock = runs["stock nbgrader"][0] if "stock nbgrader" in runs else float("nan")
        for name, (seconds, _, _) in runs.items():
            if name == "Dask's cost per task":
                print(f"| {assignment}: {name} | {seconds:.4f} | | | |")
                continue
            print(f"| {assignment}: {name} | {seconds:.1f} | {n / seconds:.2f} | {stock / seconds:.2f}x | "
                  f"{'no' if any(p.startswith(name + ':') for p in problems) else 'yes'} |")
    print("\nPer phase (make grade's own report: worker seconds summed over submissions, then the wall clock "
          "of the grading phase, whose workers verify each submission right after grading it):")
    for assignment, runs in results.items():
        for name, (_, phases, _) in runs.items():
            if phases:
                print(f"- {assignment}, {name}: " + "; ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    if problems:
        print("\n" + "\n".join(problems))
        return 1
    print("\nEvery submission got the same score in every cell from all runs, and verification flagged none.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
