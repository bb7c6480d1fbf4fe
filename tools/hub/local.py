"""A local JupyterHub with the course on it, to see the course as students do.

Usage: ``python -m tools.hub [--ip 127.0.0.1] [--port 8000]`` (what ``make hub``
runs; instructor/hub.md explains it), and ``python -m tools.hub --clean``
(``make hub-clean``). It prepares the hub under ``_build/hub/`` and the term's
data under ``hub-term/`` (TERM), then runs JupyterHub in the foreground until
Ctrl-C:

- JupyterHub from ``.venv`` (requirements.txt) and its proxy,
  ``configurable-http-proxy``, from npm at version ``PROXY_VERSION``, installed
  once into ``.venv/hub-proxy`` (needs ``node`` and ``npm`` from the system);
- one shared password (``PASSWORD``) for the instructor and the students
  (JupyterHub's SharedPasswordAuthenticator);
- every user's JupyterLab with nbgrader's extensions: the Assignments tab for
  everyone, the formgrader for the instructor only (his server may be framed
  by pages of its own origin, so that JupyterLab shows the formgrader in a
  tab); terminals that start bash with the course's environment first on PATH;
- nbgrader's exchange in ``hub-term/exchange``, the course id
  ``self-attention``, and the instructor's course folder
  ``~instructor/self-attention``: the assignments' sources and releases,
  copied at each start, and an ``nbgrader_config.py``, written once, that reads
  the repository's and then sets the hub's exchange. Nothing is released: the
  instructor releases each assignment when he chooses.

Run as root, each user is a real Unix user, created at start (home in
``hub-term/home/<user>``, kept) and removed when the hub stops, and gets
their own JupyterLab as that user (LocalProcessSpawner), in a view of the
machine of their own (``view``, ``enter``): a private mount namespace in which
the repository is an empty, read-only folder for a student, with only
``.venv``, the exchange, the students' Jupyter configuration and her own home
put back in it, and in which a closed folder on the way to the course's Python
(a Python installed under /root, say) is replaced the same way, for everyone,
so that no home is ever opened. Nothing else outside the repository changes,
and the views end with their processes. Run as anyone else, every server runs
as you, with its home folder under ``hub-term/home/<user>``
(SimpleLocalProcessSpawner): the same hub, without the separation between users.

``--clean`` archives hub-term/ into ``hub-backups/term-<time>.tar.gz`` and only
then removes it (``clean``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from ..paths import BIN, EXERCISES, ROOT, SOLUTIONS

HUB = ROOT / "_build" / "hub"
#: The term's data: what the hub's users made (their homes, with the instructor's course folder) and the
#: exchange. Outside _build, so that `make clean` keeps it; `make hub-clean` backs it up before removing it.
TERM = ROOT / "hub-term"
EXCHANGE = TERM / "exchange"
HOMES = TERM / "home"
#: Where `make hub-clean` puts its archive of the term (outside _build and hub-term).
BACKUPS = ROOT / "hub-backups"
#: configurable-http-proxy, JupyterHub's proxy, from npm (kept out of `make clean`'s way).
PROXY_VERSION = "5.3.0"
PROXY_DIR = ROOT / ".venv" / "hub-proxy"
PROXY = PROXY_DIR / "node_modules" / ".bin" / "configurable-http-proxy"

COURSE_ID = "self-attention"
INSTRUCTOR = "instructor"
STUDENTS = ("ada", "alan", "grace")
USERS = (INSTRUCTOR, *STUDENTS)
PASSWORD = "attention"  # SharedPasswordAuthenticator wants at least 8 characters

# The lab extensions and server extension of nbgrader that only the instructor needs.
INSTRUCTOR_ONLY_LAB = ("formgrader", "create-assignment", "course-list")

#: {user: uid} of the Unix users that the hub creates at start and removes at stop (their homes stay in HOMES).
CREATED_USERS = TERM / "users.json"
STUDENT_CONFIG = HUB / "jupyter-student"
INSTRUCTOR_CONFIG = HUB / "jupyter-instructor"


class HubError(RuntimeError):
    """Something the machine lacks; the message says what to do."""


def is_root():
    return os.geteuid() == 0


def home(user):
    """The user's home folder (and their JupyterLab's root): HOMES/<user>, or,
    for a user of the machine that the hub did not create, their own home."""
    if is_root():
        try:
            return Path(pwd.getpwnam(user).pw_dir)
        except KeyError:
            pass
    return HOMES / user


def course_folder():
    return home(INSTRUCTOR) / COURSE_ID


def assignments():
    return sorted(p.name for p in EXERCISES.iterdir() if (p / f"{p.name}.ipynb").is_file())


# --- what the machine must provide --------------------------------------------


def ensure_proxy():
    """configurable-http-proxy at PROXY_VERSION in PROXY_DIR; return its path."""
    package = PROXY_DIR / "node_modules" / "configurable-http-proxy" / "package.json"
    if package.is_file() and json.loads(package.read_text()).get("version") == PROXY_VERSION and PROXY.exists():
        return PROXY
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise HubError(
            f"the hub's proxy runs on Node.js: {' and '.join(missing)} not found "
            "(Debian, Ubuntu: `sudo apt-get install nodejs npm`)"
        )
    print(f"installing configurable-http-proxy {PROXY_VERSION} into {PROXY_DIR} (npm)", flush=True)
    subprocess.run(
        ["npm", "install", "--prefix", str(PROXY_DIR), "--no-save", "--no-audit", "--no-fund",
         "--loglevel=error", f"configurable-http-proxy@{PROXY_VERSION}"],
        check=True,
    )
    return PROXY


def created_users():
    """{user: uid} of the users the hub created and has not removed yet (or whose uid it keeps)."""
    if not CREATED_USERS.is_file():
        return {}
    recorded = json.loads(CREATED_USERS.read_text())
    return dict.fromkeys(recorded) if isinstance(recorded, list) else recorded


def ensure_users():
    """As root: create the hub's users that do not exist, with their homes in
    HOMES (kept from one start to the next), under the uid each had before if
    it is free; record them for remove_users, which ``make hub`` calls when it
    stops. A user of the machine with one of these names is used as they are."""
    created = created_users()
    HOMES.mkdir(parents=True, exist_ok=True)
    os.chmod(HOMES, 0o700)  # each view shows its user their own home; nobody walks through this folder
    for user in USERS:
        try:
            pwd.getpwnam(user)
            continue
        except KeyError:
            pass
        folder = HOMES / user
        uid = created.get(user)
        taken = uid is not None and _uid_taken(uid)
        print(f"creating the Unix user {user} (home {folder})", flush=True)
        subprocess.run(["useradd", "--home-dir", str(folder), "--shell", "/bin/bash", "--user-group",
                        *(["--uid", str(uid)] if uid is not None and not taken else []),
                        *([] if folder.is_dir() else ["--create-home"]), user], check=True)
        account = pwd.getpwnam(user)
        created[user] = account.pw_uid
        CREATED_USERS.write_text(json.dumps(created))
        folder.mkdir(exist_ok=True)
        owner = os.lstat(folder)
        if (owner.st_uid, owner.st_gid) != (account.pw_uid, account.pw_gid):  # a new uid or group id
            give_tree(folder, account.pw_uid, account.pw_gid)
        os.chmod(folder, 0o700)  # private, as on a real hub (setup.md)


def _uid_taken(uid):
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def give_tree(folder, uid, gid):
    """Give ``folder`` and what is in it to uid:gid, following no link and
    leaving alone any file with another hard link (it may be someone else's)."""
    os.chown(folder, uid, gid, follow_symlinks=False)
    for parent, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode) or info.st_nlink == 1:
                os.chown(path, uid, gid, follow_symlinks=False)


