"""Promise: the visible tests warn a student at the moment of the mistake.

The hidden tests decide the grade, but a student meets them only after
grading. So the classic mistakes must already fail a test the student can run:

- every wrong implementation marked ``# caught by a visible test`` (a line of
  its header, before the first section) fails the visible part of a test cell
  — in the real autograde of the session's ``graded`` fixture, the same run
  test_wrong_implementations_lose_points.py reads: a test cell runs its visible asserts before its
  hidden ones, so the traceback's line in the cell says which part failed;
- and conversely, every wrong implementation that fails the visible part of a
  test cell in that run carries the mark: the marks are then exactly the
  mistakes a student is warned of, and one that a change of the notebook stops
  catching is noticed (a catch that nobody marked could be lost unseen);
- the reference solution fails no test cell at all, visible or hidden;
- which mistakes must fail a visible test is read from the files themselves (the
  mark), not kept in a list here; a line that looks like the mark but is not read
  as one (misspelt, or below the first section) is an error, since a mark that
  is not read promises nothing;
- no test cell depends on another answer of the student's: it uses only the
  names defined by the solution cells it tests (a slip in one answer costs
  that answer's points once, not again in a later test);
- every notebook that checks whether an error message names a shape uses the
  same rule, which accepts the usual ways of writing a shape.
"""

import ast
import re

import nbformat
import pytest

from tests.plugins.selection import graded_assignments
from tests.plugins.shared_grading_run import submission_name
from tools.assignments.hidden_tests import without_generated
from tools.paths import ROOT, SOLUTIONS, assignments, wrong_implementations
from tools.verification import probes

# `make check` runs this module after a change to an assignment (tests/make_check.py).
MAKE_CHECK = ("assignment",)

ASSIGNMENTS = graded_assignments()
MARK = "# caught by a visible test"
HIDDEN = "### BEGIN HIDDEN TESTS"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# IPython 8 and later: "Cell In[7], line 12"; IPython 7: "Input In [7], in <cell line: 12>()".
CELL_FRAME = re.compile(r"Cell In\s*\[(\d+)\], line (\d+)|Input In \[(\d+)\], in <cell line: (\d+)>")

def header(path):
    """The comment lines before the first section of a wrong implementation."""
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("# %%"):
            break
        lines.append(line.strip())
    return lines


def marked(path):
    return MARK in header(path)


MARKED = [(a, p) for a in ASSIGNMENTS for p in wrong_implementations(a) if marked(p)]
UNMARKED = [(a, p) for a in ASSIGNMENTS for p in wrong_implementations(a) if not marked(p)]


def graded_test_cells(notebook):
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            yield meta["grade_id"], cell


def failed_part(cell):
    """"visible" or "hidden": the part of an autograded test cell whose code raised, or None if it passed."""
    errors = [o for o in cell.outputs if o.output_type == "error"]
    if not errors:
        return None
    lines = cell.source.splitlines()
    hidden_from = next((n for n, line in enumerate(lines, 1) if HIDDEN in line), len(lines) + 1)
    traceback = ANSI.sub("", "\n".join(errors[0].traceback))
    for match in CELL_FRAME.finditer(traceback):
        count, line = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        if int(count) == cell.execution_count:
            # The first frame of this cell is the statement the cell was running.
            return "visible" if int(line) < hidden_from else "hidden"
    return "hidden"  # no frame of the cell (a time-out, say): no evidence of a visible failure


def failures(graded_assignment, student):
    path = graded_assignment.course.root / "autograded" / student / graded_assignment.assignment
    notebook = nbformat.read(path / f"{graded_assignment.assignment}.ipynb", as_version=4)
    result = {}
    for grade_id, cell in graded_test_cells(notebook):
        part = failed_part(cell)
        if part:
            error = next(o for o in cell.outputs if o.output_type == "error")
            result[grade_id] = (part, f"{error.ename}: {error.evalue}"[:300])
    return result


