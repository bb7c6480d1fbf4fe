"""The report's numbers, read from what `make grade` left in a course folder.

- the gradebook (nbgrader's database): each submission's points per graded cell (a *task*), whether it
  was late, and every student of the course;
- ``causes.csv`` (tools/verification/verify.py): for each graded cell of each verified submission, whether the student
  attempted it (a solution cell before it holds more than the release's stub), the code of the likely
  mistake (tools/verification/probes.py, "Causes as data") and how long verification took;
- ``integrity.csv``: the submissions flagged for a look, and those NOT GRADED in the last run.

The causes come from verification, which runs outside the student's kernel: nothing the notebook printed
is read. The CSV files are read as untrusted text (bounded, and only the known columns and codes kept).
"""

import csv
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..course_settings import CourseSettings
from ..lateness import seconds_late
from ..verification.probes import GENERAL_CAUSES, OTHER

MAX_CSV_BYTES = 64 * 1024**2  # a causes.csv or integrity.csv larger than this is not read
MAX_ROWS = 1_000_000
# Below this share of full marks, a task is flagged "almost nobody passes".
HARD_TASK = 0.2
# A task whose failures are more than this share "other" is flagged: its checks do not understand them.
MOSTLY_OTHER = 0.5
# A student's percentage this many points below their mean of the earlier assignments is "falling".
FALLING_POINTS = 20.0
# Below this mean percentage, a student may need help.
LOW_MEAN = 50.0
# Codes that say why a task was not done rather than which idea was missed.
NOT_A_MISTAKE = {"not_attempted"}


def read_csv(path: Path, columns):
    """The rows of a CSV file the course folder holds, keeping ``columns`` only; [] if it is absent."""
    if not path.is_file():
        return []
    if path.stat().st_size > MAX_CSV_BYTES:
        raise ValueError(f"{path} has {path.stat().st_size} bytes; the report reads at most {MAX_CSV_BYTES}")
    rows = []
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        for n, row in enumerate(csv.DictReader(f)):
            if n >= MAX_ROWS:
                raise ValueError(f"{path} has more than {MAX_ROWS} rows")
            if set(columns) <= set(row):
                rows.append({k: (row[k] or "")[:2000] for k in columns})
    return rows


def number(text, default=None):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


def correlation(xs, ys):
    """Pearson's r of two equally long lists; None if either does not vary."""
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sxy / math.sqrt(sxx * syy)


@dataclass
class Task:
    """One graded cell of an assignment, over every graded submission."""

    name: str
    max_points: float
    scores: dict = field(default_factory=dict)  # {student: points}
    attempted: dict = field(default_factory=dict)  # {student: bool}, from causes.csv
    causes: dict = field(default_factory=dict)  # {student: code} of the submissions that lost points
    discrimination: float | None = None

    @property
    def n(self):
        return len(self.scores)

    @property
    def full(self):
        return sum(1 for s in self.scores.values() if s >= self.max_points - 1e-9)

    @property
    def share_full(self):
        return self.full / self.n if self.n else 0.0

    @property
    def not_attempted(self):
        return sum(1 for s in self.scores if self.attempted.get(s) is False)

    @property
    def share_not_attempted(self):
        return self.not_attempted / self.n if self.n else 0.0

    @property
    def mean(self):
        return statistics.fmean(self.scores.values()) if self.scores else 0.0

    def cause_counts(self):
        """[(code, count)], most common first (then by code), of the submissions that lost points."""
        counts = Counter(self.causes.values())
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    def mistakes(self):
        """The failures that are mistakes (not "not attempted")."""
        return [c for c in self.causes.values() if c not in NOT_A_MISTAKE]

    def flags(self):
        flags = []
        if self.n >= 3 and self.share_full < HARD_TASK:
            flags.append(f"almost nobody passes: {self.full} of {self.n} with full marks")
        mistakes = self.mistakes()
        other = sum(1 for c in mistakes if c == OTHER)
        if len(mistakes) >= 2 and other / len(mistakes) > MOSTLY_OTHER:
            flags.append(f"causes mostly “other”: {other} of {len(mistakes)} failures name no known mistake")
        stricter = sum(1 for c in self.causes.values() if c == "stricter_test")
        if stricter:
            flags.append(f"nbgrader's hidden test failed {stricter} submission(s) that verification passes")
        return flags


@dataclass
class AssignmentReport:
    name: str
    tasks: list  # [Task], in the notebook's order
    totals: dict  # {student: points}
    max_score: float
    late: dict  # {student: seconds late}, late submissions only
    flagged: dict  # {student: reason}, integrity.csv's flagged rows (NOT GRADED ones included)
    not_graded: dict  # {student: reason}
    seconds: list  # verification seconds, one per verified submission
    cause_names: dict  # {code: (name, section)}

    @property
    def n(self):
        return len(self.totals)

    @property
    def median_seconds(self):
        return statistics.median(self.seconds) if self.seconds else None

    def cause_name(self, code):
        if code in self.cause_names:
            return self.cause_names[code]
        return (GENERAL_CAUSES.get(code, code), "")


