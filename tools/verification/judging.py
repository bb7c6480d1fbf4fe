"""The judge: what a submission's checks left in the sandbox, read as plain
data and compared with the run's references here, cell by cell (``Verdict``,
``CellVerdict``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .sandbox_run import ChecksRan
from .specs import Assignment, run_order


@dataclass
class CellVerdict:
    grade_id: str
    points: float
    verified: float
    nbgrader: float | None
    why: str = ""
    nbgrader_error: str = ""  # the head of the error nbgrader's test cell showed, if make grade read it

    @property
    def disagrees(self) -> bool:
        """nbgrader gave this cell more points than verification confirms, or fewer."""
        return self.nbgrader is not None and abs(self.nbgrader - self.verified) > 1e-9

    def disagreement(self) -> str:
        if self.nbgrader > self.verified:
            return f"{self.grade_id}: nbgrader {self.nbgrader:g}, verified {self.verified:g} ({self.why})"
        shown = f": nbgrader's test showed {self.nbgrader_error}" if self.nbgrader_error else ""
        return (f"{self.grade_id}: nbgrader {self.nbgrader:g}, verified {self.verified:g} (nbgrader gave fewer "
                f"points than verification confirms{shown})")


@dataclass
class Verdict:
    assignment: str
    student: str
    max_score: float
    cells: list = field(default_factory=list)
    problem: str = ""  # why verification could not run at all, if it could not
    seconds: float = 0.0
    not_graded: str = ""  # why grading failed this run, if it did: the row is flagged for a look

    @property
    def verified_score(self):
        return sum(c.verified for c in self.cells)

    @property
    def nbgrader_score(self):
        scores = [c.nbgrader for c in self.cells if c.nbgrader is not None]
        return sum(scores) if scores else None

    @property
    def flagged(self):
        """Not graded this run, or a cell whose grade verification does not
        confirm: more points than it confirms, or fewer (a grader that failed
        in the notebook, or a test stricter than its check)."""
        return bool(self.not_graded) or any(c.disagrees for c in self.cells)

    @property
    def reason(self):
        parts = [c.disagreement() for c in self.cells if c.disagrees]
        if self.problem and parts:
            parts.insert(0, self.problem)
        if self.not_graded:
            parts.insert(0, f"not graded this run ({self.not_graded}); the gradebook holds its earlier grade, if any")
        return "; ".join(parts)


def judge_checks(assignment: Assignment, ran: ChecksRan, workdir: Path) -> Verdict:
    """Judge what ``run_checks_in_sandbox`` left in ``workdir``, here."""
    start = time.monotonic()
    verdict = Verdict(assignment.name, "", assignment.max_score, problem=ran.problem)
    judge_result_files(assignment, verdict, workdir / "results", ran.status, ran.cells, ran.added)
    verdict.seconds = ran.seconds + time.monotonic() - start
    return verdict


def judge_result_files(assignment: Assignment, verdict: Verdict, results: Path, status: str, cells, added=None):
    from .probes import CheckResults, Fail, ResultsFolder

    folder = None
    if cells is not None:
        try:
            folder = ResultsFolder(results)
        except OSError as error:
            verdict.problem = f"the results folder cannot be read: {error}"
    notes = []  # what went wrong in the cells before each check
    order = run_order(assignment, cells or {}, added) if cells is not None else [
        ("check", s.name, None) for s in assignment.steps if s.kind == "check"]
    try:
        n = 0  # the step number in the program actually run
        for kind, name, _ in order:
            if kind == "missing":
                notes.append(f"solution cell {name} is missing")
                continue
            record = None
            if folder is not None:
                try:
                    record = folder.step(n)
                except Fail as error:
                    record = {"bad": str(error)}
            n += 1
            if kind != "check" and record is not None and "raised" in record:
                error = record["raised"]
                error = f"{error[0]}: {error[1]}"[:200] if isinstance(error, list) and len(error) >= 2 else "?"
                if kind == "student":
                    notes.append(f"cell {name} raised {error}")
                elif kind == "added":
                    notes.append(f"{name} raised {error}")
                else:
                    notes.append(f"the course's cell {name} failed in the sandbox ({error})")
            if kind != "check":
                continue
            points = assignment.points[name]
            cell = CellVerdict(name, points, 0.0, None)
            verdict.cells.append(cell)
            if folder is None:
                cell.why = verdict.problem or "not verified"
            elif record is None:
                cell.why = f"the check never ran: the process stopped before it ({status})"
            elif "bad" in record:
                cell.why = f"unreadable results: {record['bad']}"
            else:
                try:
                    check_results = CheckResults(record, folder)
                    assignment.checks[name][1](check_results)
                    cell.verified = points
                except Fail as error:
                    cell.why = str(error)[:400]
                except Exception as error:  # noqa: BLE001 - data the judge did not expect fails the check
                    cell.why = f"{type(error).__name__} while judging: {str(error)[:300]}"
                if cell.verified == 0 and notes:
                    cell.why += f" [{'; '.join(notes[:3])}]"
            notes = [note for note in notes if "course's cell" in note]
    finally:
        if folder is not None:
            folder.close()


def unverified(assignment: Assignment, problem: str) -> Verdict:
    """The verdict on a submission whose verification failed: every cell 0."""
    verdict = Verdict(assignment.name, "", assignment.max_score, problem=f"verification failed: {problem[-300:]}")
    for grade_id, points in assignment.points.items():
        verdict.cells.append(CellVerdict(grade_id, points, 0.0, None, verdict.problem))
    return verdict
