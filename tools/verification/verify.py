"""Verify every graded submission outside its notebook's kernel.

Usage: ``python -m tools.verification.verify [ASSIGNMENT ...] [--course FOLDER] [--jobs N] [--seed S]``.
``make grade`` (``tools.grading.run``) verifies each submission right after grading
it, in the grading worker (``Verification``, ``run_checks_in_worker``); run
this alone to verify again what the gradebook holds. CONTRIBUTING.md, "How
grading works", places it in the whole run.

nbgrader runs the hidden tests in the same Python process as the student's
code, so that code can defeat them (replace ``torch.allclose``, swallow
exceptions, return objects that lie when compared). Verification trusts
nothing that runs there: each assignment's
``solutions/<assignment>/checks/verification.py`` builds one check per graded
test cell from this run's seed (``prepare``); a sandboxed process runs the
course's set-up cells, the student's solution cells and the checks' probes
(``run_checks_in_sandbox``; tools/verification/harness.py), handing back plain
data only (JSON and ``.npy`` files, read without pickles); here, each check
compares them with its references (``judge_checks``). A passed check is worth
its cell's points; a submission is *flagged* in ``integrity.csv`` when nbgrader
gave a cell more points than its check confirms, or fewer (a grader broken in
the notebook gives honest work 0), or when it was not graded.

Checks are calibrated to be no stricter than the hidden tests for honest code
(tests/test_grades_cannot_be_faked.py holds them to it), so a flag means the grade needs a
look — instructor/integrity.md says what to do.
"""

from __future__ import annotations

import argparse
import ast
import csv
import importlib.util
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..course_settings import CourseSettings, VerificationLimits, default_jobs
from ..paths import BIN, ROOT, verification_spec
from ..sandbox.limits import check_notebook, tidy_results

HARNESS = Path(__file__).resolve().parent / "harness.py"
SPEC_PACKAGE = "course_checks"  # the name under which each assignment's verification.py is loaded
CSV_NAME = "integrity.csv"
CSV_COLUMNS = ["assignment", "student_id", "nbgrader_score", "verified_score", "max_score", "flagged", "reason"]
# causes.csv: one row per graded cell of each verified submission (instructor/report.md).
CAUSES_CSV = "causes.csv"
CAUSES_COLUMNS = ["assignment", "student_id", "grade_id", "points", "nbgrader", "verified", "attempted", "cause",
                  "seconds"]

MAX_NOTEBOOK_BYTES = 50 * 1024**2


HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)
MARKERS = re.compile(r"### (BEGIN|END) (SOLUTION|HIDDEN TESTS)")


# --- what the source notebook says -----------------------------------------


@dataclass
class Step:
    kind: str  # "trusted", "student", "imports" or "check"
    name: str  # the cell's grade_id
    code: str = ""


@dataclass
class Assignment:
    """One assignment, ready to verify its submissions in this run."""

    name: str
    notebook: str  # file name of the notebook
    steps: list
    points: dict  # {grade_id of a test cell: points}
    solution_ids: list
    checks: dict  # {grade_id: (probes, judge)}
    inputs: Path
    limits: VerificationLimits = VerificationLimits()
    causes: frozenset = frozenset()  # the codes its checks may report (the spec's CAUSES and the general ones)

    @property
    def max_score(self):
        return sum(self.points.values())


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


def spec_path(assignment: str, source: Path | None = None) -> Path:
    """Where the assignment's checks are: ``<source>/<assignment>/checks/verification.py``
    of the graded course if it has them, else the repository's."""
    if source is not None and verification_spec(assignment, source).is_file():
        return verification_spec(assignment, source)
    return verification_spec(assignment)


