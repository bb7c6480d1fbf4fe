"""Promise: an assignment grades a transfer of what the chapters taught, not a copy of their code.

The chapters show complete, working code, as a textbook should; each graded task
asks the student to carry it to a problem the chapters did not solve. This
module proves that no chapter's code earns a graded task's points: for every
graded test cell of every assignment, and every answer its check calls, each
chapter definition that could stand in for that answer — the one of the same
name, and every other function or class whose signature takes the same call
(renaming is not the fix) — is put in the answer's place in an otherwise
correct notebook, and the cell's check must fail.

Definitions are not all a chapter offers: its configurations and loops (the
width and steps it trained a model with, the loop it ran over the heads) can
be pasted too. Each assignment lists them in
``solutions/<assignment>/checks/chapter_approaches/``, one file per approach, in
the format of a wrong implementation (CONTRIBUTING.md): the chapter's cells
written as a student would paste them into the answer cells. Every graded cell
whose check calls an answer of those cells must fail with the approach in place.

The checks are the hidden tests (tools/assignments/hidden_tests.py writes them into the
test cells), run here as they run in the kernel (tools/verification/in_kernel.py),
after the cell's visible tests (a cell whose visible part fails scores nothing;
most stand-ins stop there, in a fraction of the check's time): a stand-in that
fails here is a test cell that scores nothing. As a control, the same cell
passes the solution's own answers in the same namespace.
"""

import ast
import inspect
import re
import json
import signal
import subprocess
import sys
import warnings
from contextlib import contextmanager
from functools import lru_cache

import nbformat
import pytest

from tools.assignments.hidden_tests import SECTION
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import CHAPTERS, ROOT, SOLUTIONS, assignments, checks_folder
from tools.verification.in_kernel import run_check
from tools.verification.specs import load_spec

# A check that uses more CPU time than this on a chapter's definition fails it (it would also run past the cell's
# time limit in the kernel). CPU time, not the wall clock: these checks run at low priority beside the rest of the
# suite, and a busy machine must not fail the control.
CHECK_SECONDS = 60


