"""How fast does a class get graded? Stock nbgrader against `make grade`.

Usage: ``.venv/bin/python benchmarks/grading.py [--submissions 24] [--assignment ex01_by_hand] [--jobs N]``

Builds N synthetic submissions of one assignment — correct, partly wrong (the
known-wrong implementations of tests/wrong_implementations/), blank, and
crashing (answer cells that raise) — in two identical temporary courses, and
grades each course once, timing the whole job: autograde, feedback and
grades.csv.

- stock: sequential nbgrader, as its documentation has you run it:
  `nbgrader autograde`, `nbgrader generate_feedback`, `nbgrader export`, with
  nbgrader's own Execute and feedback preprocessors (no sandbox);
- make grade: `make grade COURSE=...` with JOBS=1 and with JOBS=N (default:
  the number of cores), sandboxed, without verification (GRADING_VERIFY=off);
- make grade JOBS=N as instructors run it: with every grade verified outside
  the notebook (tools/verify.py, integrity.csv), to measure what that adds.

It prints notebooks per second side by side and checks that every submission
gets exactly the same score in every cell from all runs, and that verification
flags none of these honest submissions.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.grade import default_jobs  # noqa: E402
from tools.nbgrader_course import Course, fill_release, read_wrong_implementation, solution_code  # noqa: E402
from tools.paths import EXERCISES, ROOT, SOLUTIONS, WRONG_IMPLEMENTATIONS  # noqa: E402


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
    wrong = itertools.cycle(sorted((WRONG_IMPLEMENTATIONS / assignment).glob("*.py")) or [None])
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=24)
    parser.add_argument("--assignment", default="ex01_by_hand")
    parser.add_argument("--jobs", type=int, default=default_jobs())
    args = parser.parse_args(argv)
    n, assignment = args.submissions, args.assignment
    submissions = synthetic_submissions(assignment, n)
    env_path = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["PATH"] = env_path

    runs = {}
    with tempfile.TemporaryDirectory(prefix="grading-benchmark-") as tmp:
        tmp = Path(tmp)
        print(f"{n} submissions of {assignment} on {os.cpu_count()} cores", flush=True)

        stock = new_course(tmp / "stock", assignment, submissions, stock_config())
        seconds = 0.0
        for step in (["autograde", assignment], ["generate_feedback", assignment], ["export"]):
            seconds += timed([str(ROOT / ".venv" / "bin" / "nbgrader"), *step], stock.root)
        runs["stock nbgrader (sequential)"] = (seconds, cell_scores(stock, assignment))
        print(f"  stock nbgrader: {seconds:.1f} s", flush=True)

        without_verification = {**os.environ, "GRADING_VERIFY": "off"}
        for jobs in sorted({1, args.jobs}):
            course = new_course(tmp / f"make-grade-{jobs}", assignment, submissions)
            seconds = timed(["make", "--no-print-directory", "grade", f"COURSE={course.root}", f"JOBS={jobs}"], ROOT,
                            env=without_verification)
            runs[f"make grade JOBS={jobs}"] = (seconds, cell_scores(course, assignment))
            print(f"  make grade JOBS={jobs}: {seconds:.1f} s", flush=True)

        course = new_course(tmp / "make-grade-verified", assignment, submissions)
        verified = timed(["make", "--no-print-directory", "grade", f"COURSE={course.root}", f"JOBS={args.jobs}"], ROOT)
        name = f"make grade JOBS={args.jobs}, verified"
        runs[name] = (verified, cell_scores(course, assignment))
        with open(course.root / "integrity.csv", newline="") as f:
            integrity = list(csv.DictReader(f))
        flagged = [row["student_id"] for row in integrity if row["flagged"] != "no"]
        print(f"  {name}: {verified:.1f} s", flush=True)

    baseline_seconds, baseline = runs["stock nbgrader (sequential)"]
    print()
    print(f"| grading {n} notebooks | seconds | notebooks/s | speed vs stock | same scores as stock |")
    print("| --- | ---: | ---: | ---: | --- |")
    identical = True
    for name, (seconds, scores) in runs.items():
        same = scores == baseline
        identical &= same
        print(f"| {name} | {seconds:.1f} | {n / seconds:.2f} | {baseline_seconds / seconds:.2f}x | {'yes' if same else 'NO'} |")
    if not identical:
        for name, (_, scores) in runs.items():
            for student in sorted(baseline):
                if scores.get(student) != baseline[student]:
                    print(f"{name}: {student}: {scores.get(student)} != stock {baseline[student]}")
        return 1
    print("\nEvery submission got the same score in every cell from all runs.")
    graded = runs[f"make grade JOBS={args.jobs}"][0]
    print(f"Verification outside the notebook adds {100 * (verified - graded) / graded:.0f} % to make grade "
          f"JOBS={args.jobs} ({graded:.1f} s without, {verified:.1f} s with); it verified {len(integrity)} "
          f"submissions and flagged {len(flagged)}.")
    if len(integrity) != n or flagged:
        print(f"Expected {n} verified and none flagged; flagged: {flagged}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