def remove_users():
    """As root: stop the processes of the users that ensure_users created, and
    remove the users, but not their homes (the term's data, in HOMES)."""
    created = created_users()
    for user in created:
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        subprocess.run(["pkill", "-KILL", "-u", user], check=False)
        for _ in range(50):  # userdel refuses while a process of the user is still ending
            if subprocess.run(["userdel", user], check=False, stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.1)
        else:
            print(f"make hub: could not remove the Unix user {user} (`sudo userdel {user}`)", file=sys.stderr)


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


def check_views():
    """As root: the instructor and a student can start the course's Python in
    their view; raise HubError, with what went wrong, if one cannot."""
    for user in (INSTRUCTOR, STUDENTS[0]):
        proc = as_user(user, [BIN / "python", "-c", ""], check=False, capture_output=True)
        if proc.returncode != 0:
            raise HubError(f"{user} cannot start the course's Python in their view of the machine "
                           f"(tools/hub/local.py, view; it needs mount namespaces, which some containers forbid even "
                           f"to root: run `make hub` as another user for a hub without separate users):\n"
                           f"{proc.stderr}")


def enter_program():
    """The program that runs ``enter``: .venv's Python, isolated (-I) from the
    environment and from the user's own Python packages, since it runs as root."""
    code = "import sys; from tools.hub.local import enter; enter(sys.argv[1:])"
    return [str(BIN / "python"), "-I", "-c", code]


