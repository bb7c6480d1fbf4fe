"""A local JupyterHub with the course on it, to see the course as students do.

Usage: ``python -m tools.hub [--ip 127.0.0.1] [--port 8000]`` (what ``make hub``
runs; instructor/hub.md explains it). It prepares everything under
``_build/hub/``, then runs JupyterHub in the foreground until Ctrl-C:

- JupyterHub from ``.venv`` (requirements.txt) and its proxy,
  ``configurable-http-proxy``, from npm at version ``PROXY_VERSION``, installed
  once into ``.venv/hub-proxy`` (needs ``node`` and ``npm`` from the system);
- one shared password (``PASSWORD``) for the instructor and the students
  (JupyterHub's SharedPasswordAuthenticator, which replaces the deprecated
  password of its DummyAuthenticator);
- every user's JupyterLab with nbgrader's extensions: the Assignments tab for
  everyone, the formgrader for the instructor only;
- nbgrader's exchange in ``_build/hub/exchange``, the course id
  ``self-attention``, and the instructor's course folder
  ``~instructor/self-attention``: the assignments' sources, their releases,
  and an ``nbgrader_config.py`` that reads the repository's and then sets the
  hub's exchange. Every assignment is released to the students at start.

Run as root, each user is a real Unix user (created when missing) and gets
their own JupyterLab as that user (JupyterHub's LocalProcessSpawner), in a view
of the machine of their own (``view``, ``enter``): a private mount namespace in
which the repository is an empty, read-only folder for a student, with only
``.venv``, the exchange and the students' Jupyter configuration put back in it,
and in which a closed folder on the way to the course's Python (a Python
installed under /root, say) is replaced the same way, for everyone, so that no
home is ever opened. The instructor's course folder lives in his private home.
Nothing outside the namespaces changes, and the views end with their processes.
Run as anyone else, every server runs as you, with its home folder under
``_build/hub/home/<user>`` (SimpleLocalProcessSpawner): the same hub, without
the separation between users.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from .paths import BIN, EXERCISES, ROOT, SOLUTIONS

HUB = ROOT / "_build" / "hub"
EXCHANGE = HUB / "exchange"
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

CREATED_USERS = HUB / "created-users.json"
STUDENT_CONFIG = HUB / "jupyter-student"
INSTRUCTOR_CONFIG = HUB / "jupyter-instructor"


class HubError(RuntimeError):
    """Something the machine lacks; the message says what to do."""


def is_root():
    return os.geteuid() == 0


def home(user):
    """The user's home folder (and their JupyterLab's root)."""
    if is_root():
        return Path(pwd.getpwnam(user).pw_dir)
    return HUB / "home" / user


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


def ensure_users():
    """As root: create the hub's users that do not exist (recorded for remove_users)."""
    created = json.loads(CREATED_USERS.read_text()) if CREATED_USERS.is_file() else []
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            print(f"creating the Unix user {user}", flush=True)
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", user], check=True)
            os.chmod(home(user), 0o700)  # private, as on a real hub (setup.md)
            created.append(user)
    CREATED_USERS.write_text(json.dumps(sorted(set(created))))


def remove_users():
    """As root: remove the users that ensure_users created, with their home folders."""
    if not CREATED_USERS.is_file():
        return
    for user in json.loads(CREATED_USERS.read_text()):
        subprocess.run(["pkill", "-KILL", "-u", user], check=False)
        subprocess.run(["userdel", "--remove", user], check=False, stderr=subprocess.DEVNULL)
    CREATED_USERS.unlink()


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


def build_view(covered, shown, private_tmp):
    """As root, in this process: a mount namespace of its own, in which each
    ``covered`` folder is replaced by an empty read-only folder with the
    ``shown`` folders bound back in (read-only unless writable), and, with
    ``private_tmp``, /tmp and /dev/shm empty and of its own. Nothing reaches
    the rest of the machine; the namespace ends with the last process in it."""
    _syscall("unshare", CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # mounts made here stay here
    # Handles on what is shown, taken in the new namespace before the covers hide it.
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in shown}
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
    build_view(*view(user), private_tmp=user != INSTRUCTOR)
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
                           f"(tools/hub.py, view; it needs mount namespaces, which some containers forbid even "
                           f"to root: run `make hub` as another user for a hub without separate users):\n"
                           f"{proc.stderr}")


def enter_program():
    """The program that runs ``enter``: .venv's Python, isolated (-I) from the
    environment and from the user's own Python packages, since it runs as root."""
    code = "import sys; from tools.hub import enter; enter(sys.argv[1:])"
    return [str(BIN / "python"), "-I", "-c", code]


