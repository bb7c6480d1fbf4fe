"""Where the course's folders are, in one place."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
BUILD_HTML = ROOT / "_build" / "html"
BIN = ROOT / ".venv" / "bin"

# Everything about one assignment is in its source folder, solutions/<assignment>/:
# the nbgrader source notebook, and in checks/ what proves its grading
# (CONTRIBUTING.md, "An assignment"). nbgrader_config.py's CourseDirectory.ignore
# keeps checks/ out of every release, feedback and graded folder.
CHECKS = "checks"


def checks_folder(assignment: str, source: Path = SOLUTIONS) -> Path:
    """solutions/<assignment>/checks/ (or that of another course's source folder)."""
    return Path(source) / assignment / CHECKS


def verification_spec(assignment: str, source: Path = SOLUTIONS) -> Path:
    """The checks verification runs outside the kernel, one per graded test cell."""
    return checks_folder(assignment, source) / "verification.py"


def wrong_implementations(assignment: str) -> list[Path]:
    """Realistic wrong answers of the assignment: each must lose points."""
    return sorted((checks_folder(assignment) / "wrong_implementations").glob("*.py"))


def attacks(assignment: str) -> list[Path]:
    """Submissions that try to defeat grading: each is flagged or scores nothing."""
    return sorted((checks_folder(assignment) / "attacks").glob("*.py"))


def assignments():
    """Names of all assignments, from the nbgrader source folder, sorted."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / f"{p.name}.ipynb").is_file())
