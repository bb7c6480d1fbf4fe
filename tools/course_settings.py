"""A course folder as grading sees it: where it keeps things, and its limits.

``CourseSettings.read(folder)`` reads the folder's ``nbgrader_config.py`` once;
``make grade`` (tools/grading/run.py) and verification (tools/verification/verify.py) receive the
object and pass it down, so every part of one run works with the same numbers,
those of the course being graded (not of the repository). A setting the file
leaves out takes the default below, which the kernel's classes
(tools/sandbox/kernel.py) use too: each default is written once.

The switches an instructor may flip for one run from the environment
(``GRADING_SANDBOX``, ``GRADING_WARM``, ``GRADING_VERIFY``, ``VERIFY_SEED``:
``Switches`` says what each does) are read here and nowhere else: the course's
nbgrader_config.py turns them into its settings (``Switches.apply``), so they
arrive with the rest of the settings, read once per run, and a grading worker
is handed them with the configuration instead of looking at its environment.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

CONFIG_FILE = "nbgrader_config.py"

# The defaults of what nbgrader_config.py may set; the classes that use them in
# the notebook's kernel (tools/sandbox/kernel.py) take them from here.
KERNEL_MEMORY_BYTES = 2 * 1024**3  # c.SandboxedKernelManager.memory_bytes: address space per process
KERNEL_CPU_SECONDS = 120  # c.SandboxedKernelManager.cpu_seconds
NOTEBOOK_SECONDS = 300  # c.SandboxedExecute.notebook_timeout: wall clock for a whole notebook
CELL_SECONDS = 30  # c.Execute.timeout: nbgrader's own default for one cell


def load_config(root: Path):
    """The traitlets configuration of the course folder ``root``."""
    from traitlets.config.loader import PyFileConfigLoader

    if not (Path(root) / CONFIG_FILE).is_file():
        raise SystemExit(f"{root} is not a course folder: it has no {CONFIG_FILE}")
    config = PyFileConfigLoader(CONFIG_FILE, path=str(root)).load_config()
    config.CourseDirectory.root = str(Path(root).absolute())
    return config


def course_directory(root: Path, **overrides):
    """nbgrader's CourseDirectory of ``root``, with ``overrides`` of its traits."""
    from nbgrader.coursedir import CourseDirectory

    config = load_config(root)
    for name, value in overrides.items():
        setattr(config.CourseDirectory, name, value)
    return CourseDirectory(config=config)


def worker_config(config, root: Path, db_url: str):
    """A copy of the course's configuration ``config`` (``load_config``) for
    its private copy at ``root`` with the gradebook ``db_url``: what
    ``course_directory(root, db_url=...)`` would give, without running
    nbgrader_config.py again (make grade's workers: tools/grading/run.py)."""
    import copy as copying

    copy = copying.deepcopy(config)  # (the run's own stays as it is)
    copy.CourseDirectory.root = str(Path(root).absolute())
    copy.CourseDirectory.db_url = db_url
    return copy


