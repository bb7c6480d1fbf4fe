"""Grade every submission of a course: autograde, feedback, verification, grades.csv.

Usage: ``python -m tools.grading [ASSIGNMENT ...] [--course FOLDER] [--jobs N] [--scheduler ADDRESS]``
(what ``make grade`` runs; ``SCHEDULER=`` gives ``--scheduler``). Without an assignment, every assignment that has
submissions under ``submitted/<student>/<assignment>/`` is graded. The course
folder (default: the repository) holds ``nbgrader_config.py``, the gradebook
and nbgrader's folders.

CONTRIBUTING.md, "How grading works", describes the whole run step by step;
this module is its driver: ``grade`` (settings, verification, bundles),
``grade_with_pool`` (local worker processes; tools/grading/cluster.py does the
same on Dask), ``grade_in_private_course`` (one submission, in a worker, called
by tools/grading/task.py's ``grade_task``), ``merge_results`` (the single writer
of the real gradebook) and ``export_grades``.

Before any student's result is written, the instructor's solution of each
assignment is graded the same way and must earn full marks
(tools/grading/self_check.py); if it does not, nobody is graded and the command exits
with status 3 (SELF_CHECK_FAILED). Running it again regrades everything from
the submissions: nothing is lost. A submission that fails to grade (for a
reason other than its own code) keeps its previous results; the command exits
with status 1 (NEEDS_A_LOOK) when any submission was not graded or is flagged
in integrity.csv, and its last line says so.
"""

from __future__ import annotations

import argparse
import io
import logging
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..course_settings import CONFIG_FILE, CourseSettings, Layout, course_directory, default_jobs, worker_config
from ..paths import BIN, ROOT
from ..sandbox.limits import SubmissionRefused, check_submission

def record_assignments(layout: Layout, names):
    """Make sure the gradebook knows every assignment in ``names`` (nbgrader's
    generate_assignment, run in this process for all of those it lacks)."""
    from nbgrader.api import Gradebook, MissingEntry

    from ..assignments.nbgrader_course import generate_in_process

    missing = []
    with Gradebook(layout.db_url) as gb:
        for name in names:
            try:
                if gb.find_assignment(name).notebooks:
                    continue
            except MissingEntry:
                pass  # (an assignment added with `nbgrader db assignment add` has no notebooks yet)
            missing.append(name)
    if not missing:
        return
    print(f"recording {', '.join(missing)} in the gradebook (nbgrader generate_assignment)", flush=True)
    with tempfile.TemporaryDirectory() as release:
        try:
            generate_in_process(layout.root, missing, release_directory=release)
        except RuntimeError as error:
            raise SystemExit(str(error)) from None


def snapshot_gradebook(layout: Layout, target: Path):
    """A consistent copy of the gradebook (SQLite's backup API)."""
    source = sqlite3.connect(layout.db_path)
    copy = sqlite3.connect(target)
    try:
        with copy:
            source.backup(copy)
    finally:
        source.close()
        copy.close()


# --- copying what a submission holds ---------------------------------------

# (tools/grading/task.py: a submission's files travel as bytes, read and written with these rules)
from .task import COPY_BYTES, COPY_FILES, CopyRefused, copy_regular  # noqa: E402,F401


# --- the workers ------------------------------------------------------------

# What an assignment's source folder may hold, sent to every worker.
RELEASE_BYTES = 256 * 1024**2
RELEASE_FILES = 10_000


