"""What a verification run writes: integrity.csv (one row per submission)
and the summary it prints, every student-made text escaped (``printable``)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

CSV_NAME = "integrity.csv"

CSV_COLUMNS = ["assignment", "student_id", "nbgrader_score", "verified_score", "max_score", "flagged", "reason"]


def write_csv(path: Path, verdicts) -> Path:
    """integrity.csv: this run's rows, and the earlier rows of submissions not verified now."""
    rows = {}
    if path.is_file():
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if set(CSV_COLUMNS) <= set(row):
                    rows[(row["assignment"], row["student_id"])] = {k: row[k] for k in CSV_COLUMNS}
    for v in verdicts:
        rows[(v.assignment, v.student)] = {
            "assignment": v.assignment,
            "student_id": v.student,
            "nbgrader_score": "" if v.nbgrader_score is None else f"{v.nbgrader_score:g}",
            "verified_score": f"{v.verified_score:g}",
            "max_score": f"{v.max_score:g}",
            "flagged": "yes" if v.flagged else "no",
            "reason": printable(v.reason),
        }
    partial = path.with_name(f".{path.name}.part")
    # (every field escaped: a student id or score from an earlier file as much as this run's reasons)
    with open(partial, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for key in sorted(rows):
            writer.writerow(rows[key])
    partial.replace(path)
    return path


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
