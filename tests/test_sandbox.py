"""Promise: a submission cannot cheat, break grading, or harm other students.

Student code runs during autograde. On stock nbgrader it runs with the
instructor's permissions: a notebook can read the solutions, overwrite the
gradebook (every grade of the class lost), allocate all the memory, leave
processes behind or use the network. `make grade` runs each kernel in a
bubblewrap sandbox (tools/sandbox.py, tools/sandboxed_kernel.py).

One `make grade` run over a small temporary course grades one submission per
attack next to two honest ones, and each test checks one attack; the attack
on the gradebook gets a course of its own, so that, without the sandbox, it
cannot hide the outcome of the others. Every attack sits in the `softmax`
solution cell of ex01_by_hand and would earn the points of the two tests that
need `softmax` (test_softmax, test_self_attention) if it worked. With the
sandbox it must cost exactly those points, leave the four earlier tests'
8 points alone, and change nothing for anyone else.

Run with GRADING_SANDBOX=off to see stock nbgrader fail these tests. The last
tests check `sandboxed_command`, the building block, on its own.
"""

import os
import signal
import socketserver
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import nbformat
import pytest

from tests.conftest import require_sandbox
from tools.nbgrader_course import Course, fill_release, solution_code
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS
from tools.sandbox import sandboxed_command

ASSIGNMENT = "ex01_by_hand"
EARLIER_POINTS = 8  # the four tests before test_softmax
ATTACKED = ("test_softmax", "test_self_attention")
CELL_TIMEOUT = 5  # seconds, for this course only: keeps the endless loops short



class AnswerServer(socketserver.ThreadingTCPServer):
    """A server on the loopback interface that hands out the answer to anyone
    who connects: what a student's helper outside the sandbox could do."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answer: str):
        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.sendall(answer.encode())

        super().__init__(("127.0.0.1", 0), Handler)


def attacks(course_root: Path, port: int, token: str):
    """{student: code for the softmax cell}. Each would score full marks if
    the attack worked."""
    solution = f"solutions/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    return {
        "reads-solution": f"""
import json as _json
for _path in ["../../../{solution}", "{course_root}/{solution}", "{ROOT}/{solution}"]:
    try:
        _cells = _json.load(open(_path))["cells"]
    except OSError:
        continue
    for _cell in _cells:
        if _cell["metadata"].get("nbgrader", {{}}).get("solution"):
            exec("".join(_cell["source"]))
    break
""",
        "allocates-6gib": "_hoard = bytearray(6 * 1024**3)\n" + ANSWER,
        "loops-forever": "while True:\n    pass\n" + ANSWER,
        "loops-ignoring-interrupts": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "while True:\n    pass\n" + ANSWER,
        "exits-the-kernel": "import os\nos._exit(1)\n" + ANSWER,
        "outlives-grading": f"""
import subprocess, sys
# A daemon in its own session: it would go on after grading, untouched by the kernel's shutdown.
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{token}"],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
""" + ANSWER,
        "uses-the-network": f"""
import socket as _socket
with _socket.create_connection(("127.0.0.1", {port}), timeout=5) as _connection:
    exec(_connection.makefile().read())
