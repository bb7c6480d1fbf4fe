"""Promise: the chapters are reproducible, checked against PyTorch, and share
one worked example.

nbval (run by `make test` over chapters/) re-executes every chapter and
compares each output with the committed one; the tests here guard what nbval
cannot see.
"""

import ast
import re
import subprocess
import sys

import nbformat
import numpy as np
import pytest

from tools.paths import CHAPTERS, EXERCISES, ROOT, SOLUTIONS

# `make check` runs this module after a change to a chapter (tests/make_check.py).
MAKE_CHECK = ("chapter",)

CHAPTER_FILES = sorted(CHAPTERS.glob("ch*.ipynb"))
BUILTINS = re.compile(r"scaled_dot_product_attention|MultiheadAttention|torch\.softmax|F\.softmax")


def read(path):
    return nbformat.read(path, as_version=4)


def code(nb):
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def test_chapters_are_numbered_in_order():
    assert len(CHAPTER_FILES) >= 1
    assert [p.name[:4] for p in CHAPTER_FILES] == [f"ch{i:02d}" for i in range(1, len(CHAPTER_FILES) + 1)]


def test_every_chapter_is_in_the_table_of_contents():
    toc = (ROOT / "_toc.yml").read_text()
    for path in CHAPTER_FILES:
        assert f"chapters/{path.stem}" in toc, f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_starts_with_the_shared_setup(path):
    first = next(c for c in read(path).cells if c.cell_type == "code")
    assert "course.setup(" in first.source, "the first code cell must call course.setup()"


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_is_committed_executed_without_timestamps(path):
    nb = read(path)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code_cells), "run `make chapters` and commit the outputs"
    stamped = [i for i, c in enumerate(nb.cells) if "execution" in c.metadata]
    assert not stamped, f"cells {stamped[:5]} carry execution timestamps: run `make chapters`"


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_checks_itself_against_pytorch(path):
    source = code(read(path))
    assert "assert_close" in source or "assert_allclose" in source, "no comparison with a stated tolerance"
    assert BUILTINS.search(source), "no comparison with a PyTorch built-in"


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_quotes_computed_numbers(path):
    nb = read(path)
    assert "glue(" in code(nb), "numbers in the prose must be glued from code"
    prose = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "{glue:" in prose


def _assigned_arrays(source):
    """Top-level `NAME = np.array(...)` and `NAME = [...]` assignments of a cell, evaluated."""
    arrays = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            call = node.value
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "np.array":
                arrays[node.targets[0].id] = np.array(ast.literal_eval(call.args[0]), dtype=float)
            elif isinstance(call, ast.List):
                arrays[node.targets[0].id] = ast.literal_eval(call)
    return arrays


def test_exercise_copy_of_the_worked_example_agrees_with_the_chapters():
    import sys

    sys.path.insert(0, str(CHAPTERS))
    import course

    nb = read(EXERCISES / "ex01_by_hand" / "ex01_by_hand.ipynb")
    setup = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    copy = _assigned_arrays(setup.source)
    for name, value in course.worked_example().items():
        if name != "X":  # ex01 keeps the chapter's weights but asks about a sentence of its own
            np.testing.assert_array_equal(copy[name], value, err_msg=f"ex01's {name} differs from course.py")
    assert copy["X"].shape == course.worked_example()["X"].shape and len(copy["TOKENS"]) == len(course.TOKENS)


def _documented_definitions(path):
    """{name: source} of the functions and classes a chapter defines with a
    docstring or under an exercise's name: those it teaches (small helpers
    local to a cell carry a comment)."""
    taught = {name.split(".")[0] for name in exercise_api()}
    found = {}
    for cell in read(path).cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # a cell with an IPython magic
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (
                ast.get_docstring(node) or node.name in taught
            ):
                found[node.name] = ast.get_source_segment(cell.source, node)
    return found