def enter_command(user):
    """The start of a command line that runs what follows as ``user``, in their view."""
    return [*enter_program(), user, "--"]


#: The commands of .venv/bin that the hub's users run (JupyterLab, terminals): each must start .venv's own Python.
VENV_SCRIPTS = ("jupyterhub-singleuser", "nbgrader", "jupyter")
_INTERPRETER = re.compile(rb"(/[^\s\"']*/python[0-9.]*)\b")


def check_venv_scripts():
    """The commands of VENV_SCRIPTS start the Python of this repository's .venv;
    raise HubError naming each one that starts another (a .venv made elsewhere
    and linked or copied here: a student's view shows this repository's .venv
    only, so her JupyterLab would fail to start with a bare FileNotFoundError)."""
    wrong = []
    for name in VENV_SCRIPTS:
        script = BIN / name
        try:
            with open(script, "rb") as file:
                head = file.read(1024)
        except OSError as error:
            wrong.append(f"{script}: {error.strerror}")
            continue
        if not head.startswith(b"#!"):
            continue  # not a script
        # The first line names the interpreter; pip writes a /bin/sh trampoline with it on the second for long paths.
        found = _INTERPRETER.search(b"\n".join(head.splitlines()[:2]))
        interpreter = os.fsdecode(found.group(1)) if found else head.splitlines()[0][2:].decode(errors="replace")
        if Path(interpreter).parent != BIN:
            wrong.append(f"{script} starts {interpreter}")
    if wrong:
        raise HubError(
            f"the commands in {BIN} must start {BIN / 'python'}, but {'; '.join(wrong)}. This .venv was made in "
            f"another folder and linked or copied here, and each user's JupyterLab, which sees this repository's "
            f".venv only, would fail to start. Make it here: rm -rf {ROOT / '.venv'} && make venv")


def check_shared():
    """As root: the hub's users run .venv's Python, and the instructor grades
    with the repository; raise HubError if they cannot read them."""
    for folder in [ROOT, ROOT / ".venv", *python_installation()]:
        mode = os.stat(folder).st_mode
        if not (mode & stat.S_IROTH and mode & stat.S_IXOTH):
            raise HubError(f"the hub's users run the course's Python and the instructor grades with the "
                           f"repository, but other users cannot read {folder}: `chmod o+rx {folder}` (students "
                           "see nothing of the repository but .venv, whatever its permissions)")


# --- configuration ------------------------------------------------------------


