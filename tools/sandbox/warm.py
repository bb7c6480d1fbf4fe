"""Warm templates: start-up paid once per grading run, not once per submission.

Starting Python and importing PyTorch takes about 1.5 s; the cells of a
submission run in a fraction of a second. A template (tools/sandbox/warm_template.py) is
one sandboxed Python (tools/sandbox/bubblewrap.py: bubblewrap, limits) that has imported
NumPy, ipykernel, the verification harness and, for assignments that use it,
PyTorch (and what PyTorch would import on first use), and never runs student
code. make grade starts one per run and shares it with all its workers
(``share_kernel_template``). For each request it forks a child that becomes a fresh sandbox of its
own before it touches the submission (new namespaces nested in the
template's, fresh /tmp and /dev/shm, only the submission's folders visible,
locked mounts, no capabilities, limits) and runs the kernel or the
verification harness in it. instructor/protections.md lists what that
guarantees; tests/test_each_submission_gets_a_pristine_python.py attacks it.

``Template(roots)`` starts one; its children may be given folders under
``roots`` only. ``Template.run(...)`` runs one child to its end (verification);
``Template.client_command(...)`` is a command that runs one child for as long
as the command runs (a kernel: tools/sandbox/kernel.py).

``GRADING_WARM=off`` in the environment switches templates off (it reaches
this module as a setting: ``CourseSettings.warm``, ``SandboxedKernelManager.warm``,
tools/course_settings.py): every kernel and verification then starts a fresh
sandboxed Python, as before.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from . import bubblewrap as sandbox
from ..course_settings import KERNEL_MEMORY_BYTES
from ..paths import BIN

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent  # the course's tools/, which the hidden tests import
TEMPLATE = HERE / "warm_template.py"
CLIENT = HERE / "warm_client.py"
HARNESS = TOOLS / "verification" / "harness.py"
START_SECONDS = 120  # a template's start (imports) on a busy machine


class TemplateError(RuntimeError):
    pass


def canonical(path) -> str:
    return os.path.realpath(os.path.abspath(str(path)))


class Template:
    """One warm template process, sandboxed, serving requests on a unix socket."""

    def __init__(self, roots, *, memory_bytes: int = KERNEL_MEMORY_BYTES, python=None, base=None, preload=("torch",),
                 wait=True):
        sandbox.check_available()
        self.owner = os.getpid()  # only this process stops it; forked processes may use it
        self.roots = [canonical(r) for r in roots]
        self.memory_bytes = int(memory_bytes)
        self.python = Path(python or BIN / "python")
        self.control = Path(tempfile.mkdtemp(prefix="nbg-warm-", dir=base))
        self.socket = self.control / "t.sock"
        self.log = tempfile.TemporaryFile()
        env = sandbox.sandbox_env(PATH=f"{self.python.absolute().parent}:{sandbox.DEFAULT_ENV['PATH']}")
        command = sandbox.sandboxed_command(
            [self.python, TEMPLATE, self.socket, HARNESS, ",".join(preload), *self.roots],
            self.control,
            memory_bytes=self.memory_bytes,
            cpu_seconds=10**6,  # the template's own CPU time; each child gets its own limit
            # tools/ (public course code, no secret): the template, the
            # harness, and the package the hidden tests run their checks with.
            readable=[TOOLS],
            writable=self.roots,
            env=env,
            template=True,
        )
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=self.log)
        self.ready = False
        if wait:
            self.wait_ready()

    def wait_ready(self):
        """Wait until the template has imported everything (``wait=False`` lets
        the caller do other work meanwhile); raises TemplateError if it failed."""
        if self.ready:
            return
        import selectors

        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=START_SECONDS)
        line = self.process.stdout.readline() if ready else b"(no answer in time)"
        if line.strip() != b"ready":
            errors = self.errors()
            self.close()
            raise TemplateError(f"the warm template did not start: {line!r} {errors}")
        self.ready = True

    def errors(self) -> str:
        """What the template (and the children, before they run the payload) wrote to stderr."""
        try:
            self.log.seek(0)
            return self.log.read()[-2000:].decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def alive(self) -> bool:
        if os.getpid() == self.owner:
            return self.process.poll() is None
        # A process forked from the owner cannot wait for it: it asks /proc.
        try:
            with open(f"/proc/{self.process.pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")

    def covers(self, paths) -> bool:
        return all(any(canonical(p) == r or canonical(p).startswith(r + "/") for r in self.roots) for p in paths)

    def request(self, kind, argv, *, cwd, writable=(), readable=(), env=None, memory_bytes=None,
                cpu_seconds=60, scratch=False) -> dict:
        """A request for one child. With ``scratch``, the child's working
        folder is a scratch copy of ``cwd`` (tools/sandbox/bubblewrap.py): what it
        writes there stays in the child's sandbox; else ``cwd`` is writable."""
        writable = [canonical(p) for p in writable]
        cwd = canonical(cwd)
        if cwd not in writable and not scratch:
            writable.append(cwd)
        return {
            "kind": kind,
            "argv": [str(a) for a in argv],
            "cwd": cwd,
            "writable": writable,
            "readable": [canonical(p) for p in readable],
            "env": {k: str(v) for k, v in (sandbox.sandbox_env() if env is None else env).items()},
            "memory_bytes": int(memory_bytes or self.memory_bytes),
            "cpu_seconds": int(cpu_seconds),
            "file_bytes": sandbox.FILE_BYTES,
            "process_limit": sandbox.PROCESS_LIMIT,
            "scratch": cwd if scratch else None,
            "scratch_bytes": sandbox.TMP_BYTES,
            "uid": sandbox.SANDBOX_UID,
        }

    def run(self, request: dict, timeout: float) -> str:
        """Run one child to its end; returns how it ended, in words."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + timeout
        try:
            conn.settimeout(timeout)
            try:
                conn.connect(str(self.socket))
                conn.sendall(json.dumps(request).encode() + b"\n")
            except OSError as error:
                raise TemplateError(f"the warm template does not answer ({error}): {self.errors()}") from error
            reader = conn.makefile("rb")
            while True:
                conn.settimeout(max(0.01, deadline - time.monotonic()))
                line = reader.readline()
                if not line:
                    raise TemplateError(f"the warm template stopped: {self.errors()}")
                answer = json.loads(line)
                if "error" in answer:
                    raise TemplateError(answer["error"])
                if "status" in answer:
                    status = answer["status"]
                    return f"exit status {128 - status if status < 0 else status}"
        except (socket.timeout, TimeoutError):
            return f"stopped after {timeout:g} s"  # closing the connection kills the child
        finally:
            conn.close()

    def client_command(self, request: dict, request_file: Path) -> list[str]:
        """A command whose process stands for the child (tools/sandbox/warm_client.py)."""
        Path(request_file).write_text(json.dumps(request))
        return [str(self.python), "-I", "-S", str(CLIENT), str(self.socket), str(request_file)]

    def close(self):
        if os.getpid() != self.owner:  # (a forked process's copy: the owner stops it)
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()
        self.log.close()
        shutil.rmtree(self.control, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- the kernels' template of this process ----------------------------------

_kernel_template: Template | None = None
_kernel_roots: list = []  # set by tools/grading/run.py's workers: where every private course lives
_kernel_root: Path | None = None  # this process's folder for kernels' private folders
_base: str | None = None  # where this process's templates keep their folders (default: TMPDIR)


def set_kernel_roots(roots, base=None):
    """Folders under which every kernel's working folder of this process will
    be, and (``base``) a folder for the templates' own folders."""
    global _kernel_roots, _base
    _kernel_roots = [canonical(r) for r in roots]
    _base = None if base is None else str(base)