def grade_in_private_course(bundle, submission, private: Path, checks=None):
    """Autograde one submission and generate its feedback in a private copy of
    the course in ``private`` (a folder of this worker: tools/grading/task.py's
    grade_task), made from the bytes of ``bundle`` (an AssignmentBundle) and
    ``submission``. ``checks``: the verification's Assignment with its inputs
    in this worker, or None. Returns a dict: success, log, seconds, phases,
    ran (how the checks ran), reason, peak_kib."""
    from .task import write_files
    from ..sandbox.kernel import PHASES

    start = time.monotonic()
    assignment, student, folders = submission.assignment, submission.student, bundle.folders
    before = dict(PHASES)
    (private / CONFIG_FILE).write_bytes(bundle.config)
    if bundle.release:  # autograde copies its other files (data, helpers) next to the notebook
        write_files(bundle.release, private / folders["source"] / assignment, max_bytes=RELEASE_BYTES,
                    max_files=RELEASE_FILES)
    (private / "gradebook.db").write_bytes(bundle.gradebook)
    log = io.StringIO()
    submitted = private / folders["submitted"] / student / assignment
    try:
        # What the student submitted: folders and regular files only, bounded ...
        write_files(submission.files, submitted)
        # ... and no more than a submission may hold once decoded (tools/sandbox/limits.py).
        check_submission(submitted)
    except (OSError, CopyRefused, SubmissionRefused) as error:
        return refused(error, start)
    if submission.left_out:
        log.write(f"[WARNING] left out of grading (not a file or folder): {', '.join(submission.left_out)}\n")

    handler = logging.StreamHandler(log)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    logger = logging.getLogger("traitlets")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    success = True
    phases = {}
    try:
        from nbgrader.converters import Autograde, GenerateFeedback

        for converter_class in (Autograde, GenerateFeedback):
            db_url = f"sqlite:///{private / 'gradebook.db'}"
            if bundle.run_config is not None:  # the run's settings, read once (tools/course_settings.py)
                from nbgrader.coursedir import CourseDirectory

                coursedir = CourseDirectory(config=worker_config(bundle.run_config, private, db_url))
            else:
                coursedir = course_directory(private, db_url=db_url)
            coursedir.assignment_id = assignment
            coursedir.student_id = student
            converter = converter_class(coursedir=coursedir, config=coursedir.config)
            converter.force = True
            started = time.monotonic()
            converter.start()
            phases[converter_class.__name__] = time.monotonic() - started
    except SubmissionTimeout:
        raise
    except BaseException:  # noqa: BLE001 - reported to the caller, who keeps the old results
        success = False
        log.write(traceback.format_exc())
    finally:
        logger.removeHandler(handler)
    for name, seconds in PHASES.items():
        phases[name] = seconds - before.get(name, 0.0)
    ran = None
    if checks is not None:
        from ..verification.sandbox_run import run_checks_in_worker

        started = time.monotonic()
        try:
            ran = run_checks_in_worker(checks, submitted / checks.notebook, private / "verification",
                                       warm_template=bundle.warm)
        except Exception:  # noqa: BLE001 - then it is verified after grading
            log.write(traceback.format_exc())
        phases["verification"] = time.monotonic() - started
    if "Autograde" in phases:  # the rest of autograde: nbgrader's own work
        phases["nbgrader autograde, without the kernel"] = phases.pop("Autograde") - sum(
            phases.get(k, 0.0) for k in ("kernel start", "cells", "kernel stop"))
    if "GenerateFeedback" in phases:
        phases["nbgrader feedback"] = phases.pop("GenerateFeedback")
    seconds = time.monotonic() - start
    phases["copies and set-up"] = seconds - sum(phases.values())
    reason = "" if success else last_line(log.getvalue())
    return {"success": success, "log": log.getvalue(), "seconds": seconds, "phases": phases, "ran": ran,
            "reason": reason, "peak_kib": peak_kib()}


def refused(error, start=None) -> dict:
    """The result of a submission refused before grading (too large, a hard link...)."""
    return {"success": False, "log": f"its submission was refused before grading: {error}\n",
            "seconds": 0.0 if start is None else time.monotonic() - start, "phases": {}, "ran": None,
            "reason": str(error), "peak_kib": peak_kib()}


def peak_kib() -> int:
    """How far this grading worker's memory has grown, at its largest, in
    KiB: its own peak (tools/grading/task.py's peak_resident_kib) beyond the
    memory it was forked with (its parent's pages, which a child's resident
    memory counts although it shares them: _Worker.started_kib). 0 in a
    process that is not a grading worker (the grading process refusing a
    submission before any worker has it): what it holds is not a worker's."""
    from .task import _Worker, peak_resident_kib

    if _Worker.root is None:
        return 0
    return max(0, peak_resident_kib() - _Worker.started_kib)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "unknown"


class SubmissionTimeout(BaseException):
    """A submission's deadline (a BaseException: nbgrader's own handlers of
    Exception must not swallow it and carry on)."""


