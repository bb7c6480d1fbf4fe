"""An assignment's checks for one verification run: its spec
(``solutions/<assignment>/checks/verification.py``) loaded and matched to the
notebook's test cells, inputs drawn from the run's seed (``prepare``), and the
program the harness runs for one submission (``program``)."""

from __future__ import annotations

import importlib.util
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..course_settings import VerificationLimits
from ..paths import verification_spec
from .notebooks import source_steps

SPEC_PACKAGE = "course_checks"  # the name under which each assignment's verification.py is loaded


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

    @property
    def max_score(self):
        return sum(self.points.values())


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
    return Assignment(assignment, source_notebook.name, steps, points, solution_ids, plan.checks, inputs, limits)


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
