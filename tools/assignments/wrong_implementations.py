"""The files of solutions/<assignment>/checks/wrong_implementations/ (and
attacks/): each one a known mistake, as whole cells or as patches of the
reference solution (read_wrong_implementation says how they are written)."""

from __future__ import annotations

import re
from pathlib import Path

from .answers import solution_code


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
