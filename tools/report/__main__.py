"""`make report`: ``python -m tools.report [--course FOLDER] [ASSIGNMENT ...]`` (instructor/report.md)."""

import argparse
import sys
from pathlib import Path

from ..paths import ROOT
from .data import read_course
from .pages import write_report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="make report", description=__doc__)
    parser.add_argument("--course", default=str(ROOT), help="the course folder (default: the repository)")
    parser.add_argument("assignments", nargs="*", help="only these assignments (default: every graded one)")
    args = parser.parse_args(argv)
    root = Path(args.course).absolute()
    reports, students = read_course(root, args.assignments)
    if not reports:
        print(f"make report: nothing graded in {root} yet: run make grade first", file=sys.stderr)
        return 1
    folder = write_report(root, reports, students)
    print(f"make report: {len(reports)} assignment page(s) and the course page in {folder} "
          f"(open {folder / 'index.html'}; for the instructor only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