def kernel_private_root() -> Path:
    """The folder for the kernels' private folders (connection file, sockets)."""
    global _kernel_root
    if _kernel_root is None or not _kernel_root.is_dir():
        _kernel_root = Path(tempfile.mkdtemp(prefix="nbg-k-", dir=_base))
    return _kernel_root


# What PyTorch 2.13.0 imports only on first use, which every submission would
# then pay for in its own child: the first torch.testing.assert_close imports
# torch.distributed.tensor (0.5 s, to check for DTensors), the first optimizer
# step torch._dynamo (0.5 s). (code a notebook contains, module to import)
FIRST_USE = [("assert_close", "torch.distributed.tensor"), ("torch.optim", "torch._dynamo")]


def preload_for(*notebooks) -> list:
    """The modules a template should import for these notebooks: PyTorch if
    any of them imports it (about 1.5 s of a template's start), and what it
    would import on first use of what they call; else nothing beyond NumPy
    and ipykernel."""
    texts = []
    for notebook in notebooks:
        try:
            texts.append(Path(notebook).read_text(errors="replace"))
        except OSError:
            texts.append("import torch assert_close torch.optim")  # (unreadable: import everything)
    if not any("import torch" in text for text in texts):
        return []
    return ["torch"] + [module for code, module in FIRST_USE if any(code in text for text in texts)]


def set_kernel_preload(modules):
    """Modules the next kernel template of this process imports."""
    global _preload
    _preload = tuple(modules)


_preload = ("torch",)  # (make grade sets it: preload_for)


def kernel_template(workdir, memory_bytes) -> Template | None:
    """This process's template for kernels in ``workdir``, started on first
    use; None if it cannot serve this folder. (Whether templates are on at
    all is the caller's setting: it asks only if they are.)"""
    global _kernel_template
    private = kernel_private_root()
    wanted = [private, workdir]
    template = _kernel_template
    if template is not None and (not template.alive() or not template.covers(wanted)
                                 or template.memory_bytes < memory_bytes):
        template.close()
        template = _kernel_template = None
    if template is None:
        # Default: the folder of all students' folders (nbgrader's autograded/),
        # never a folder as wide as / or /home.
        folder = Path(canonical(workdir))
        roots = [private, *(_kernel_roots or [folder.parents[1] if len(folder.parts) >= 5 else folder])]
        template = Template(roots, memory_bytes=memory_bytes, base=_base, preload=_preload)
        if not template.covers(wanted):
            template.close()
            return None
        _kernel_template = template
        import atexit

        atexit.register(close_kernel_template)
    return template


def share_kernel_template(template: Template):
    """Make ``template`` the kernels' template of this process and of the
    processes it forks from now on (make grade's workers: one template serves
    them all, each request in a sandbox of its own). Its folders must cover
    the folders ``set_kernel_roots`` gives."""
    global _kernel_template
    _kernel_template = template
    import atexit

    atexit.register(close_kernel_template)


def kernel_template_running() -> bool:
    return _kernel_template is not None and _kernel_template.alive()


def close_kernel_template():
    global _kernel_template, _kernel_root
    if _kernel_template is not None:
        _kernel_template.close()
        _kernel_template = None
    if _kernel_root is not None and _base is None:
        try:
            sandbox.remove_tree(_kernel_root)  # kernels' private folders: they wrote there
        except OSError:
            pass
        _kernel_root = None