def test_a_function_repeated_in_a_later_chapter_is_the_same_function():
    """A chapter may repeat a function an earlier chapter taught, so that it
    reads on its own (chapter 6 repeats chapter 5's `scaled_dot_product_attention`);
    the copies must agree. Helpers that several chapters need live once, in course.py."""
    first_seen = {}
    repeated = []
    for path in CHAPTER_FILES:
        for name, source in _documented_definitions(path).items():
            if name in first_seen:
                earlier, earlier_source = first_seen[name]
                repeated.append(name)
                assert source == earlier_source, f"{path.stem} redefines {name} from {earlier} differently"
            else:
                first_seen[name] = (path.stem, source)
    assert "scaled_dot_product_attention" in repeated


# Where a chapter and an exercise use the same name, it means the same thing, with
# the same signature, and retired names stay retired. (What an exercise grades is a
# transfer the chapters do not write: tests/test_chapter_code_earns_nothing.py.)
RETIRED_NAMES = {
    "attend": "scaled_dot_product_attention",
    "SingleHeadAttention": "SelfAttention",
    "FusedCausalAttention": "CausalSelfAttention",
    "to_heads": "split_heads",
    "from_heads": "merge_heads",
    "MultiHeadAttentionLayer": "MultiHeadAttention",
    "softmax_rows": "softmax",
}


def _signature(node):
    """A function's parameters with their defaults, as source text."""
    args = node.args
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    params = [a.arg + ("" if d is None else "=" + ast.unparse(d)) for a, d in zip(args.args, defaults)]
    params += ["*" + args.vararg.arg] if args.vararg else []
    params += [a.arg + ("" if d is None else "=" + ast.unparse(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return "(" + ", ".join(params) + ")"


def _api(source):
    """{name: signature} of the top-level functions, and of each class's
    __init__ and forward, that a cell defines."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with an IPython magic
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = _signature(node)
        elif isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and method.name in ("__init__", "forward"):
                    found[f"{node.name}.{method.name}"] = _signature(method)
            found.setdefault(node.name, "class")
    return found


def exercise_api():
    """{name: (assignment, signature)} of what the students write: the solution cells."""
    api = {}
    for path in sorted(SOLUTIONS.glob("*/*.ipynb")):
        for cell in read(path).cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                for name, signature in _api(cell.source).items():
                    api[name] = (path.parent.name, signature)
    return api


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_uses_the_exercises_names_and_signatures(path):
    exercises = exercise_api()
    for cell in read(path).cells:
        if cell.cell_type != "code":
            continue
        for name, signature in _api(cell.source).items():
            assert name.split(".")[0] not in RETIRED_NAMES, (
                f"{path.stem} defines {name.split('.')[0]}: the exercises call it "
                f"{RETIRED_NAMES[name.split('.')[0]]}"
            )
            if name in exercises:
                assignment, expected = exercises[name]
                assert signature == expected, (
                    f"{path.stem} defines {name}{signature}, but {assignment} has {name}{expected}: "
                    "one name, one signature"
                )


def test_setup_makes_pytorch_deterministic_without_importing_its_compiler():
    """course.setup() switches PyTorch to deterministic algorithms (torch.empty filled, not garbage; an operation
    without a deterministic version raises), on one thread, as torch.use_deterministic_algorithms(True) does; and
    it leaves PyTorch's compiler unimported, which that function would import."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import course, torch; course.setup(); "
        "assert torch.are_deterministic_algorithms_enabled() and not torch.is_deterministic_algorithms_warn_only_enabled(); "
        "assert torch.get_num_threads() == 1; "
        "assert torch.utils.deterministic.fill_uninitialized_memory and bool(torch.empty(4).isnan().all()); "
        "assert 'torch._inductor.config' not in sys.modules and 'torch._dynamo' not in sys.modules, "
        "sorted(m for m in sys.modules if m.startswith(('torch._inductor', 'torch._dynamo')))[:5]"
    )
    ran = subprocess.run([sys.executable, "-c", script, str(CHAPTERS)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-2000:]
