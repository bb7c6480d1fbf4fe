"""The shared helpers of tools/notebook_checks.py in each assignment's
helper cell (``check_helpers``): ``make release`` copies into it the helpers
the notebook's code uses (``sync_notebook``), and
tests/test_release_is_exactly_the_generated_one.py checks that the copy is
word for word (``synced_source``).
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import notebook_checks
from ..notebook_checks import SHARED_START

OWN_START = "# --- this assignment's own helpers ---"
HELPER_CELL = "check_helpers"


def shared_text(used=None) -> str:
    """The shared helpers as a notebook carries them: tools/notebook_checks.py's code from
    the SHARED_START line up to the end marker. With ``used`` (the names a
    notebook's other code uses), only the helpers it needs, and those they
    call, in that file's order: a student reads no helper that no test uses."""
    import ast

    text = Path(notebook_checks.__file__).read_text()
    start = text.index("\n" + SHARED_START + "\n") + 1
    end = text.index("# --- end of the shared helpers ---\n")
    text = text[start:end].replace("import re  # noqa: E402\n", "import re\n")
    if used is None:
        return text
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    calls = {name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & set(defs) - {name}
             for name, node in defs.items()}
    wanted, todo = set(), [name for name in defs if name in set(used)]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(calls[name])
    kept = [line for line in lines[: tree.body[0].end_lineno]]  # the marker line and `import re`
    for node in tree.body[1:]:
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            kept.append("\n\n" + "".join(lines[node.lineno - 1 : node.end_lineno]))
    return "".join(kept)


def names_used(notebook, skip_cell=None) -> set:
    """Every identifier the notebook's code cells use (but ``skip_cell``'s and
    the generated hidden tests', which bring their own)."""
    import re

    from .hidden_tests import without_generated

    names = set()
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell is not skip_cell:
            names |= set(re.findall(r"[A-Za-z_]\w*", without_generated(cell.source)))
    return names


def split_helper_cell(source: str):
    """(what comes before the shared part, the shared part, the assignment's own helpers)."""
    if SHARED_START not in source or OWN_START not in source:
        raise ValueError(f"the {HELPER_CELL} cell must hold the lines {SHARED_START!r} and {OWN_START!r}")
    head, rest = source.split(SHARED_START, 1)
    shared, own = rest.split(OWN_START, 1)
    return head, SHARED_START + shared, OWN_START + own


def helper_cell(notebook):
    """The notebook's (an nbformat NotebookNode) locked cell of helpers."""
    cells = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == HELPER_CELL]
    if len(cells) != 1:
        raise ValueError(f"the notebook needs exactly one cell with grade_id {HELPER_CELL!r}, not {len(cells)}")
    return cells[0]


def synced_source(notebook) -> str:
    """The notebook's helper cell with the shared part as it is written here,
    cut to the helpers the notebook uses."""
    cell = helper_cell(notebook)
    head, _, own = split_helper_cell(cell.source)
    used = names_used(notebook, skip_cell=cell) | set(re.findall(r"[A-Za-z_]\w*", own))
    return head + shared_text(used) + "\n\n\n" + own


def sync_notebook(path: Path) -> bool:
    """Copy the shared helpers into the notebook's helper cell; True if it changed."""
    import nbformat

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    cell = helper_cell(notebook)
    new = synced_source(notebook)
    if new == cell.source:
        return False
    cell.source = new
    path.write_text(nbformat.writes(notebook) + "\n")
    return True
