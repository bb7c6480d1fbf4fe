"""One submission's checks run in the sandbox, next to its code
(tools/verification/harness.py): in a child of a warm template
(tools/sandbox/warm.py) or a fresh sandboxed Python. Nothing is judged here:
the results are left, bounded, in the submission's folder (``ChecksRan``)."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..paths import BIN
from ..sandbox.limits import tidy_results
from .notebooks import student_cells
from .specs import Assignment, program

HARNESS = Path(__file__).resolve().parent / "harness.py"


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


def remove_quietly(folder: Path):
    """Remove a verification's folder (the harness wrote there), or leave it
    to the run's clean-up if that fails."""
    from ..sandbox.bubblewrap import remove_tree

    try:
        remove_tree(folder)
    except OSError:
        pass
