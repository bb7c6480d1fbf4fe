"""make grade proves its own environment before it grades a student.

A grader whose environment is broken (its ``tools`` package not importable in
the sandbox, a file of the release missing, a kernel that cannot start) would
otherwise give every student 0 and report nothing. So each run of
``make grade`` (tools/grading/run.py) first grades, for each assignment it grades,
the instructor's solution as a submission of its own: the release that
``nbgrader generate_assignment`` makes from the course's source notebook, its
solution cells filled with the source's solutions, graded by the same worker
pool, sandbox, warm template, nbgrader Autograde and verification as every
student. It must earn full marks from nbgrader and from verification; if it
does not, no student's result is written, the run says which assignment,
which cell and the head of the error, and exits with ``SELF_CHECK_FAILED``.

The reference submissions go first into the pool; a student's result that
arrives before every reference has passed waits (its private course is kept)
and is written only once they have. It is never written if one fails.

This module also tells the grader's own failures from a student's
(``grader_failure``): a hidden test that stops at an import of the course's
own modules (``tools``, a module of the assignment's source folder) or at a
missing file of the release fails for a reason that is the grader's when the
reference passed in the same run, unless the submission itself broke it. Either
way it is not the student's 0: make grade records it as NOT GRADED, flagged
for the instructor (instructor/integrity.md), who decides.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# Who the reference submissions are, in the private courses of the run (never in the course's gradebook).
REFERENCE_STUDENT = "grader-self-check"
# The largest autograded notebook whose errors are read (a student's outputs are bounded by the kernel).
MAX_NOTEBOOK_BYTES = 50 * 1024**2
ERROR_HEAD_CHARS = 300

IMPORT_NAMES = (
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"cannot import name '[\w.]+' from '([\w.]+)'"),
    re.compile(r"import of ([\w.]+) halted"),
)
MISSING_FILE = re.compile(r"No such file or directory: '([^']+)'")


def reference_id(todo) -> str:
    """A student id for the references that no submission of ``todo`` has."""
    taken = {student for _, student in todo}
    name = REFERENCE_STUDENT
    while name in taken:
        name += "_"
    return name


def write_references(layout, names, folder: Path) -> dict:
    """{assignment: folder holding its reference submission}: for each of
    ``names``, the release nbgrader generates from the course's source (in a
    throw-away copy: the course's gradebook is not touched), its solution cells
    filled with the source's solutions, under ``folder``. Raises RuntimeError
    with nbgrader's log if a release cannot be generated."""
    import nbformat

    from ..assignments.answers import fill_release, solution_code
    from ..assignments.nbgrader_course import generate_in_process

    course = folder / "course"
    (course / layout.source).mkdir(parents=True)
    shutil.copy(layout.root / "nbgrader_config.py", course / "nbgrader_config.py")
    for name in names:
        shutil.copytree(layout.root / layout.source / name, course / layout.source / name,
                        ignore=shutil.ignore_patterns(*layout.ignore))
    release = folder / "release"
    generate_in_process(course, names, release_directory=release, throwaway=True,
                        db_url=f"sqlite:///{course / 'gradebook.db'}")
    found = {}
    for name in names:
        notebook = layout.source_notebook(name).name
        nb = fill_release(release / name / notebook, solution_code(layout.source_notebook(name)))
        target = folder / "submitted" / name
        target.mkdir(parents=True)
        nbformat.write(nb, target / notebook)
        found[name] = target
    return found


def error_heads(notebook: Path) -> dict:
    """{grade_id: "Name: message"} of the graded code cells of an autograded
    notebook whose outputs hold an error (the first error of each), read
    without following a link and bounded in size; {} if it cannot be read."""
    import os

    from ..verification.report import printable

    try:
        fd = os.open(notebook, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_NOTEBOOK_BYTES + 1)
        if len(data) > MAX_NOTEBOOK_BYTES:
            return {}
        nb = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return {}
    heads = {}
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        meta = meta.get("nbgrader") if isinstance(meta, dict) else None
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(grade_id, str) or grade_id in heads:
            continue
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            if isinstance(output, dict) and output.get("output_type") == "error":
                head = f"{output.get('ename', '?')}: {output.get('evalue', '')}"
                heads[grade_id] = printable(head)[:ERROR_HEAD_CHARS]
                break
    return heads


