"""A notebook's answers: the code of a source notebook's solution cells, and
a release with solution cells filled in (what a student hands in)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

SOLUTION_REGION = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)


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
