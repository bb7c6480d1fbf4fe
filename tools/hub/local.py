"""A local JupyterHub with the course on it, to see the course as students do.

Usage: ``python -m tools.hub [--ip 127.0.0.1] [--port 8000]`` (what ``make hub``
runs; instructor/hub.md explains it), and ``python -m tools.hub --clean``
(``make hub-clean``). It prepares the hub under ``_build/hub/`` and the term's
data under ``hub-term/`` (TERM), then runs JupyterHub in the foreground until
Ctrl-C:

- JupyterHub from ``.venv`` (requirements.txt) and its proxy,
  ``configurable-http-proxy``, from npm at version ``PROXY_VERSION``, installed
  once into ``.venv/hub-proxy`` (needs ``node`` and ``npm`` from the system;
  machine.py checks what the machine must provide);
- one shared password (``PASSWORD``) for the instructor and the students
  (JupyterHub's SharedPasswordAuthenticator; the users, their homes and the
  term's folders: users.py);
- every user's JupyterLab with nbgrader's extensions: the Assignments tab for
  everyone, the formgrader for the instructor only (his server may be framed
  by pages of its own origin, so that JupyterLab shows the formgrader in a
  tab); terminals that start bash with the course's environment first on PATH
  (the configuration files: config.py);
- nbgrader's exchange in ``hub-term/exchange``, the course id
  ``self-attention``, and the instructor's course folder
  ``~instructor/self-attention``: the assignments' sources and releases,
  copied at each start, and an ``nbgrader_config.py``, written once, that reads
  the repository's and then sets the hub's exchange (course.py). Nothing is
  released: the instructor releases each assignment when he chooses.

Run as root, each user is a real Unix user, created at start (home in
``hub-term/home/<user>``, kept) and removed when the hub stops, and gets
their own JupyterLab as that user (LocalProcessSpawner), in a view of the
machine of their own (views.py): a private mount namespace in which
the repository is an empty, read-only folder for a student, with only
``.venv``, the exchange, the students' Jupyter configuration and her own home
put back in it, and in which a closed folder on the way to the course's Python
(a Python installed under /root, say) is replaced the same way, for everyone,
so that no home is ever opened. Nothing else outside the repository changes,
and the views end with their processes. Run as anyone else, every server runs
as you, with its home folder under ``hub-term/home/<user>``
(SimpleLocalProcessSpawner): the same hub, without the separation between users.

``--clean`` archives hub-term/ into ``hub-backups/term-<time>.tar.gz`` and only
then removes it (cleanup.py).

This module is the program: ``setup`` prepares all of the above, in order,
``start`` runs JupyterHub, ``wait_until_up`` waits for it to answer and
``stop`` stops it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from ..paths import BIN
from .cleanup import clean
from .config import write_hub_config, write_user_config
from .course import import_students, prepare_course
from .machine import check_shared, check_venv_scripts, check_views, ensure_proxy
from .users import (EXCHANGE, HUB, INSTRUCTOR, PASSWORD, STUDENTS, TERM, USERS, HubError, course_folder,
                    ensure_users, home, is_root, remove_users)

#: Set-up steps still running in the background, while the hub starts (wait_for_setup).
PENDING = []
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
