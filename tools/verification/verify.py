"""Verify every graded submission outside its notebook's kernel.

Usage: ``python -m tools.verification.verify [ASSIGNMENT ...] [--course FOLDER] [--jobs N] [--seed S]``.
``make grade`` (``tools.grading.run``) verifies each submission right after grading
it, in the grading worker (``Verification``, ``run_checks_in_worker``); run
this alone to verify again what the gradebook holds. CONTRIBUTING.md, "How
grading works", places it in the whole run.

nbgrader runs the hidden tests in the same Python process as the student's
code, so that code can defeat them (replace ``torch.allclose``, swallow
exceptions, return objects that lie when compared). Verification trusts
nothing that runs there: each assignment's
``solutions/<assignment>/checks/verification.py`` builds one check per graded
test cell from this run's seed (``prepare``); a sandboxed process runs the
course's set-up cells, the student's solution cells and the checks' probes
(``run_checks_in_sandbox``; tools/verification/harness.py), handing back plain
data only (JSON and ``.npy`` files, read without pickles); here, each check
compares them with its references (``judge_checks``). A passed check is worth
its cell's points; a submission is *flagged* in ``integrity.csv`` when nbgrader
gave a cell more points than its check confirms, or fewer (a grader broken in
the notebook gives honest work 0), or when it was not graded.

The parts: notebooks.py (what a notebook says), specs.py (an assignment's
checks for this run), sandbox_run.py (one submission's checks in the sandbox),
judging.py (the verdicts), run.py (the run: ``Verification``, ``verify``),
report.py (integrity.csv and the summary); this module is the command.

Checks are calibrated to be no stricter than the hidden tests for honest code
(tests/test_grades_cannot_be_faked.py holds them to it), so a flag means the grade needs a
look — instructor/integrity.md says what to do.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..paths import ROOT
from .run import verify


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignments to verify (default: all with submissions)")
    parser.add_argument("--course", default=str(ROOT), help="the course folder (default: the repository)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel sandboxes (default: number of cores)")
    parser.add_argument("--seed", default=None, help="repeat a run's inputs (its printed seed)")
    args = parser.parse_args(argv)
    verdicts = verify(Path(args.course), assignments=args.assignments, jobs=args.jobs, seed=args.seed)
    return 1 if any(v.flagged for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
