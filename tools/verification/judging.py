"""The judge: what a submission's checks left in the sandbox, read as plain
data and compared with the run's references here, cell by cell (``Verdict``,
``CellVerdict``)."""

from __future__ import annotations

import re
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
    cause: str = ""  # the code of the likely mistake, if verification failed the cell ("other" if unknown)
    attempted: bool = True  # False if every solution cell before it is missing or still the release's stub

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
    from .probes import OTHER, CheckResults, Fail, ResultsFolder, clear_diagnosis, failed_cause

    folder = None
    if cells is not None:
        try:
            folder = ResultsFolder(results)
        except OSError as error:
            verdict.problem = f"the results folder cannot be read: {error}"
    notes = []  # what went wrong in the cells before each check
    order = run_order(assignment, cells or {}, added) if cells is not None else [
        ("check", s.name, None) for s in assignment.steps if s.kind == "check"]
    # Whether a solution cell since the previous check holds the student's own code; a check with no solution
    # cell of its own since the previous one tests the same cells as that one.
    attempted, seen, attempted_before = False, False, True
    try:
        n = 0  # the step number in the program actually run
        for kind, name, code in order:
            if kind == "missing":
                notes.append(f"solution cell {name} is missing")
                seen = True
                continue
            if kind == "student":
                seen = True
                attempted = attempted or not is_stub(code)
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
            if seen:
                attempted_before = attempted
            cell = CellVerdict(name, points, 0.0, None, attempted=attempted_before)
            attempted, seen = False, False
            verdict.cells.append(cell)
            if folder is None:
                cell.why, cell.cause = verdict.problem or "not verified", "no_result"
            elif record is None:
                cell.why = f"the check never ran: the process stopped before it ({status})"
                cell.cause = "no_result"
            elif "bad" in record:
                cell.why, cell.cause = f"unreadable results: {record['bad']}", "bad_result"
            else:
                clear_diagnosis()
                try:
                    check_results = CheckResults(record, folder)
                    assignment.checks[name][1](check_results)
                    cell.verified = points
                except Fail as error:
                    cell.why = str(error)[:400]
                    cell.cause = failed_cause(error)
                except Exception as error:  # noqa: BLE001 - data the judge did not expect fails the check
                    cell.why = f"{type(error).__name__} while judging: {str(error)[:300]}"
                    cell.cause = failed_cause(error)
                if cell.cause and cell.cause not in assignment.causes:
                    cell.cause = OTHER  # a code its spec does not declare is no code
                if cell.verified == 0 and notes:
                    cell.why += f" [{'; '.join(notes[:3])}]"
            if not cell.attempted and cell.verified == 0:
                cell.cause = "not_attempted"
            notes = [note for note in notes if "course's cell" in note]
    finally:
        if folder is not None:
            folder.close()


STUB = re.compile(r"^[ \t]*# YOUR CODE HERE[ \t]*\n[ \t]*raise NotImplementedError\(\)[ \t]*$", re.MULTILINE)


def is_stub(code) -> bool:
    """Whether a solution cell still holds the release's stub (nbgrader's "# YOUR CODE HERE" and
    NotImplementedError where the solution was)."""
    return not isinstance(code, str) or bool(STUB.search(code))


def unverified(assignment: Assignment, problem: str) -> Verdict:
    """The verdict on a submission whose verification failed: every cell 0."""
    verdict = Verdict(assignment.name, "", assignment.max_score, problem=f"verification failed: {problem[-300:]}")
    for grade_id, points in assignment.points.items():
        verdict.cells.append(CellVerdict(grade_id, points, 0.0, None, verdict.problem))
    return verdict
