"""Promise: the only chapter outputs that nbval does not compare are timings,
each in a cell listed here with its reason, and no number the prose quotes
comes from a clock.

nbval (strict, in `make test` and again on other CPUs in test_every_cpu.py)
compares every output of every chapter cell with the committed one, except in
cells tagged `nbval-ignore-output`. A clock gives another number on every run
and on every computer, so a cell that times may carry that tag; no other cell
may. This module lists those cells, and checks for every chapter that

- every cell tagged `nbval-ignore-output` is listed in MEASURED, and every
  listed cell exists and carries the tag;
- no cell escapes the comparison in any other way nbval offers (the tag
  `nbval-skip`, or a comment such as `# NBVAL_IGNORE_OUTPUT` or `# NBVAL_SKIP`
  in the source), so the list above is the whole list;
- every listed cell is a timing cell: it calls its chapter's timer (TIMERS),
  which the chapter defines in a cell whose output nbval compares, and which
  reads a clock from the `time` module;
- no value from a timing cell is glued: a timing cell calls no `glue`, and no
  `glue` call elsewhere uses a name whose value came from a timing cell
  (directly or through later assignments).

The checks themselves are tested on small notebooks built here, so that each
can be seen to fail.
"""

import ast

import nbformat
import pytest
from nbval.plugin import comment_markers, metadata_tags

from tools.paths import CHAPTERS

# `make check` runs this module after a change to a chapter (tests/make_check.py).
MAKE_CHECK = ("chapter",)

TAG = "nbval-ignore-output"

# (chapter, cell id) -> why its printed values may differ from run to run.
MEASURED = {
    ("ch09_efficient_attention", "c9c22"):
        "times the course's attention and F.scaled_dot_product_attention for "
        "growing T, prints the times and the slopes fitted to them, and plots them",
    ("ch09_efficient_attention", "c9c50"):
        "times tiled_attention against the course's attention and "
        "F.scaled_dot_product_attention at one length",
    ("ch09_efficient_attention", "c9c59"):
        "times one decoding step with and without a KV cache for growing "
        "contexts, prints the times and fitted slopes, and plots them",
}

# chapter -> the name of the function its timing cells call to read the clock.
TIMERS = {"ch09_efficient_attention": "time_it"}

CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time"}

# Every marker with which nbval leaves a cell's output uncompared (ignored or
# skipped), read from nbval itself: as a tag, or as a comment in the source.
NOT_COMPARED = {("check", False), "skip"}
UNCOMPARED_TAGS = {tag for tag, effect in metadata_tags.items() if effect in NOT_COMPARED}
UNCOMPARED_COMMENTS = {name for name, effect in comment_markers.items() if effect in NOT_COMPARED}

CHAPTER_FILES = sorted(CHAPTERS.glob("ch*.ipynb"))


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def parse(source):
    try:
        return ast.parse(source)
    except SyntaxError:  # a cell with an IPython magic: treat as opaque
        return ast.parse("")


def calls(tree, name):
    """Whether the code calls `name(...)` (a plain name, not an attribute)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(tree))


def loaded_names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def stored_names(node):
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names |= {n.name for n in ast.walk(node)
              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return names


def bindings(tree):
    """(line, names bound, names read to compute them) for every binding statement, in order."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            value = node.value if node.value is not None else ast.Constant(None)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            read = loaded_names(value)
            if isinstance(node, ast.AugAssign):
                read |= {node.target.id} if isinstance(node.target, ast.Name) else set()
            found.append((node.lineno, set().union(*(stored_names(t) for t in targets)), read))
        elif isinstance(node, (ast.For, ast.comprehension)):
            found.append((getattr(node, "lineno", 0), stored_names(node.target), loaded_names(node.iter)))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.lineno, {node.name}, loaded_names(node)))
    return sorted(found, key=lambda b: b[0])


def glue_calls(tree):
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "glue"]


