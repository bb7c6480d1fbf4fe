"""Promise: the attacks whose outcome could depend on the grader's privileges fail for a grader that is not root too.

test_submissions_cannot_harm_grading.py grades as root: the sandbox then runs each notebook as a user of its own.
Graded by an ordinary user (where the kernel allows unprivileged user namespaces, README.md), every notebook runs
with that user's own uid inside its namespaces: the user who owns the course folder, the gradebook, the solutions,
a private file of the home folder and every process of the run. This module grades one small run as such a user
(made by the test, removed after it): `python -m tools.grading` started with that user's uid, HOME and course folder,
the repository and its .venv readable but not writable. The attacks it holds are those whose result could differ:
reading the solution, writing over the gradebook or another student's notebook through links, links to a private
file of the grader's (0600, the grader's own), a hard link to the solution planted in the submitted folder (the
grader owns the solution: the kernel lets anyone hard-link a file they own), changing a mode through links, the fork
bomb (Linux counts the processes of one uid), a process that tries to outlive grading, the grader's environment
secrets, and a notebook that signals, and reads the /proc files of, every process it can see (all of the grader's
uid). Each fails as in the root run, beside two honest submissions graded as usual.
"""

import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import nbformat
import pytest

from tests.plugins.environment import require_sandbox
from tests.test_submissions_cannot_harm_grading import (
    ANSWER, ASSIGNMENT, FEEDBACK_FILES, FULL_POINTS, HONEST, HOST_SECRET, SECRETS, assert_attack_failed, attacks,
    files_of, grade_course, integrity_rows, processes_with, report, scores_of, text_of_everything)
from tests.test_term_runs_through_the_exchange import Namespace, make_user, remove_user
from tools.course_settings import Switches
from tools.paths import BIN, ROOT
from tools.sandbox.bubblewrap import PROCESS_LIMIT

GRADER = "course-grader-test"  # the ordinary user who grades (made here if missing)
MARK = "made by tests/test_submissions_cannot_harm_a_grader_that_is_not_root.py"
SBIN_PATH = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"

# The root run's attacks whose outcome could depend on who grades.
CHOSEN = ("reads-solution", "overwrites-gradebook", "links-to-secrets", "writes-over-gradebook",
          "writes-over-other-student", "chmods-through-links", "fork-bomb", "outlives-grading", "prints-secrets")

# A notebook that, for 3 s, kills every process whose number it sees but itself and its sandbox's init (all of them
# the grader's uid, if it saw any: other students' kernels started since) and reads their environment and command
# line; it earns the points only if one signal got through, one environment could be read, or a command line showed
# the run's folders. (/proc shows numbers as the warm template sees them; the notebook's own are among them.)
SIGNALS_AND_READS = """
import os as _os, signal as _signal, time as _time
_got, _seen = [], set()
_mine = {_os.readlink("/proc/self"), open("/proc/self/status").read().split("PPid:")[1].split()[0]}
_end = _time.monotonic() + 3
while _time.monotonic() < _end:
    for _pid in [_p for _p in _os.listdir("/proc") if _p.isdigit() and _p not in _mine]:  # (but itself and its init)
        _seen.add(_pid)
        try:
            open(f"/proc/{_pid}/environ", "rb").read()
            _got.append(f"read the environment of {_pid}")
        except OSError:
            pass
        try:
            if b"nbgrader-grade-" in open(f"/proc/{_pid}/cmdline", "rb").read():
                _got.append(f"read the command line of {_pid}")
        except OSError:
            pass
        try:  # (by a handle on its /proc folder: a number alone names processes of this notebook's own PID namespace)
            _handle = _os.open(f"/proc/{_pid}", _os.O_RDONLY | _os.O_DIRECTORY)
            _signal.pidfd_send_signal(_handle, _signal.SIGKILL)
            _got.append(f"killed {_pid}")
        except OSError:
            pass
    _time.sleep(0.1)
print("saw", len(_seen), "other processes")
print("got", _got)
if _got:
""" + "\n".join("    " + line for line in ANSWER.splitlines()) + "\n"


