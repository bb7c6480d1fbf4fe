"""Grade every submission of a course: autograde, feedback, verification, grades.csv.

Usage: ``python -m tools.grading [ASSIGNMENT ...] [--course FOLDER] [--jobs N]``
(what ``make grade`` runs). Without an assignment, every assignment that has
submissions under ``submitted/<student>/<assignment>/`` is graded. The course
folder (default: the repository) holds ``nbgrader_config.py``, the gradebook
and nbgrader's folders.

CONTRIBUTING.md, "How grading works", describes the whole run step by step;
this module is its driver: ``grade`` (settings, template, verification),
``grade_in_private_course`` (one submission, in a worker), ``merge_results``
(the single writer of the real gradebook) and ``export_grades``.

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
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
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

# What one submission may bring into grading (its submitted folder) and what
# one graded submission may leave in autograded/ and feedback/.
COPY_BYTES = 64 * 1024**2
COPY_FILES = 200


class CopyRefused(RuntimeError):
    """A folder holds more than a submission may (COPY_BYTES, COPY_FILES)."""


def copy_regular(source: Path, target: Path, *, max_bytes=COPY_BYTES, max_files=COPY_FILES) -> list:
    """Copy the folders and regular files under ``source`` to ``target``,
    opening each without following a link, and return what was left out
    (links, devices, pipes, sockets: their names only; nothing of them is
    opened, read or changed). Raises CopyRefused past ``max_bytes`` or
    ``max_files``, and for a hard link (a file with more than one name could
    be the solution's or another student's): a submission's files come from
    its student."""
    import stat

    left_out = []
    budget = {"bytes": max_bytes, "files": max_files}
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC

    def copy_folder(dir_fd, into: Path):
        into.mkdir(parents=True, exist_ok=True)
        with os.scandir(dir_fd) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            budget["files"] -= 1
            if budget["files"] < 0:
                raise CopyRefused(f"{source} holds more than {max_files} files")
            try:
                fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError:  # a link (ELOOP), or gone
                left_out.append(name)
                continue
            try:
                info = os.fstat(fd)
                if stat.S_ISDIR(info.st_mode):
                    copy_folder(fd, into / name)
                elif stat.S_ISREG(info.st_mode):
                    if info.st_nlink > 1:  # another name for a file that may not be the student's
                        raise CopyRefused(f"{name} in {source} is a hard link ({info.st_nlink} names for one "
                                          "file): a submission's files must be its own")
                    budget["bytes"] -= info.st_size
                    if budget["bytes"] < 0:
                        raise CopyRefused(f"{source} holds more than {max_bytes} bytes")
                    copy_file(fd, into / name, info.st_size)
                else:
                    left_out.append(name)
            finally:
                os.close(fd)

    def copy_file(fd, path: Path, size: int):
        os.set_blocking(fd, True)
        left = size
        with open(path, "xb") as out:
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)

    top = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        copy_folder(top, Path(target))
    finally:
        os.close(top)
    return left_out


# --- the workers ------------------------------------------------------------

@dataclass(frozen=True)
class WorkerRun:
    """What every grading worker of one run is handed when it starts
    (``start_worker``): the modules a template it starts itself imports,
    the run's verification (tools/verification/run.py's ``Verification``) or None,
    and the course's configuration as the run read it (``CourseSettings.config``:
    a worker copies it for each submission instead of reading nbgrader_config.py
    again; None: it reads the private course's copy)."""

    preload: tuple = ("torch",)
    verification: object = None
    config: object = None


# This worker's run, set by start_worker when the pool starts the process.
_WORKER = WorkerRun()
# The folder whose gradebooks this worker writes without waiting for the disk.
_UNSYNCED = {}


def start_worker(run: WorkerRun):
    """The pool's initializer: each worker process keeps its run."""
    global _WORKER
    _WORKER = run