def own_modules(layout, assignment: str) -> set:
    """The modules a hidden test of ``assignment`` imports from the course
    itself: the course's ``tools`` package and the modules and packages of the
    assignment's source folder (copied next to each submission)."""
    names = {"tools"}
    folder = layout.root / layout.source / assignment
    if folder.is_dir():
        for path in folder.iterdir():
            if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").is_file()):
                names.add(path.stem)
    return names


def release_files(layout, assignment: str) -> set:
    """The names of the files nbgrader copies next to each submission (the
    source folder's files, but the notebook and what the course ignores)."""
    import fnmatch

    folder = layout.root / layout.source / assignment
    names = set()
    if folder.is_dir():
        for path in folder.rglob("*"):
            parts = path.relative_to(folder).parts
            if any(fnmatch.fnmatch(part, pattern) for part in parts for pattern in layout.ignore):
                continue
            if path.is_file() and path.suffix != ".ipynb":
                names.add(path.name)
    return names


def test_cells(source_notebook: Path) -> list:
    """The grade_ids of the graded test cells of a source notebook, in order."""
    import nbformat

    nb = nbformat.read(source_notebook, as_version=4)
    return [cell.metadata["nbgrader"]["grade_id"] for cell in nb.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")
            and not cell.metadata["nbgrader"].get("solution")]


def grader_failure(heads: dict, tests, modules, files) -> str:
    """The first graded test cell (of ``tests``) whose error is the grader's:
    an import of one of ``modules`` (or a module inside them) that failed, or a
    file of the release (``files``) that is missing. "" if none is."""
    for grade_id in tests:
        head = heads.get(grade_id, "")
        name, _, message = head.partition(": ")
        if name in ("ModuleNotFoundError", "ImportError"):
            for pattern in IMPORT_NAMES:
                match = pattern.search(message)
                if match and match.group(1).split(".")[0] in modules:
                    return f"cell {grade_id}: {head}"
        if name == "FileNotFoundError":
            match = MISSING_FILE.search(message)
            if match and Path(match.group(1)).name in files:
                return f"cell {grade_id}: {head}"
    return ""


# What nbgrader brings next to a collected notebook; a stand-in's folder holds nothing else.
ALONGSIDE = ("timestamp.txt", "submission_secret.txt")