@pytest.mark.parametrize("assignment, path", MARKED, ids=[f"{a}-{p.stem}" for a, p in MARKED])
def test_marked_mistake_fails_a_visible_test(graded, assignment, path):
    failed = failures(graded(assignment), submission_name(path))
    visible = {grade_id: message for grade_id, (part, message) in failed.items() if part == "visible"}
    assert visible, (
        f"{path.name} ('{header(path)[0][2:]}') passes every visible test; it fails only hidden ones: {failed}"
    )


@pytest.mark.parametrize("assignment, path", UNMARKED, ids=[f"{a}-{p.stem}" for a, p in UNMARKED])
def test_a_mistake_a_visible_test_catches_is_marked(graded, assignment, path):
    failed = failures(graded(assignment), submission_name(path))
    visible = {grade_id: message for grade_id, (part, message) in failed.items() if part == "visible"}
    assert not visible, (
        f"{path.relative_to(ROOT)} ('{header(path)[0][2:]}') fails the visible part of the test cell"
        f"{'s' if len(visible) > 1 else ''} {', '.join(sorted(visible))} but is not marked: add the line {MARK!r} "
        f"to its header, before the first '# %%' (what failed: {visible})"
    )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_passes_every_test_cell(graded, assignment):
    assert failures(graded(assignment), "solution") == {}


# A comment line that a reader takes for the mark: it starts with "caught" and names "visible", in any case.
LOOKS_LIKE_MARK = re.compile(r"^#\s*caught\b.*\bvisible", re.IGNORECASE)


