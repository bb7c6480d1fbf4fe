"""What verification reads from notebooks: the steps of an assignment's source
notebook (the course's set-up cells, the solution cells, the test cells and
their imports), and a submission's code cells, read as bounded JSON."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..sandbox.limits import check_notebook

MAX_NOTEBOOK_BYTES = 50 * 1024**2

HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)

MARKERS = re.compile(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)")


@dataclass
class Step:
    kind: str  # "trusted", "student", "imports" or "check"
    name: str  # the cell's grade_id
    code: str = ""


def source_steps(source_notebook: Path):
    """The steps of the notebook, in order: ``(steps, points, solution_ids)``."""
    import nbformat

    nb = nbformat.read(source_notebook, as_version=4)
    steps, points, solution_ids = [], {}, []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if cell.cell_type != "code" or not grade_id:
            continue  # markdown, or an ungraded demonstration cell
        if meta.get("solution"):
            steps.append(Step("student", grade_id))
            solution_ids.append(grade_id)
        elif meta.get("grade"):
            imports = test_imports(cell.source)
            if imports:
                steps.append(Step("imports", grade_id, imports))
            steps.append(Step("check", grade_id))
            points[grade_id] = float(meta.get("points", 0))
        elif meta.get("locked"):
            if MARKERS.search(cell.source):
                raise ValueError(f"{source_notebook}: locked cell {grade_id} holds solution or hidden-test markers")
            steps.append(Step("trusted", grade_id, cell.source))
    return steps, points, solution_ids


def test_imports(source: str) -> str:
    """The top-level import statements of a test cell's visible part: the names
    the notebook's later cells could rely on."""
    visible = HIDDEN.sub("", source)
    try:
        tree = ast.parse(visible)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


def student_cells(notebook_path: Path, solution_ids, known_ids=()):
    """The submission's code: ``(cells, added)``.

    ``cells`` is {grade_id: code} of its solution cells (the first cell of each
    id). ``added`` is {grade_id: [code, ...]}: the code cells without a grade_id
    (cells the student added, and the notebook's ungraded demonstration cells),
    under the grade_id of the nearest cell above them that the course knows
    (``known_ids``), or under "" when none is above. nbgrader runs them too, so
    that a helper function or an import in a cell of the student's own is there
    when verification calls their functions.
    """
    if notebook_path.stat().st_size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"the notebook is larger than {MAX_NOTEBOOK_BYTES} bytes")
    check_notebook(notebook_path)  # bounded values and cells before it is decoded (a ValueError)
    with open(notebook_path, encoding="utf-8") as f:
        nb = json.load(f)
    known = set(solution_ids) | set(known_ids)
    cells, added, anchor = {}, {}, ""
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {})
        meta = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
        meta = meta if isinstance(meta, dict) else {}
        grade_id = meta.get("grade_id")
        source = cell.get("source", "")
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
        if not isinstance(source, str):
            continue
        if not isinstance(grade_id, str) or not grade_id:
            if source.strip():  # (an empty cell runs nothing)
                added.setdefault(anchor, []).append(source)
            continue
        if grade_id in known:
            anchor = grade_id
        if meta.get("solution") and grade_id in solution_ids and grade_id not in cells:
            cells[grade_id] = source
    return cells, added
