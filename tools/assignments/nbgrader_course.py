"""Run real nbgrader commands in a throw-away course folder.

The release (``make release``) and the grading tests both use this: they copy
the assignment sources and ``nbgrader_config.py`` into a temporary folder, so
no gradebook or nbgrader working folder ever lands in the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import nbformat

from ..nbgrader_patches import alembic_head_in_process, metadata_schema_checked_once, unsynced_gradebooks
from ..paths import BIN, ROOT, SOLUTIONS

SOLUTION_REGION = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


def nbgrader_env():
    """The environment for an nbgrader subprocess: .venv/bin first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    env["PYTHONWARNINGS"] = "ignore"
    return env


# `nbgrader ARGS` in a throw-away course (the current folder): the venv's Python imports the course's tools/,
# installed by `make venv`.
NBGRADER = ("import os, sys; sys.argv[0] = 'nbgrader'; "
            "from tools.nbgrader_patches import alembic_head_in_process, unsynced_gradebooks; "
            "alembic_head_in_process(); unsynced_gradebooks(os.getcwd()); "
            "from nbgrader.apps.nbgraderapp import main; sys.exit(main())")


def generate_in_process(root, names, release_directory=None, throwaway=False, db_url=None):
    """``nbgrader generate_assignment NAME --force`` for each name, in this
    process: nbgrader and its gradebook start once, not once per assignment.
    ``root`` is a course folder; the releases go to its release folder, or to
    ``release_directory``; the gradebook is its own, or ``db_url``.
    ``throwaway``: the course is temporary (``unsynced_gradebooks``). Raises
    RuntimeError with nbgrader's log on failure."""
    import io
    import logging

    from nbgrader.converters import GenerateAssignment

    from ..course_settings import course_directory

    alembic_head_in_process()
    metadata_schema_checked_once()
    if throwaway:
        unsynced_gradebooks(root)

    overrides = {"release_directory": str(release_directory)} if release_directory else {}
    if db_url:
        overrides["db_url"] = db_url
    for name in names:
        log = io.StringIO()
        handler = logging.StreamHandler(log)
        logger = logging.getLogger("traitlets")
        logger.addHandler(handler)
        try:
            coursedir = course_directory(Path(root), **overrides)
            coursedir.assignment_id = name
            converter = GenerateAssignment(coursedir=coursedir, config=coursedir.config)
            converter.force = True
            converter.start()
        except BaseException as error:  # nbgrader ends a failed conversion with sys.exit
            raise RuntimeError(f"nbgrader generate_assignment {name} failed: {error!r}\n{log.getvalue()}") from None
        finally:
            logger.removeHandler(handler)


# Runs generate_in_process in a fresh Python with this repository's tools/.
GENERATE = ("import sys; from tools.assignments.nbgrader_course import generate_in_process; "
            "generate_in_process(sys.argv[1], sys.argv[2:], throwaway=True)")


