"""Late submissions, shown where an instructor looks.

nbgrader records when each submission was handed in (its ``timestamp.txt``)
and, when the assignment has a due date, the penalty that the course's
``LateSubmissionPlugin`` takes (nbgrader_config.py; instructor/releasing.md).
Stock nbgrader shows neither how late a submission is nor, with no penalty,
that it is late at all: only a line of its log says so. The course shows it:

- ``make grade`` ends each late submission's line (whose score is the one
  before the penalty, nbgrader's raw score) with how late it is, the penalty
  and the score after it (:func:`summary`, called by tools/grading/run.py);
- ``grades.csv`` gets a last column, ``seconds_late`` (0 for a submission
  on time or an assignment without a due date), from :class:`LateCsvExport`,
  which nbgrader_config.py makes the plugin of ``nbgrader export`` too, so
  that both write the same file. Its other columns are nbgrader's, in
  nbgrader's order;
- the feedback says it to the student (tools/feedback_templates).
"""

from __future__ import annotations

import csv

from nbgrader.plugins import CsvExportPlugin

#: nbgrader's own columns of grades.csv, in its order; then the course's.
COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
           "late_submission_penalty", "score", "max_score"]
EXTRA_COLUMNS = ["seconds_late"]


def seconds_late(submission) -> float:
    """How many seconds after the due date a submission (nbgrader's
    SubmittedAssignment) was handed in; 0 if on time or without due date or timestamp."""
    if submission.timestamp is None or submission.duedate is None:
        return 0.0
    return max(0.0, (submission.timestamp - submission.duedate).total_seconds())


def duration(seconds: float) -> str:
    """``532`` -> ``"8 min 52 s"``; ``93784`` -> ``"1 d 2 h 3 min 4 s"``."""
    left = int(round(seconds))
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if left >= size:
            parts.append(f"{left // size} {unit}")
            left %= size
    if left or not parts:
        parts.append(f"{left} s")
    return " ".join(parts)


def summary(db_url: str, assignment: str, student: str) -> str:
    """What ``make grade`` adds to a submission's line: ``""`` when it is on
    time, else how late it is, and the penalty (or that none is configured)."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return ""
        late = seconds_late(submission)
        if not late:
            return ""
        penalty = float(submission.late_submission_penalty or 0)
        if penalty:
            score = max(0.0, float(submission.score or 0) - penalty)
            return (f"  LATE by {duration(late)}: late penalty {penalty:g}, so "
                    f"{score:g} / {float(submission.max_score or 0):g} in grades.csv")
        return f"  LATE by {duration(late)}: no penalty (none configured: LateSubmissionPlugin.penalty_method)"


class LateCsvExport(CsvExportPlugin):
    """nbgrader's CSV export (the same rows and columns, quoted where a field
    needs it) with a last column, ``seconds_late``."""

    def export(self, gradebook) -> None:
        from nbgrader.api import MissingEntry

        wanted_assignments = {str(a) for a in self.assignment}
        wanted_students = {str(s) for s in self.student}
        with open(self.to or "grades.csv", "w", newline="") as file:
            writer = csv.writer(file, lineterminator="\n")
            writer.writerow(COLUMNS + EXTRA_COLUMNS)
            for assignment in gradebook.assignments:
                if wanted_assignments and assignment.name not in wanted_assignments:
                    continue
                for student in gradebook.students:
                    if wanted_students and student.id not in wanted_students:
                        continue
                    row = {"assignment": assignment.name, "duedate": assignment.duedate, "student_id": student.id,
                           "last_name": student.last_name, "first_name": student.first_name,
                           "email": student.email, "max_score": assignment.max_score}
                    try:
                        submission = gradebook.find_submission(assignment.name, student.id)
                    except MissingEntry:
                        row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0,
                                   seconds_late=0.0)
                    else:
                        penalty = submission.late_submission_penalty
                        row.update(timestamp=submission.timestamp, raw_score=submission.score,
                                   late_submission_penalty=penalty, score=max(0.0, submission.score - penalty),
                                   seconds_late=seconds_late(submission))
                    writer.writerow("" if row[key] is None else str(row[key]) for key in COLUMNS + EXTRA_COLUMNS)