def spec_causes(root: Path, assignment: str) -> dict:
    """{code: (name, section)}: the assignment's own causes (its verification.py's CAUSES), then the general ones."""
    from ..verification.specs import load_spec

    causes = {code: (text, "") for code, text in GENERAL_CAUSES.items()}
    try:
        spec = load_spec(assignment, root / CourseSettings.read(root).layout.source)
    except Exception:  # noqa: BLE001 - a course without the spec still gets its numbers
        spec = None
    for code, value in (getattr(spec, "CAUSES", None) or {}).items():
        name, section = value if isinstance(value, tuple) else (str(value), "")
        causes[code] = (name, section)
    return causes


def read_course(root: Path, assignments=()):
    """[AssignmentReport] for every assignment of the gradebook with a submission (or ``assignments``),
    and every student of the gradebook."""
    from nbgrader.api import Gradebook

    from ..verification.report import CAUSES_COLUMNS, CAUSES_CSV, CSV_COLUMNS, CSV_NAME

    root = Path(root).absolute()
    layout = CourseSettings.read(root).layout
    causes = read_csv(root / CAUSES_CSV, CAUSES_COLUMNS)
    integrity = read_csv(root / CSV_NAME, CSV_COLUMNS)
    reports = []
    with Gradebook(layout.db_url) as gb:
        students = sorted(s.id for s in gb.students)
        names = sorted(a.name for a in gb.assignments)
        for name in names:
            if assignments and name not in assignments:
                continue
            submissions = gb.assignment_submissions(name)
            if not submissions:
                continue
            known = spec_causes(root, name)
            tasks, totals, late = {}, {}, {}
            max_score = 0.0
            for submission in submissions:
                student = submission.student_id
                totals[student] = float(submission.score or 0)
                max_score = float(submission.max_score or 0)
                if seconds_late(submission) > 0:
                    late[student] = seconds_late(submission)
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        task = tasks.setdefault(grade.name, Task(grade.name, float(grade.max_score or 0)))
                        task.scores[student] = float(grade.score or 0)
            order = {cell.name: n for n, cell in enumerate(
                gb.find_assignment(name).notebooks[0].grade_cells)} if gb.find_assignment(name).notebooks else {}
            seconds = {}
            for row in causes:
                if row["assignment"] != name or row["grade_id"] not in tasks:
                    continue
                task, student = tasks[row["grade_id"]], row["student_id"]
                if student not in task.scores:
                    continue
                task.attempted[student] = row["attempted"] != "no"
                code = row["cause"]
                if task.scores[student] < task.max_points - 1e-9 or code == "stricter_test":
                    task.causes[student] = code if code in known else OTHER
                if number(row["seconds"]) is not None:
                    seconds[student] = number(row["seconds"])
            flagged, not_graded = {}, {}
            for row in integrity:
                if row["assignment"] == name and row["flagged"] == "yes":
                    flagged[row["student_id"]] = row["reason"]
                    if row["reason"].startswith("not graded this run"):
                        not_graded[row["student_id"]] = row["reason"]
            ordered = sorted(tasks.values(), key=lambda t: (order.get(t.name, len(order)), t.name))
            for task in ordered:
                students_ = sorted(task.scores)
                task.discrimination = correlation([task.scores[s] for s in students_],
                                                  [totals[s] - task.scores[s] for s in students_])
            reports.append(AssignmentReport(name, ordered, totals, max_score, late, flagged, not_graded,
                                            sorted(seconds.values()), known))
    return reports, students


def students_needing_help(reports, students):
    """[(student, why)] for the course page: a missing submission, a low mean, or a falling grade."""
    result = []
    for student in students:
        why, missing, percentages = [], [], []
        for report in reports:
            if student not in report.totals:
                missing.append(report.name.split("_")[0])
                continue
            if report.max_score > 0:
                percentages.append(100.0 * report.totals[student] / report.max_score)
        if missing:
            why.append(f"no submission of {', '.join(missing)} ({len(missing)} of {len(reports)})")
        if percentages and statistics.fmean(percentages) < LOW_MEAN:
            why.append(f"mean {statistics.fmean(percentages):.0f}% over {len(percentages)} assignment(s)")
        if len(percentages) >= 2:
            earlier = statistics.fmean(percentages[:-1])
            if percentages[-1] <= earlier - FALLING_POINTS:
                why.append(f"falling: {percentages[-1]:.0f}% on the latest, after a mean of {earlier:.0f}%")
        if why:
            result.append((student, why))
    return result
