"""Promise: a warm template (tools/sandbox/warm.py) gives each submission a pristine,
private Python, whatever the submission before it did.

`make grade` forks every kernel and every verification from one warm
template per worker, instead of starting Python and importing PyTorch each
time. These attacks are aimed at that design. Each sits in the ``score_gaps``
solution cell of ex01_by_hand (as in tests/test_submissions_cannot_harm_grading.py) and is graded by
the same worker as the submissions after it (one worker, in the order of the
student names), so that what one leaves behind, the next would find:

- ``w1-leave`` leaves a process (in a new session, and a forked daemon), files
  in /tmp and /dev/shm, and patched modules (``torch.allclose``,
  ``numpy.allclose``, a new builtin);
- ``w2-find`` looks for every one of them; its answer is correct and earns
  full marks only if it finds none, in its kernel and in its verification;
- ``w3-probe`` tries to read /proc of every process it can see, to ptrace and
  to signal every process outside its own sandbox;
- ``w4-crash`` fills its memory and burns CPU in several processes, signals
  PID 1 and every process it can, and kills its own Python;
- ``w5-after``, an honest submission graded after all of them by the same
  worker, gets full marks, verified;
- ``w0-carry`` leaves the same kinds of things in its notebook and looks for
  them in its own verification, which the same worker forks from the same
  template right after.

With two workers (which share one template), two probers run at the same
time and look for each other; then a hog crashes beside an honest submission.
"""

import subprocess
import uuid

import nbformat
import pytest

from tests.conftest import require_sandbox
from tests.test_submissions_cannot_harm_grading import ANSWER, ASSIGNMENT, processes_with, report
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS

TOKEN = f"warm-{uuid.uuid4().hex[:12]}"

LEAVE = f"""
import os, subprocess, sys, builtins, numpy, torch
open('/tmp/planted-{TOKEN}', 'w').write('x')
open('/dev/shm/planted-{TOKEN}', 'w').write('x')
torch.allclose = lambda *args, **kwargs: True
numpy.allclose = lambda *args, **kwargs: True
setattr(builtins, 'planted_{TOKEN}', True)
# (The token rides along as an argument the sleeper ignores: processes_with finds it.)
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{TOKEN}'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(601)', '{TOKEN}'])
"""

def finding_processes(marker):
    """Code that adds to ``found`` every process it can see whose command line holds ``marker``."""
    return f"""for pid in (d for d in os.listdir('/proc') if d.isdigit()):
    try:
        if b'{marker}' in open(f'/proc/{{pid}}/cmdline', 'rb').read():
            found.append(f'process {{pid}}')
    except OSError:
        pass"""


FIND = f"""
import os, builtins, numpy, torch
found = [path for path in ('/tmp/planted-{TOKEN}', '/dev/shm/planted-{TOKEN}') if os.path.exists(path)]
found += [name for name in os.listdir('/tmp') + os.listdir('/dev/shm') if 'planted' in name]
if torch.allclose(torch.zeros(1), torch.ones(1)):
    found.append('torch.allclose patched')
if numpy.allclose(0, 1):
    found.append('numpy.allclose patched')
if hasattr(builtins, 'planted_{TOKEN}'):
    found.append('builtins patched')
{finding_processes(TOKEN)}
assert not found, f'left by an earlier submission: {{found}}'
"""

PROBE = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
own = os.readlink('/proc/self')


def own_ids():  # this process's threads, as numbered in its own PID namespace
    ids = {1, os.getpid()}  # and PID 1 of its sandbox, which takes only signals it handles
    for task in os.listdir('/proc/self/task'):
        try:
            status = open(f'/proc/self/task/{task}/status').read()
        except OSError:
            continue
        ids |= {int(line.split()[-1]) for line in status.splitlines() if line.startswith('NSpid:')}
    return ids


reached = set()
end = time.monotonic() + 3
while time.monotonic() < end:  # long enough to overlap a submission graded at the same time
    for pid in (d for d in os.listdir('/proc') if d.isdigit() and d != own):
        for name in ('environ', 'mem', 'maps', 'stack'):
            try:
                open(f'/proc/{pid}/{name}', 'rb').read(1)
                reached.add(f'read /proc/{pid}/{name}')
            except OSError:
                pass
        for name in ('cwd', 'root', 'exe', 'fd/0'):
            try:
                reached.add(f'/proc/{pid}/{name} is {os.readlink(f"/proc/{pid}/{name}")}')
            except OSError:
                pass
    mine = own_ids()
    for pid in range(1, 300):
        if pid != os.getpid() and libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
            reached.add(f'ptrace {pid}')
            libc.ptrace(17, pid, 0, 0)
        if pid not in mine:
            try:
                os.kill(pid, 0)
                reached.add(f'signal {pid}')
            except OSError:
                pass
    time.sleep(0.2)
assert not reached, f'reached outside its own sandbox: {sorted(reached)}'
"""

# Its kernel and then its verification run this, one right after the other,
# in two children of the same template: the second must find nothing the
# first left (both run first; the first to leave would be the kernel).
CARRY = f"""
import os, subprocess, sys, builtins, torch
found = [name for name in os.listdir('/tmp') + os.listdir('/dev/shm') if 'carried' in name]
if hasattr(builtins, 'carried_{TOKEN}') or hasattr(torch, 'carried_{TOKEN}'):
    found.append('a patched module')
{finding_processes('carry-' + TOKEN)}
assert not found, f'left by this submission in its notebook: {{found}}'
open('/tmp/carried-{TOKEN}', 'w').write('x')
open('/dev/shm/carried-{TOKEN}', 'w').write('x')
setattr(builtins, 'carried_{TOKEN}', True)
setattr(torch, 'carried_{TOKEN}', True)
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(602)', 'carry-{TOKEN}'], start_new_session=True)
"""

CRASH = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        blocks = []
        try:
            while True:
                blocks.append(b'\\x01' * 64 * 1024**2)  # touched, not just reserved
        except MemoryError:
            pass
        while True:
            pass  # and CPU
time.sleep(1)
for target in (1, -1):
    try:
        os.kill(target, 9)
    except OSError:
        pass
big = bytearray(6 * 1024**3)
"""