def unread_marks(path):
    """The lines of a wrong implementation that look like the mark but are not read as one: misspelt, or below the
    header (after the first section, where they are code of the submission)."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    in_header = header(path)
    return [line for n, line in enumerate(lines) if n > 0 and LOOKS_LIKE_MARK.match(line)
            and not (n < len(in_header) and line == MARK)]


@pytest.mark.parametrize("assignment", assignments())
def test_classic_mistakes_carry_a_mark_that_is_read(assignment):
    """The marks are the list of mistakes a visible test must catch (test_marked_mistake_fails_a_visible_test reads
    them): every assignment marks some, and no mark goes unread."""
    files = wrong_implementations(assignment)
    unread = {p.name: unread_marks(p) for p in files if unread_marks(p)}
    assert not unread, f"lines that look like the mark {MARK!r} but are not read as one (write it exactly, as a line of " \
                       f"the header, before the first '# %%'): {unread}"
    assert any(marked(p) for p in files), (
        f"no wrong implementation of {assignment} is marked {MARK!r}: mark the classic mistakes (CONTRIBUTING.md)")


def test_the_mark_is_read_from_the_header(tmp_path):
    path = tmp_path / "mistake.py"
    path.write_text(f"# What the mistake is.\n{MARK}\n# %% cell: f\ndef f():\n    {MARK}\n")
    assert marked(path)
    path.write_text(f"# What the mistake is.\n# %% cell: f\n{MARK}\n")
    assert not marked(path)
    assert unread_marks(path) == [MARK]
    path.write_text("# What the mistake is.\n# Caught by the visible tests\n# %% cell: f\n")
    assert not marked(path) and unread_marks(path) == ["# Caught by the visible tests"]
    path.write_text(f"# What the mistake is, caught by no visible test.\n{MARK}\n# %% cell: f\n")
    assert marked(path) and unread_marks(path) == []


def test_a_failure_is_placed_by_the_line_of_the_cell():
    cell = nbformat.v4.new_code_cell("assert f(1)\n" + HIDDEN + "\nassert f(2)\n### END HIDDEN TESTS\n")
    cell.execution_count = 7

    def with_error(line, count=7):
        frames = [f"\x1b[0;31mCell In[{count}], line {line}\x1b[0m", "\x1b[0;32mdef\x1b[0m f(x):"]
        cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=frames)]
        return failed_part(cell)

    assert with_error(1) == "visible"
    assert with_error(3) == "hidden"
    assert with_error(1, count=3) == "hidden"
    cell.outputs = []
    assert failed_part(cell) is None


# --- no test depends on another answer -----------------------------------------------


def defined_names(code):
    names = set()
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def used_names(code):
    """The names a test cell's code reads, and those its generated hidden tests
    (tools/assignments/hidden_tests.py) reach through probes: p.call("softmax", ...),
    p.module("SelfAttention", ...), p.get, p.grad, Nested("split_heads", ...)."""
    names = {n.id for n in ast.walk(ast.parse(without_generated(code)))
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for node in ast.walk(ast.parse(code)):
        if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and (isinstance(node.func, ast.Attribute) and node.func.attr in ("call", "module", "get", "grad")
                     or isinstance(node.func, ast.Name) and node.func.id == "Nested")):
            names.add(node.args[0].value)
    return names


def couplings(notebook):
    """{test cell: names of other answers it uses}: a test cell may use the names
    defined by the solution cells since the previous test cell (or, right after
    one, those the previous test cell tested)."""
    answers, tested, found, since_last_test = {}, set(), {}, []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("solution"):
            names = defined_names(cell.source)
            answers.update(dict.fromkeys(names, meta["grade_id"]))
            since_last_test.append(names)
        elif meta.get("grade"):
            if since_last_test:
                tested = set().union(*since_last_test)
                since_last_test = []
            others = (used_names(cell.source) & set(answers)) - tested
            if others:
                found[meta["grade_id"]] = sorted(others)
    return found


# Couplings known and not yet removed: {assignment: {test cell: [other answers it uses]}}.
# When one is removed from its notebook, remove it here too.
PENDING_COUPLINGS = {}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_test_cell_uses_another_answer(assignment):
    notebook = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    found = couplings(notebook)
    pending = PENDING_COUPLINGS.get(assignment, {})
    assert found == pending, (
        f"test cells that use other answers of the student's: {found}"
        + (f"; known and still to remove: {pending} (update PENDING_COUPLINGS if one is gone)" if pending else "")
    )


def test_a_test_of_one_answer_that_uses_another_is_found():
    def cell(source, **meta):
        new = nbformat.v4.new_code_cell(source)
        new.metadata["nbgrader"] = meta
        return new

    notebook = nbformat.v4.new_notebook(cells=[
        cell("by_hand = [[1, 2], [3, 4]]", solution=True, grade_id="by_hand"),
        cell("assert len(by_hand) == 2", grade=True, grade_id="test_by_hand"),
        cell("def f(x):\n    return x", solution=True, grade_id="f"),
        cell("assert f(1) == 1", grade=True, grade_id="test_f"),
        cell("assert f(2) == 2", grade=True, grade_id="test_f_more"),
        cell("def g(x):\n    return x", solution=True, grade_id="g"),
        cell("assert g(1) == max(by_hand[0])", grade=True, grade_id="test_g"),
    ])
    assert couplings(notebook) == {"test_g": ["by_hand"]}


# --- one rule for "the message names the shape" ------------------------------------------


def helper_sources(name):
    """{assignment: source of the function `name`} for every notebook whose code cells define it."""
    found = {}
    for assignment in assignments():  # every notebook, also when one assignment's checks run
        notebook = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
        for cell in notebook.cells:
            if cell.cell_type != "code" or "### BEGIN" in cell.source:
                continue
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    found[assignment] = ast.get_source_segment(cell.source, node)
    return found


def test_every_notebook_names_shapes_by_one_rule():
    sources = helper_sources("names_shape")
    assert len(sources) >= 2, sorted(sources)  # the notebooks whose tasks check error messages
    assert len(set(sources.values())) == 1, f"names_shape differs between {sorted(sources)}"
    space = {"re": re}
    exec(next(iter(sources.values())), space)
    for names_shape in (space["names_shape"], probes.names_shape):  # the notebooks', the verification's
        check_shape_rule(names_shape)


def check_shape_rule(names_shape):
    for written in ["(3, 4)", "(3,4)", "[3, 4]", "torch.Size([3, 4])", "3x4", "3 x 4", "3×4",
                    "shapes (3,4) and (5,3) not aligned"]:
        assert names_shape(f"bad input {written}!", (3, 4)), written
    for written in ["(13, 4)", "(3, 45)", "(4, 3)", "3.4", "size 3 is different from 4", "(3, 4, 5)", "(2, 3, 4)"]:
        assert not names_shape(f"bad input {written}", (3, 4)), written
    assert names_shape(ValueError("X.shape=(2, 3, 4, 8)"), (2, 3, 4, 8))