def load_spec(assignment: str, source: Path | None = None):
    """The assignment's spec module (``spec_path``), or None if it has none."""
    path = spec_path(assignment, source).resolve()
    if not path.is_file():
        return None
    name = f"{SPEC_PACKAGE}.{assignment}_{zlib.crc32(str(path).encode()):08x}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def prepare(assignment: str, source_notebook: Path, seed: int, staging: Path,
            limits: VerificationLimits = VerificationLimits()) -> Assignment:
    """Build the assignment's checks for this run and write their inputs."""
    from .probes import Plan

    source = source_notebook.parent.parent
    spec = load_spec(assignment, source)
    if spec is None:
        raise LookupError(f"no verification spec for {assignment} ({spec_path(assignment, source)})")
    steps, points, solution_ids = source_steps(source_notebook)
    missing, extra = set(points) - set(spec.CHECKS), set(spec.CHECKS) - set(points)
    if missing or extra:
        raise ValueError(
            f"{spec_path(assignment, source)} does not match the notebook's test cells: "
            f"no check for {sorted(missing)}, checks for cells that do not exist {sorted(extra)}"
        )
    plan = Plan(assignment, seed, [step.code for step in steps if step.kind == "trusted"], limits)
    for grade_id in points:
        plan.add_check(grade_id, spec.CHECKS[grade_id])
    inputs = staging / f"inputs-{assignment}"
    plan.write_inputs(inputs)
    from .probes import GENERAL_CAUSES

    causes = frozenset(getattr(spec, "CAUSES", {})) | frozenset(GENERAL_CAUSES)
    return Assignment(assignment, source_notebook.name, steps, points, solution_ids, plan.checks, inputs, limits,
                      causes)


def run_order(assignment: Assignment, cells: dict, added: dict | None = None):
    """The steps one submission's process runs, in the notebook's order, as
    ``(kind, name, code)``: the course's set-up cells, the student's solution
    cells and the cells they added, and the checks (code None). A solution cell
    the submission lacks is a step of kind "missing", which is not run."""
    added = added or {}
    order = [("added", "start of the notebook", code) for code in added.get("", [])]
    for step in assignment.steps:
        if step.kind == "student":
            if step.name in cells:
                order.append(("student", step.name, cells[step.name]))
            else:  # a deleted cell: its functions stay undefined
                order.append(("missing", step.name, None))
        elif step.kind == "check":
            order.append(("check", step.name, None))
        else:
            order.append((step.kind, step.name, step.code))
        if step.kind != "imports":
            order += [("added", f"a cell after {step.name}", code) for code in added.get(step.name, [])]
    return order


def program(assignment: Assignment, cells: dict, added: dict | None = None) -> dict:
    """What the harness runs for one submission."""
    steps = []
    for kind, name, code in run_order(assignment, cells, added):
        if kind == "missing":
            continue
        if kind == "check":
            steps.append({"kind": kind, "name": name, "probes": assignment.checks[name][0]})
        else:
            steps.append({"kind": kind, "name": name, "code": code})
    return {"steps": steps, "step_seconds": assignment.limits.step_seconds}


# --- one submission ---------------------------------------------------------


@dataclass
class CellVerdict:
    grade_id: str
    points: float
    verified: float
    nbgrader: float | None
    why: str = ""
    nbgrader_error: str = ""  # the head of the error nbgrader's test cell showed, if make grade read it
    cause: str = ""  # the code of the likely mistake, if verification failed the cell ("other" if unknown)
    attempted: bool = True  # False if every solution cell before it is missing or still the release's stub

    @property
    def disagrees(self) -> bool:
        """nbgrader gave this cell more points than verification confirms, or fewer."""
        return self.nbgrader is not None and abs(self.nbgrader - self.verified) > 1e-9

    def disagreement(self) -> str:
        if self.nbgrader > self.verified:
            return f"{self.grade_id}: nbgrader {self.nbgrader:g}, verified {self.verified:g} ({self.why})"
        shown = f": nbgrader's test showed {self.nbgrader_error}" if self.nbgrader_error else ""
        return (f"{self.grade_id}: nbgrader {self.nbgrader:g}, verified {self.verified:g} (nbgrader gave fewer "
                f"points than verification confirms{shown})")


@dataclass
class Verdict:
    assignment: str
    student: str
    max_score: float
    cells: list = field(default_factory=list)
    problem: str = ""  # why verification could not run at all, if it could not
    seconds: float = 0.0
    not_graded: str = ""  # why grading failed this run, if it did: the row is flagged for a look

    @property
    def verified_score(self):
        return sum(c.verified for c in self.cells)

    @property
    def nbgrader_score(self):
        scores = [c.nbgrader for c in self.cells if c.nbgrader is not None]
        return sum(scores) if scores else None

    @property
    def flagged(self):
        """Not graded this run, or a cell whose grade verification does not
        confirm: more points than it confirms, or fewer (a grader that failed
        in the notebook, or a test stricter than its check)."""
        return bool(self.not_graded) or any(c.disagrees for c in self.cells)

    @property
    def reason(self):
        parts = [c.disagreement() for c in self.cells if c.disagrees]
        if self.problem and parts:
            parts.insert(0, self.problem)
        if self.not_graded:
            parts.insert(0, f"not graded this run ({self.not_graded}); the gradebook holds its earlier grade, if any")
        return "; ".join(parts)