CRASH_END = "\nimport os\nos._exit(1)\n"

# Its probes require that no process outside their own sandbox can be reached. The suite's other runs start
# sandboxed programs as the same sandbox user, and a program just started by exec is readable for a moment
# (its /proc/<pid>/maps): a probe read one while they ran. So this module runs last, when nothing else grades
# (conftest.py); instructor/protections.md says to run one grading run at a time on a machine.
RUN_ALONE = True

SEQUENTIAL = {
    "w0-carry": CARRY + ANSWER,
    "w1-leave": LEAVE + ANSWER,
    "w2-find": FIND + ANSWER,
    "w3-probe": PROBE + ANSWER,
    "w4-crash": CRASH + CRASH_END,
    "w5-after": "print('forked:', open('/proc/self/cmdline', 'rb').read().rstrip(b'\\0').count(b'\\0') == 0)\n"
                + ANSWER,
}
# Two workers share one template: two probers graded at the same time, then
# a crashing hog beside an honest submission.
PARALLEL = {"p1-probe": PROBE + ANSWER, "p2-probe": PROBE + ANSWER, "p3-crash": CRASH + CRASH_END,
            "p4-beside": "import time\ntime.sleep(2)\n" + ANSWER}


def grade(root, cells, jobs):
    course = Course(root, [ASSIGNMENT])
    release = EXERCISES / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    answers = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    for student, code in cells.items():
        course.submit(student, ASSIGNMENT, fill_release(release, {**answers, "score_gaps": code}))
    proc = subprocess.run(
        [str(BIN / "python"), "-m", "tools.grading", "--course", str(root), "--jobs", str(jobs)],
        cwd=ROOT, text=True, capture_output=True, timeout=900,
    )
    survivors = processes_with(TOKEN)
    import csv

    with open(root / "integrity.csv", newline="") as f:
        rows = {row["student_id"]: row for row in csv.DictReader(f)}
    return {"course": course, "proc": proc, "scores": course.scores(ASSIGNMENT), "rows": rows,
            "survivors": survivors}


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    require_sandbox("the warm template tests")
    return grade(tmp_path_factory.mktemp("warm-sequential"), SEQUENTIAL, jobs=1)


@pytest.fixture(scope="module")
def parallel(tmp_path_factory):
    require_sandbox("the warm template tests")
    return grade(tmp_path_factory.mktemp("warm-parallel"), PARALLEL, jobs=2)


def autograded_errors(graded, student):
    path = graded["course"].root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    return [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells for o in c.get("outputs", [])
            if o.get("output_type") == "error"]


def assert_full_marks_verified(graded, student):
    assert graded["proc"].returncode == 0, report(graded["proc"])
    score = graded["scores"][student]
    assert score["score"] == score["max_score"], (student, autograded_errors(graded, student))
    row = graded["rows"][student]
    assert row["verified_score"] == row["max_score"] and row["flagged"] == "no", row


def test_the_warm_template_graded_them(sequential):
    """These kernels were forked from the warm template, not started anew as
    `python -m ipykernel_launcher -f ...`: a child of the template blanks the
    command line it shares with the template, so it shows the interpreter and
    no argument (tools/sandbox/warm_template.py, blank_command_line)."""
    path = sequential["course"].root / "autograded" / "w5-after" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    outputs = [o.get("text", "") for c in nbformat.read(str(path), as_version=4).cells for o in c.get("outputs", [])]
    assert "forked: True\n" in outputs, report(sequential["proc"])


def test_nothing_left_behind_reaches_the_next_submission(sequential):
    # w1-leave's own answer is right: it ran all it leaves behind, in its notebook and in its verification.
    assert_full_marks_verified(sequential, "w1-leave")
    assert_full_marks_verified(sequential, "w2-find")


def test_no_process_of_a_submission_outlives_it(sequential):
    assert sequential["survivors"] == []


def test_a_submission_reaches_no_process_outside_its_sandbox(sequential):
    assert_full_marks_verified(sequential, "w3-probe")


def test_two_submissions_graded_at_once_cannot_reach_each_other(parallel):
    assert_full_marks_verified(parallel, "p1-probe")
    assert_full_marks_verified(parallel, "p2-probe")


def test_a_crashing_hog_costs_only_its_own_points(sequential):
    cells = sequential["scores"]["w4-crash"]["cells"]
    assert cells["test_score_gaps"] == 0, cells
    assert sequential["scores"]["w4-crash"]["score"] == 6, cells
    assert_full_marks_verified(sequential, "w5-after")
    assert_full_marks_verified(sequential, "w2-find")


def test_a_submission_verified_right_after_its_notebook_finds_nothing_of_it(sequential):
    """Its verification runs in the same worker, forked from the same template,
    right after its kernel: it must not find the files, processes and patched
    modules its kernel left."""
    assert_full_marks_verified(sequential, "w0-carry")


def test_a_crash_beside_a_submission_graded_from_the_same_template_costs_it_nothing(parallel):
    """The two workers share one template: a hog that fills its memory, burns
    CPU, signals every process it can and kills its own Python while the other
    worker grades an honest submission takes neither that submission nor the
    template down."""
    cells = parallel["scores"]["p3-crash"]["cells"]
    assert cells["test_score_gaps"] == 0, cells
    assert_full_marks_verified(parallel, "p4-beside")
    assert parallel["survivors"] == []