def timer_reads_a_clock(nb, timer):
    """The cells that define `timer` and read a clock of the `time` module in it."""
    found = []
    for cell in code_cells(nb):
        for node in parse(cell.source).body:
            if isinstance(node, ast.FunctionDef) and node.name == timer:
                clocks = {n.attr for n in ast.walk(node)
                          if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                          and n.value.id == "time"}
                if clocks & CLOCKS:
                    found.append(cell)
    return found


def other_escapes(cell):
    """The markers, other than the tag TAG, with which nbval would not compare this cell's output."""
    found = [tag for tag in cell.metadata.get("tags", []) if tag in UNCOMPARED_TAGS and tag != TAG]
    for line in cell.source.splitlines():
        comment = line.strip().lstrip("#").strip()
        if line.strip().startswith("#") and comment in UNCOMPARED_COMMENTS:
            found.append(f"# {comment}")
    return found


def problems(chapter, nb, measured=MEASURED, timers=TIMERS):
    """Everything in notebook `nb` (chapter name `chapter`) that breaks the promise."""
    found = []
    listed = {cell_id for (name, cell_id) in measured if name == chapter}
    cells = {c.get("id"): c for c in code_cells(nb)}
    tagged = {cell_id for cell_id, c in cells.items() if TAG in c.metadata.get("tags", [])}

    for cell_id, c in cells.items():
        for marker in other_escapes(c):
            found.append(f"{chapter}: cell {cell_id} escapes nbval's comparison with {marker!r}: "
                         f"only a timing cell may, tagged {TAG} and listed in MEASURED")
    for cell_id in sorted(tagged - listed):
        found.append(f"{chapter}: cell {cell_id} is tagged {TAG} but not listed in MEASURED "
                     "(only timing cells may carry the tag: list it with its reason)")
    for cell_id in sorted(listed - set(cells)):
        found.append(f"{chapter}: MEASURED lists cell {cell_id}, which the chapter does not have")
    for cell_id in sorted((listed & set(cells)) - tagged):
        found.append(f"{chapter}: MEASURED lists cell {cell_id}, which is not tagged {TAG}")
    for key, reason in measured.items():
        if key[0] == chapter and not reason.strip():
            found.append(f"{chapter}: MEASURED gives no reason for cell {key[1]}")

    timer = timers.get(chapter)
    if listed and timer is None:
        found.append(f"{chapter}: has timing cells but no timer in TIMERS")
    if timer is not None:
        defining = timer_reads_a_clock(nb, timer)
        if not defining:
            found.append(f"{chapter}: defines no function {timer}() that reads a clock of "
                         "the time module (time.perf_counter, ...)")
        for cell in defining:
            if TAG in cell.metadata.get("tags", []):
                found.append(f"{chapter}: {timer}() is defined in cell {cell.get('id')}, "
                             f"whose output nbval does not compare")
        for cell_id in sorted(listed & set(cells)):
            if not calls(parse(cells[cell_id].source), timer):
                found.append(f"{chapter}: cell {cell_id} is listed as a timing cell but does "
                             f"not call {timer}()")

    # Follow every name from a timing cell to the glue calls.
    from_clock = set()
    for cell_id, cell in cells.items():
        tree = parse(cell.source)
        timing = cell_id in listed or cell_id in tagged
        if timing:
            if glue_calls(tree):
                found.append(f"{chapter}: timing cell {cell_id} glues a value")
            from_clock |= stored_names(tree)
            continue
        events = [(line, "bind", names, read) for line, names, read in bindings(tree)]
        events += [(call.lineno, "glue", set(), loaded_names(call)) for call in glue_calls(tree)]
        for _, kind, names, read in sorted(events, key=lambda e: (e[0], e[1] == "glue")):
            if kind == "glue":
                if read & from_clock:
                    found.append(f"{chapter}: cell {cell_id} glues {sorted(read & from_clock)}, "
                                 "computed from what a timing cell measured")
            elif read & from_clock:
                from_clock |= names
            else:
                from_clock -= names
    return found


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_ignores_only_listed_timings_and_glues_none(path):
    found = problems(path.stem, nbformat.read(path, as_version=4))
    assert not found, "\n".join(found)


