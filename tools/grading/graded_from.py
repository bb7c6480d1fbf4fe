"""What each merged result was graded from, so that running make grade again grades only what is missing or changed.

A submission's result (its scores in the gradebook, its autograded notebook,
its feedback page, its rows of integrity.csv and causes.csv) depends on:

- the submission's files (its submitted folder, read with task.read_regular's rules);
- its assignment: the source folder (the notebook, its hidden tests, the
  release's other files, the verification's checks), the checks' file if the
  course takes the repository's, and what the gradebook recorded of the
  assignment the first time it was graded (its cells, points, hidden tests'
  sources and due date), which nbgrader's autograde grades by;
- the grading configuration: nbgrader_config.py and the settings the run read
  from it and from the environment (time and memory limits, sandbox, warm
  templates, verification and its seed: VERIFY_SEED or "a fresh one per run");
- the grading environment: Python's and the grading libraries' versions and
  the course's own grading code (tools/).

``submission_keys`` hashes those into one key per submission. After a run has
merged its results and written integrity.csv, the grading process (the single
writer) records each merged submission's key in graded-from.csv in the course
folder (``record``). The next run skips a submission whose key is the one
recorded and whose results are all still there (``split``); the gradebook
snapshot that every run takes is not part of the key. ``make grade FORCE=1``
(``--all``) grades everything again.
"""

from __future__ import annotations

import csv
import sqlite3
import sys
from pathlib import Path

from .task import CopyRefused, digest, read_regular

FILE_NAME = "graded-from.csv"
COLUMNS = ["assignment", "student_id", "key", "run"]
VERSION = "graded-from 1"  # (a change of what the key covers changes this: every key then differs)
# The libraries whose versions can change a grade.
LIBRARIES = ("nbgrader", "nbconvert", "nbclient", "nbformat", "ipykernel", "jupyter_client", "numpy", "torch")


def environment_key() -> str:
    """Python's and the grading libraries' versions, and the course's grading code (tools/, its .py files)."""
    from importlib.metadata import PackageNotFoundError, version

    versions = []
    for name in LIBRARIES:
        try:
            versions.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            versions.append(f"{name}=none")
    tools = Path(__file__).resolve().parent.parent
    code = {str(path.relative_to(tools)): path.read_bytes() for path in sorted(tools.rglob("*.py"))
            if "__pycache__" not in path.parts}
    return digest(VERSION, sys.version, " ".join(versions), code)


def settings_key(settings) -> str:
    """nbgrader_config.py, the settings the run read from it and the environment, and the folders' names."""
    from ..course_settings import CONFIG_FILE

    layout = settings.layout
    seed = "a fresh one per run" if settings.verify_seed is None else str(settings.verify_seed)
    return digest((settings.root / CONFIG_FILE).read_bytes(),
                  repr((settings.cell_seconds, settings.notebook_seconds, settings.cpu_seconds, settings.memory_bytes,
                        settings.sandbox, settings.warm, settings.verify)), seed,
                  repr((layout.source, layout.submitted, layout.autograded, layout.feedback, tuple(layout.ignore))))


def recorded_definition(db_path: Path, assignment: str) -> str:
    """What the gradebook recorded of ``assignment`` (its due date, notebooks, cells, points, sources), as text:
    nbgrader's autograde grades by these, not by the source notebook, once the assignment is recorded."""
    if not Path(db_path).is_file():
        return ""
    where = ("FROM notebook nb JOIN assignment a ON nb.assignment_id = a.id {} WHERE a.name = ?")
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        due = db.execute("SELECT duedate FROM assignment WHERE name = ?", (assignment,)).fetchall()
        cells = db.execute(
            "SELECT nb.name, b.name, b.type, g.max_score, g.cell_type, t.max_score, t.cell_type "
            + where.format("JOIN base_cell b ON b.notebook_id = nb.id LEFT JOIN grade_cells g ON g.id = b.id "
                           "LEFT JOIN task_cells t ON t.id = b.id"), (assignment,)).fetchall()
        sources = db.execute("SELECT nb.name, s.name, s.cell_type, s.locked, s.source, s.checksum "
                             + where.format("JOIN source_cell s ON s.notebook_id = nb.id"), (assignment,)).fetchall()
    except sqlite3.OperationalError as error:  # (not a gradebook of this nbgrader's: every key differs from before)
        return f"unreadable: {error}"
    finally:
        db.close()
    return repr((due, sorted(map(repr, cells)), sorted(map(repr, sources))))