def missing():
    """Why this run cannot be made here, or None."""
    if os.geteuid() != 0:
        return "making the grading user needs root (run this module as root)"
    lacking = [tool for tool in ("useradd", "userdel", "setpriv", "unshare", "nsenter")
               if shutil.which(tool, path=SBIN_PATH) is None]
    if lacking:
        return f"{' and '.join(lacking)} not found"
    return None


def make_grader(home: Path):
    make_user(GRADER, home, mark=MARK, system=True)
    return pwd.getpwnam(GRADER)


def processes_of(uid):
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def give(path: Path, user):
    """Make ``path`` and everything below it ``user``'s (links themselves, never what they name)."""
    for entry in [path, *path.rglob("*")]:
        os.chown(entry, user.pw_uid, user.pw_gid, follow_symlinks=False)


@pytest.fixture(scope="module")
def graded_by_user():
    require_sandbox("the sandbox tests")
    why = missing()
    if why:
        pytest.skip(why)
    base = Path(tempfile.mkdtemp(prefix="nonroot-grading-"))
    base.chmod(0o711)  # the grader's home below it is 0700 and theirs
    home = base / "home"
    try:
        user = make_grader(home)
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    namespace = None
    try:
        secret = home / "secret.txt"  # a private file of the grader's: what matters when the grader is not root
        secret.write_text(HOST_SECRET)
        os.chown(secret, user.pw_uid, user.pw_gid)
        secret.chmod(0o600)
        # The course's Python may live in a folder the user cannot enter (here, root's home): a private mount
        # namespace opens the way to it and to the repository, and to nothing else (as the exchange test does).
        python_home = Path(os.path.realpath(BIN / "python")).parent.parent
        namespace = Namespace([ROOT, python_home, Path(sys.base_prefix)], base / "stage")
        command = [*namespace.enter(ROOT), shutil.which("setpriv", path=SBIN_PATH), f"--reuid={user.pw_uid}",
                   f"--regid={user.pw_gid}", "--clear-groups", "--"]
        can = subprocess.run([*command, shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--unshare-user",
                              "--unshare-pid", "--proc", "/proc", "true"], capture_output=True, text=True)
        if can.returncode != 0:
            pytest.skip(f"this kernel refuses user namespaces to an ordinary user: {can.stderr.strip()}")
        token = f"outlives-{uuid.uuid4().hex}"
        cells = {name: code for name, code in attacks(home / "course", 9, token, home).items() if name in CHOSEN}
        cells["signals-and-reads"] = SIGNALS_AND_READS
        cells["hard-links-the-solution"] = ANSWER

        def plant(course):
            with open(course.root / "nbgrader_config.py", "a") as config:  # (none of these attacks loops: a cell's
                config.write("\nc.Execute.timeout = 20\n")  # limit need not be short, and 5 s fails at a high load)
            folder = course.root / "submitted" / "links-to-secrets" / ASSIGNMENT
            os.symlink(secret, folder / "data.txt")
            notebook = course.root / "submitted" / "hard-links-the-solution" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            notebook.unlink()
            os.link(course.root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)
            give(course.root, user)

        env = {"PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "USER": GRADER, "LOGNAME": GRADER,
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", **SECRETS,
               **Switches.environment_of()}  # (GRADING_SANDBOX=off shows these tests fail on stock nbgrader)
        course, proc, scores = grade_course(home / "course", cells, env=env, planted=plant, prefix=command)
        survivors = processes_with(token)
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
        yield {"course": course, "proc": proc, "scores": scores, "attacks": cells, "home": home, "user": user,
               "survivors": survivors}
    finally:
        if namespace is not None:
            namespace.close()
        for pid in processes_of(user.pw_uid):  # (none, if the run ended as it should)
            os.kill(pid, signal.SIGKILL)
        remove_user(GRADER)
        shutil.rmtree(base, ignore_errors=True)