def verify_submission(assignment: Assignment, notebook: Path, workdir: Path, template=None) -> Verdict:
    """Run one submission's checks in the sandbox and judge them here: in a
    child of ``template`` (tools/sandbox/warm.py) if given, else in a fresh sandboxed
    Python."""
    return judge_checks(assignment, run_checks_in_sandbox(assignment, notebook, workdir, template), workdir)


@dataclass
class ChecksRan:
    """How one submission's checks ran; their results are in ``workdir/results``."""

    cells: dict | None  # the student's solution cells, None if the notebook could not be read
    added: dict
    status: str
    problem: str = ""
    seconds: float = 0.0


def run_checks_in_sandbox(assignment: Assignment, notebook: Path, workdir: Path, template=None) -> ChecksRan:
    """Run one submission's checks in the sandbox (a child of ``template`` if
    given, else a fresh sandboxed Python); nothing is judged yet."""
    from ..sandbox import bubblewrap as sandbox
    from ..sandbox.bubblewrap import sandboxed_command

    start = time.monotonic()
    problem = ""
    try:
        cells, added = student_cells(notebook, assignment.solution_ids, [s.name for s in assignment.steps])
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as error:
        problem = f"the notebook could not be read: {error}"
        cells, added = None, {}
    status = "not run"
    results = workdir / "results"
    if cells is not None:
        results.mkdir(parents=True)
        sandbox.let_sandbox_write(results)
        program_file = workdir / "program.json"
        program_file.write_text(json.dumps(program(assignment, cells, added)))
        if template is not None:
            request = template.request(
                "harness", [program_file, assignment.inputs, results], cwd=results,
                readable=[program_file, assignment.inputs],
                memory_bytes=assignment.limits.memory_bytes, cpu_seconds=assignment.limits.cpu_seconds,
            )
            status = template.run(request, timeout=assignment.limits.run_seconds)
        else:
            python = BIN / "python"
            command = sandboxed_command(
                [python, HARNESS, program_file, assignment.inputs, results],
                results,
                memory_bytes=assignment.limits.memory_bytes,
                cpu_seconds=assignment.limits.cpu_seconds,
                readable=[HARNESS, program_file, assignment.inputs],
            )
            try:
                proc = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, timeout=assignment.limits.run_seconds)
                status = f"exit status {proc.returncode}"
            except subprocess.TimeoutExpired:
                status = f"stopped after {assignment.limits.run_seconds:g} s"
        # What the judge reads and whoever removes the folder removes is bounded here (in make grade's
        # worker): past tools/sandbox/limits.py's MAX_RESULT_FILES, nothing is left to judge.
        refused = tidy_results(results)
        if refused:
            cells, problem = None, refused
    return ChecksRan(cells, added, status, problem, time.monotonic() - start)


def judge_checks(assignment: Assignment, ran: ChecksRan, workdir: Path) -> Verdict:
    """Judge what ``run_checks_in_sandbox`` left in ``workdir``, here."""
    start = time.monotonic()
    verdict = Verdict(assignment.name, "", assignment.max_score, problem=ran.problem)
    judge_result_files(assignment, verdict, workdir / "results", ran.status, ran.cells, ran.added)
    verdict.seconds = ran.seconds + time.monotonic() - start
    return verdict


