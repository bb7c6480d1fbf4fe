"""Each user's view of the machine, when the hub runs as root: a private mount
namespace in which the repository is an empty, read-only folder for a student,
with only .venv, the exchange, the students' Jupyter configuration and her own
home put back in it, and in which a closed folder on the way to the course's
Python is replaced the same way for everyone (``view``, ``build_view``); every
command of the hub's users starts in it (``enter``, ``as_user``)."""

from __future__ import annotations

import ctypes
import os
import pwd
import stat
import subprocess
from pathlib import Path

from ..paths import BIN, ROOT
from .users import EXCHANGE, HOMES, INSTRUCTOR, STUDENT_CONFIG, USERS, home, is_root, user_environment


def python_installation():
    """The folders of the Python installation that .venv was made from (its
    interpreter's prefix, and the folder pyvenv.cfg names), without links."""
    found = {Path(os.path.realpath(BIN / "python")).parent.parent}
    for line in (ROOT / ".venv" / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            found.add(Path(os.path.realpath(value.strip())).parent)
    return sorted(found)


def view(user):
    """What ``user``'s processes see of the folders the hub uses: ``(covered, shown)``.

    ``covered``: folders that an empty, read-only folder replaces. For a
    student, the repository (solutions/ with its checks, .git, the hub's
    own files); for every user, the first closed folder (one that others cannot
    enter) on the way to what they need, such as /root above a Python
    installed there: nobody's home is opened, its other files stay out of sight.
    ``shown``: {folder: writable} of what is put back, at the same path,
    inside a covered folder: the course's .venv and Python for everyone, the
    exchange and the students' Jupyter configuration for students, the whole
    repository for the instructor (he grades with it).
    """
    needed = {folder: False for folder in python_installation()}
    if user == INSTRUCTOR:
        needed[ROOT] = True
        covered = set()
    else:
        needed.update({ROOT / ".venv": False, EXCHANGE: True, STUDENT_CONFIG: False})
        covered = {ROOT}
    for path in needed:
        closed = [folder for folder in reversed(path.parents) if not os.stat(folder).st_mode & stat.S_IXOTH]
        covered.update(closed[:1])
    covered = sorted(folder for folder in covered if not any(other in folder.parents for other in covered))
    hidden = [path for path in needed if any(folder == path or folder in path.parents for folder in covered)]
    shown = {path: needed[path] for path in hidden if not any(other in path.parents for other in hidden)}
    return covered, shown


def own_home(user):
    """The user's home if it is one of the hub's (in HOMES, which nobody else
    can enter): their view shows it, writable, in an otherwise empty HOMES."""
    folder = home(user)
    return folder if folder.parent == HOMES else None


# Linux's mount(2) and unshare(2) flags (linux/mount.h, linux/sched.h).
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000


def _syscall(name, *args, what=None):
    if getattr(ctypes.CDLL(None, use_errno=True), name)(*args) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what or name}: {os.strerror(error)}")


def _mount(source, target, fstype, flags, options=None):
    encode = (lambda text: None if text is None else os.fsencode(str(text)))
    _syscall("mount", encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(options),
             what=f"mount {source or ''} on {target} ({fstype or 'flags'} {flags:#x} {options or ''})")


def build_view(covered, shown, private_tmp, private_home=None):
    """As root, in this process: a mount namespace of its own, in which each
    ``covered`` folder is replaced by an empty read-only folder with the
    ``shown`` folders bound back in (read-only unless writable), and, with
    ``private_tmp``, /tmp and /dev/shm empty and of its own. Nothing reaches
    the rest of the machine; the namespace ends with the last process in it.
    ``private_home`` (one of HOMES) is then shown, writable, in an empty HOMES."""
    _syscall("unshare", CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # mounts made here stay here
    # Handles on what is shown, taken in the new namespace before the covers hide it.
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in shown}
    home_handle = os.open(private_home, os.O_PATH | os.O_DIRECTORY) if private_home else None
    umask = os.umask(0o022)
    if private_tmp:  # first: a repository cloned under /tmp is then covered and shown inside it
        for folder in ("/tmp", "/dev/shm"):
            _mount("hub-tmp", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for folder in covered:
        os.makedirs(folder, exist_ok=True)  # (gone from a fresh /tmp)
        _mount("hub-view", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=1024")
    for path, writable in shown.items():
        os.makedirs(path, exist_ok=True)  # in the cover's empty folder
        _mount(f"/proc/self/fd/{handles[path]}", path, None, MS_BIND | MS_REC)
        if not writable:
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(handles[path])
    if private_home:
        covered = [*covered, private_home.parent]
        os.makedirs(private_home.parent, exist_ok=True)
        _mount("hub-view", private_home.parent, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=1024")
        os.makedirs(private_home, exist_ok=True)
        _mount(f"/proc/self/fd/{home_handle}", private_home, None, MS_BIND | MS_REC)
        os.close(home_handle)
    os.umask(umask)
    for folder in covered:
        _mount(None, folder, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def enter(argv):
    """``USER -- COMMAND...``, run as root: build USER's view (``view``,
    ``build_view``; students also get a /tmp of their own), become USER and
    run COMMAND in the working folder this started in, as seen in the view.
    Every command of the hub's users starts this way (``enter_command``)."""
    if len(argv) < 3 or argv[1] != "--" or argv[0] not in USERS:
        raise SystemExit(f"usage: enter USER -- COMMAND..., USER one of {', '.join(USERS)}")
    user, command = argv[0], argv[2:]
    account = pwd.getpwnam(user)
    folder = os.getcwd()
    build_view(*view(user), private_tmp=user != INSTRUCTOR, private_home=own_home(user))
    os.setgroups(os.getgrouplist(user, account.pw_gid))
    os.setgid(account.pw_gid)
    os.setuid(account.pw_uid)
    os.chdir(folder)  # by its path again, so that it is the view's folder
    os.execvp(command[0], command)


def enter_program():
    """The program that runs ``enter``: .venv's Python, isolated (-I) from the
    environment and from the user's own Python packages, since it runs as root."""
    code = "import sys; from tools.hub.views import enter; enter(sys.argv[1:])"
    return [str(BIN / "python"), "-I", "-c", code]


def enter_command(user):
    """The start of a command line that runs what follows as ``user``, in their view."""
    return [*enter_program(), user, "--"]



def as_user(user, args, cwd=None, check=True, **kwargs):
    """Run a command as one of the hub's users (as root: in their view, ``enter``), in their environment."""
    env = user_environment(user)
    prefix = enter_command(user) if is_root() else []
    command = [*prefix, "env", *(f"{k}={v}" for k, v in env.items()), *map(str, args)]
    return subprocess.run(command, cwd=cwd or home(user), check=check, text=True, **kwargs)
