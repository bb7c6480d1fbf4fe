"""Where the course's folders are, in one place."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
BUILD_HTML = ROOT / "_build" / "html"
WRONG_IMPLEMENTATIONS = ROOT / "tests" / "wrong_implementations"
BIN = ROOT / ".venv" / "bin"


def assignments():
    """Names of all assignments, from the nbgrader source folder, sorted."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / f"{p.name}.ipynb").is_file())
