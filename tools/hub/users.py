"""The hub's users and the places it keeps for them: who they are (the
instructor and three students, one shared password), where their homes and the
term's data are (TERM, under the repository, kept by ``make clean``) and where
the hub's own files are (HUB, under _build), the Unix
users the hub creates at start and removes at stop when it runs as root
(``ensure_users``, ``remove_users``), and the environment every user's
JupyterLab and commands start with (``user_environment``)."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import time
from pathlib import Path

from ..course_settings import Switches
from ..paths import BIN, ROOT

#: The hub's own files: its configuration, database and pid file, and the Jupyter configuration of its users.
HUB = ROOT / "_build" / "hub"
#: The term's data: what the hub's users made (their homes, with the instructor's course folder) and the
#: exchange. Outside _build, so that `make clean` keeps it; `make hub-clean` backs it up before removing it.
TERM = ROOT / "hub-term"
EXCHANGE = TERM / "exchange"
HOMES = TERM / "home"

COURSE_ID = "self-attention"
INSTRUCTOR = "instructor"
STUDENTS = ("ada", "alan", "grace")
USERS = (INSTRUCTOR, *STUDENTS)
PASSWORD = "attention"  # SharedPasswordAuthenticator wants at least 8 characters
STUDENT_NAMES = {"ada": ("Ada", "Lovelace"), "alan": ("Alan", "Turing"), "grace": ("Grace", "Hopper")}

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
        # GRADING_SANDBOX=off (grading without bubblewrap, tests/plugins/environment.py) reaches `make grade` too; no
        # other switch does (a student's environment must never hold a VERIFY_SEED).
        **Switches.environment_of(names=("GRADING_SANDBOX",)),
    }