def judge_result_files(assignment: Assignment, verdict: Verdict, results: Path, status: str, cells, added=None):
    from .probes import OTHER, CheckResults, Fail, ResultsFolder, clear_diagnosis, failed_cause

    folder = None
    if cells is not None:
        try:
            folder = ResultsFolder(results)
        except OSError as error:
            verdict.problem = f"the results folder cannot be read: {error}"
    notes = []  # what went wrong in the cells before each check
    order = run_order(assignment, cells or {}, added) if cells is not None else [
        ("check", s.name, None) for s in assignment.steps if s.kind == "check"]
    # Whether a solution cell since the previous check holds the student's own code; a check with no solution
    # cell of its own since the previous one tests the same cells as that one.
    attempted, seen, attempted_before = False, False, True
    try:
        n = 0  # the step number in the program actually run
        for kind, name, code in order:
            if kind == "missing":
                notes.append(f"solution cell {name} is missing")
                seen = True
                continue
            if kind == "student":
                seen = True
                attempted = attempted or not is_stub(code)
            record = None
            if folder is not None:
                try:
                    record = folder.step(n)
                except Fail as error:
                    record = {"bad": str(error)}
            n += 1
            if kind != "check" and record is not None and "raised" in record:
                error = record["raised"]
                error = f"{error[0]}: {error[1]}"[:200] if isinstance(error, list) and len(error) >= 2 else "?"
                if kind == "student":
                    notes.append(f"cell {name} raised {error}")
                elif kind == "added":
                    notes.append(f"{name} raised {error}")
                else:
                    notes.append(f"the course's cell {name} failed in the sandbox ({error})")
            if kind != "check":
                continue
            points = assignment.points[name]
            if seen:
                attempted_before = attempted
            cell = CellVerdict(name, points, 0.0, None, attempted=attempted_before)
            attempted, seen = False, False
            verdict.cells.append(cell)
            if folder is None:
                cell.why, cell.cause = verdict.problem or "not verified", "no_result"
            elif record is None:
                cell.why = f"the check never ran: the process stopped before it ({status})"
                cell.cause = "no_result"
            elif "bad" in record:
                cell.why, cell.cause = f"unreadable results: {record['bad']}", "bad_result"
            else:
                clear_diagnosis()
                try:
                    check_results = CheckResults(record, folder)
                    assignment.checks[name][1](check_results)
                    cell.verified = points
                except Fail as error:
                    cell.why = str(error)[:400]
                    cell.cause = failed_cause(error)
                except Exception as error:  # noqa: BLE001 - data the judge did not expect fails the check
                    cell.why = f"{type(error).__name__} while judging: {str(error)[:300]}"
                    cell.cause = failed_cause(error)
                if cell.cause and cell.cause not in assignment.causes:
                    cell.cause = OTHER  # a code its spec does not declare is no code
            if not cell.attempted and cell.verified == 0:
                cell.cause = "not_attempted"
                if cell.verified == 0 and notes:
                    cell.why += f" [{'; '.join(notes[:3])}]"
            notes = [note for note in notes if "course's cell" in note]
    finally:
        if folder is not None:
            folder.close()


STUB = re.compile(r"^[ \t]*# YOUR CODE HERE[ \t]*\n[ \t]*raise NotImplementedError\(\)[ \t]*$", re.MULTILINE)


def is_stub(code) -> bool:
    """Whether a solution cell still holds the release's stub (nbgrader's "# YOUR CODE HERE" and
    NotImplementedError where the solution was)."""
    return not isinstance(code, str) or bool(STUB.search(code))


# --- the whole course -------------------------------------------------------


def nbgrader_scores(db_url: str, wanted):
    """{(assignment, student): {grade_id: auto score}} from the gradebook, for
    ``wanted`` = [(assignment, notebook name, student)]; submissions the
    gradebook does not have are left out."""
    from nbgrader.api import Gradebook, MissingEntry

    scores = {}
    with Gradebook(db_url) as gb:
        for assignment, notebook, student in wanted:
            try:
                nb = gb.find_submission_notebook(notebook, assignment, student)
            except MissingEntry:
                continue
            scores[assignment, student] = {grade.name: grade.auto_score for grade in nb.grades}
    return scores


def run_seed(seed=None) -> int:
    if seed is None and os.environ.get("VERIFY_SEED"):
        seed = os.environ["VERIFY_SEED"]
    if seed is None:
        return secrets.randbits(63)
    return int(str(seed), 0)


def verify(course, todo=None, assignments=(), jobs=None, seed=None, out=sys.stdout):
    """Verify submissions of a course folder and write its integrity.csv.

    ``todo`` lists ``(assignment, student)`` pairs (default: every submission
    of ``assignments``, or of all assignments). Returns the verdicts.
    """
    settings = CourseSettings.read(course)
    if todo is None:
        todo = settings.layout.submissions(assignments)
    todo = sorted(todo)
    jobs = max(1, int(jobs or default_jobs()))
    staging = Path(tempfile.mkdtemp(prefix="verify-"))
    try:
        run = Verification.start(settings, todo, seed, staging, out)
        if run is None:
            return []
        done = run.verify_each(todo, jobs)
    finally:
        remove_quietly(staging)
    return run.conclude(done, out)


