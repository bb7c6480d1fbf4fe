"""Run real nbgrader commands in a throw-away course folder.

The release (``make release``) and the grading tests both use this: they copy
the assignment sources and ``nbgrader_config.py`` into a temporary folder, so
no gradebook or nbgrader working folder ever lands in the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nbformat

from ..nbgrader_patches import alembic_head_in_process, metadata_schema_checked_once, unsynced_gradebooks
from ..paths import BIN, ROOT, SOLUTIONS


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
