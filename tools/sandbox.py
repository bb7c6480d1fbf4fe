"""Run untrusted code (a student's notebook, say) in a bubblewrap sandbox.

``sandboxed_command(argv, workdir)`` returns ``argv`` wrapped so that, when
run, it sees a read-only view of the system and of the Python installations it
needs, may write only to ``workdir`` (plus a private, size-limited ``/tmp``),
has no network, runs under limits on memory and CPU time, and takes every
process it starts down with it. Nothing else of the machine is visible: not the
course folder, not the gradebook, not other students' work.

The pieces, all from bubblewrap (``bwrap``) and util-linux's ``prlimit``:

- an empty root file system into which only the system folders (``/usr`` and a
  few files of ``/etc``), the Python installation(s) and ``readable`` are bound,
  read-only; ``workdir`` and ``writable`` are bound read-write;
- new user, PID, network, IPC, UTS and cgroup namespaces: no network at all
  (not even loopback to the host), and the processes of the sandbox cannot
  see or signal any process outside;
- ``--die-with-parent`` and a PID namespace: when the sandboxed command ends or
  is killed, every process it started is killed with it;
- ``--new-session`` (no access to the grader's terminal) and no capabilities;
- a clean environment: only the variables listed in ``PASSED_ENV`` pass through;
- resource limits set by ``prlimit``: address space per process
  (``memory_bytes``), CPU seconds, size of any one written file, no core dumps.

Linux only. ``check_available()`` says what is missing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

# System folders the sandbox sees read-only. On merged-/usr systems /bin, /lib,
# ... are symbolic links into /usr and are recreated as such.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only these files of /etc: what the dynamic loader, Python and NumPy/PyTorch
# need. Not /etc as a whole: it holds secrets (/etc/shadow, keys), and not
# even /etc/passwd (the machine's user names): USER and LOGNAME name the user.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/mime.types",
    "/etc/fonts",
)
# What PyTorch's CPU detection reads; without it, it prints warnings.
SYSFS_FILES = ("/sys/devices/system/cpu",)

# Environment variables that pass into the sandbox unchanged (a prefix ends
# with "_"). Everything else is dropped: the grader's environment may hold
# tokens or passwords, and a notebook could print them into its feedback.
PASSED_ENV = (
    "LANG", "LANGUAGE", "LC_", "TZ",
    "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYDEVD_DISABLE_FILE_VALIDATION",
    "NBGRADER_", "JPY_",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
)
# Set unless the caller's environment already says otherwise: one thread per
# process, so that parallel grading does not oversubscribe the cores.
DEFAULT_ENV = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "LANG": "C.UTF-8",
    "HOME": "/tmp",
    "USER": "student",
    "LOGNAME": "student",
    "TMPDIR": "/tmp",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}

TMP_BYTES = 256 * 1024**2  # the private /tmp and /dev/shm are in memory: keep them small
FILE_BYTES = 1024**3  # the largest file the sandboxed code may write


class SandboxUnavailable(RuntimeError):
    """bubblewrap or prlimit is missing, or cannot create namespaces here."""


def check_available():
    """Raise SandboxUnavailable, saying what to install, unless the sandbox can run."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"the grading sandbox needs Linux (bubblewrap); this is {sys.platform}")
    missing = [tool for tool in ("bwrap", "prlimit") if shutil.which(tool) is None]
    if missing:
        raise SandboxUnavailable(
            f"the grading sandbox needs {' and '.join(missing)}: install bubblewrap and util-linux "
            "(Debian/Ubuntu: `sudo apt-get install bubblewrap util-linux`)"
        )