def assignment_key(settings, assignment: str, common: str) -> str:
    """Everything every submission of ``assignment`` is graded from (``common``: settings and environment)."""
    import fnmatch

    from ..verification.specs import spec_path
    from .run import RELEASE_BYTES, RELEASE_FILES

    layout = settings.layout
    source = layout.root / layout.source / assignment
    release = {}
    if source.is_dir():
        files, _ = read_regular(source, max_bytes=RELEASE_BYTES, max_files=RELEASE_FILES, trusted=True)
        release = {name: data for name, data in files.items()  # (what make_bundles sends: ignore's rule)
                   if not any(fnmatch.fnmatch(part, pattern) for part in name.split("/") for pattern in layout.ignore)}
    spec = spec_path(assignment, layout.root / layout.source)
    checks = spec.read_bytes() if spec.is_file() else b""
    return digest(common, assignment, release, checks, recorded_definition(Path(layout.db_path), assignment))


def submission_keys(settings, todo, merged=None) -> dict:
    """{(assignment, student): key}, or None for a submission that cannot be read (it is graded, and refused).
    ``merged``: in_gradebook's answer (each submission's extension of its due date is part of its key)."""
    merged = in_gradebook(Path(settings.layout.db_path)) if merged is None else merged
    common = digest(environment_key(), settings_key(settings))
    assignments = {a: assignment_key(settings, a, common) for a in sorted({a for a, _ in todo})}
    keys = {}
    for assignment, student in todo:
        try:
            files, left_out = read_regular(settings.layout.folder("submitted", student, assignment))
        except (OSError, CopyRefused):
            keys[assignment, student] = None
            continue
        keys[assignment, student] = digest(assignments[assignment], student, files, repr(sorted(left_out)),
                                           merged.get((assignment, student), repr(None)))
    return keys


def recorded(root: Path) -> dict:
    """{(assignment, student): key} from the course's graded-from.csv (empty if it has none)."""
    path = Path(root) / FILE_NAME
    found = {}
    if path.is_file():
        with open(path, newline="", encoding="utf-8", errors="backslashreplace") as f:
            for row in csv.DictReader(f):
                if set(COLUMNS) <= set(row) and row["key"]:
                    found[row["assignment"], row["student_id"]] = row["key"]
    return found


def in_gradebook(db_path: Path) -> dict:
    """{(assignment, student): the extension of its due date the instructor gave, as text} of every
    submission the gradebook holds."""
    if not Path(db_path).is_file():
        return {}
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {(a, s): repr(extension) for a, s, extension in db.execute(
            "SELECT a.name, s.student_id, s.extension FROM submitted_assignment s "
            "JOIN assignment a ON s.assignment_id = a.id").fetchall()}
    except sqlite3.OperationalError:
        return {}
    finally:
        db.close()


def split(settings, todo, force=False):
    """(to grade, skipped, keys): ``todo`` without the submissions whose key
    is the one recorded and whose results are all there (in the gradebook,
    autograded/ and feedback/), unless ``force``; keys of all of ``todo``."""
    layout = settings.layout
    merged = in_gradebook(Path(layout.db_path))
    keys = submission_keys(settings, todo, merged)
    if force:
        return list(todo), [], keys
    before = recorded(layout.root)
    grade, skipped = [], []
    for pair in todo:
        assignment, student = pair
        unchanged = keys[pair] is not None and before.get(pair) == keys[pair] and pair in merged and all(
            layout.folder(kind, student, assignment).is_dir() for kind in ("autograded", "feedback"))
        (skipped if unchanged else grade).append(pair)
    return grade, skipped, keys


def record(root: Path, keys: dict, run_id: str):
    """Write ``keys`` ({(assignment, student): key} of the submissions this
    run merged) into the course's graded-from.csv, keeping the others' rows."""
    from ..verification.report import merge_rows

    if not keys:
        return None
    rows = {pair: {"assignment": pair[0], "student_id": pair[1], "key": key, "run": run_id}
            for pair, key in keys.items() if key is not None}
    return merge_rows(Path(root) / FILE_NAME, COLUMNS, COLUMNS, ("assignment", "student_id"), rows, covered=set(keys))


def flagged(root: Path, pairs) -> int:
    """How many of ``pairs`` integrity.csv flags (what a skipped submission's last run said of it)."""
    from ..verification.report import CSV_NAME

    path, wanted = Path(root) / CSV_NAME, set(pairs)
    if not wanted or not path.is_file():
        return 0
    with open(path, newline="", encoding="utf-8", errors="backslashreplace") as f:
        return sum(1 for row in csv.DictReader(f)
                   if (row.get("assignment"), row.get("student_id")) in wanted and row.get("flagged") == "yes")