def default_jobs() -> int:
    """As many grading workers as this process may use CPUs."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Layout:
    """Where a course keeps things, as its nbgrader_config.py says."""

    root: Path
    source: str
    submitted: str
    autograded: str
    feedback: str
    db_url: str
    ignore: tuple = ()  # CourseDirectory.ignore: names never copied out of the source folder

    @property
    def db_path(self) -> Path:
        if not self.db_url.startswith("sqlite:///"):
            raise SystemExit(f"make grade supports an SQLite gradebook only; this course uses {self.db_url}")
        return Path(self.db_url[len("sqlite:///"):])

    def folder(self, kind: str, student: str, assignment: str) -> Path:
        return self.root / getattr(self, kind) / student / assignment

    def source_notebook(self, assignment: str) -> Path:
        return self.root / self.source / assignment / f"{assignment}.ipynb"

    def submissions(self, assignments=()):
        """[(assignment, student)] for every submission folder holding a
        notebook (of ``assignments`` only, if given), sorted."""
        base = self.root / self.submitted
        found = []
        if base.is_dir():
            for student in sorted(p.name for p in base.iterdir() if p.is_dir()):
                for folder in sorted(p for p in (base / student).iterdir() if p.is_dir()):
                    if (not assignments or folder.name in assignments) and any(folder.glob("*.ipynb")):
                        found.append((folder.name, student))
        return sorted(found)


def _switch(environ, name: str) -> bool:
    value = environ.get(name, "on")
    if value not in ("on", "off"):
        raise SystemExit(f"{name} must be on or off (or unset: on), not {value!r}")
    return value == "on"


@dataclass(frozen=True)
class Switches:
    """What one grading run may switch from the environment; each is on
    unless its variable says ``off``. The course's nbgrader_config.py calls
    ``Switches.from_environment().apply(c)``; ``CourseSettings.read`` takes
    them from the configuration it loads (a course whose file does not call it
    grades with all of them on and a fresh seed).

    - ``GRADING_SANDBOX=off``: student code runs without the sandbox (with
      your permissions; instructor/protections.md), and so without warm templates;
    - ``GRADING_WARM=off``: every kernel and verification starts a fresh
      sandboxed Python instead of a child of a warm template (tools/sandbox/warm.py);
    - ``GRADING_VERIFY=off``: no verification outside the notebook: integrity.csv
      gets no row, and loses its earlier rows of what the run graded (instructor/integrity.md);
    - ``VERIFY_SEED=<n>``: verification draws its inputs from seed ``n`` instead
      of a fresh one (to look into a flag again, not to grade)."""

    sandbox: bool = True
    warm: bool = True
    verify: bool = True
    verify_seed: int | None = None

    NAMES = ("GRADING_SANDBOX", "GRADING_WARM", "GRADING_VERIFY", "VERIFY_SEED")

    @classmethod
    def from_environment(cls, environ=None) -> "Switches":
        environ = os.environ if environ is None else environ
        seed = environ.get("VERIFY_SEED") or None
        if seed is not None:
            try:
                seed = int(seed, 0)
            except ValueError:
                raise SystemExit(f"VERIFY_SEED must be a whole number (a seed make grade printed), "
                                 f"not {seed!r}") from None
        return cls(sandbox=_switch(environ, "GRADING_SANDBOX"), warm=_switch(environ, "GRADING_WARM"),
                   verify=_switch(environ, "GRADING_VERIFY"), verify_seed=seed)

    @classmethod
    def environment_of(cls, environ=None, names=NAMES) -> dict:
        """The variables of ``environ`` (default: this process's) among
        ``names`` that set a switch, to hand on to a ``make grade`` started
        elsewhere (tools/hub/users.py)."""
        environ = os.environ if environ is None else environ
        return {name: environ[name] for name in names if name in cls.NAMES and name in environ}

    def apply(self, c):
        """Write the switches into an nbgrader configuration ``c``: the
        kernel's warm template (``SandboxedKernelManager.warm``) and the run's
        own (``CourseSettings.*``). The sandbox itself is the choice of
        preprocessors, which nbgrader_config.py makes by ``self.sandbox``."""
        c.SandboxedKernelManager.warm = self.warm and self.sandbox
        c.CourseSettings.verify = self.verify
        c.CourseSettings.verify_seed = self.verify_seed


SANDBOXED_EXECUTE = "tools.sandbox.kernel.SandboxedExecute"


@dataclass(frozen=True)
class VerificationLimits:
    """Limits of one submission's verification process (tools/verification/verify.py).
    Time is twice what the course gives the notebook (a cell, the whole
    notebook, CPU seconds), so that no honest answer that passed in the
    notebook runs out of time here; memory is the notebook's own, so a check
    that a function never builds some tensor is sized by the same limit as
    the notebook's tests."""

    step_seconds: float = 2 * CELL_SECONDS  # one cell or one check
    run_seconds: float = 2 * NOTEBOOK_SECONDS  # the whole process, wall clock
    cpu_seconds: int = 2 * KERNEL_CPU_SECONDS
    memory_bytes: int = KERNEL_MEMORY_BYTES


@dataclass(frozen=True)
class CourseSettings:
    """Everything grading reads from one course folder's nbgrader_config.py,
    the switches of ``Switches`` included. Reading it imports traitlets, and
    whatever the course's nbgrader_config.py imports (this repository's:
    tools.feedback.page, tools.hub.formgrader_guard, and through them nbconvert,
    Jinja2, nbgrader and its formgrader's jupyter_server, Tornado and SQLAlchemy);
    ``layout`` (nbgrader's CourseDirectory) is worked out on first use."""

    root: Path
    config: object  # the traitlets Config, for nbgrader's own classes (CSV export)
    cell_seconds: float  # Execute.timeout: one cell in the notebook
    notebook_seconds: float  # SandboxedExecute.notebook_timeout: the whole notebook
    cpu_seconds: int  # SandboxedKernelManager.cpu_seconds
    memory_bytes: int  # SandboxedKernelManager.memory_bytes, per process
    sandbox: bool = True  # student code runs in the sandbox (Autograde's preprocessors run SandboxedExecute)
    warm: bool = True  # SandboxedKernelManager.warm: kernels and verifications are children of a warm template
    verify: bool = True  # CourseSettings.verify: verification outside the notebook, integrity.csv
    verify_seed: int | None = None  # CourseSettings.verify_seed: verification's seed (None: a fresh one per run)

    @classmethod
    def read(cls, root: Path) -> "CourseSettings":
        root = Path(root).absolute()
        config = load_config(root)

        def setting(section, name, default):
            value = config[section].get(name, default) if section in config else default
            if value is None:  # (nbgrader's "no time limit" for a cell: verification keeps its own)
                return default
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise SystemExit(f"{root / CONFIG_FILE}: c.{section}.{name} must be a positive number, "
                                 f"not {value!r}")
            return value

        def switch(section, name):
            value = config[section].get(name, True) if section in config else True
            if not isinstance(value, bool):
                raise SystemExit(f"{root / CONFIG_FILE}: c.{section}.{name} must be True or False, not {value!r}")
            return value

        seed = config.CourseSettings.get("verify_seed", None) if "CourseSettings" in config else None
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise SystemExit(f"{root / CONFIG_FILE}: c.CourseSettings.verify_seed must be a whole number or None, "
                             f"not {seed!r}")
        preprocessors = config.Autograde.get("autograde_preprocessors", None) if "Autograde" in config else None
        sandbox = SANDBOXED_EXECUTE in (preprocessors or ())
        return cls(
            root=root,
            config=config,
            sandbox=sandbox,
            warm=sandbox and switch("SandboxedKernelManager", "warm"),
            verify=switch("CourseSettings", "verify"),
            verify_seed=seed,
            cell_seconds=float(setting("Execute", "timeout", CELL_SECONDS)),
            notebook_seconds=float(setting("SandboxedExecute", "notebook_timeout", NOTEBOOK_SECONDS)),
            cpu_seconds=int(setting("SandboxedKernelManager", "cpu_seconds", KERNEL_CPU_SECONDS)),
            memory_bytes=int(setting("SandboxedKernelManager", "memory_bytes", KERNEL_MEMORY_BYTES)),
        )

    @functools.cached_property
    def layout(self) -> Layout:
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=self.config)
        return Layout(root=self.root, source=coursedir.source_directory, submitted=coursedir.submitted_directory,
                      autograded=coursedir.autograded_directory, feedback=coursedir.feedback_directory,
                      db_url=coursedir.db_url, ignore=tuple(coursedir.ignore))

    @property
    def source_folder(self) -> Path:
        """The nbgrader source folder, without importing nbgrader."""
        return self.root / self.config.CourseDirectory.get("source_directory", "source")

    @property
    def verification(self) -> VerificationLimits:
        return VerificationLimits(step_seconds=2 * self.cell_seconds, run_seconds=2 * self.notebook_seconds,
                                  cpu_seconds=2 * self.cpu_seconds, memory_bytes=self.memory_bytes)

    @property
    def submission_seconds(self) -> float:
        """How long one submission may take in a grading worker: its
        notebook's time, its verification's and a margin for nbgrader's own
        work (tools/grading/run.py gives up on it after that)."""
        return self.notebook_seconds + self.verification.run_seconds + 120.0
