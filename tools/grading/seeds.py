"""Verification on several seeds: do the checks say the same whatever the draw?

Usage: ``python -m tools.grading.seeds [ASSIGNMENT ...] [--seeds N] [--first S]``.

Verification draws its inputs afresh for every run (``p.rng``, ``p.gen``), so a
check whose verdict or diagnosis depends on the draw shows it only now and then:
a reference that falls short on one draw in forty, two mistakes that one draw
cannot tell apart. This command verifies the assignment's solution and every
wrong implementation in ``solutions/<assignment>/checks/wrong_implementations/``
under ``N`` seeds, in the sandbox as ``make grade`` does, and reports

- a seed on which the solution loses points (its check is stricter than the
  task on that draw: the grader's self-check would refuse the assignment);
- a wrong implementation whose first failing cell or cause differs from its
  file's ``# cause:`` line on some seed, with that seed, so that
  ``python -m tools.verification.verify --seed`` (or this command with
  ``--first``) repeats it.

It exits 1 if anything was reported. It takes a few seconds per seed for most
assignments and about a minute per seed for ex06 and ex07 (their checks train
and time models); CONTRIBUTING.md says when to run it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from ..assignments.answers import fill_release, solution_code
from ..assignments.wrong_implementations import read_wrong_implementation
from ..paths import ROOT, assignments as all_assignments
from ..verification.run import Templates
from ..verification.specs import prepare

CAUSE_LINE = re.compile(r"^# cause: (\S+)\s*$")


def stated_cause(path: Path) -> str | None:
    """The code of a wrong implementation's ``# cause:`` line (in its header), or None."""
    header = path.read_text().split("\n# %%", 1)[0].splitlines()
    return next((m.group(1) for m in map(CAUSE_LINE.match, header[1:]) if m), None)


def first_loss(verdict):
    """(grade_id, cause) of the first cell that lost points, or None."""
    lost = [cell for cell in verdict.cells if cell.verified < cell.points]
    return (lost[0].grade_id, lost[0].cause) if lost else None


def sweep(assignment: str, seeds, root: Path = ROOT, out=sys.stdout) -> list[str]:
    """Verify the solution and the wrong implementations of ``assignment`` under each seed; return the problems."""
    source = root / "solutions" / assignment / f"{assignment}.ipynb"
    release = root / "exercises" / assignment / f"{assignment}.ipynb"
    answers = solution_code(source)
    wrongs = sorted((source.parent / "checks" / "wrong_implementations").glob("*.py"))
    staging = Path(tempfile.mkdtemp(prefix="seeds-"))
    problems, seen = [], {path: {} for path in wrongs}
    started = time.monotonic()
    try:
        notebooks = {"solution": staging / "solution.ipynb"}
        nbformat.write(fill_release(release, answers), notebooks["solution"])
        for path in wrongs:
            notebooks[path] = staging / f"{path.stem}.ipynb"
            nbformat.write(fill_release(release, {**answers, **read_wrong_implementation(path)[1]}), notebooks[path])
        templates = None
        try:
            for seed in seeds:
                checks = prepare(assignment, source, seed, staging / f"inputs-{seed}")
                if templates is None:  # the memory verification gives its sandbox in make grade
                    templates = Templates(staging, checks.limits.memory_bytes)
                for name, notebook in notebooks.items():
                    workdir = staging / f"run-{seed}-{notebook.stem}"
                    workdir.mkdir()
                    verdict = templates.verify(checks, notebook, workdir)
                    shutil.rmtree(workdir, ignore_errors=True)
                    if name == "solution":
                        lost = [f"{c.grade_id} ({c.why[:200]})" for c in verdict.cells if c.verified < c.points]
                        if lost:
                            problems.append(f"{assignment}: the solution loses points at seed {seed}: "
                                            + "; ".join(lost))
                    else:
                        seen[name][seed] = first_loss(verdict)
        finally:
            if templates is not None:
                templates.close()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for path, by_seed in seen.items():
        stated = stated_cause(path)
        for seed, got in by_seed.items():
            if got is None or got[1] != stated:
                problems.append(f"{assignment}/{path.name}: states {stated}, diagnosed "
                                f"{'nothing (no cell lost points)' if got is None else f'{got[1]} on {got[0]}'} "
                                f"at seed {seed}")
    print(f"{assignment}: the solution and {len(wrongs)} wrong implementations on {len(seeds)} seed(s) in "
          f"{time.monotonic() - started:.0f} s: {len(problems)} problem(s)", file=out, flush=True)
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignments (default: all)")
    parser.add_argument("--seeds", type=int, default=4, help="how many seeds (default 4)")
    parser.add_argument("--first", type=int, default=1, help="the first seed (default 1); the next follow it")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be 1 or more, not {args.seeds}")
    known = all_assignments()
    unknown = [a for a in args.assignments if a not in known]
    if unknown:
        parser.error(f"no assignment {', '.join(unknown)}; the assignments are {', '.join(known)}")
    problems = []
    for assignment in args.assignments or known:
        problems += sweep(assignment, range(args.first, args.first + args.seeds))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