@dataclass
class Verification:
    """One verification run: its seed, each assignment's checks prepared in
    ``staging``, and the clock. ``make grade`` (tools/grading/run.py) starts one
    before grading and lets each worker verify the submission it has just
    graded, in a child of the same warm template (``run_checks_in_worker``);
    ``verify`` above runs one on its own."""

    layout: object
    seed: int
    prepared: dict
    staging: Path
    started: float
    seconds: float = 0.0  # time spent verifying (summed over workers when they verify)

    @classmethod
    def start(cls, settings: CourseSettings, todo, seed, staging: Path, out, alongside=False):
        """Prepare every assignment of ``todo``; None (and why, printed) if
        student code cannot run in the sandbox here."""
        from ..sandbox.bubblewrap import SandboxUnavailable, check_available

        try:
            check_available()
        except SandboxUnavailable as error:
            print(f"NOT VERIFIED: verification runs student code in the sandbox: {error}", file=out, flush=True)
            return None
        seed = run_seed(seed)
        print(f"verifying {len(todo)} submission(s) outside the notebook"
              f"{', each right after it is graded,' if alongside else ''} with seed {seed} "
              f"(VERIFY_SEED={seed} repeats this run)", file=out, flush=True)
        layout = settings.layout
        run = cls(layout, seed, {}, staging, time.monotonic())
        for name in sorted({a for a, _ in todo}):
            try:
                run.prepared[name] = prepare(name, layout.source_notebook(name), seed, staging, settings.verification)
            except Exception as error:  # noqa: BLE001 - grading is done; say why this assignment is not verified
                print(f"  {name}: NOT VERIFIED: {error}", file=out, flush=True)
        return run

    def notebook(self, assignment: str, student: str) -> Path:
        layout = self.layout
        return layout.root / layout.submitted / student / assignment / self.prepared[assignment].notebook

    def verify_each(self, todo, jobs) -> list:
        """Verify ``todo`` here, ``jobs`` at a time, each in a child of one warm
        template per thread."""
        from ..sandbox.warm import preload_for

        layout, prepared = self.layout, self.prepared
        work = [(a, s) for a, s in todo if a in prepared]
        if not work:
            return []
        started = time.monotonic()
        templates = Templates(self.staging, max((p.limits.memory_bytes for p in prepared.values()), default=0),
                              preload_for(*(layout.root / layout.source / name / f"{name}.ipynb"
                                            for name in prepared)))

        def one(index_item):
            index, (name, student) = index_item
            workdir = self.staging / f"submission-{index}"
            workdir.mkdir()
            try:
                verdict = templates.verify(prepared[name], self.notebook(name, student), workdir)
            except Exception:  # noqa: BLE001 - reported; the submission counts as unverified
                verdict = unverified(prepared[name], traceback.format_exc(limit=3))
            verdict.student = student
            remove_quietly(workdir)
            return verdict

        try:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                done = list(pool.map(one, enumerate(work)))
        finally:
            templates.close()
        self.seconds += time.monotonic() - started
        return done

    def judge(self, assignment: str, student: str, ran: ChecksRan, workdir: Path) -> Verdict:
        """The verdict on what a worker ran (``run_checks_in_worker``), judged here."""
        try:
            verdict = judge_checks(self.prepared[assignment], ran, workdir)
        except Exception:  # noqa: BLE001 - reported; the submission counts as unverified
            verdict = unverified(self.prepared[assignment], traceback.format_exc(limit=3))
        verdict.student = student
        return verdict

    def conclude(self, done, out, not_graded=None) -> list:
        """Compare the verdicts with the gradebook's scores, write integrity.csv, report.
        ``not_graded`` ({(assignment, student): why}) are the submissions that
        failed to grade this run: each gets a flagged row saying why."""
        prepared, layout = self.prepared, self.layout
        verdicts = []
        scores = nbgrader_scores(layout.db_url, [(v.assignment, Path(prepared[v.assignment].notebook).stem,
                                                  v.student) for v in done])
        for verdict in sorted(done, key=lambda v: (v.assignment, v.student)):
            if (verdict.assignment, verdict.student) not in scores:
                print(f"  {verdict.assignment}  {printable(verdict.student)}: not in the gradebook, skipped", file=out,
                      flush=True)
                continue
            for cell in verdict.cells:
                score = scores[verdict.assignment, verdict.student].get(cell.grade_id)
                cell.nbgrader = float(score) if score is not None else 0.0
            verdicts.append(verdict)
        for (assignment, student), why in sorted((not_graded or {}).items()):
            if assignment in prepared:
                verdicts.append(Verdict(assignment, student, prepared[assignment].max_score, not_graded=why))
        path = write_csv(layout.root / CSV_NAME, verdicts)
        write_causes(layout.root / CAUSES_CSV, verdicts)
        report(verdicts, path, self.seconds, out)
        return verdicts