def test_the_markers_nbval_honours_are_known():
    # if nbval renames its markers, the checks above must follow
    assert TAG in UNCOMPARED_TAGS
    assert "nbval-skip" in UNCOMPARED_TAGS
    assert {"NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP"} <= UNCOMPARED_COMMENTS


def test_every_listed_chapter_exists():
    stems = {p.stem for p in CHAPTER_FILES}
    missing = sorted({chapter for chapter, _ in MEASURED} - stems)
    assert not missing, f"MEASURED lists cells of chapters that do not exist: {missing}"


# The checks, seen to fail on small notebooks.

TIMER = "import time\n\ndef time_it(fn):\n    start = time.perf_counter()\n    fn()\n    return time.perf_counter() - start"


def notebook(*cells):
    """A notebook of code cells, given as (id, source, tags)."""
    nb = nbformat.v4.new_notebook()
    for cell_id, source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cell_id
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


def check(*cells, measured=None):
    measured = {("chx", "t"): "times f"} if measured is None else measured
    return problems("chx", notebook(*cells), measured, {"chx": "time_it"})


def test_a_correct_notebook_passes_the_checks():
    assert check(("a", TIMER, []),
                 ("t", "s = time_it(f)\nprint(s)", [TAG]),
                 ("g", "n = 3\nglue('chx_n', n)", [])) == []


def test_an_unlisted_tagged_cell_is_caught():
    found = check(("a", TIMER, []), ("t", "s = time_it(f)", [TAG]), ("u", "print(1)", [TAG]))
    assert any("cell u is tagged" in p for p in found), found


@pytest.mark.parametrize("tags, source", [
    (["nbval-skip"], "print(1)"),
    ([], "# NBVAL_IGNORE_OUTPUT\nprint(1)"),
    ([], "#NBVAL_SKIP\nprint(1)"),
])
def test_another_way_to_escape_the_comparison_is_caught(tags, source):
    found = check(("a", TIMER, []), ("t", "s = time_it(f)", [TAG]), ("u", source, tags))
    assert any("cell u escapes" in p for p in found), found


def test_a_listed_timing_cell_with_a_comment_marker_is_caught():
    found = check(("a", TIMER, []), ("t", "# NBVAL_SKIP\ns = time_it(f)", [TAG]))
    assert any("cell t escapes" in p for p in found), found


def test_a_listed_cell_without_the_tag_is_caught():
    found = check(("a", TIMER, []), ("t", "s = time_it(f)", []))
    assert any("not tagged" in p for p in found), found


def test_a_listed_cell_that_does_not_time_is_caught():
    found = check(("a", TIMER, []), ("t", "print(torch.randn(3))", [TAG]))
    assert any("does not call time_it()" in p for p in found), found


def test_a_timer_that_reads_no_clock_is_caught():
    found = check(("a", "def time_it(fn):\n    return 0.5", []), ("t", "s = time_it(f)", [TAG]))
    assert any("reads a clock" in p for p in found), found


def test_a_glue_in_a_timing_cell_is_caught():
    found = check(("a", TIMER, []), ("t", "s = time_it(f)\nglue('chx_s', s)", [TAG]))
    assert any("glues a value" in p for p in found), found


def test_a_timed_value_glued_later_is_caught_through_assignments():
    found = check(("a", TIMER, []),
                  ("t", "s = time_it(f)", [TAG]),
                  ("d", "ms = s * 1000\ntext = f'{ms:.1f}'", []),
                  ("g", "glue('chx_ms', text)", []))
    assert any("cell g glues ['text']" in p for p in found), found


def test_a_name_rebound_after_timing_may_be_glued():
    assert check(("a", TIMER, []),
                 ("t", "s = time_it(f)", [TAG]),
                 ("g", "s = 4 * 8\nglue('chx_s', s)", [])) == []