def grade_in_private_course(layout: Layout, assignment: str, student: str, snapshot: str, workdir: str,
                            submitted: str | None = None):
    """Autograde one submission and generate its feedback in a private copy of
    the course under ``workdir``. Runs in a worker process. Returns a dict:
    success, log, seconds. ``submitted``: the submission's folder, if not the
    course's (the self-check's reference: tools/grading/self_check.py)."""
    start = time.monotonic()
    private = Path(workdir)
    from ..sandbox import warm
    from ..sandbox.kernel import PHASES

    # Every private course of this run is under the staging folder, which the
    # run's shared template covers (tools/sandbox/warm.py); if it is gone, this worker
    # starts its own, importing what the course needs.
    warm.set_kernel_roots([private.parent], base=private.parent)
    if _UNSYNCED.get("folder") != private.parent:  # the private gradebooks of this run: copies, merged later
        from ..nbgrader_patches import unsynced_gradebooks

        unsynced_gradebooks(private.parent)
        _UNSYNCED["folder"] = private.parent
    if not warm.kernel_template_running():
        warm.set_kernel_preload(list(_WORKER.preload))
    before = dict(PHASES)
    shutil.copy(layout.root / CONFIG_FILE, private / CONFIG_FILE)
    source = layout.root / layout.source / assignment
    if source.is_dir():  # autograde copies its other files (data, helpers) next to the notebook
        shutil.copytree(source, private / layout.source / assignment, ignore=shutil.ignore_patterns(*layout.ignore))
    shutil.copy(snapshot, private / "gradebook.db")
    log = io.StringIO()
    try:
        # What the student submitted: folders and regular files only, bounded.
        left_out = copy_regular(Path(submitted) if submitted else layout.folder("submitted", student, assignment),
                                private / layout.submitted / student / assignment)
        # ... and no more than a submission may hold once decoded (tools/sandbox/limits.py).
        check_submission(private / layout.submitted / student / assignment)
    except (OSError, CopyRefused, SubmissionRefused) as error:
        return {"success": False, "log": f"its submission was refused before grading: {error}\n",
                "seconds": time.monotonic() - start, "phases": {}, "ran": None, "reason": str(error),
                "peak_kib": peak_kib()}
    if left_out:
        log.write(f"[WARNING] left out of grading (not a file or folder): {', '.join(left_out)}\n")

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
            if _WORKER.config is not None:  # the run's settings, read once (tools/course_settings.py)
                from nbgrader.coursedir import CourseDirectory

                coursedir = CourseDirectory(config=worker_config(_WORKER.config, private, db_url))
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
    verification = _WORKER.verification
    if verification is not None and assignment in verification.prepared:
        from ..verification.sandbox_run import run_checks_in_worker

        started = time.monotonic()
        notebook = private / layout.submitted / student / assignment / verification.prepared[assignment].notebook
        try:
            ran = run_checks_in_worker(verification.prepared[assignment], notebook, private / "verification",
                                       warm_template=verification.warm)
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


def peak_kib() -> int:
    """The largest this process's memory has been, in KiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "unknown"


class SubmissionTimeout(BaseException):
    """A submission's deadline (a BaseException: nbgrader's own handlers of
    Exception must not swallow it and carry on)."""


def grade_with_deadline(seconds: float, *args, **kwargs):
    """grade_in_private_course, given up after ``seconds`` (SIGALRM in the
    worker: a step that blocks or loops costs this submission only)."""
    import signal

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


def start_template(settings: CourseSettings, staging: Path, preload):
    """The warm template (tools/sandbox/warm.py) that every worker of this run forks
    its kernels and verifications from, started now, before anything else:
    it imports (PyTorch, ipykernel) while this process reads the course and
    prepares the verification. None if warm templates are off or cannot start
    here; each worker then starts its own, or none."""
    from ..sandbox import warm

    if not settings.warm:
        return None
    try:
        return warm.Template([staging], memory_bytes=settings.memory_bytes, base=staging, preload=preload,
                             wait=False)
    except Exception:  # noqa: BLE001 - (no sandbox here: grading says so)
        return None


# make grade's exit status (``grade``'s result), which the last line of its output says in words.
GRADED_CLEAN = 0  # every submission graded, none flagged
NEEDS_A_LOOK = 1  # some submission NOT GRADED, or flagged in integrity.csv (instructor/integrity.md)
SELF_CHECK_FAILED = 3  # the instructor's solution lost points here (tools/grading/self_check.py): nobody was graded


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


def grade(course: Path, assignments=(), jobs=None, out=sys.stdout):
    """Grade a course; return make grade's exit status: GRADED_CLEAN,
    NEEDS_A_LOOK or SELF_CHECK_FAILED. Everything it prints is also kept in
    the course folder's grading-logs/<run id>.log, after a line of the
    settings it graded with; integrity.csv names the same run id."""
    from ..verification.run import new_run_id

    settings = CourseSettings.read(course)  # the course's settings, read once for the whole run
    run_id = new_run_id()
    logs = settings.root / LOG_FOLDER
    logs.mkdir(exist_ok=True)
    log_path = logs / f"{run_id}.log"
    with open(log_path, "x", encoding="utf-8", errors="backslashreplace") as log:
        command = ["python -m tools.grading", *assignments, "--course", str(settings.root),
                   *(["--jobs", str(jobs)] if jobs else [])]
        log.write(f"make grade, run {run_id}: {' '.join(command)}\n{settings_line(settings)}\n")
        log.flush()
        tee = Tee(out, log)
        print(f"run {run_id}; what follows is kept in {log_path}", file=tee, flush=True)
        return grade_with(settings, run_id, assignments, jobs, tee)


def grade_with(settings: CourseSettings, run_id: str, assignments, jobs, out):
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
        template = start_template(settings, staging, preload)
        try:
            return grade_in(settings, staging, template, preload, assignments, jobs, out, run_id)
        finally:
            if template is not None:
                template.close()
    finally:
        try:
            _rmtree(staging)
        except OSError as error:
            print(f"(could not remove the run's folder {staging}: {error})", file=out, flush=True)


def grade_in(settings: CourseSettings, staging: Path, template, preload, assignments, jobs, out, run_id=""):
    """grade(), with the run's staging folder and its warm template (or None)."""
    layout = settings.layout
    todo = layout.submissions(assignments)
    jobs = max(1, int(jobs or default_jobs()))
    if not todo:
        wanted = " or ".join(assignments) or "any assignment"
        print(f"nothing to grade: no submission of {wanted} under "
              f"{layout.root / layout.submitted}/<student>/<assignment>/", file=out)
        return GRADED_CLEAN
    print(f"grading {len(todo)} submission(s) in {layout.root} with {jobs} worker(s)", file=out, flush=True)
    record_assignments(layout, sorted({a for a, _ in todo}))
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
    worker_run = WorkerRun(preload=preload, verification=verification, config=settings.config)
    # fork: the workers start with nbgrader already imported, and share the template.
    import nbgrader.converters  # noqa: F401

    from ..sandbox import warm

    if template is not None:
        try:
            template.wait_ready()
            warm.share_kernel_template(template)
        except warm.TemplateError as error:
            print(f"(no shared warm template: {error}; each worker starts its own)", file=out, flush=True)
    budget = settings.submission_seconds
    not_graded = {}  # (assignment, student) -> why
    peak = 0

    from .. import lateness
    from ..verification.report import printable

    def finished(assignment, student, private, result):
        nonlocal failures, peak
        peak = max(peak, result.get("peak_kib", 0))
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

    held = []  # students' results that arrived before every reference had passed

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
    context = multiprocessing.get_context("fork")
    # One pass, unless a submission overruns its time and its worker must be stopped, or a reference fails.
    while not check.failed:
        todo_now += [key for key in check.pending() if key not in todo_now]  # a stand-in failed: the reference
        if not todo_now:
            break
        todo_now = grade_with_pool(context, jobs, worker_run, layout, snapshot, staging, todo_now, budget, arrived,
                                   not_graded, out, sources=check.sources, stop=lambda: check.failed)
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
    print(f"largest worker: {peak / 1024:.0f} MiB of memory", file=out, flush=True)
    run = verification
    flagged = 0
    if run is not None:
        run.seconds = phases.get("verification", 0.0)
        done = list(verdicts.values())
        done += run.verify_each([key for key in todo if key not in verdicts and key not in not_graded], jobs)
        flagged = sum(1 for v in run.conclude(done, out, not_graded, covered=todo)
                      if v.flagged and not v.not_graded)
    else:
        from ..verification.report import forget_rows

        forget_rows(layout.root, todo, out)
    return closing_line(len(todo), failures, flagged, out)


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


