"""The instructor's course folder on the hub (``~instructor/self-attention``):
the repository's sources and releases, copied at each start, a configuration
written once, and the class list imported into a new gradebook."""

from __future__ import annotations

import shutil
import subprocess

from ..paths import BIN, EXERCISES, ROOT, SOLUTIONS
from .users import COURSE_ID, EXCHANGE, INSTRUCTOR, STUDENT_NAMES, STUDENTS, HubError, course_folder, is_root
from .views import as_user

COURSE_CONFIG = '''\
"""The course folder of the course's JupyterHub (written by tools/hub/course.py when it
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
