"""Promise: a whole term runs through nbgrader's exchange as the instructor guide says,
with real, separate Unix users.

An instructor and two students, each a Unix user of their own with a private home
(as on a JupyterHub with local users), run the guide's commands in the guide's
order, with the guide's configuration:

- the administrator makes the exchange (world-writable, sticky) and the course's
  folder in it, and writes the system-wide nbgrader_config.py (instructor/setup.md);
- the instructor sets the late penalty, releases ex01_by_hand; both students fetch it;
- ada submits twice (the last submission counts), alan after the due date;
- the instructor collects, runs `make grade`, releases the feedback; each student
  fetches their own.

Then it checks: the collected submissions carry their timestamps; the late one is
flagged and loses what the guide's penalty takes; grades.csv holds the expected
grades; each student received exactly their own feedback; and neither student can
list the exchange's submissions or feedback, nor read the other's files (tried as
that student: PermissionError).

How it stays a test, not an installation:

- The users are created for the test and removed at the end. That needs root: run
  as root, the test does it all itself; run by a user with passwordless sudo (as on
  GitHub's runners), it runs the term as root through `sudo` (this module's
  `__main__`) and checks what that run observed. Otherwise it skips, saying how to
  run it; under CI=true it fails instead.
- The exchange, the homes and the course folder live in a fresh folder under /tmp,
  not in /srv or /home. The system-wide configuration is the guide's file, word for
  word but for the exchange's path, in a folder that JUPYTER_CONFIG_PATH adds to
  Jupyter's configuration path instead of /etc/jupyter: a test must not write to
  /etc.
- The due date is recorded with the guide's command at the moment between ada's
  submissions and alan's: the deadline passes there without waiting for a clock
  (the guide: record it any time before you collect; running the command again
  changes it).
- The students and the instructor run the repository's .venv, and the clone or the
  Python the venv was made from may sit in a folder that other users cannot enter
  (/root, mode 700; a runner's home, mode 750). Every command of the term therefore
  runs in a private mount namespace (made once, entered with nsenter) in which each
  such folder, and every person's home folder on the way, is covered by an empty
  tmpfs that others may enter, holding bind mounts of just the entries on the way
  to the repository and to Python. Nothing of the machine changes: no mode is
  altered, nothing else of /root becomes visible, and the namespace ends with the
  test, even a killed one. Chosen over a copy of the environment (gigabytes, with
  torch) and over `chmod o+x` on those folders during the test, which changes the
  machine for everyone while it runs, is not undone if the test is killed, and
  races with anything else that changes the same modes.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS

ASSIGNMENT = "ex01_by_hand"
COURSE_ID = "self-attention"
GUIDE = ROOT / "instructor"
# Unix users made for the test, marked so that a run can remove what a crashed one left.
MARK = "self-attention term test"
INSTRUCTOR, ADA, ALAN = "nbterm-instructor", "nbterm-ada", "nbterm-alan"
# ada's last submission is the solution; alan's leaves task 1 (2 points) unanswered.
EXPECTED_RAW = {ADA: 10.0, ALAN: 7.0}

# The guide's commands, as the guide prints them. Each is checked to be in the guide,
# then run with the guide's example paths and names replaced by the test's.
ADMIN_EXCHANGE = "sudo install -d -m 1777 /srv/nbgrader/exchange"
ADMIN_COURSE = "sudo install -d -m 755 -o instructor /srv/nbgrader/exchange/self-attention"
PENALTY = 'c.LateSubmissionPlugin.penalty_method = "zero"'
DUEDATE = 'nbgrader db assignment add ex01_by_hand \\\n    --duedate="2027-02-12 17:00:00 Europe/London"'
RELEASE = "nbgrader release_assignment ex01_by_hand"
FETCH = "nbgrader fetch_assignment ex01_by_hand"
SUBMIT = "nbgrader submit ex01_by_hand"
COLLECT = "nbgrader collect ex01_by_hand"
GRADE = "make grade COURSE=$HOME/attention-2027"
RELEASE_FEEDBACK = "nbgrader release_feedback ex01_by_hand"
FETCH_FEEDBACK = "nbgrader fetch_feedback ex01_by_hand"
SYSTEM_CONFIG = "/etc/jupyter/nbgrader_config.py"

TIMINGS: dict[str, float] = {}


def guide_text():
    return "\n".join(p.read_text() for p in sorted(GUIDE.glob("*.md")))


def system_config_from_guide():
    """The code block of instructor/setup.md that starts with '# /etc/jupyter/nbgrader_config.py'."""
    text = (GUIDE / "setup.md").read_text()
    found = re.search(r"```python\n(# " + re.escape(SYSTEM_CONFIG) + r"\n.*?)```", text, re.DOTALL)
    assert found, f"instructor/setup.md shows no {SYSTEM_CONFIG}"
    return found.group(1)


# --- users and permissions ----------------------------------------------------


SBIN_PATH = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"


def root_tools_missing():
    tools = ("useradd", "userdel", "runuser", "unshare", "nsenter")
    return [tool for tool in tools if shutil.which(tool, path=SBIN_PATH) is None]


def can_sudo():
    if shutil.which("sudo") is None:
        return False
    return subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0


def remove_user(name):
    subprocess.run([shutil.which("userdel", path=SBIN_PATH) or "userdel", name], capture_output=True)


def make_user(name, home: Path, *, mark=MARK, system=False):
    """A user of our own, ``name``, with a private ``home``, marked ``mark`` (a user of that name that another
    made is never touched); ``system``: a system account (a grader's, not a person's)."""
    try:
        existing = pwd.getpwnam(name)
    except KeyError:
        existing = None
    if existing is not None:
        if existing.pw_gecos != mark:
            pytest.fail(f"a user called {name} exists and was not made by this test: not touching it")
        remove_user(name)  # left by an interrupted run
    subprocess.run([shutil.which("useradd", path=SBIN_PATH) or "useradd", *(["--system"] if system else []),
                    "--comment", mark, "--home-dir", str(home), "--create-home", "--user-group",
                    "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True)
    home.chmod(0o700)  # a private home, as the guide asks of a hub (instructor/setup.md)


def folders_to_open(paths):
    """The folders on the way to ``paths`` that another user may not be able to enter:
    those without o+x, and home folders (their owner may change their mode at any time)."""
    homes = {Path(entry.pw_dir) for entry in pwd.getpwall()
             if (entry.pw_uid == 0 or entry.pw_uid >= 1000) and entry.pw_dir not in ("", "/")}
    found = set()
    for path in map(Path, paths):
        for folder in [path, *path.parents]:
            if folder != Path("/") and (folder in homes or not folder.stat().st_mode & stat.S_IXOTH):
                found.add(folder)
    return sorted(found, key=lambda folder: len(folder.parts))


def namespace_script(paths, stage: Path):
    """Shell commands that, in a new mount namespace, cover each folder of
    folders_to_open(paths) with a tmpfs of mode 755 holding bind mounts of only what
    lies on the way to ``paths`` (all of a folder that is itself one of ``paths``)."""
    lines, count = ["set -e"], 0
    paths = [Path(p) for p in paths]
    for folder in folders_to_open(paths):
        keep = set()
        for path in paths:
            if path == folder:
                keep |= set(os.listdir(folder))
            elif folder in path.parents:
                keep.add(path.relative_to(folder).parts[0])
        moves = []
        for name in sorted(keep):
            source, staged = folder / name, stage / str(count)
            count += 1
            make = "mkdir -p" if source.is_dir() else "touch"
            lines += [f"{make} {shlex.quote(str(staged))}",
                      f"mount --bind {shlex.quote(str(source))} {shlex.quote(str(staged))}"]
            moves.append((make, staged, source))
        lines.append(f"mount -t tmpfs -o mode=755,size=1m tmpfs {shlex.quote(str(folder))}")
        for make, staged, target in moves:
            lines += [f"{make} {shlex.quote(str(target))}",
                      f"mount --move {shlex.quote(str(staged))} {shlex.quote(str(target))}"]
    return "\n".join([*lines, "echo ready", "exec sleep infinity"])


class Namespace:
    """A long-lived private mount namespace (a `sleep` holds it) that commands enter."""

    def __init__(self, paths, stage: Path):
        stage.mkdir(mode=0o700)
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", namespace_script(paths, stage)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.holder.stdout.readline().strip() != "ready":
            self.holder.kill()
            raise AssertionError(f"could not make the mount namespace: {self.holder.stderr.read()[-2000:]}")

    def enter(self, cwd):
        """nsenter's arguments; entering a mount namespace moves to its "/", so --wd."""
        return ["nsenter", f"--mount=/proc/{self.holder.pid}/ns/mnt", f"--wd={cwd}", "--"]

    def close(self):
        self.holder.kill()
        self.holder.wait()