def user_environment(user):
    """The environment of a user's JupyterLab and of commands run as that user."""
    kind = "instructor" if user == INSTRUCTOR else "student"
    return {
        "HOME": str(home(user)),
        "USER": user,
        "PATH": f"{BIN}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin",
        "JUPYTER_CONFIG_PATH": str(HUB / f"jupyter-{kind}"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
        # GRADING_SANDBOX=off (grading without bubblewrap, tests/conftest.py) reaches `make grade` too.
        **({"GRADING_SANDBOX": os.environ["GRADING_SANDBOX"]} if "GRADING_SANDBOX" in os.environ else {}),
    }


def as_user(user, args, cwd=None, check=True, **kwargs):
    """Run a command as one of the hub's users (as root: in their view, ``enter``), in their environment."""
    env = user_environment(user)
    prefix = enter_command(user) if is_root() else []
    command = [*prefix, "env", *(f"{k}={v}" for k, v in env.items()), *map(str, args)]
    return subprocess.run(command, cwd=cwd or home(user), check=check, text=True, **kwargs)


def write_file(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)


def nbgrader_settings(**settings):
    lines = ["# Written by tools/hub/local.py for the course's JupyterHub.", "c = get_config()  # noqa: F821"]
    lines += [f"c.{name} = {value!r}" for name, value in settings.items()]
    return "\n".join(lines) + "\n"


#: What a terminal in JupyterLab reads at start (in place of ~/.bashrc, which it reads first): JupyterLab
#: would otherwise start a login shell, whose /etc/profile (Debian's) sets a PATH without the course's Python.
TERMINAL_RC = """\
# The shell of a terminal in JupyterLab on the course's hub (written by tools/hub/local.py).
[ -r /etc/bash.bashrc ] && . /etc/bash.bashrc
[ -r ~/.bashrc ] && . ~/.bashrc
# The course's environment first, as the guide says: nbgrader, jupyter, python.
export PATH={bin}:"$PATH"
"""


def server_config(folder, frame_self):
    """A user's jupyter_server_config.json: terminals start bash with TERMINAL_RC
    (``terminal-rc.sh`` in ``folder``); with ``frame_self``, pages of this server
    may be framed by pages of the same origin (JupyterHub's default,
    ``frame-ancestors 'none'``, keeps JupyterLab from showing the formgrader in
    its tab)."""
    write_file(folder / "terminal-rc.sh", TERMINAL_RC.format(bin=BIN))
    server = {"terminado_settings": {"shell_command": ["/bin/bash", "--rcfile", str(folder / "terminal-rc.sh"),
                                                      "-i"]}}
    if frame_self:
        server["tornado_settings"] = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
    return server


def write_user_config():
    """The Jupyter configuration folders of students and instructor (JUPYTER_CONFIG_PATH)."""
    common = {"Exchange.root": str(EXCHANGE), "CourseDirectory.course_id": COURSE_ID}
    student = STUDENT_CONFIG
    write_file(student / "nbgrader_config.py", nbgrader_settings(**common))
    # Students see the Assignments tab only: no formgrader, no assignment creation, no course list.
    disabled = {f"@jupyter/nbgrader:{name}": True for name in INSTRUCTOR_ONLY_LAB}
    write_file(student / "labconfig" / "page_config.json", json.dumps({"disabledExtensions": disabled}, indent=1))
    off = {f"nbgrader.server_extensions.{name}": False for name in ("formgrader", "course_list")}
    students = {"ServerApp": {"jpserver_extensions": off, **server_config(student, frame_self=False)}}
    write_file(student / "jupyter_server_config.json", json.dumps(students, indent=1))
    instructor = {"ServerApp": server_config(INSTRUCTOR_CONFIG, frame_self=True)}
    write_file(INSTRUCTOR_CONFIG / "jupyter_server_config.json", json.dumps(instructor, indent=1))
    write_file(INSTRUCTOR_CONFIG / "nbgrader_config.py",
               INSTRUCTOR_NBGRADER_CONFIG.format(course_config=str(course_folder() / "nbgrader_config.py"))
               + ("" if is_root() else SHARED_OWNER))


INSTRUCTOR_NBGRADER_CONFIG = '''\
"""The instructor's nbgrader configuration on the course's JupyterHub (written by tools/hub/local.py).

The course folder's, for every nbgrader the instructor runs. The formgrader
reads only the Jupyter configuration folders, not the course folder's file: it
gets the course's settings (the sandbox, the feedback, its Autograde button
pointed at `make grade`) from here.
"""
c = get_config()  # noqa: F821
load_subconfig({course_config!r})  # noqa: F821
'''

#: Run by a user other than root, every user of the hub is that one Unix user: no submission folder belongs to
#: the student it is named after, and collect (tools/hub/guarded_collect.py) may not ask it to.
SHARED_OWNER = """
# This hub runs every user as one Unix user: collect cannot tell students apart by owner.
c.ExchangeCollect.check_owner = False
"""

COURSE_CONFIG = '''\
"""The course folder of the course's JupyterHub (written by tools/hub/local.py when it
was missing; yours to add to: the hub never writes it again).

The repository's nbgrader_config.py, then what the hub changes: this folder
is the course, and releases and submissions go through the hub's exchange.
"""
c = get_config()  # noqa: F821
load_subconfig({repo_config!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
'''


def prepare_course():
    """The instructor's course folder: the repository's sources and releases, copied
    at each start, and its configuration, written if missing (the instructor may
    add to it: a late penalty, say); grades and submissions are kept."""
    folder = course_folder()
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in (("solutions", SOLUTIONS), ("exercises", EXERCISES)):
        shutil.copytree(source, folder / name, dirs_exist_ok=True)
    config = folder / "nbgrader_config.py"
    if not config.is_file():
        config.write_text(COURSE_CONFIG.format(
            repo_config=str(ROOT / "nbgrader_config.py"), root=str(folder), course_id=COURSE_ID,
            exchange=str(EXCHANGE),
        ))
    if is_root():
        subprocess.run(["chown", "-R", f"{INSTRUCTOR}:", str(folder)], check=True)


STUDENT_NAMES = {"ada": ("Ada", "Lovelace"), "alan": ("Alan", "Turing"), "grace": ("Grace", "Hopper")}
#: Set-up steps still running in the background, while the hub starts (wait_for_setup).
PENDING = []


def as_instructor(*args):
    """Run an nbgrader command in the course folder as the instructor; raise HubError if it fails."""
    proc = as_user(INSTRUCTOR, [BIN / "nbgrader", *args, "--log-level=WARN"], cwd=course_folder(),
                   check=False, capture_output=True)
    if proc.returncode != 0:
        raise HubError(f"nbgrader {' '.join(map(str, args))} failed:\n{proc.stdout}{proc.stderr}")


def import_students():
    """The class list in a new gradebook (nbgrader db student import), as setup.md does it."""
    folder = course_folder()
    if (folder / "gradebook.db").exists():
        return
    rows = ["id,first_name,last_name", *(f"{user},{','.join(STUDENT_NAMES[user])}" for user in STUDENTS)]
    (folder / "students.csv").write_text("\n".join(rows) + "\n")
    if is_root():
        shutil.chown(folder / "students.csv", INSTRUCTOR)
    as_instructor("db", "student", "import", "students.csv")


PENDING_ERRORS = []


def in_background(function, *args):
    """Run a set-up step in a thread; wait_for_setup() waits for it and reports its failure."""

    def run():
        try:
            function(*args)
        except HubError as error:
            PENDING_ERRORS.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    PENDING.append(thread)


def wait_for_setup():
    """Wait for the set-up steps that run in the background; raise HubError if one failed."""
    while PENDING:
        PENDING.pop().join()
    if PENDING_ERRORS:
        raise PENDING_ERRORS.pop()


HUB_CONFIG = '''\
"""JupyterHub for the course, written by tools/hub/local.py (instructor/hub.md)."""
import json

c = get_config()  # noqa: F821
HUB = {hub!r}
ENVIRONMENT = json.loads({environment!r})

c.JupyterHub.bind_url = {url!r}
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///" + HUB + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = HUB + "/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = HUB + "/jupyterhub.pid"
c.JupyterHub.cleanup_servers = True

# One shared password; only these users.
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allowed_users = set({users!r})

# Each user's JupyterLab, from the course's .venv, with nbgrader's extensions.
{spawner}c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {{
    key: (lambda spawner, key=key: ENVIRONMENT[spawner.user.name][key])
    for key in ("PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PLATFORM_DIRS",
                "PYDEVD_DISABLE_FILE_VALIDATION", "PYTHONWARNINGS")
}}
'''

# As root: each user's JupyterLab in their own view of the machine (tools/hub/local.py, view and enter).
ROOT_SPAWNER = '''\
import os
import pwd

from jupyterhub.spawner import LocalProcessSpawner

ENTER = {enter!r}


class CourseSpawner(LocalProcessSpawner):
    """JupyterHub's LocalProcessSpawner, starting each JupyterLab through
    tools/hub/local.py's `enter`: as root, it builds the user's view of the machine
    (a student sees nothing of the repository but .venv and the exchange),
    then becomes the user and runs JupyterLab."""

    def make_preexec_fn(self, name):
        home = pwd.getpwnam(name).pw_dir
        return lambda: os.chdir(home)  # still root here: `enter` becomes the user

    async def start(self):
        jupyterlab = list(self.cmd)
        self.cmd = [*ENTER, self.user.name, "--", *jupyterlab]
        try:
            return await super().start()
        finally:
            self.cmd = jupyterlab


c.JupyterHub.spawner_class = CourseSpawner
'''


def write_hub_config(ip="127.0.0.1", port=8000, hub_port=None, api_port=None):
    path = HUB / "jupyterhub_config.py"
    environment = {user: user_environment(user) for user in USERS}
    if is_root():
        spawner = ROOT_SPAWNER.format(enter=enter_program())
    else:
        spawner = ('c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"\n'
                   f"c.SimpleLocalProcessSpawner.home_dir_template = {str(HOMES / '{username}')!r}\n")
    write_file(path, HUB_CONFIG.format(
        hub=str(HUB), environment=json.dumps(environment), url=f"http://{ip}:{port}",
        hub_port=hub_port or port + 81, api_port=api_port or port + 1, proxy=str(PROXY),
        password=PASSWORD, users=sorted(USERS), spawner=spawner,
        singleuser=str(BIN / "jupyterhub-singleuser"),
    ), mode=0o600)
    return path


def setup(ip="127.0.0.1", port=8000, hub_port=None, api_port=None):
    """Everything the hub needs, under _build/hub and TERM; return the command that runs it.

    Nothing is released: the instructor releases each assignment when he
    chooses (releasing.md). The class list is imported in the background: call
    wait_for_setup() before relying on it.
    """
    HUB.mkdir(parents=True, exist_ok=True)
    os.chmod(HUB, 0o755)
    TERM.mkdir(exist_ok=True)
    os.chmod(TERM, 0o755)
    check_venv_scripts()
    ensure_proxy()
    if is_root():
        check_shared()
        ensure_users()
    else:
        for user in USERS:
            home(user).mkdir(parents=True, exist_ok=True)
    EXCHANGE.mkdir(exist_ok=True)
    os.chmod(EXCHANGE, 0o1777)  # every user writes here (nbgrader's exchange)
    write_user_config()
    if is_root():
        check_views()
    prepare_course()
    # Creating the gradebook takes a while: it goes on while the hub starts.
    in_background(import_students)
    config = write_hub_config(ip, port, hub_port, api_port)
    return [str(BIN / "jupyterhub"), "-f", str(config)]


def wait_until_up(url, process=None, timeout=60):
    """Wait for the hub to answer at ``url`` (its base URL)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise HubError(f"JupyterHub exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url.rstrip("/") + "/hub/api", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise HubError(f"JupyterHub did not answer at {url} within {timeout} s")


def start(command, log=None):
    """Start JupyterHub (in _build/hub) in the background; return the process."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.Popen(command, cwd=HUB, env=env, stdout=log, stderr=subprocess.STDOUT if log else None)


def stop(process):
    """Stop JupyterHub (and with it every user's JupyterLab), then, as root,
    remove the Unix users it created (not their homes: remove_users)."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if is_root():
        remove_users()


def _interrupt(signum, frame):
    raise KeyboardInterrupt


# --- clean-up: the term's data archived, then removed -------------------------------

#: A file in a home larger than this is left out of the archive (and named): a notebook's output could be huge.
BACKUP_FILE_BYTES = 256 * 1024**2


def hub_running():
    """The process id of a JupyterHub that runs from HUB, or None."""
    try:
        pid = int((HUB / "jupyterhub.pid").read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"jupyterhub" in command else None


def back_up(target_folder=None):
    """Archive the term's data (TERM: every home of the hub, with the
    instructor's course folder, and the exchange) into
    ``BACKUPS/term-<UTC time>.tar.gz``, readable by its owner only; return its
    path. Links are archived as links, never followed; what is neither a
    folder, a regular file nor a link, and files over BACKUP_FILE_BYTES, are
    left out and reported. The archive is read back entirely before this returns."""
    import tarfile

    target_folder = Path(target_folder or BACKUPS)
    target_folder.mkdir(parents=True, exist_ok=True)
    os.chmod(target_folder, 0o700)
    target = target_folder / time.strftime("term-%Y%m%d-%H%M%S.tar.gz", time.gmtime())
    left_out = []

    def keep(info):
        if info.isdir() or info.issym() or (info.isfile() and info.size <= BACKUP_FILE_BYTES):
            return info
        left_out.append(f"{info.name} ({'over 256 MiB' if info.isfile() else 'not a file'})")
        return None

    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
        folders = [TERM]  # without recursion: a home may hold thousands of nested folders
        while folders:
            folder = folders.pop()
            archive.add(folder, arcname=str(folder.relative_to(TERM.parent)), recursive=False, filter=keep)
            if folder.is_dir() and not folder.is_symlink():
                folders.extend(sorted(folder.iterdir(), reverse=True))
    with tarfile.open(target) as archive:  # it reads back, whole
        members = archive.getmembers()
        for member in members:
            if member.isfile():
                with archive.extractfile(member) as data:
                    while data.read(1 << 20):
                        pass
    return target, len(members), left_out


def clean(out=sys.stdout):
    """``make hub-clean``: with the hub stopped, archive the term's data
    (back_up), then remove it (TERM), the users the hub created if any are
    left, and _build/hub. Return the archive's path."""
    pid = hub_running()
    if pid is not None:
        raise HubError(f"the hub is running (process {pid}): stop it (Ctrl-C in its terminal) before cleaning up")
    if is_root():
        remove_users()
    if not TERM.exists():
        print(f"no term's data in {TERM}: nothing to back up", file=out, flush=True)
        archive = None
    else:
        archive, count, left_out = back_up()
        print(f"the term's data ({TERM}: homes, course folder, gradebook, submissions, feedback, exchange) "
              f"is archived in {archive} ({count} entries; to look inside: tar -tzf {archive})", file=out, flush=True)
        for name in left_out:
            print(f"  left out of the archive: {name}", file=out, flush=True)
        from ..sandbox.bubblewrap import remove_tree

        remove_tree(TERM)
    shutil.rmtree(HUB, ignore_errors=True)
    print(f"removed {TERM} and {HUB}", file=out, flush=True)
    return archive


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.hub", description=__doc__.splitlines()[0])
    parser.add_argument("--ip", default="127.0.0.1", help="address to listen on (default: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port of the hub (default: 8000)")
    parser.add_argument("--clean", action="store_true",
                        help="archive the term's data into hub-backups/, then remove it (make hub-clean)")
    args = parser.parse_args(argv)
    if args.clean:
        try:
            clean()
        except HubError as error:
            print(f"make hub-clean: {error}", file=sys.stderr)
            return 1
        return 0
    # `kill` (SIGTERM) stops the hub as Ctrl-C does, and with it every user's JupyterLab.
    signal.signal(signal.SIGTERM, _interrupt)
    url = f"http://{'127.0.0.1' if args.ip in ('0.0.0.0', '') else args.ip}:{args.port}/"
    process = None
    try:
        process = start(setup(args.ip, args.port))
        wait_for_setup()
        wait_until_up(url, process, timeout=120)
        print(f"\nJupyterHub at {url}: log in as {INSTRUCTOR} (formgrader, course folder "
              f"{course_folder()}) or as a student ({', '.join(STUDENTS)}), password {PASSWORD!r}.\n"
              "Ctrl-C stops it.\n", flush=True)
        return process.wait()
    except HubError as error:
        print(f"make hub: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop(process)
