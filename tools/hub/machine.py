"""What the machine must provide for the hub, checked (or installed) before it
starts: JupyterHub's proxy (``ensure_proxy``), a .venv made in this repository
(``check_venv_scripts``), and, as root, the course's Python readable by every
user (``check_shared``) and startable in each user's view (``check_views``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from ..paths import BIN, ROOT
from .users import INSTRUCTOR, STUDENTS, HubError
from .views import as_user, python_installation

#: configurable-http-proxy, JupyterHub's proxy, from npm (kept out of `make clean`'s way).
PROXY_VERSION = "5.3.0"
PROXY_DIR = ROOT / ".venv" / "hub-proxy"
PROXY = PROXY_DIR / "node_modules" / ".bin" / "configurable-http-proxy"


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


def check_views():
    """As root: the instructor and a student can start the course's Python in
    their view; raise HubError, with what went wrong, if one cannot."""
    for user in (INSTRUCTOR, STUDENTS[0]):
        proc = as_user(user, [BIN / "python", "-c", ""], check=False, capture_output=True)
        if proc.returncode != 0:
            raise HubError(f"{user} cannot start the course's Python in their view of the machine "
                           f"(tools/hub/views.py; it needs mount namespaces, which some containers forbid even "
                           f"to root: run `make hub` as another user for a hub without separate users):\n"
                           f"{proc.stderr}")


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