class Term:
    """The machine of the term: its users, exchange, system-wide configuration."""

    def __init__(self, base: Path, namespace: Namespace):
        self.base = base
        self.namespace = namespace
        self.exchange = base / "srv" / "nbgrader" / "exchange"
        self.config_dir = base / "etc" / "jupyter"  # stands for /etc/jupyter
        self.homes = {user: base / "home" / user for user in (INSTRUCTOR, ADA, ALAN)}
        self.course = self.homes[INSTRUCTOR] / "attention-2027"
        self.replacements = {
            "/srv/nbgrader/exchange": str(self.exchange),
            "-o instructor": f"-o {INSTRUCTOR}",
            "$HOME/attention-2027": str(self.course),
        }

    def command(self, guide_command, **more):
        """The guide's command with the test's paths, as an argument list."""
        text = guide_command.replace("\\\n", " ")
        for old, new in {**self.replacements, **more}.items():
            text = text.replace(old, new)
        argv = shlex.split(text)
        return argv[1:] if argv[0] == "sudo" else argv

    def env(self, user):
        return {
            "HOME": str(self.homes[user]), "USER": user, "LOGNAME": user,
            "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "JUPYTER_CONFIG_PATH": str(self.config_dir), "PYTHONWARNINGS": "ignore",
        }

    def start(self, user, argv, cwd=None):
        """Start ``argv`` as ``user`` (runuser), with their own HOME and nothing else of ours."""
        env = [f"{k}={v}" for k, v in self.env(user).items()]
        cwd = cwd or self.homes[user]
        command = [*self.namespace.enter(cwd), "runuser", "-u", user, "--", "env", "-i", *env, *argv]
        return subprocess.Popen(command, cwd=cwd, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def run_all(self, commands, step=None, check=True):
        """Run [(user, argv, cwd)] at the same time, as several people would; return the results."""
        start = time.monotonic()
        running = [(user, argv, self.start(user, argv, cwd)) for user, argv, cwd in commands]
        results = []
        for user, argv, proc in running:
            stdout, stderr = proc.communicate(timeout=600)
            results.append((user, subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)))
        if step:
            TIMINGS[step] = TIMINGS.get(step, 0.0) + time.monotonic() - start
        for user, done in results:
            if check and done.returncode != 0:
                raise AssertionError(f"{user}: {' '.join(done.args)} failed ({done.returncode}):\n"
                                     f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return [done for _, done in results]

    def run(self, user, argv, cwd=None, step=None, check=True):
        return self.run_all([(user, argv, cwd)], step=step, check=check)[0]

    def as_student_try(self, user, paths):
        """{path: outcome} of listing (a folder) or reading (a file) each path as ``user``."""
        code = (
            "import json, os, sys\n"
            "out = {}\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read()\n"
            "        out[p] = 'allowed'\n"
            "    except PermissionError:\n"
            "        out[p] = 'PermissionError'\n"
            "    except OSError as e:\n"
            "        out[p] = type(e).__name__\n"
            "print(json.dumps(out))\n"
        )
        proc = self.run(user, [str(BIN / "python"), "-c", code, *map(str, paths)])
        return json.loads(proc.stdout)


def write_notebook(term, user, notebook):
    """The student's work: their copy of the notebook, as they saved it."""
    path = term.homes[user] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nbformat.write(notebook, path)
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def chown_tree(path, user):
    entry = pwd.getpwnam(user)
    for folder, dirs, files in os.walk(path):
        for name in [folder, *(os.path.join(folder, f) for f in files + dirs)]:
            os.lchown(name, entry.pw_uid, entry.pw_gid)


def run_term():
    """Run the whole term (as root); return what the checks read, as plain data."""
    base = Path(tempfile.mkdtemp(prefix="term-", dir="/tmp"))
    base.chmod(0o755)
    python_home = Path(os.path.realpath(BIN / "python")).parent.parent
    namespace, users = None, []
    try:
        namespace = Namespace([ROOT, python_home, Path(sys.base_prefix)], base / "stage")
        term = Term(base, namespace)
        (base / "home").mkdir()
        for user, home in term.homes.items():
            make_user(user, home)
            users.append(user)
        return _run_term(term)
    finally:
        for user in users:
            remove_user(user)
        if namespace is not None:
            namespace.close()
        shutil.rmtree(base, ignore_errors=True)


def _run_term(term):
    start = time.monotonic()
    # The administrator: the exchange, the course's folder in it, the system-wide config.
    for command in (ADMIN_EXCHANGE, ADMIN_COURSE):
        subprocess.run(term.command(command), check=True)
    term.config_dir.mkdir(parents=True)
    (term.config_dir / "nbgrader_config.py").write_text(
        system_config_from_guide().replace("/srv/nbgrader/exchange", str(term.exchange)))

    # Everyone must be able to read the course's environment (see the docstring).
    needed = [os.path.realpath(BIN / "python"), ROOT / "Makefile", ROOT / "tools" / "grading" / "run.py",
              Path(nbformat.__file__).parent.parent / "nbgrader" / "__init__.py"]
    check = 'for f; do test -r "$f" || echo "$f"; done'
    unreadable = term.run(ALAN, ["sh", "-c", check, "sh", *map(str, needed)])
    assert not unreadable.stdout.strip(), (
        f"other users cannot read {unreadable.stdout.split()}: are the repository's files readable by others?")

    # The instructor runs `make grade` in a clone they do not own: the venv must be up to date,
    # or make would set it up again, as them.
    stale = subprocess.run(["make", "--no-print-directory", "-q", "venv"], cwd=ROOT, capture_output=True)
    assert stale.returncode == 0, ".venv is older than requirements.txt: run `make venv` first"

    # The instructor's course folder (instructor/setup.md): config, solutions, exercises,
    # and the late penalty.
    Course(term.course, [ASSIGNMENT])
    shutil.copytree(EXERCISES / ASSIGNMENT, term.course / "exercises" / ASSIGNMENT)
    with open(term.course / "nbgrader_config.py", "a") as config:
        config.write(f"\n{PENALTY}\n")
    chown_tree(term.course, INSTRUCTOR)
    teacher = dict(cwd=term.course)

    term.run(INSTRUCTOR, term.command(RELEASE), step="release_assignment", **teacher)
    term.run_all([(student, term.command(FETCH), None) for student in (ADA, ALAN)],
                 step="fetch_assignment (2 students at once)")

    release = term.homes[ADA] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    answers = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    untouched = nbformat.read(release, as_version=4)
    final = fill_release(release, answers)
    term.run(ADA, term.command(SUBMIT), step="submit (3 submissions)")  # as fetched: 0 points
    write_notebook(term, ADA, final)
    term.run(ADA, term.command(SUBMIT), step="submit (3 submissions)")  # the one that counts

    # The deadline passes: recorded now, between ada's submissions and alan's.
    due = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    term.run(INSTRUCTOR, term.command(DUEDATE, **{"2027-02-12 17:00:00 Europe/London": due}),
             step="db assignment add --duedate", **teacher)

    partial = {k: v for k, v in answers.items() if k != "scores_by_hand"}
    write_notebook(term, ALAN, fill_release(term.homes[ALAN] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", partial))
    term.run(ALAN, term.command(SUBMIT), step="submit (3 submissions)")

    collect = term.run(INSTRUCTOR, term.command(COLLECT), step="collect", **teacher)
    term.run(INSTRUCTOR, term.command(GRADE), cwd=ROOT, step="make grade")
    term.run(INSTRUCTOR, term.command(RELEASE_FEEDBACK), step="release_feedback", **teacher)
    term.run_all([(student, term.command(FETCH_FEEDBACK), None) for student in (ADA, ALAN)],
                 step="fetch_feedback (2 students at once)")
    TIMINGS["whole term, users and set-up included"] = time.monotonic() - start
    return observe(term, untouched, final, collect.stdout + collect.stderr)


def observe(term, untouched, final, collect_output):
    """What the checks read, gathered while the term's files still exist."""

    def sources(notebook):
        return [cell.source for cell in notebook.cells]

    def submitted(student):
        return term.course / "submitted" / student / ASSIGNMENT

    collected = nbformat.read(submitted(ADA) / f"{ASSIGNMENT}.ipynb", as_version=4)
    with open(term.course / "grades.csv", newline="") as f:
        grades = {row["student_id"]: row for row in csv.DictReader(f) if row["assignment"] == ASSIGNMENT}
    feedback, pages = {}, {}
    for student in (ADA, ALAN):
        fetched = sorted((term.homes[student] / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        pages[student] = [page.read_bytes() for page in fetched]
        own = (term.course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_bytes()
        feedback[student] = {
            "fetched": [str(page.relative_to(term.homes[student])) for page in fetched],
            "folders": [page.parent.name for page in fetched],
            "submitted_at": (submitted(student) / "timestamp.txt").read_text().strip(),
            "is_their_own": [page == own for page in pages[student]],
        }
    course_exchange = term.exchange / COURSE_ID
    ada_feedback = next((term.homes[ADA] / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    forbidden = {
        "every submission in the exchange (inbound/)": course_exchange / "inbound",
        "every student's feedback in the exchange (feedback/)": course_exchange / "feedback",
        "ada's home (her work, her copies of her submissions)": term.homes[ADA],
        "ada's fetched feedback": ada_feedback,
        "the instructor's course folder": term.course,
    }
    released = course_exchange / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    tried = term.as_student_try(ALAN, [*forbidden.values(), released])
    return {
        "timings": dict(TIMINGS),
        "collected_files": {s: sorted(p.name for p in submitted(s).iterdir()) for s in (ADA, ALAN)},
        "ada_collected_is_last": sources(collected) == sources(final),
        "ada_collected_is_first": sources(collected) == sources(untouched),
        "grades": grades,
        "feedback": feedback,
        "feedback_pages_differ": pages[ADA] != pages[ALAN],
        "alan_tries": {what: tried[str(path)] for what, path in forbidden.items()},
        "alan_reads_release": tried[str(released)],
        "collect_output": collect_output,
    }


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """The whole term, run once as root (directly, or through passwordless sudo);
    returns what the checks read."""
    guide = guide_text()
    for command in (ADMIN_EXCHANGE, ADMIN_COURSE, PENALTY, DUEDATE, RELEASE, FETCH, SUBMIT, COLLECT,
                    GRADE, RELEASE_FEEDBACK, FETCH_FEEDBACK, SYSTEM_CONFIG):
        assert command in guide, f"the instructor guide no longer says `{command}`: update tests/test_term_runs_through_the_exchange.py"
    from tests.plugins.environment import require_sandbox

    require_sandbox("the term test (make grade runs sandboxed)")
    missing = root_tools_missing()
    if os.geteuid() == 0 and not missing:
        facts = run_term()
    elif not missing and can_sudo():
        out = tmp_path_factory.mktemp("term") / "term.json"
        proc = subprocess.run(
            ["sudo", "-n", "env", f"PATH={SBIN_PATH}", "PYTHONDONTWRITEBYTECODE=1",
             f"CI={os.environ.get('CI', '')}", str(BIN / "python"), "-m", "tests.test_term_runs_through_the_exchange", str(out)],
            cwd=ROOT, text=True, capture_output=True, timeout=900)
        assert proc.returncode == 0, (
            f"the term, run as root through sudo, failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        facts = json.loads(out.read_text())
    else:
        why = f"needs {', '.join(missing)}" if missing else "creates Unix users: it needs root or passwordless sudo"
        message = (f"the term test {why}; run it as root: `sudo env PATH=$PATH .venv/bin/python -m pytest "
                   "tests/test_term_runs_through_the_exchange.py -p no:cacheprovider`")
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the term test: {message}")
        pytest.skip(message)
    print("\nterm test, seconds per step:")
    for step, seconds in facts["timings"].items():
        print(f"  {step}: {seconds:.1f}")
    return facts


# --- the checks -----------------------------------------------------------------


def test_collect_brings_each_submission_with_its_timestamp(term):
    for student in (ADA, ALAN):
        assert term["collected_files"][student] == [
            f"{ASSIGNMENT}.ipynb", "submission_secret.txt", "timestamp.txt"], student


def test_the_last_submission_counts(term):
    assert term["ada_collected_is_last"] and not term["ada_collected_is_first"]


def parse(timestamp):
    return datetime.fromisoformat(timestamp.replace(" UTC", "").strip())


def test_the_late_submission_is_flagged_and_penalised(term):
    late, on_time = term["grades"][ALAN], term["grades"][ADA]
    assert parse(on_time["timestamp"]) < parse(late["duedate"]) < parse(late["timestamp"]), (late, on_time)
    # The guide's penalty, "zero": a late submission keeps its raw score and scores 0.
    assert float(late["late_submission_penalty"]) == float(late["raw_score"]) == EXPECTED_RAW[ALAN]
    assert float(late["score"]) == 0.0
    assert float(on_time["late_submission_penalty"]) == 0.0


def test_grades_csv_holds_the_expected_grades(term):
    rows = term["grades"]
    assert set(rows) == {ADA, ALAN}
    for student, raw in EXPECTED_RAW.items():
        assert float(rows[student]["raw_score"]) == raw, (student, rows[student])
        assert float(rows[student]["max_score"]) == 10.0
    assert float(rows[ADA]["score"]) == 10.0


def test_each_student_fetches_their_own_feedback(term):
    for student, got in term["feedback"].items():
        # One page: for the submission that was collected, filed under its time.
        assert got["folders"] == [got["submitted_at"]], (student, got)
        assert got["is_their_own"] == [True], f"{student} did not receive their own feedback: {got}"
    assert term["feedback_pages_differ"]


def test_students_cannot_read_each_others_work_or_feedback(term):
    allowed = {what: outcome for what, outcome in term["alan_tries"].items() if outcome != "PermissionError"}
    assert not allowed, f"alan could reach: {allowed}"
    assert term["alan_reads_release"] == "allowed", "students must be able to read the released assignment"


def test_collect_finds_every_submission_in_its_owners_name(term):
    """collect warns ("cheating attempt?") when a submission's folder is not owned by the student it names."""
    assert "cheating attempt" not in term["collect_output"]


if __name__ == "__main__":
    # Run as root by the `term` fixture (through sudo): the term, then its facts as JSON.
    Path(sys.argv[1]).write_text(json.dumps(run_term()))