def enter_command(user):
    """The start of a command line that runs what follows as ``user``, in their view."""
    return [*enter_program(), user, "--"]


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
    lines = ["# Written by tools/hub.py for the course's JupyterHub.", "c = get_config()  # noqa: F821"]
    lines += [f"c.{name} = {value!r}" for name, value in settings.items()]
    return "\n".join(lines) + "\n"


def write_user_config():
    """The Jupyter configuration folders of students and instructor (JUPYTER_CONFIG_PATH)."""
    common = {"Exchange.root": str(EXCHANGE), "CourseDirectory.course_id": COURSE_ID}
    student = STUDENT_CONFIG
    write_file(student / "nbgrader_config.py", nbgrader_settings(**common))
    # Students see the Assignments tab only: no formgrader, no assignment creation, no course list.
    disabled = {f"@jupyter/nbgrader:{name}": True for name in INSTRUCTOR_ONLY_LAB}
    write_file(student / "labconfig" / "page_config.json", json.dumps({"disabledExtensions": disabled}, indent=1))
    off = {f"nbgrader.server_extensions.{name}": False for name in ("formgrader", "course_list")}
    server_config = {"ServerApp": {"jpserver_extensions": off}}
    write_file(student / "jupyter_server_config.json", json.dumps(server_config, indent=1))
    write_file(INSTRUCTOR_CONFIG / "nbgrader_config.py",
               INSTRUCTOR_NBGRADER_CONFIG.format(course_config=str(course_folder() / "nbgrader_config.py")))


INSTRUCTOR_NBGRADER_CONFIG = '''\
"""The instructor's nbgrader configuration on the course's JupyterHub (written by tools/hub.py).

The course folder's, for every nbgrader the instructor runs. The formgrader
reads only the Jupyter configuration folders, not the course folder's file: it
gets the course's settings (the sandbox, the feedback, its Autograde button
pointed at `make grade`) from here.
"""
c = get_config()  # noqa: F821
load_subconfig({course_config!r})  # noqa: F821
'''


COURSE_CONFIG = '''\
"""The course folder of the course's JupyterHub (written by tools/hub.py at each start).

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
    at each start, and the configuration; grades and submissions are kept."""
    folder = course_folder()
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in (("solutions", SOLUTIONS), ("exercises", EXERCISES)):
        shutil.copytree(source, folder / name, dirs_exist_ok=True)
    (folder / "nbgrader_config.py").write_text(COURSE_CONFIG.format(
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


def release(names):
    """Release assignments to the exchange, as the instructor (nbgrader release_assignment)."""
    for name in names:
        as_instructor("release_assignment", name, "--force")


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
"""JupyterHub for the course, written by tools/hub.py (instructor/hub.md)."""
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

# As root: each user's JupyterLab in their own view of the machine (tools/hub.py, view and enter).
ROOT_SPAWNER = '''\
import os
import pwd

from jupyterhub.spawner import LocalProcessSpawner

ENTER = {enter!r}


class CourseSpawner(LocalProcessSpawner):
    """JupyterHub's LocalProcessSpawner, starting each JupyterLab through
    tools/hub.py's `enter`: as root, it builds the user's view of the machine
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
                   f"c.SimpleLocalProcessSpawner.home_dir_template = {str(HUB / 'home' / '{username}')!r}\n")
    write_file(path, HUB_CONFIG.format(
        hub=str(HUB), environment=json.dumps(environment), url=f"http://{ip}:{port}",
        hub_port=hub_port or port + 81, api_port=api_port or port + 1, proxy=str(PROXY),
        password=PASSWORD, users=sorted(USERS), spawner=spawner,
        singleuser=str(BIN / "jupyterhub-singleuser"),
    ), mode=0o600)
    return path


def setup(ip="127.0.0.1", port=8000, hub_port=None, api_port=None, released=None):
    """Everything the hub needs, under _build/hub; return the command that runs it.

    ``released``: the assignments to release to the students (default: all of
    them). The class list and the release go on in the background: call
    wait_for_setup() before relying on them.
    """
    HUB.mkdir(parents=True, exist_ok=True)
    os.chmod(HUB, 0o755)
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
    # Creating the gradebook and releasing take a while: they go on while the hub starts.
    in_background(import_students)
    in_background(release, assignments() if released is None else released)
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


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ip", default="127.0.0.1", help="address to listen on (default: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port of the hub (default: 8000)")
    args = parser.parse_args(argv)
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
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