def remove_quietly(folder: Path):
    """Remove a verification's folder (the harness wrote there), or leave it
    to the run's clean-up if that fails."""
    from ..sandbox.bubblewrap import remove_tree

    try:
        remove_tree(folder)
    except OSError:
        pass


def unverified(assignment: Assignment, problem: str) -> Verdict:
    """The verdict on a submission whose verification failed: every cell 0."""
    verdict = Verdict(assignment.name, "", assignment.max_score, problem=f"verification failed: {problem[-300:]}")
    for grade_id, points in assignment.points.items():
        verdict.cells.append(CellVerdict(grade_id, points, 0.0, None, verdict.problem))
    return verdict


def run_checks_in_worker(assignment: Assignment, notebook: Path, workdir: Path) -> ChecksRan:
    """Run one submission's checks in a child of this process's kernel
    template (tools/sandbox/warm.py), the one its notebook's kernel was forked from: no
    second template, and no second start of Python and PyTorch. make grade's
    workers run this right after autograde; ``workdir`` must be under the
    template's folders. Without a template, a fresh sandboxed Python runs it.
    The process that started the run judges the results (``judge_checks``):
    a worker, forked from it, must not run PyTorch operations."""
    from ..sandbox import warm

    workdir.mkdir(parents=True, exist_ok=True)
    template = None
    if warm.enabled():
        try:
            template = warm.kernel_template(workdir, assignment.limits.memory_bytes)
        except Exception:  # noqa: BLE001 - then a fresh sandboxed Python
            template = None
    try:
        return run_checks_in_sandbox(assignment, notebook, workdir, template)
    except warm.TemplateError:
        warm.close_kernel_template()
        remove_quietly(workdir)
        workdir.mkdir()
        return run_checks_in_sandbox(assignment, notebook, workdir)


class Templates:
    """One warm template (tools/sandbox/warm.py) per verifying thread, started on its
    first submission: the harness's start-up (Python, NumPy, PyTorch) is paid
    once per thread. A template that fails is replaced; meanwhile that
    submission is verified in a fresh sandboxed Python."""

    def __init__(self, staging: Path, memory_bytes: int, preload=("torch",)):
        import threading

        self.staging, self.memory_bytes, self.preload = staging, memory_bytes, list(preload)
        self.local = threading.local()
        self.lock = threading.Lock()
        self.started = []

    def verify(self, assignment: Assignment, notebook: Path, workdir: Path) -> Verdict:
        from ..sandbox import warm

        if not warm.enabled():
            return verify_submission(assignment, notebook, workdir)
        template = getattr(self.local, "template", None)
        if template is None or not template.alive():
            try:
                template = warm.Template([self.staging], memory_bytes=self.memory_bytes, base=self.staging,
                                         preload=self.preload)
            except Exception:  # noqa: BLE001 - this submission gets a fresh sandboxed Python instead
                return verify_submission(assignment, notebook, workdir)
            self.local.template = template
            with self.lock:
                self.started.append(template)
        try:
            return verify_submission(assignment, notebook, workdir, template)
        except warm.TemplateError:
            self.local.template = None
            template.close()
            remove_quietly(workdir)
            workdir.mkdir()
            return verify_submission(assignment, notebook, workdir)

    def close(self):
        for template in self.started:
            template.close()