""",
    }


def overwrite_gradebook(course_root: Path):
    """The softmax cell of a student who writes over the course's gradebook.
    (Only the temporary course's: without the sandbox, this attack works.)"""
    return f"""
for _path in ["../../../gradebook.db", "{course_root}/gradebook.db"]:
    try:
        with open(_path, "wb") as _file:
            _file.write(b"not a database any more")
    except OSError:
        pass
""" + ANSWER


ANSWER = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")["softmax"]
HONEST = ("solution", "blank")


def grade_course(root: Path, softmax_cells: dict, honest=HONEST):
    """A course with the ``honest`` submissions and one per entry of
    ``softmax_cells`` ({student: code}), graded by `make grade`'s command.
    Returns the course, the finished process and the scores in the gradebook."""
    course = Course(root, [ASSIGNMENT])
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\nc.SandboxedExecute.recover_timeout = 3\n")
    release = EXERCISES / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    answers = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    if "solution" in honest:
        course.submit("solution", ASSIGNMENT, fill_release(release, answers))
    if "blank" in honest:
        course.submit("blank", ASSIGNMENT, nbformat.read(release, as_version=4))
    for student, code in softmax_cells.items():
        course.submit(student, ASSIGNMENT, fill_release(release, {**answers, "softmax": code}))
    proc = subprocess.run(
        [str(BIN / "python"), "-m", "tools.grade", "--course", str(root), "--jobs", "2"],
        cwd=ROOT, text=True, capture_output=True, timeout=600,
    )
    try:
        scores = course.scores(ASSIGNMENT)
    except Exception as error:  # noqa: BLE001 - a gradebook destroyed by an attack
        scores = error
    return course, proc, scores


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course with one submission per attack and two honest ones, graded once."""
    require_sandbox("the sandbox tests")
    root = tmp_path_factory.mktemp("sandbox-course")
    token = f"outlives-{uuid.uuid4().hex}"
    server = AnswerServer(ANSWER)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cells = attacks(root, server.server_address[1], token)
        course, proc, scores = grade_course(root, cells)
    finally:
        server.shutdown()
        server.server_close()
    survivors = processes_with(token)
    for pid in survivors:  # clean up before reporting
        os.kill(pid, signal.SIGKILL)
    return {"course": course, "proc": proc, "scores": scores, "survivors": survivors, "attacks": cells}


def processes_with(token):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def report(proc):
    return f"make grade said:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"


def scores_of(graded, student):
    scores = graded["scores"]
    assert not isinstance(scores, Exception), f"the gradebook cannot be read: {scores}\n{report(graded['proc'])}"
    assert student in scores, f"{student} was not graded\n{report(graded['proc'])}"
    return scores[student]


def assert_attack_failed(graded, student):
    result = scores_of(graded, student)
    cells = result["cells"]
    assert [cells[c] for c in ATTACKED] == [0, 0], f"{student}: the attack earned points: {cells}"
    assert result["score"] == EARLIER_POINTS, f"{student}: the cells before the attack lost points: {cells}"


def test_make_grade_grades_every_submission_despite_the_attacks(graded):
    assert graded["proc"].returncode == 0, report(graded["proc"])
    assert set(graded["scores"]) == set(HONEST) | set(graded["attacks"])


def test_honest_submissions_are_graded_as_without_attackers(graded):
    assert scores_of(graded, "solution")["score"] == 16
    assert scores_of(graded, "blank")["score"] == 0


def test_submission_that_reads_the_solution_notebook_gets_nothing_from_it(graded):
    assert_attack_failed(graded, "reads-solution")


def test_submission_that_allocates_6_gib_gets_a_memory_error(graded):
    assert_attack_failed(graded, "allocates-6gib")


@pytest.mark.parametrize("student", ["loops-forever", "loops-ignoring-interrupts"])
def test_endless_loop_costs_only_its_own_cells_and_time(graded, student):
    assert_attack_failed(graded, student)
    seconds = next(
        float(line.rsplit("(", 1)[1].split(" s)")[0])
        for line in graded["proc"].stdout.splitlines()
        if f" {student}:" in line
    )
    # Interrupted after CELL_TIMEOUT s, stopped 3 s later if it ignores the
    # interrupt; stock nbgrader waits CELL_TIMEOUT s for every later cell too.
    assert seconds < 6 * CELL_TIMEOUT, f"{student} held up its worker for {seconds:.0f} s"


def test_submission_that_exits_the_kernel_scores_zero_for_the_rest(graded):
    assert_attack_failed(graded, "exits-the-kernel")


def test_no_process_of_a_submission_outlives_grading(graded):
    assert scores_of(graded, "outlives-grading")["score"] == 16  # starting a process is allowed
    assert not graded["survivors"], f"processes left running after grading: {graded['survivors']}"


def test_submission_cannot_reach_the_network(graded):
    assert_attack_failed(graded, "uses-the-network")


def test_submission_cannot_overwrite_the_gradebook(tmp_path):
    require_sandbox("the sandbox tests")
    attack = {"overwrites-gradebook": overwrite_gradebook(tmp_path)}
    course, proc, scores = grade_course(tmp_path, attack, honest=["solution"])
    assert not isinstance(scores, Exception), f"one student wiped the class's grades: {scores}\n{report(proc)}"
    assert proc.returncode == 0, report(proc)
    assert scores["solution"]["score"] == 16
    # Its writes failed quietly, so the rest of its cell ran: full marks.
    assert scores["overwrites-gradebook"]["score"] == 16
    assert "overwrites-gradebook" in (tmp_path / "grades.csv").read_text()


# --- sandboxed_command, the building block -------------------------------------


def run_sandboxed(code, workdir, **limits):
    return subprocess.run(
        sandboxed_command([sys.executable, "-c", code], workdir, **limits),
        text=True, capture_output=True, timeout=120,
    )


def test_sandboxed_command_writes_only_to_its_folder(tmp_path):
    require_sandbox("the sandbox tests")
    workdir, secret = tmp_path / "work", tmp_path / "secret.txt"
    workdir.mkdir()
    secret.write_text("the answer")
    proc = run_sandboxed(
        "import os\n"
        "open('out.txt', 'w').write('written')\n"
        f"print(os.path.exists({str(secret)!r}), os.path.exists({str(ROOT / 'solutions')!r}))\n"
        f"try:\n    open({str(BIN.parent / 'escape.txt')!r}, 'w')\nexcept OSError as e:\n    print(type(e).__name__)\n",
        workdir,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False", "OSError"]
    assert (workdir / "out.txt").read_text() == "written"
    assert not (BIN.parent / "escape.txt").exists()


def test_sandboxed_command_limits_memory(tmp_path):
    require_sandbox("the sandbox tests")
    proc = run_sandboxed(
        "try:\n    bytearray(512 * 1024**2)\nexcept MemoryError:\n    print('MemoryError')\n",
        tmp_path, memory_bytes=256 * 1024**2,
    )
    assert proc.stdout.strip() == "MemoryError", proc.stderr


def test_sandboxed_command_limits_cpu_time(tmp_path):
    require_sandbox("the sandbox tests")
    proc = run_sandboxed("while True:\n    pass\n", tmp_path, cpu_seconds=1)
    assert proc.returncode != 0