class Course:
    """A temporary nbgrader course with the project's configuration."""

    def __init__(self, root: Path, assignments):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "nbgrader_config.py", self.root / "nbgrader_config.py")
        for name in assignments:
            shutil.copytree(SOLUTIONS / name, self.root / "solutions" / name, dirs_exist_ok=True)

    @property
    def db_url(self):
        return f"sqlite:///{self.root / 'gradebook.db'}"

    def nbgrader(self, *args, check=True):
        """Run ``nbgrader ARGS`` in the course folder and return the finished process."""
        proc = subprocess.run(
            [str(BIN / "python"), "-c", NBGRADER, *args],
            cwd=self.root,
            env=nbgrader_env(),
            text=True,
            capture_output=True,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def generate(self, assignment):
        """``nbgrader generate_assignment``; return the path of the released notebook."""
        self.nbgrader("generate_assignment", assignment, "--force")
        return self.root / "exercises" / assignment / f"{assignment}.ipynb"

    def generate_all(self, assignments):
        """``nbgrader generate_assignment`` for every assignment, in one Python
        (the start-up is paid once); return {assignment: released notebook}."""
        proc = subprocess.run(
            [str(BIN / "python"), "-c", GENERATE, str(self.root), *assignments],
            cwd=self.root, env=nbgrader_env(), text=True, capture_output=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"generating {' '.join(assignments)} failed ({proc.returncode}):\n"
                               f"{proc.stdout}\n{proc.stderr}")
        return {name: self.root / "exercises" / name / f"{name}.ipynb" for name in assignments}

    def submit(self, student, assignment, notebook):
        """Place a notebook (a NotebookNode) as ``student``'s submission."""
        folder = self.root / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        (folder / "timestamp.txt").write_text("2026-01-01 00:00:00.000000 UTC\n")

    def autograde(self, assignment, *extra):
        return self.nbgrader("autograde", assignment, "--force", *extra)

    def scores(self, assignment):
        """{student: {"score", "max_score", "cells": {grade_id: score}}} from the gradebook."""
        from nbgrader.api import Gradebook

        result = {}
        with Gradebook(self.db_url) as gb:
            for submission in gb.assignment_submissions(assignment):
                notebook = gb.find_submission_notebook(assignment, assignment, submission.student_id)
                result[submission.student_id] = {
                    "score": submission.score,
                    "max_score": submission.max_score,
                    "cells": {grade.name: grade.score for grade in notebook.grades},
                }
        return result


def solution_code(source_notebook: Path):
    """{grade_id: code} for every solution cell, with the solution markers removed."""
    nb = nbformat.read(source_notebook, as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            answers[meta["grade_id"]] = SOLUTION_REGION.sub("", cell.source)
    return answers


def fill_release(release_notebook: Path, answers: dict):
    """A copy of the student notebook with the given solution cells filled in.

    ``answers`` maps grade_id to code; solution cells not in it keep their stub
    (as a student who skipped them would leave them).
    """
    nb = nbformat.read(release_notebook, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
    return nb


SECTION_MARKER = re.compile(r"^# %% (cell|patch): (\S+)[ \t]*$", re.MULTILINE)


def read_wrong_implementation(path: Path):
    """Parse a file of solutions/<assignment>/checks/wrong_implementations/ (or attacks/).

    Returns ``(description, {grade_id: code})``: the description is the first
    line's comment, and each section gives the code of one solution cell:

    - ``# %% cell: <grade_id>``: the section's code replaces the whole cell;
    - ``# %% patch: <grade_id>``: the section changes the reference solution's
      cell (``solutions/<assignment>/``, the assignment being the file's
      folder), like a unified diff: each hunk of lines starting with ``-``
      (remove), ``+`` (add) or a space (keep) must match the cell's lines
      exactly once; blank lines separate hunks. So the file shows the mistake
      and nothing else.
    """
    path = Path(path)
    text = path.read_text()
    first_line = text.splitlines()[0] if text else ""
    if not first_line.startswith("# ") or first_line.startswith("# %%"):
        raise ValueError(f"{path}: the first line must be a comment saying what the mistake is")
    parts = SECTION_MARKER.split(text)
    # parts = [preamble, kind1, id1, body1, kind2, id2, body2, ...]
    cells, solution = {}, None
    for i in range(1, len(parts), 3):
        kind, grade_id, body = parts[i : i + 3]
        if grade_id in cells:
            raise ValueError(f"{path}: two sections for cell {grade_id!r}")
        if kind == "cell":
            cells[grade_id] = body.strip("\n") + "\n"
            continue
        if solution is None:
            solution = solution_code(assignment_notebook(path))
        if grade_id not in solution:
            raise ValueError(f"{path}: no solution cell {grade_id!r} to patch in {assignment_notebook(path).stem}")
        cells[grade_id] = apply_patch(solution[grade_id], body, where=f"{path}, patch {grade_id}")
    if not cells:
        raise ValueError(f"{path}: no '# %% cell: <grade_id>' or '# %% patch: <grade_id>' section")
    return first_line[2:].strip(), cells


def assignment_notebook(path: Path) -> Path:
    """The source notebook of the assignment a wrong implementation or attack
    belongs to: solutions/<assignment>/checks/<kind>/<file>.py."""
    folder = Path(path).resolve().parent.parent.parent
    return folder / f"{folder.name}.ipynb"


def apply_patch(code: str, patch: str, where: str = "patch") -> str:
    """``code`` with the hunks of ``patch`` applied (see read_wrong_implementation)."""
    hunks, current = [], []
    for number, line in enumerate(patch.splitlines(), 1):
        if not line.strip():
            if current:
                hunks.append(current)
            current = []
        elif line[0] in "-+ ":
            current.append((line[0], line[1:]))
        else:
            raise ValueError(f"{where}: line {number} starts with neither '-', '+' nor a space: {line!r}")
    if current:
        hunks.append(current)
    if not hunks:
        raise ValueError(f"{where}: the patch changes nothing")
    lines = code.rstrip("\n").split("\n")
    for hunk in hunks:
        old = [text for sign, text in hunk if sign != "+"]
        new = [text for sign, text in hunk if sign != "-"]
        if not old:
            raise ValueError(f"{where}: a hunk that only adds lines needs a kept line (' ') to say where")
        if old == new:
            raise ValueError(f"{where}: a hunk changes nothing: {old[0]!r}")
        starts = [i for i in range(len(lines) - len(old) + 1) if lines[i : i + len(old)] == old]
        if len(starts) != 1:
            found = "is not in" if not starts else f"is {len(starts)} times in"
            raise ValueError(f"{where}: the hunk starting {old[0]!r} {found} the solution cell; "
                             "match its lines exactly, with enough kept lines to be unique")
        lines[starts[0] : starts[0] + len(old)] = new
    return "\n".join(lines) + "\n"


def protected_regions(source_notebook):
    """The regions students must never see, as ``(kind, lines)`` pairs.

    ``kind`` is ``"SOLUTION"`` or ``"HIDDEN TESTS"``; ``lines`` are the
    stripped, non-empty lines between the BEGIN and END markers.
    """
    regions, current = [], None
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        for line in cell.source.splitlines():
            begin = re.search(r"### BEGIN (SOLUTION|HIDDEN TESTS)", line)
            if begin:
                current = (begin.group(1), [])
                regions.append(current)
            elif re.search(r"### END (SOLUTION|HIDDEN TESTS)", line):
                current = None
            elif current is not None and line.strip():
                current[1].append(line.strip())
    return regions


def public_text(source_notebook, cell_types=("code", "markdown", "raw")) -> str:
    """The notebook's text outside its protected regions (of the cells of
    ``cell_types``), one line per line, cells separated by a blank line: what
    students see."""
    kept, inside = [], False
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        if cell.cell_type not in cell_types:
            continue
        for line in cell.source.splitlines():
            if re.search(r"### BEGIN (SOLUTION|HIDDEN TESTS)", line):
                inside = True
            elif re.search(r"### END (SOLUTION|HIDDEN TESTS)", line):
                inside = False
            elif not inside:
                kept.append(line)
        kept.append("")
    return "\n".join(kept)


def public_lines(source_notebook) -> set:
    """The stripped lines of the notebook outside its protected regions: what students see."""
    return {line.strip() for line in public_text(source_notebook).splitlines()}


def gives_nothing_away(line: str, public: set) -> bool:
    """A protected line that the public part also contains (`Q = project(X, W_q)`), or an import."""
    return line in public or re.match(r"(import|from) [\w.]+( import [\w., ]+)?( as \w+)?$", line) is not None


def hidden_lines(source_notebook):
    """Telling lines of the protected regions: long, and not also in the public part."""
    protected = {line for _, lines in protected_regions(source_notebook) for line in lines}
    public = public_lines(source_notebook)
    return sorted(line for line in protected if len(line) > 12 and not gives_nothing_away(line, public))
