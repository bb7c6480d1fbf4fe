"""What a verification run writes: integrity.csv (one row per submission)
and the summary it prints, every student-made text escaped (``printable``)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

CSV_NAME = "integrity.csv"

CSV_COLUMNS = ["assignment", "student_id", "nbgrader_score", "verified_score", "max_score", "flagged", "reason",
               "seed", "run"]


# causes.csv: one row per graded cell of each verified submission (instructor/report.md).
CAUSES_CSV = "causes.csv"
CAUSES_COLUMNS = ["assignment", "student_id", "grade_id", "points", "nbgrader", "verified", "attempted", "cause",
                  "seconds"]

# The columns of an integrity.csv written before rows named their seed and run: its rows are kept, with both empty.
EARLIER_COLUMNS = CSV_COLUMNS[:-2]


def merge_rows(path: Path, columns, required, key_columns, rows: dict, covered) -> Path:
    """Write the CSV ``path`` (through a ``.part`` file that then takes its
    place): ``rows`` ({key: row}, a key being the row's values of
    ``key_columns``) and the rows already there that have the ``required``
    columns and whose submission ((assignment, student_id)) is not in
    ``covered``; in key order, every field escaped (a student id or a score
    from an earlier file as much as this run's text)."""
    merged = {}
    if path.is_file():
        with open(path, newline="", encoding="utf-8", errors="backslashreplace") as f:
            for row in csv.DictReader(f):
                if set(required) <= set(row) and (row["assignment"], row["student_id"]) not in covered:
                    kept = {k: row.get(k) or "" for k in columns}
                    merged[tuple(kept[k] for k in key_columns)] = kept
    merged.update(rows)
    partial = path.with_name(f".{path.name}.part")
    with open(partial, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for key in sorted(merged):
            writer.writerow(merged[key])
    partial.replace(path)
    return path


def write_csv(path: Path, verdicts, seed=None, run="", covered=()) -> Path:
    """integrity.csv: this run's rows (each with the run's ``seed`` and
    ``run`` id), and the earlier rows of submissions this run did not cover;
    no earlier row of a submission in ``covered`` (those of ``verdicts`` and
    any others this run graded) is kept, even if this run has none of its
    own for it."""
    covered = {*covered, *((v.assignment, v.student) for v in verdicts)}
    rows = {}
    for v in verdicts:
        rows[(v.assignment, v.student)] = {
            "assignment": v.assignment,
            "student_id": v.student,
            "nbgrader_score": "" if v.nbgrader_score is None else f"{v.nbgrader_score:g}",
            "verified_score": f"{v.verified_score:g}",
            "max_score": f"{v.max_score:g}",
            "flagged": "yes" if v.flagged else "no",
            "reason": printable(v.reason),
            "seed": "" if seed is None else str(seed),
            "run": printable(run),
        }
    return merge_rows(path, CSV_COLUMNS, EARLIER_COLUMNS, ("assignment", "student_id"), rows, covered)


def forget_rows(root: Path, covered, out) -> int:
    """After a run that graded ``covered`` without verifying them
    (GRADING_VERIFY=off, or no sandbox): remove their rows of earlier runs
    from ``root``'s integrity.csv, if it has any, since they judged grades
    the gradebook no longer holds. Returns how many were removed."""
    path = Path(root) / CSV_NAME
    if not path.is_file():
        return 0
    with open(path, newline="") as f:
        before = sum(1 for _ in csv.DictReader(f))
    write_csv(path, [], covered=covered)
    if (Path(root) / CAUSES_CSV).is_file():
        write_causes(Path(root) / CAUSES_CSV, [], covered=covered)
    with open(path, newline="") as f:
        removed = before - sum(1 for _ in csv.DictReader(f))
    if removed:
        print(f"not verified this run: {removed} row(s) of earlier runs removed from {path} (their submissions "
              f"were graded again)", file=out, flush=True)
    return removed


def write_causes(path: Path, verdicts, covered=()) -> Path:
    """causes.csv: for each graded cell of this run's verified submissions, its points (nbgrader's and
    verified), whether the student attempted it and the code of the likely mistake. Rows of earlier runs are
    dropped for every submission this run verified or ``covered``; the others are kept."""
    gone = {tuple(pair) for pair in covered} | {(v.assignment, v.student) for v in verdicts if not v.not_graded}
    rows = {}
    for v in verdicts:
        if v.not_graded:
            continue
        for c in v.cells:
            rows[(v.assignment, v.student, c.grade_id)] = {
                "assignment": v.assignment, "student_id": v.student, "grade_id": c.grade_id,
                "points": f"{c.points:g}", "nbgrader": "" if c.nbgrader is None else f"{c.nbgrader:g}",
                "verified": f"{c.verified:g}", "attempted": "yes" if c.attempted else "no",
                # nbgrader withheld points that verification confirms: its hidden test is stricter than the check
                "cause": c.cause or ("stricter_test" if c.nbgrader is not None and c.nbgrader < c.verified else ""),
                "seconds": f"{v.seconds:.2f}",
            }
    return merge_rows(path, CAUSES_COLUMNS, CAUSES_COLUMNS, ("assignment", "student_id", "grade_id"), rows,
                      gone)


def report(verdicts, path, seconds, out):
    flagged = [v for v in verdicts if v.flagged]
    print(f"verified {len(verdicts)} submission(s) in {seconds:.1f} s; {len(flagged)} flagged; "
          f"written to {path}", file=out, flush=True)
    if not flagged:
        return
    print("\nFLAGGED: nbgrader's grade and verification outside the notebook disagree (either way), or the "
          "submission was not graded (instructor/integrity.md says what to do):", file=out)
    header = ("assignment", "student", "nbgrader", "verified", "max", "first reason")
    rows = [(v.assignment, printable(v.student), "-" if v.nbgrader_score is None else f"{v.nbgrader_score:g}",
             f"{v.verified_score:g}", f"{v.max_score:g}",
             shorten(v.reason.split("; ")[0], 110)) for v in flagged]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [text.ljust(width) for text, width in zip(row, widths)]
        print("  " + "  ".join(cells) + "  " + row[-1], file=out)
    print(file=out, flush=True)


def shorten(text: str, width: int) -> str:
    text = printable(text)
    return text if len(text) <= width else text[: width - 3] + "..."


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text) -> str:
    """``text`` with control characters written as escapes: a reason quotes a
    student's exception, which could hold a terminal's escape codes (and hide
    a flagged row); and with what UTF-8 cannot encode (a lone surrogate such
    as ``"\\udcff"``) written as an escape too, so that no file or terminal
    the run writes to refuses it."""
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