def write_csv(path: Path, verdicts) -> Path:
    """integrity.csv: this run's rows, and the earlier rows of submissions not verified now."""
    rows = {}
    if path.is_file():
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if set(CSV_COLUMNS) <= set(row):
                    rows[(row["assignment"], row["student_id"])] = {k: row[k] for k in CSV_COLUMNS}
    for v in verdicts:
        rows[(v.assignment, v.student)] = {
            "assignment": v.assignment,
            "student_id": v.student,
            "nbgrader_score": "" if v.nbgrader_score is None else f"{v.nbgrader_score:g}",
            "verified_score": f"{v.verified_score:g}",
            "max_score": f"{v.max_score:g}",
            "flagged": "yes" if v.flagged else "no",
            "reason": printable(v.reason),
        }
    partial = path.with_name(f".{path.name}.part")
    # (every field escaped: a student id or score from an earlier file as much as this run's reasons)
    with open(partial, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for key in sorted(rows):
            writer.writerow(rows[key])
    partial.replace(path)
    return path


def write_causes(path: Path, verdicts) -> Path:
    """causes.csv: for each graded cell of this run's verified submissions, its points (nbgrader's and
    verified), whether the student attempted it and the code of the likely mistake; earlier rows of
    submissions not verified now are kept."""
    rows = {}
    if path.is_file():
        with open(path, newline="", encoding="utf-8", errors="backslashreplace") as f:
            for row in csv.DictReader(f):
                if set(CAUSES_COLUMNS) <= set(row):
                    rows[(row["assignment"], row["student_id"], row["grade_id"])] = {k: row[k] for k in CAUSES_COLUMNS}
    for v in verdicts:
        if v.not_graded:
            continue
        for key in [k for k in rows if k[:2] == (v.assignment, v.student)]:
            del rows[key]
        for c in v.cells:
            rows[(v.assignment, v.student, c.grade_id)] = {
                "assignment": v.assignment, "student_id": v.student, "grade_id": c.grade_id,
                "points": f"{c.points:g}", "nbgrader": "" if c.nbgrader is None else f"{c.nbgrader:g}",
                "verified": f"{c.verified:g}", "attempted": "yes" if c.attempted else "no",
                # nbgrader withheld points that verification confirms: its hidden test is stricter than the check
                "cause": c.cause or ("stricter_test" if c.nbgrader is not None and c.nbgrader < c.verified else ""),
                "seconds": f"{v.seconds:.2f}",
            }
    partial = path.with_name(f".{path.name}.part")
    with open(partial, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
        writer = csv.DictWriter(f, fieldnames=CAUSES_COLUMNS)
        writer.writeheader()
        for key in sorted(rows):
            writer.writerow(rows[key])
    partial.replace(path)
    return path


def report(verdicts, path, seconds, out):
    flagged = [v for v in verdicts if v.flagged]
    print(f"verified {len(verdicts)} submission(s) in {seconds:.1f} s; {len(flagged)} flagged; "
          f"written to {path}", file=out, flush=True)
    if not flagged:
        return
    print("\nFLAGGED: nbgrader's grade and verification outside the notebook disagree (either way), or the "
          "submission was not graded (instructor/integrity.md says what to do):", file=out)
    header = ("assignment", "student", "nbgrader", "verified", "max", "first reason")
    rows = [(v.assignment, printable(v.student), "-" if v.nbgrader_score is None else f"{v.nbgrader_score:g}",
             f"{v.verified_score:g}", f"{v.max_score:g}",
             shorten(v.reason.split("; ")[0], 110)) for v in flagged]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [text.ljust(width) for text, width in zip(row, widths)]
        print("  " + "  ".join(cells) + "  " + row[-1], file=out)
    print(file=out, flush=True)


def shorten(text: str, width: int) -> str:
    text = printable(text)
    return text if len(text) <= width else text[: width - 3] + "..."


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text) -> str:
    """``text`` with control characters written as escapes: a reason quotes a
    student's exception, which could hold a terminal's escape codes (and hide
    a flagged row); and with what UTF-8 cannot encode (a lone surrogate such
    as ``"\\udcff"``) written as an escape too, so that no file or terminal
    the run writes to refuses it."""
    text = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignments to verify (default: all with submissions)")
    parser.add_argument("--course", default=str(ROOT), help="the course folder (default: the repository)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel sandboxes (default: number of cores)")
    parser.add_argument("--seed", default=None, help="repeat a run's inputs (its printed seed)")
    args = parser.parse_args(argv)
    verdicts = verify(Path(args.course), assignments=args.assignments, jobs=args.jobs, seed=args.seed)
    return 1 if any(v.flagged for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