def grade_with_deadline(seconds: float | None, *args, **kwargs):
    """grade_in_private_course, given up after ``seconds`` (SIGALRM in the
    worker: a step that blocks or loops costs this submission only; None:
    no alarm, in a thread that cannot set one)."""
    import signal

    if seconds is None:
        return grade_in_private_course(*args, **kwargs)

    def give_up(signum, frame):
        raise SubmissionTimeout(f"grading did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, give_up)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return grade_in_private_course(*args, **kwargs)
    except SubmissionTimeout as error:
        return {"success": False, "log": f"{error}\n", "seconds": seconds, "phases": {}, "ran": None,
                "reason": str(error), "peak_kib": peak_kib()}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- the single writer ------------------------------------------------------


def merge_results(layout: Layout, private: Path, assignment: str, student: str):
    """Copy one graded submission from its private course into the course:
    its autograded/ and feedback/ are copied first (next to where they go),
    then what autograde writes to the gradebook is committed, and only then
    do the copies take the old folders' places. A copy that fails (a graded
    folder larger than a submission may leave) leaves the gradebook and the
    old folders as they were."""
    from nbgrader.api import Gradebook

    from ..nbgrader_patches import needs_manual_grade

    staged = []
    try:
        for kind in ("autograded", "feedback"):
            new = private / getattr(layout, kind) / student / assignment
            if new.is_dir():
                staged.append((stage_copy(new, layout.folder(kind, student, assignment)),
                               layout.folder(kind, student, assignment)))
        with Gradebook(f"sqlite:///{private / 'gradebook.db'}") as src, Gradebook(layout.db_url) as dst:
            graded = src.find_submission(assignment, student)
            person = graded.student
            dst.update_or_create_student(
                student, first_name=person.first_name, last_name=person.last_name,
                email=person.email, lms_user_id=person.lms_user_id,
            )
            if graded.timestamp is not None:
                dst.update_or_create_submission(assignment, student, timestamp=graded.timestamp)
            else:
                dst.update_or_create_submission(assignment, student)
            for notebook in graded.notebooks:
                target = dst.find_submission_notebook(notebook.name, assignment, student)
                target.late_submission_penalty = notebook.late_submission_penalty
                for grade in notebook.grades:
                    row = dst.find_grade(grade.name, notebook.name, assignment, student)
                    row.auto_score = grade.auto_score
                    # nbgrader's rule (SaveAutoGrades), with the manual score as it is now.
                    row.needs_manual_grade = needs_manual_grade(row.manual_score, grade.auto_score)
                for comment in notebook.comments:
                    row = dst.find_comment(comment.name, notebook.name, assignment, student)
                    row.auto_comment = comment.auto_comment
            dst.db.commit()
            score, max_score = graded.score, graded.max_score
    except BaseException:
        for copy, _ in staged:
            _rmtree(copy)
        raise
    for copy, old in staged:
        _rmtree(old)
        copy.rename(old)
    return score, max_score


def stage_copy(new: Path, old: Path) -> Path:
    """A copy of ``new`` (folders and regular files only: copy_regular) next
    to ``old``, ready to take its place."""
    old.parent.mkdir(parents=True, exist_ok=True)
    staging = old.parent / f".{old.name}.new"
    _rmtree(staging)
    try:
        copy_regular(new, staging)
    except BaseException:
        _rmtree(staging)
        raise
    return staging


def _rmtree(path: Path):
    """Remove a folder that a submission's code may have written to (a
    private course, a graded folder): no link followed, no recursion
    (tools/sandbox/bubblewrap.py's remove_tree)."""
    from ..sandbox.bubblewrap import remove_tree

    remove_tree(path)


def export_grades(settings: CourseSettings):
    """grades.csv in the course folder: nbgrader's CSV export of the gradebook."""
    from nbgrader.api import Gradebook
    from ..lateness import LateCsvExport  # nbgrader's columns, and how late (seconds_late)

    layout = settings.layout
    plugin = LateCsvExport(config=settings.config)
    plugin.to = str(layout.root / "grades.csv")
    with Gradebook(layout.db_url) as gb:
        plugin.export(gb)
    return layout.root / "grades.csv"


# make grade's exit status (``grade``'s result), which the last line of its output says in words.
GRADED_CLEAN = 0  # every submission graded, none flagged
NEEDS_A_LOOK = 1  # some submission NOT GRADED, or flagged in integrity.csv (instructor/integrity.md)
SELF_CHECK_FAILED = 3  # the instructor's solution lost points here (tools/grading/self_check.py): nobody was graded
SCHEDULER_GONE = 4  # the Dask scheduler went away mid-run: what was merged is kept, the rest is not graded


# Where each run's log is kept, in the course folder next to grades.csv and integrity.csv: <run id>.log.
LOG_FOLDER = "grading-logs"


class Tee(io.TextIOBase):
    """What make grade prints, written to its output and to the run's log."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


def settings_line(settings: CourseSettings) -> str:
    """The settings a run graded with, as its log records them."""
    seed = "a fresh one" if settings.verify_seed is None else settings.verify_seed
    return (f"settings of {settings.root / CONFIG_FILE}: cell {settings.cell_seconds:g} s, notebook "
            f"{settings.notebook_seconds:g} s, {settings.cpu_seconds} CPU s and {settings.memory_bytes} bytes per "
            f"process; sandbox {on(settings.sandbox)}, warm templates {on(settings.warm)}, "
            f"verification {on(settings.verify)} (seed: {seed})")


def on(switch: bool) -> str:
    return "on" if switch else "off"


def grade(course: Path, assignments=(), jobs=None, out=sys.stdout, scheduler=None, force=False):
    """Grade a course; return make grade's exit status: GRADED_CLEAN,
    NEEDS_A_LOOK or SELF_CHECK_FAILED. Everything it prints is also kept in
    the course folder's grading-logs/<run id>.log, after a line of the
    settings it graded with; integrity.csv names the same run id. A
    submission graded from exactly what it would be graded from now is
    skipped (tools/grading/graded_from.py), unless ``force``."""
    from ..verification.run import new_run_id

    settings = CourseSettings.read(course)  # the course's settings, read once for the whole run
    run_id = new_run_id()
    logs = settings.root / LOG_FOLDER
    logs.mkdir(exist_ok=True)
    log_path = logs / f"{run_id}.log"
    with open(log_path, "x", encoding="utf-8", errors="backslashreplace") as log:
        command = ["python -m tools.grading", *assignments, "--course", str(settings.root),
                   *(["--jobs", str(jobs)] if jobs else []), *(["--scheduler", scheduler] if scheduler else []),
                   *(["--all"] if force else [])]
        log.write(f"make grade, run {run_id}: {' '.join(command)}\n{settings_line(settings)}\n")
        log.flush()
        tee = Tee(out, log)
        print(f"run {run_id}; what follows is kept in {log_path}", file=tee, flush=True)
        return grade_with(settings, run_id, assignments, jobs, tee, scheduler, force)


def grade_with(settings: CourseSettings, run_id: str, assignments, jobs, out, scheduler=None, force=False):
    """grade(), with the course's settings and the run's id."""
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    # nbgrader's gradebook code trips SQLAlchemy 2's warnings; they say nothing about the grades.
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    from ..nbgrader_patches import gradebook_engines_reused, metadata_schema_checked_once

    metadata_schema_checked_once()  # (the workers are forked from this process)
    gradebook_engines_reused()
    # The template and every worker import what the course's assignments need (PyTorch if any uses it).
    from ..sandbox import warm

    preload = tuple(warm.preload_for(*settings.source_folder.glob("*/*.ipynb")))
    staging = Path(tempfile.mkdtemp(prefix="nbgrader-grade-"))
    try:
        return grade_in(settings, staging, preload, assignments, jobs, out, scheduler, run_id, force)
    finally:
        try:
            _rmtree(staging)
        except OSError as error:
            print(f"(could not remove the run's folder {staging}: {error})", file=out, flush=True)


def grade_in(settings: CourseSettings, staging: Path, preload, assignments, jobs, out, scheduler=None, run_id="",
             force=False):
    """grade(), with the run's staging folder. ``scheduler``: None (a local
    pool of ``jobs`` processes), "local" (a local Dask cluster of ``jobs``
    worker processes) or a Dask scheduler's address (tools/grading/cluster.py).
    ``force``: grade the unchanged submissions too."""
    from . import graded_from

    layout = settings.layout
    todo = layout.submissions(assignments)
    jobs = max(1, int(jobs or default_jobs()))
    if not todo:
        wanted = " or ".join(assignments) or "any assignment"
        print(f"nothing to grade: no submission of {wanted} under "
              f"{layout.root / layout.submitted}/<student>/<assignment>/", file=out)
        return GRADED_CLEAN
    record_assignments(layout, sorted({a for a, _ in todo}))
    # What each submission would be graded from now; those merged from exactly that are skipped.
    todo, skipped, keys = graded_from.split(settings, todo, force)
    if skipped:
        print(f"{len(skipped)} submission(s) unchanged since they were graded, skipped (their results stay as they "
              f"are; make grade FORCE=1 grades them again)", file=out, flush=True)
    skipped_flagged = graded_from.flagged(layout.root, skipped)
    if not todo:  # (grades.csv still exported: a manual grade given since shows in it)
        print(f"grades exported to {export_grades(settings)}", file=out, flush=True)
        return closing_line(len(skipped), 0, skipped_flagged, out)
    print(f"grading {len(todo)} submission(s) in {layout.root} with {jobs} worker(s)", file=out, flush=True)
    from .self_check import SelfCheck, error_heads, grader_failure, own_modules, release_files, test_cells

    try:  # the instructor's solution of each assignment, graded first as a student's
        check = SelfCheck.prepare(layout, todo, staging)
    except RuntimeError as error:
        print(f"NOBODY GRADED: the self-check's reference submissions cannot be made: {error}", file=out, flush=True)
        return SELF_CHECK_FAILED
    # What the hidden tests of each assignment need of the grader: its test cells, the course's modules, the
    # release's files (self_check.grader_failure).
    graders_own = {a: (test_cells(layout.source_notebook(a)), own_modules(layout, a), release_files(layout, a))
                   for a in check.folders}

    failures = 0
    phases = {}  # seconds per phase, summed over submissions
    by_assignment = {}  # assignment -> (submissions, seconds per phase summed over them)
    verdicts = {}
    started = time.monotonic()
    snapshot = staging / "gradebook.db"
    snapshot_gradebook(layout, snapshot)
    verification = None
    if settings.verify:
        from ..verification.run import Verification

        # Each worker verifies the submission it has just graded (in a child
        # of the same template); what no worker verified is verified after
        # grading, as before.
        (staging / "verification").mkdir()
        verification = Verification.start(settings, todo, None, staging / "verification", out, alongside=True,
                                          run_id=run_id)
    # fork: the workers start with nbgrader already imported.
    import nbgrader.converters  # noqa: F401

    from ..sandbox import warm

    budget = settings.submission_seconds
    not_graded = {}  # (assignment, student) -> why
    merged = []  # (assignment, student) of every result merged this run
    peak = 0
    grew = (0, "")  # the most one submission made its worker's peak grow (KiB), and which

    from .. import lateness
    from ..verification.report import printable

    progress = Progress(len(todo))

    def finished(assignment, student, private, result):
        nonlocal failures, peak, grew
        progress.clear()
        peak = max(peak, result.get("peak_kib", 0))
        grew = max(grew, (result.get("grew_kib", 0), f"{assignment} {printable(student)}"))
        count, own = by_assignment.setdefault(assignment, [0, {}])
        by_assignment[assignment][0] = count + 1
        for name, seconds in result.get("phases", {}).items():
            phases[name] = phases.get(name, 0.0) + seconds
            own[name] = own.get(name, 0.0) + seconds
        try:
            heads = error_heads(private / layout.autograded / student / assignment
                                / layout.source_notebook(assignment).name)
            if result.get("ran") is not None:
                verdicts[assignment, student] = verdict = verification.judge(
                    assignment, student, result["ran"], private / "verification")
                for cell in verdict.cells:
                    cell.nbgrader_error = heads.get(cell.grade_id, "")
            if not result["success"]:
                raise NotGraded(result.get("reason") or last_line(result["log"]))
            why = grader_failure(heads, *graders_own[assignment])
            if why:  # not the student's 0: the instructor decides (instructor/integrity.md)
                raise NotGraded(f"a hidden test failed for a reason that is the grader's, not an answer's ({why}); "
                                f"the instructor's solution passed in this run: look at what the submission did")
            score, max_score = merge_results(layout, private, assignment, student)
            merged.append((assignment, student))
            late = lateness.summary(layout.db_url, assignment, student)
            print(f"  {assignment}  {printable(student)}: {score:g} / {max_score:g}  ({result['seconds']:.1f} s)"
                  f"{late}",
                  file=out, flush=True)
        except Exception as error:  # noqa: BLE001 - this submission only: the others are graded
            failures += 1
            why = str(error) if isinstance(error, NotGraded) else f"{type(error).__name__}: {error}"
            not_graded[assignment, student] = why
            verdicts.pop((assignment, student), None)
            log = result["log"] if isinstance(error, NotGraded) else traceback.format_exc()
            print(printable(f"  {assignment}  {student}: NOT GRADED ({why}); previous results kept "
                            f"({result.get('seconds', 0.0):.1f} s)\n{log[-3000:]}")
                  .replace("\\n", "\n"), file=out, flush=True)
        finally:
            try:
                _rmtree(private)
            except Exception as error:  # noqa: BLE001 - what is left is removed with the run's folder, or reported
                print(printable(f"  (could not remove {private}: {error})"), file=out, flush=True)
            progress.update(failures)

    held = []  # students' results that arrived before every reference had passed

    def concluded(covered) -> int:
        """integrity.csv's and causes.csv's rows of ``covered`` (what this run
        graded), then graded-from.csv's of what it merged; how many it flagged."""
        run = verification
        flagged = 0
        if run is not None:
            run.seconds = phases.get("verification", 0.0)
            done = list(verdicts.values())
            done += run.verify_each([key for key in covered if key not in verdicts and key not in not_graded], jobs)
            flagged = sum(1 for v in run.conclude(done, out, not_graded, covered=covered)
                          if v.flagged and not v.not_graded)
        else:
            from ..verification.report import forget_rows

            forget_rows(layout.root, covered, out)
        # (a submission NOT GRADED loses its record: graded again next time, whatever it was graded from before)
        graded_from.record(layout.root, {**{pair: keys.get(pair) for pair in merged},
                                         **{pair: None for pair in not_graded}}, run_id)
        return flagged

    def arrived(assignment, student, private, result):
        if not check.is_reference(assignment, student):
            if check.passed:
                finished(assignment, student, private, result)
            else:
                held.append((assignment, student, private, result))
            return
        stood_in = assignment in check.stand_ins
        try:
            verdict = None
            if result.get("ran") is not None:
                verdict = verification.judge(assignment, student, result["ran"], private / "verification")
            verifying = verification is not None and assignment in verification.prepared
            check.judge(layout, assignment, private, result, verdict, verifying)
        except Exception as error:  # noqa: BLE001 - the self-check fails, saying why
            check.problems[assignment] = f"judging it failed: {type(error).__name__}: {error}"
            check.lines.append(f"  {assignment}: FAILED: {check.problems[assignment]}")
        if stood_in:  # a student's submission too: written once every reference passed
            held.append((assignment, student, private, result))
        else:
            _rmtree(private)
        if check.passed:
            check.report(out)
            while held:
                finished(*held.pop(0))

    todo_now = check.todo + [key for key in todo if key not in check.todo]  # the references first

    def held_back(key) -> bool:
        """No student is graded before the self-check has passed: the references are graded alone, on
        workers no student's submission loads (a reference's cell time limit must not depend on what
        students' code does beside it), and a failed self-check costs no student's grading."""
        return not check.passed and not check.is_reference(*key)
    context = multiprocessing.get_context("fork")
    bundles = make_bundles(settings, sorted({a for a, _ in todo}), snapshot, preload, verification, budget)
    client = cluster = None
    if scheduler:
        from . import cluster as dask_run

        client, cluster = dask_run.open_cluster(scheduler, jobs, preload, settings.memory_bytes, out)
        progress.dashboard = getattr(client, "dashboard_link", "") if cluster is None else ""
    try:
        # One pass, unless a submission overruns its time and its worker must be stopped, or a reference fails.
        while not check.failed:
            # a stand-in failed: the reference, first
            todo_now = [key for key in check.pending() if key not in todo_now] + todo_now
            if not todo_now:
                break
            if client is not None:
                todo_now = dask_run.grade_with_dask(client, bundles, layout, staging, todo_now, arrived,
                                                    sources=check.sources, stop=lambda: check.failed, hold=held_back,
                                                    deadline=budget + dask_run.GRACE_SECONDS)
            else:
                todo_now = grade_with_pool(context, jobs, bundles, layout, staging, todo_now, budget, arrived,
                                           sources=check.sources, stop=lambda: check.failed, hold=held_back)
    except Exception as error:
        if client is None or not isinstance(error, dask_run.SchedulerGone):
            raise
        progress.close()
        if check.passed:  # what was merged gets its integrity.csv rows and is recorded: a new run skips it
            concluded([*merged, *not_graded])
            export_grades(settings)
        print(f"make grade: STOPPED: the Dask scheduler at {scheduler} went away ({error}); the {len(merged)} "
              f"submission(s) merged so far are in the gradebook and feedback/, {len(error.left)} were not "
              f"graded. Run make grade again once the cluster is back: it grades only those; exit status "
              f"{SCHEDULER_GONE}", file=out, flush=True)
        return SCHEDULER_GONE
    finally:
        if client is not None:
            dask_run.close_cluster(client, cluster)
    warm.close_kernel_template()
    if not check.passed:
        for _, _, private, _ in held:
            _rmtree(private)
        check.report(out)
        print(f"\nNOBODY GRADED: the instructor's solution did not earn full marks here, graded as a student's "
              f"submission is, so this grading environment cannot be trusted with the students' "
              f"({'; '.join(f'{a}: {why}' for a, why in sorted(check.problems.items()) if why)}). No student's "
              f"result was written: their grades in the gradebook, feedback, grades.csv and integrity.csv are as "
              f"they were. Fix the environment and run make grade again (instructor/grading.md, "
              f"\"When make grade grades nobody\").", file=out)
        print(f"make grade: NOBODY GRADED (self-check failed); exit status {SELF_CHECK_FAILED}", file=out, flush=True)
        return SELF_CHECK_FAILED
    progress.close()
    csv = export_grades(settings)
    elapsed = time.monotonic() - started
    print(f"graded {len(todo) - failures} of {len(todo)} in {elapsed:.1f} s; feedback in "
          f"{layout.root / layout.feedback}; grades exported to {csv}", file=out, flush=True)
    print("worker seconds per phase, all submissions: "
          + "; ".join(f"{name} {seconds:.1f}" for name, seconds in phases.items()), file=out, flush=True)
    if len(by_assignment) > 1:
        for assignment, (count, own) in sorted(by_assignment.items()):
            print(f"  {assignment} ({count} submissions): "
                  + "; ".join(f"{name} {seconds:.1f}" for name, seconds in own.items()), file=out, flush=True)
    print(f"largest worker: {peak / 1024:.0f} MiB of memory beyond what it was forked with"
          + (f"; the submission that grew a worker most: {grew[1]} (+{grew[0] / 1024:.0f} MiB)" if grew[1] else ""),
          file=out, flush=True)
    flagged = concluded(todo)
    return closing_line(len(todo) + len(skipped), failures, flagged + skipped_flagged, out)


