"""Shared fixtures: the grading runs are expensive, so each assignment is
autograded once per test session and every test reads the result."""

import json
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.nbgrader_course import Course, fill_release, read_wrong_implementation, solution_code  # noqa: E402
from tools.paths import BIN, ROOT, SOLUTIONS, WRONG_IMPLEMENTATIONS  # noqa: E402

# Every nbgrader call needs the venv's `alembic` on PATH.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"

REPORT_DIR = ROOT / "_build" / "grading-report"


def wrong_implementations(assignment):
    folder = WRONG_IMPLEMENTATIONS / assignment
    return sorted(folder.glob("*.py")) if folder.is_dir() else []


def submission_name(path):
    return "wrong-" + path.stem.replace("_", "-")


class GradedAssignment:
    """One real `nbgrader autograde` run over every submission of an assignment:
    the solution, the untouched release, and every known-wrong implementation."""

    def __init__(self, assignment, workdir):
        self.assignment = assignment
        self.course = Course(workdir, [assignment])
        self.release = self.course.generate(assignment)
        answers = solution_code(SOLUTIONS / assignment / f"{assignment}.ipynb")
        self.course.submit("solution", assignment, fill_release(self.release, answers))
        self.course.submit("untouched-release", assignment, nbformat.read(self.release, as_version=4))
        self.descriptions = {}
        for path in wrong_implementations(assignment):
            description, cells = read_wrong_implementation(path)
            unknown = set(cells) - set(answers)
            if unknown:
                raise ValueError(f"{path}: no solution cell called {sorted(unknown)} in {assignment}")
            name = submission_name(path)
            self.descriptions[name] = description
            self.course.submit(name, assignment, fill_release(self.release, {**answers, **cells}))
        self.process = self.course.autograde(assignment)
        self.scores = self.course.scores(assignment)
        self._write_report()

    def _write_report(self):
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        report = {
            name: {**score, "description": self.descriptions.get(name, "")}
            for name, score in sorted(self.scores.items())
        }
        (REPORT_DIR / f"{self.assignment}.json").write_text(json.dumps(report, indent=1))


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """graded(assignment) -> GradedAssignment, computed once per session."""
    cache = {}

    def get(assignment):
        if assignment not in cache:
            cache[assignment] = GradedAssignment(assignment, tmp_path_factory.mktemp(f"course-{assignment}"))
        return cache[assignment]

    return get


def pytest_terminal_summary(terminalreporter):
    """Print the points each known-wrong implementation lost, for the record."""
    if not REPORT_DIR.is_dir():
        return
    for path in sorted(REPORT_DIR.glob("*.json")):
        rows = json.loads(path.read_text())
        terminalreporter.section(f"grading of {path.stem}")
        for name, row in rows.items():
            terminalreporter.write_line(f"{row['score']:5.1f} / {row['max_score']:.0f}  {name}")


def pytest_sessionstart(session):
    shutil.rmtree(REPORT_DIR, ignore_errors=True)