@contextmanager
def deadline(seconds):
    def give_up(signum, frame):
        raise TimeoutError(f"used more than {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, give_up)
    signal.setitimer(signal.ITIMER_PROF, seconds)  # this process's CPU time, every thread's
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def definitions_only(tree):
    """The statements of a chapter cell that define something without computing
    (imports, functions, classes, and names bound to literals); the rest of a
    chapter (its experiments, plots and training runs) is left out."""
    kept = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
            kept.append(node)
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            kept.append(node)
    return kept


@lru_cache(maxsize=None)
def chapter_definitions():
    """[(chapter, name, object, source, namespace)]: every top-level function and
    class of every chapter, defined as the chapter defines it (in its own
    namespace, after the chapter's imports, functions and constants above it)."""
    found = []
    sys.path.insert(0, str(CHAPTERS))  # the chapters' `import course`
    try:
        for path in sorted(CHAPTERS.glob("ch*.ipynb")):
            namespace = {"__name__": f"chapter_{path.stem}"}
            for cell in nbformat.read(path, as_version=4).cells:
                if cell.cell_type != "code":
                    continue
                try:
                    tree = ast.parse(cell.source)
                except SyntaxError:
                    continue
                for node in definitions_only(tree):
                    try:
                        exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
                    except Exception:  # noqa: BLE001 - a definition that needs the chapter's computations
                        continue
                    if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in namespace:
                        found.append((path.stem, node.name, namespace[node.name], ast.unparse(node), namespace))
    finally:
        sys.path.remove(str(CHAPTERS))
    return found


def answer_cells(notebook):
    """{name: grade_id} of what the solution cells define."""
    names = {}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names[node.name] = meta["grade_id"]
    return names


def notebook_namespace(assignment, replaced=None):
    """The solution notebook's names after its cells ran, its test cells left out, with the code of
    ``replaced`` ({grade_id: code}) in place of those solution cells."""
    path = SOLUTIONS / assignment / f"{assignment}.ipynb"
    namespace = {"__name__": "__main__"}
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and not (meta.get("grade") and not meta.get("solution")):
            source = (replaced or {}).get(meta.get("grade_id"), cell.source)
            exec(compile(source, f"{assignment}:{meta.get('grade_id', 'cell')}", "exec"), namespace)
    return namespace


@lru_cache(maxsize=None)
def solution_namespace(assignment):
    """The solution notebook's names after its cells ran, its test cells left out."""
    return notebook_namespace(assignment)


def chapter_approaches(assignment):
    """solutions/<assignment>/checks/chapter_approaches/*.py: the chapters' configurations and loops, pasted."""
    return sorted((checks_folder(assignment) / "chapter_approaches").glob("*.py"))


def approach_verdicts(assignment):
    """[(approach file, its description, grade_id, why the cell fails or "")] for every graded cell whose check
    or visible test names an answer of the cells the approach replaces (directly, or through a helper of the
    notebook that calls it)."""
    notebook = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    answers = answer_cells(notebook)
    found = []
    for path in chapter_approaches(assignment):
        description, cells = read_wrong_implementation(path)
        namespace = notebook_namespace(assignment, cells)  # an approach that does not run is an error here
        replaced = {name for name, grade_id in answers.items() if grade_id in cells}
        graded = [grade_id for grade_id, builder in load_spec(assignment).CHECKS.items()
                  if any(re.search(rf"\b{name}\b", inspect.getsource(builder) + visible_tests(assignment)[grade_id])
                         for name in replaced)]
        assert graded, f"{path.name} replaces {sorted(cells)}, which no graded cell calls: it proves nothing"
        for grade_id in graded:
            found.append((path.name, description, grade_id, check_failure(assignment, grade_id, dict(namespace))))
    return found


PROBE = re.compile(r"""(?:\bp\.(?:call|module|get|grad)|\bNested)\(\s*["'](\w+)["']""")


def called_answers(assignment, grade_id, answers):
    """The answers a graded cell's check calls (its probes' targets)."""
    source = inspect.getsource(load_spec(assignment).CHECKS[grade_id])
    return sorted({name for name in PROBE.findall(source) if name in answers})


def can_stand_in(candidate, answer):
    """Whether ``candidate`` is of the answer's kind (function or class) and takes a
    call that the answer takes with its required positional arguments."""
    if inspect.isclass(candidate) != inspect.isclass(answer) or not callable(candidate):
        return False
    try:
        wanted = inspect.signature(answer)
        offered = inspect.signature(candidate)
    except (TypeError, ValueError):
        return False
    required = [p for p in wanted.parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        offered.bind(*[None] * len(required))
    except TypeError:
        return False
    return True


def stand_ins(assignment):
    """[(grade_id, answer name, chapter, chapter definition)] for every graded cell."""
    notebook = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    answers = answer_cells(notebook)
    namespace = solution_namespace(assignment)
    found = []
    for grade_id in load_spec(assignment).CHECKS:
        for name in called_answers(assignment, grade_id, answers):
            for chapter, defined, obj, source, chapter_namespace in chapter_definitions():
                if defined == name or can_stand_in(obj, namespace[name]):
                    found.append((grade_id, name, chapter, defined, (source, chapter_namespace)))
    return found


def pasted(namespace, name, defined, source, chapter_namespace):
    """The notebook's names after a student pasted the chapter's definition of
    ``defined`` into the answer cell of ``name``: the definition runs in the
    notebook, where its names are the notebook's own (the chapter's, for those
    the notebook lacks), and becomes the answer."""
    pasted_into = {**chapter_namespace, **namespace}
    exec(compile(source, f"<chapter's {defined}>", "exec"), pasted_into)
    pasted_into[name] = pasted_into[defined]
    return pasted_into


@lru_cache(maxsize=None)
def visible_tests(assignment):
    """{grade_id: the test cell's code above its hidden tests} (what the student sees)."""
    path = SOLUTIONS / assignment / f"{assignment}.ipynb"
    return {cell.metadata["nbgrader"]["grade_id"]: SECTION.sub("", cell.source)
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")
            and not cell.metadata["nbgrader"].get("solution")}


def check_failure(assignment, grade_id, namespace):
    """Why the test cell ``grade_id`` fails in ``namespace`` ("" if it passes):
    its visible tests first (a cell whose visible part fails scores nothing, and
    they are quick), then its check, which is its hidden tests."""
    builder = load_spec(assignment).CHECKS[grade_id]
    try:
        with deadline(CHECK_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a chapter's function on inputs it was not written for
            exec(compile(visible_tests(assignment)[grade_id], f"{assignment}:{grade_id}", "exec"), dict(namespace))
            run_check(assignment, grade_id, builder, namespace)
    except Exception as error:  # noqa: BLE001 - an error fails the cell as an assertion does
        return f"{type(error).__name__}: {str(error)[:500]}"
    return ""


def verdict(assignment):
    """What this module proves about one assignment, as plain data: the stand-ins
    tried, the checks that fail the solution itself (the control), and the
    chapter definitions that pass a check."""
    namespace = solution_namespace(assignment)
    found = stand_ins(assignment)
    # The control: in the same namespace the check passes the solution's own answers,
    # so a chapter definition that behaved as the answer would be caught.
    approaches = approach_verdicts(assignment)
    control = {grade_id: why for grade_id in sorted({grade_id for grade_id, *_ in found}
                                                    | {grade_id for _, _, grade_id, _ in approaches})
               if (why := check_failure(assignment, grade_id, dict(namespace)))}
    earned = [f"{chapter}'s {defined}, as {name}, earns {grade_id}"
              for grade_id, name, chapter, defined, (source, chapter_namespace) in found
              if not check_failure(assignment, grade_id, pasted(namespace, name, defined, source, chapter_namespace))]
    earned += [f"the chapter approach {name} ({description}) earns {grade_id}"
               for name, description, grade_id, why in approaches if not why]
    return {"tried": len(found) + len(approaches), "control": control, "earned": earned}


LOG_DIR = ROOT / "_build" / "chapter-code"
_started = {}


def start_runs():
    """Start every assignment's check, each in a Python of its own (a notebook's set-up, torch's default dtype or
    its seeds, must reach neither this session nor another assignment), in the background at low priority: called
    once the session has collected this module (tests/conftest.py)."""
    if _started:
        return
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    for assignment in assignments():
        out, err = open(LOG_DIR / f"{assignment}.json", "w"), open(LOG_DIR / f"{assignment}.log", "w")
        process = subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "tests.test_chapter_code_earns_nothing",
                                    assignment], cwd=ROOT, stdout=out, stderr=err)
        _started[assignment] = (process, out, err)


@pytest.mark.parametrize("assignment", assignments())
def test_no_chapter_definition_earns_a_graded_task(assignment):
    start_runs()  # when this module is run on its own
    process, out, err = _started[assignment]
    try:
        returncode = process.wait(timeout=900)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    finally:
        out.close()
        err.close()
    stdout, stderr = (LOG_DIR / f"{assignment}.json").read_text(), (LOG_DIR / f"{assignment}.log").read_text()
    assert returncode == 0 and stdout.strip(), f"the check of {assignment} did not finish:\n{stderr[-3000:]}"
    result = json.loads(stdout.splitlines()[-1])
    assert result["tried"], f"no chapter definition could stand in for any answer of {assignment}: the test proves nothing"
    assert not result["control"], (
        f"{result['control']}: these checks fail the solution itself in this test's namespace: the test proves nothing")
    assert not result["earned"], (
        f"{assignment} grades code, configurations or loops the chapters already show (a graded task must ask for a transfer, not a "
        "copy): " + "; ".join(result["earned"]))


if __name__ == "__main__":
    print(json.dumps(verdict(sys.argv[1])))