def closing_line(total: int, not_graded: int, flagged: int, out) -> int:
    """The run's last line, and its exit status."""
    if not not_graded and not flagged:
        print(f"make grade: all {total} submission(s) graded, none flagged; exit status {GRADED_CLEAN}",
              file=out, flush=True)
        return GRADED_CLEAN
    print(f"make grade: ATTENTION: {not_graded} not graded, {flagged} flagged, of {total} submission(s): look at "
          f"them before you release any grade (above, integrity.csv, instructor/integrity.md); exit status "
          f"{NEEDS_A_LOOK}", file=out, flush=True)
    return NEEDS_A_LOOK


class NotGraded(Exception):
    pass


class Progress:
    """One line, rewritten in place on a terminal (stderr): submissions done
    of all, the rate, the time left at that rate, and how many were not
    graded; with a Dask scheduler, its dashboard's address. Off a terminal
    (a log, the tests) it writes nothing: the run's own lines say it all."""

    def __init__(self, total: int, stream=None, dashboard: str = ""):
        self.stream = sys.stderr if stream is None else stream
        self.total, self.done, self.dashboard = total, 0, dashboard
        self.started = time.monotonic()
        self.shown = False
        self.on = getattr(self.stream, "isatty", lambda: False)()

    def line(self, failed: int) -> str:
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta = "?" if left != left else (f"{left / 60:.0f} min" if left >= 90 else f"{left:.0f} s")
        return (f"{self.done}/{self.total} graded, {rate * 60:.1f}/min, {eta} left, {failed} not graded"
                + (f"; dashboard {self.dashboard}" if self.dashboard else ""))

    def update(self, failed: int):
        self.done += 1
        if self.on:
            self.stream.write(self.line(failed))
            self.stream.flush()
            self.shown = True

    def clear(self):
        """Before a line of the run's own: the progress line makes way."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False

    def close(self):
        self.clear()


def make_bundles(settings: CourseSettings, assignments, snapshot: Path, preload, verification, budget) -> dict:
    """{assignment: AssignmentBundle}: what its submissions' tasks need (tools/grading/task.py)."""
    import fnmatch

    from .task import AssignmentBundle, checks_for_workers, read_regular

    layout = settings.layout
    config = (layout.root / CONFIG_FILE).read_bytes()
    gradebook = snapshot.read_bytes()
    folders = {kind: getattr(layout, kind) for kind in ("source", "submitted", "autograded", "feedback")}
    bundles = {}
    for assignment in assignments:
        source = layout.root / layout.source / assignment
        release = {}
        if source.is_dir():
            files, _ = read_regular(source, max_bytes=RELEASE_BYTES, max_files=RELEASE_FILES, trusted=True)
            release = {name: data for name, data in files.items()  # (shutil.ignore_patterns' rule)
                       if not any(fnmatch.fnmatch(part, pattern) for part in name.split("/")
                                  for pattern in layout.ignore)}
        prepared = None
        if verification is not None:
            prepared = verification.prepared.get(assignment)
        checks, inputs = checks_for_workers(prepared)
        bundles[assignment] = AssignmentBundle(
            assignment, config, release, gradebook, folders, tuple(layout.ignore), tuple(preload),
            settings.memory_bytes, budget, checks, inputs, run_config=settings.config, warm=settings.warm)
    return bundles