def same_as_reference(submitted: Path, reference: Path) -> bool:
    """Whether a submitted folder holds the reference's notebook itself (the
    same JSON) and nothing but ALONGSIDE besides: grading it is grading the
    reference. Links and anything but regular files say no; nothing is followed."""
    import os
    import stat

    [notebook] = reference.glob("*.ipynb")
    expected = notebook.read_bytes()
    try:
        with os.scandir(submitted) as entries:
            found = {entry.name: entry.stat(follow_symlinks=False) for entry in entries}
        if set(found) - set(ALONGSIDE) != {notebook.name}:
            return False
        if not all(stat.S_ISREG(info.st_mode) for info in found.values()):
            return False
        if found[notebook.name].st_size > 2 * len(expected) + 4096:
            return False
        fd = os.open(submitted / notebook.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            data = f.read(2 * len(expected) + 4097)
        return json.loads(data) == json.loads(expected)
    except (OSError, ValueError, RecursionError):
        return False


@dataclass
class SelfCheck:
    """The run's reference submissions and how each fared: ``problems`` is
    {assignment: why it failed, or "" if it passed}. A student's submission
    identical to an assignment's reference (``same_as_reference``) stands in
    for it (``stand_ins``): it is graded once, and counts as both."""

    student: str
    folders: dict  # {assignment: its reference submission's folder}
    stand_ins: dict = field(default_factory=dict)  # {assignment: the student whose submission stands in}
    fallen: dict = field(default_factory=dict)  # {assignment: the student whose stand-in failed}: graded itself
    problems: dict = field(default_factory=dict)
    lines: list = field(default_factory=list)

    @classmethod
    def prepare(cls, layout, todo, staging: Path):
        """Write the references of every assignment of ``todo`` under
        ``staging``, and find the submissions that can stand in for them."""
        names = sorted({assignment for assignment, _ in todo})
        folder = Path(tempfile.mkdtemp(prefix="self-check-", dir=staging))
        check = cls(reference_id(todo), write_references(layout, names, folder))
        for assignment, student in todo:
            if assignment not in check.stand_ins and same_as_reference(
                    layout.folder("submitted", student, assignment), check.folders[assignment]):
                check.stand_ins[assignment] = student
        return check

    def who(self, assignment: str) -> str:
        """The student id under which the reference of ``assignment`` is graded."""
        return self.stand_ins.get(assignment, self.student)

    @property
    def sources(self) -> dict:
        return {(assignment, self.student): folder for assignment, folder in self.folders.items()
                if assignment not in self.stand_ins}

    @property
    def todo(self):
        return [(assignment, self.who(assignment)) for assignment in sorted(self.folders)]

    def pending(self) -> list:
        """The references still to grade because their stand-in failed."""
        return [(assignment, self.student) for assignment in sorted(self.fallen) if assignment not in self.problems]

    def is_reference(self, assignment: str, student: str) -> bool:
        return assignment in self.folders and student == self.who(assignment)

    @property
    def passed(self) -> bool:
        return len(self.problems) == len(self.folders) and not any(self.problems.values())

    @property
    def failed(self) -> bool:
        return any(self.problems.values())

    def judge(self, layout, assignment: str, private: Path, result: dict, verdict=None, verifying=False) -> str:
        """Whether the reference of ``assignment``, graded in ``private``,
        earned full marks from nbgrader and, if ``verifying``, from
        verification (``verdict``); records and returns why not ("" if it did)."""
        problem = self._problem(layout, assignment, private, result, verdict)
        if not problem and verifying and verdict is None:
            from .run import last_line

            problem = f"its verification did not run: {last_line(result.get('log', ''))}"
        seconds = f"{result.get('seconds', 0.0):.1f} s"
        if problem and assignment in self.stand_ins:
            # A student's copy of the reference may fail for what the student put beside it (a timestamp past
            # the bounds, say): that proves nothing about the grader, and must not stop anyone's grading. The
            # reference itself is graded instead (``pending``); the student's result is the student's own.
            student = self.stand_ins.pop(assignment)
            self.fallen[assignment] = student
            self.lines.append(f"  {assignment}: {student}'s identical submission could not stand in ({problem}; "
                              f"{seconds}): the reference itself is graded")
            return ""
        self.problems[assignment] = problem
        who = f"; {self.stand_ins[assignment]}'s identical submission stood in" if assignment in self.stand_ins else ""
        self.lines.append(f"  {assignment}: {'FAILED: ' + problem if problem else 'full marks'} ({seconds}{who})")
        return problem

    def _problem(self, layout, assignment, private, result, verdict) -> str:
        from nbgrader.api import Gradebook, MissingEntry

        if not result.get("success"):
            return f"grading it failed: {result.get('reason') or 'unknown'}"
        student = self.who(assignment)
        notebook = Path(layout.source_notebook(assignment).name).stem
        heads = error_heads(private / layout.autograded / student / assignment / f"{notebook}.ipynb")
        lost = []
        try:
            with Gradebook(f"sqlite:///{private / 'gradebook.db'}") as gb:
                graded = gb.find_submission_notebook(notebook, assignment, student)
                for grade in graded.grades:
                    if grade.auto_score is not None and grade.auto_score < grade.max_score - 1e-9:
                        head = heads.get(grade.name, "no error shown")
                        lost.append(f"cell {grade.name} {grade.auto_score:g} / {grade.max_score:g} ({head})")
        except MissingEntry:
            return "nbgrader recorded no grade for it"
        if lost:
            return "nbgrader took points from the instructor's solution: " + "; ".join(lost)
        if verdict is not None:
            short = [f"cell {c.grade_id} ({c.why[:ERROR_HEAD_CHARS]})" for c in verdict.cells
                     if c.verified < c.points - 1e-9]
            if verdict.problem or short:
                return ("verification outside the notebook does not confirm the instructor's solution: "
                        + "; ".join(([verdict.problem[:ERROR_HEAD_CHARS]] if verdict.problem else []) + short))
        return ""

    def report(self, out):
        print(f"self-check: the instructor's solution of each assignment, graded as a student's "
              f"({'passed' if self.passed else 'FAILED'}):", file=out)
        for line in self.lines:
            print(line, file=out)
        out.flush()