def grade_with_pool(context, jobs, worker_run, layout, snapshot, staging, todo, budget, finished, not_graded, out,
                    sources=None, stop=lambda: False):
    """Grade ``todo`` with ``jobs`` workers; return the submissions still to
    grade if a worker had to be stopped (one that ran past ``budget`` and a
    grace period despite its own deadline), else []. ``sources``:
    {(assignment, student): folder} of submissions not in the course's
    submitted folder. Once ``stop()`` is true, the rest is abandoned."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=start_worker,
                               initargs=(worker_run,))
    futures, running_since = {}, {}
    try:
        for assignment, student in todo:
            # (by a name of its own: "a--b" could be two students' assignment and id)
            private = Path(tempfile.mkdtemp(prefix="submission-", dir=staging))
            source = (sources or {}).get((assignment, student))
            future = pool.submit(grade_with_deadline, budget, layout, assignment, student,
                                 str(snapshot), str(private), submitted=str(source) if source else None)
            futures[future] = (assignment, student, private)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=5, return_when=FIRST_COMPLETED)
            for future in done:
                assignment, student, private = futures[future]
                try:
                    result = future.result()
                except Exception:  # noqa: BLE001 - a worker that died
                    result = {"success": False, "log": traceback.format_exc(), "seconds": 0.0,
                              "reason": "its grading worker died"}
                finished(assignment, student, private, result)
            if stop():
                for future in pending:
                    future.cancel()
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.kill()
                return []
            now = time.monotonic()
            for future in pending:
                if future.running():
                    running_since.setdefault(future, now)
            stuck = [f for f in pending if now - running_since.get(f, now) > budget + 60]
            if stuck:
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.kill()
                for future in stuck:
                    assignment, student, private = futures[future]
                    finished(assignment, student, private, {
                        "success": False, "log": "", "seconds": now - running_since[future],
                        "reason": f"its worker did not answer within {budget + 60:g} s and was stopped"})
                rest = [futures[f][:2] for f in pending if f not in stuck]
                for future in pending:
                    if future not in stuck:
                        _rmtree(futures[future][2])
                return rest
        return []
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.grading", description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", help="assignments to grade (default: all with submissions)")
    parser.add_argument("--course", default=str(ROOT), help="the course folder (default: the repository)")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: number of cores)")
    args = parser.parse_args(argv)
    return grade(Path(args.course), args.assignments, args.jobs)