def python_paths(executable) -> list[Path]:
    """The folders a Python interpreter needs to run: its prefix and, for a
    virtual environment, the installation it was created from."""
    exe = Path(shutil.which(str(executable)) or executable).absolute()
    prefixes = {exe.parent.parent, exe.resolve().parent.parent}
    venv_cfg = exe.parent.parent / "pyvenv.cfg"
    if venv_cfg.is_file():
        for line in venv_cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                prefixes.add(Path(value.strip()).parent)
    if exe.resolve() == Path(sys.executable).resolve():
        prefixes |= {Path(sys.prefix), Path(sys.base_prefix)}
    # "/" would expose everything; /usr is bound anyway.
    return sorted(p for p in prefixes if p != Path("/") and not _under(p, Path("/usr")))


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def sandbox_env(environ=None, **extra) -> dict:
    """The environment inside the sandbox: the PASSED_ENV variables of
    ``environ`` (default: this process's), DEFAULT_ENV, and ``extra``."""
    environ = os.environ if environ is None else environ
    env = dict(DEFAULT_ENV)
    for name, value in environ.items():
        if any(name == p or (p.endswith("_") and name.startswith(p)) for p in PASSED_ENV):
            env[name] = value
    env.update({k: str(v) for k, v in extra.items()})
    return env


def limits_command(*, memory_bytes: int, cpu_seconds: int) -> list[str]:
    """prlimit's arguments for the resource limits (soft = hard, except CPU:
    SIGXCPU at the limit, SIGKILL 5 s later)."""
    return [
        shutil.which("prlimit") or "prlimit",
        f"--as={int(memory_bytes)}",
        f"--cpu={int(cpu_seconds)}:{int(cpu_seconds) + 5}",
        f"--fsize={FILE_BYTES}",
        "--core=0",
        "--",
    ]


def bwrap_arguments(workdir: Path, *, readable=(), writable=(), env=None) -> list[str]:
    """bubblewrap's arguments (without the command)."""
    workdir = Path(workdir).absolute()
    args = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-all",  # user, pid, net, ipc, uts, cgroup: no network at all
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        "--hostname", "sandbox",
        "--clearenv",
    ]
    for name, value in sorted((sandbox_env() if env is None else env).items()):
        args += ["--setenv", name, value]
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for path in ETC_FILES + SYSFS_FILES:
        args += ["--ro-bind-try", path, path]
    args += [
        "--proc", "/proc",
        "--dev", "/dev",
        "--size", str(TMP_BYTES), "--tmpfs", "/dev/shm",
        "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
    ]
    for path in readable:
        path = Path(path).absolute()
        if path == Path("/"):
            raise ValueError("readable=['/'] would show the sandbox the whole machine")
        args += ["--ro-bind", str(path), str(path)]
    for path in [*writable, workdir]:
        path = Path(path).absolute()
        args += ["--bind", str(path), str(path)]
    # Everything not bound writable above (the empty root and the folders made
    # for mount points) becomes read-only.
    args += ["--remount-ro", "/", "--chdir", str(workdir)]
    return args


def sandboxed_command(
    argv: list[str],
    workdir: Path,
    *,
    memory_bytes: int = 2 * 1024**3,
    cpu_seconds: int = 60,
    readable=(),
    writable=(),
    env=None,
) -> list[str]:
    """``argv`` wrapped to run in the sandbox, with ``workdir`` as its working
    folder and the only place (with ``writable``) it may write to.

    ``readable`` lists further files or folders it may read. The Python that
    ``argv[0]`` names, if it is one, is made readable automatically. ``env``
    replaces the environment (default: ``sandbox_env()``). Run the result with
    ``subprocess``; the command cannot see its caller's files, network or
    processes, and whatever it starts dies with it.

    Example: ``subprocess.run(sandboxed_command([sys.executable, "-c", code], tmp))``.
    """
    check_available()
    argv = [str(a) for a in argv]
    readable = [Path(p) for p in readable]
    if argv and Path(argv[0]).name.startswith("python"):
        readable = [*python_paths(argv[0]), *readable]
        if env is None:
            env = sandbox_env()
            env["PATH"] = f"{Path(argv[0]).absolute().parent}:{env['PATH']}"
    return [
        *limits_command(memory_bytes=memory_bytes, cpu_seconds=cpu_seconds),
        *bwrap_arguments(workdir, readable=readable, writable=writable, env=env),
        "--",
        *argv,
    ]
