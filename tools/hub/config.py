"""The configuration files the hub writes at each start: each kind of user's
Jupyter configuration folder (``write_user_config``: nbgrader's exchange, the
extensions a student does not get, the terminals' shell) and JupyterHub's own
configuration (``write_hub_config``: the shared password, the spawner, each
user's environment; as root, a spawner that starts every JupyterLab in its
user's view)."""

from __future__ import annotations

import json
import os

from ..paths import BIN
from .machine import PROXY
from .users import (COURSE_ID, EXCHANGE, HOMES, HUB, INSTRUCTOR_CONFIG, PASSWORD, STUDENT_CONFIG, USERS,
                    course_folder, is_root, user_environment)
from .views import enter_program

# The lab extensions and server extension of nbgrader that only the instructor needs.
INSTRUCTOR_ONLY_LAB = ("formgrader", "create-assignment", "course-list")


def write_file(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)


def nbgrader_settings(**settings):
    lines = ["# Written by tools/hub/config.py for the course's JupyterHub.", "c = get_config()  # noqa: F821"]
    lines += [f"c.{name} = {value!r}" for name, value in settings.items()]
    return "\n".join(lines) + "\n"


#: What a terminal in JupyterLab reads at start (in place of ~/.bashrc, which it reads first): JupyterLab
#: would otherwise start a login shell, whose /etc/profile (Debian's) sets a PATH without the course's Python.
TERMINAL_RC = """\
# The shell of a terminal in JupyterLab on the course's hub (written by tools/hub/config.py).
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
"""The instructor's nbgrader configuration on the course's JupyterHub (written by tools/hub/config.py).

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


HUB_CONFIG = '''\
"""JupyterHub for the course, written by tools/hub/config.py (instructor/hub.md)."""
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

# As root: each user's JupyterLab in their own view of the machine (tools/hub/views.py, view and enter).
ROOT_SPAWNER = '''\
import os
import pwd

from jupyterhub.spawner import LocalProcessSpawner

ENTER = {enter!r}


class CourseSpawner(LocalProcessSpawner):
    """JupyterHub's LocalProcessSpawner, starting each JupyterLab through
    tools/hub/views.py's `enter`: as root, it builds the user's view of the machine
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