def submission_of(layout: Layout, assignment: str, student: str, source=None):
    """The Submission (tools/grading/task.py) of a submitted folder, read
    with read_regular's rules; or the result of its refusal."""
    from .task import Submission, read_regular

    try:
        files, left_out = read_regular(Path(source) if source else layout.folder("submitted", student, assignment))
    except (OSError, CopyRefused) as error:
        return refused(error)
    return Submission(assignment, student, files, tuple(left_out))


def unpacked(layout: Layout, staging: Path, assignment: str, student: str, result: dict):
    """A private folder under ``staging`` holding what a worker returned
    (task.unpack_result), and the result (a failure if what arrived was refused)."""
    from .task import unpack_result

    # (by a name of its own: "a--b" could be two students' assignment and id)
    private = Path(tempfile.mkdtemp(prefix="submission-", dir=staging))
    folders = {kind: getattr(layout, kind) for kind in ("source", "submitted", "autograded", "feedback")}
    try:
        unpack_result(result, private, folders, assignment, student)
    except (OSError, CopyRefused) as error:
        result = {**result, "success": False, "reason": f"what its worker returned was refused: {error}",
                  "ran": None}
    result.pop("files", None)
    return private, result


def grade_with_pool(context, jobs, bundles, layout, staging, todo, budget, finished, sources=None,
                    stop=lambda: False, hold=lambda key: False):
    """Grade ``todo`` with ``jobs`` local worker processes, each running
    tools/grading/task.py's grade_task; return the submissions still to
    grade if a worker had to be stopped (one that ran past ``budget`` and a
    grace period despite its own deadline), else []. ``sources``:
    {(assignment, student): folder} of submissions not in the course's
    submitted folder. Once ``stop()`` is true, the rest is abandoned. At
    most twice ``jobs`` submissions are read into memory at a time. A key
    for which ``hold(key)`` is true waits; if only such keys are left, they
    are returned."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from .task import grade_task

    some = next(iter(bundles.values()))
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_local_worker,
                               initargs=(some.preload, some.memory_bytes, str(staging)))
    futures, running_since = {}, {}
    waiting = list(todo)

    def submit_more():
        while len(futures) < 2 * jobs and (key := next_unheld(waiting, hold)) is not None:
            assignment, student = key
            submission = submission_of(layout, assignment, student, (sources or {}).get((assignment, student)))
            if isinstance(submission, dict):  # refused before grading
                finished(assignment, student, Path(tempfile.mkdtemp(prefix="submission-", dir=staging)), submission)
                continue
            futures[pool.submit(grade_task, bundles[assignment], submission)] = (assignment, student)

    try:
        submit_more()
        while futures:
            done, _ = wait(set(futures), timeout=5, return_when=FIRST_COMPLETED)
            for future in done:
                assignment, student = futures.pop(future)
                try:
                    result = future.result()
                except Exception:  # noqa: BLE001 - a worker that died
                    result = {"success": False, "log": traceback.format_exc(), "seconds": 0.0,
                              "reason": "its grading worker died"}
                finished(assignment, student, *unpacked(layout, staging, assignment, student, result))
            if stop():
                for future in futures:
                    future.cancel()
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.kill()
                return []
            now = time.monotonic()
            for future in futures:
                if future.running():
                    running_since.setdefault(future, now)
            stuck = [f for f in futures if now - running_since.get(f, now) > budget + 60]
            if stuck:
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.kill()
                for future in stuck:
                    assignment, student = futures.pop(future)
                    finished(assignment, student, Path(tempfile.mkdtemp(prefix="submission-", dir=staging)), {
                        "success": False, "log": "", "seconds": now - running_since[future],
                        "reason": f"its worker did not answer within {budget + 60:g} s and was stopped"})
                return [futures[f] for f in futures] + waiting
            submit_more()
        return waiting  # (empty, or only what ``hold`` keeps back)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def next_unheld(waiting: list, hold):
    """Take from ``waiting`` the first key ``hold`` does not keep back, or None."""
    for i, key in enumerate(waiting):
        if not hold(key):
            return waiting.pop(i)
    return None


def _start_local_worker(preload, memory_bytes, base):
    """A local pool's initializer: the worker's folder under the run's
    folder (removed with it), and its warm template (task.ready_worker)."""
    from .task import ready_worker

    ready_worker(preload, memory_bytes, base=base, wait=False)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.grading", description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignments to grade (default: all with submissions)")
    parser.add_argument("--course", default=str(ROOT), help="the course folder (default: the repository)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: number of cores)")
    parser.add_argument("--all", action="store_true",
                        help="grade every submission again, also those unchanged since they were graded "
                             "(make grade FORCE=1)")
    parser.add_argument("--scheduler", default=os.environ.get("GRADING_SCHEDULER") or None,
                        help="grade on Dask: 'local' (a cluster of --jobs processes here) or a scheduler's "
                             "address, tcp://host:8786 (instructor/cluster.md); default: a local process pool")
    args = parser.parse_args(argv)
    return grade(Path(args.course), args.assignments, args.jobs, scheduler=args.scheduler, force=args.all)