def outputs_of(course, student) -> str:
    """What the graded notebook of ``student`` printed and raised, as text."""
    notebook = nbformat.read(course.root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    return "\n".join(output.get("text", "") or f"{output.get('ename')}: {output.get('evalue')}"
                     for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs
                     if output.output_type in ("stream", "error"))


def test_the_run_is_the_ordinary_users(graded_by_user):
    """What the run made is the grading user's (it graded as them), and the repository is not theirs."""
    course, user = graded_by_user["course"], graded_by_user["user"]
    assert (course.root / "gradebook.db").stat().st_uid == user.pw_uid, report(graded_by_user["proc"])
    assert (course.root / "feedback").stat().st_uid == user.pw_uid
    for path in (ROOT, BIN):
        info = path.stat()
        assert info.st_uid != user.pw_uid and not info.st_mode & stat.S_IWOTH, path


def test_honest_submissions_are_graded_as_usual(graded_by_user):
    assert scores_of(graded_by_user, "solution")["score"] == FULL_POINTS
    assert scores_of(graded_by_user, "blank")["score"] == 0
    rows = integrity_rows(graded_by_user)
    for student in HONEST:
        assert rows[student]["flagged"] == "no", rows[student]
        assert set(files_of(graded_by_user["course"], "feedback", student)) == FEEDBACK_FILES
    assert rows["solution"]["verified_score"] == str(FULL_POINTS)


@pytest.mark.parametrize("student", ["reads-solution", "signals-and-reads", "fork-bomb", "prints-secrets"])
def test_attacks_on_the_graders_own_files_processes_and_secrets_earn_nothing(graded_by_user, student):
    assert_attack_failed(graded_by_user, student)


def test_links_reach_nothing_of_the_graders(graded_by_user):
    """Links to the solution, the gradebook, another student's notebook and the grader's private file, left in the
    kernel's folder or in place of its notebook: nothing read, nothing written over, no mode changed."""
    course, home = graded_by_user["course"], graded_by_user["home"]
    for student in ("links-to-secrets", "overwrites-gradebook", "writes-over-gradebook", "writes-over-other-student",
                    "chmods-through-links"):
        assert scores_of(graded_by_user, student)["score"] == FULL_POINTS, (student, outputs_of(course, student))
        assert set(files_of(course, "feedback", student)) == FEEDBACK_FILES, student
        for kind in ("feedback", "autograded"):
            for name, info in files_of(course, kind, student).items():
                assert stat.S_ISREG(info.st_mode), f"{kind}/{student}/{name} is not a regular file"
    everything = text_of_everything(course, "feedback") + text_of_everything(course, "autograded")
    assert HOST_SECRET.encode() not in everything
    assert b"SQLite format 3" not in everything
    assert stat.S_IMODE((home / "secret.txt").stat().st_mode) == 0o600
    for path, data in course.submitted_before.items():
        assert path.read_bytes() == data, f"{path} changed during grading"


def test_a_hard_link_to_the_graders_solution_is_refused(graded_by_user):
    lines = [line for line in graded_by_user["proc"].stdout.splitlines()
             if " hard-links-the-solution: NOT GRADED" in line]
    assert lines and "is a hard link" in lines[0], report(graded_by_user["proc"])
    assert "hard-links-the-solution" not in graded_by_user["scores"]
    row = integrity_rows(graded_by_user)["hard-links-the-solution"]
    assert row["flagged"] == "yes", row


def test_no_signal_secret_or_process_gets_out(graded_by_user):
    """The fork bomb stops below the process limit although every sandbox runs as the grader's uid; no process
    outlives grading; no secret of the grader's environment reaches a notebook or a feedback page."""
    course = graded_by_user["course"]
    printed = outputs_of(course, "fork-bomb")
    forked = int(printed.split("forked ", 1)[1].split("\n", 1)[0])
    assert forked < PROCESS_LIMIT, f"the sandbox let {forked} processes start"
    assert scores_of(graded_by_user, "outlives-grading")["score"] == FULL_POINTS
    assert not graded_by_user["survivors"], f"processes left running after grading: {graded_by_user['survivors']}"
    everything = text_of_everything(course, "autograded") + text_of_everything(course, "feedback")
    for name, value in SECRETS.items():
        assert value.encode() not in everything, f"{name} reached a notebook"
    printed = outputs_of(course, "signals-and-reads")
    assert "got []" in printed, printed
    print(printed.split("\n", 1)[0])  # how many processes of the grader's uid it saw (other kernels), with -s
