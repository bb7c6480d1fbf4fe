"""A verification run: its seed, every assignment's checks prepared, the
submissions verified (in make grade's workers, or here, one warm template per
thread), the gradebook's scores compared and integrity.csv written
(``Verification``; ``verify`` runs one on its own)."""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..course_settings import CourseSettings, default_jobs
from .judging import Verdict, judge_checks, unverified
from .report import CSV_NAME, printable, report, write_csv
from .sandbox_run import ChecksRan, remove_quietly, run_checks_in_sandbox
from .specs import Assignment, prepare


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
        report(verdicts, path, self.seconds, out)
        return verdicts


def verify_submission(assignment: Assignment, notebook: Path, workdir: Path, template=None) -> Verdict:
    """Run one submission's checks in the sandbox and judge them here: in a
    child of ``template`` (tools/sandbox/warm.py) if given, else in a fresh sandboxed
    Python."""
    return judge_checks(assignment, run_checks_in_sandbox(assignment, notebook, workdir, template), workdir)


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
