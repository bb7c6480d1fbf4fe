"""Promise: on the course's JupyterHub (`make hub`, instructor/hub.md), a term goes
as the instructor guide tells it, in a real browser, along the guide's own path.

One hub is started for this module, from scratch (tools/hub/), and driven in
headless Chromium (Playwright, the system's browser as in test_site_works_offline_in_a_browser.py) that
reaches nothing but the hub: every request to another host is refused, as on a
hub behind a firewall.

1. The instructor opens a terminal in JupyterLab (File > New > Terminal) and
   types the guide's commands as written: `cd ~/self-attention`, the late
   penalty of releasing.md added to the course folder's nbgrader_config.py,
   `nbgrader release_assignment ex01_by_hand`. Nothing was released before
   (make hub releases nothing), and only that assignment is now.
2. A student fetches ex01_by_hand in the Assignments tab (Nbgrader > Assignment
   List), where it is the only assignment offered; she answers (the reference
   solution, but for one classic mistake in the last task), runs every cell,
   saves and submits. The due date, recorded afterwards with the guide's
   command as written (ten minutes before it is typed), lies before her
   submission: it is late.
3. In the terminal: `nbgrader collect ex01_by_hand`, then the guide's
   `make -C ... grade ...`: its line for her says LATE, by how much, and what the
   penalty took; grades.csv has her raw score, the penalty, 0 and seconds_late.
4. The instructor opens Nbgrader > Formgrader in JupyterLab's menu: the
   formgrader shows in its JupyterLab tab; in Manual Grading he opens her
   submission, whose math is typeset (MathJax inside the page, offline), and
   types a comment. `make grade FORCE=1` (graded again: unchanged, it would be
   skipped) keeps it.
5. `nbgrader release_feedback ex01_by_hand` in the terminal; the student
   fetches the feedback and reads it: her score after the penalty, how late she
   was and the penalty, each test named by what it tests (no "Test cell"), the
   math typeset, the error message wrapped inside the page, the instructor's
   comment, and no line of a hidden test.

Three more tests use the same hub. What students hand in takes nothing from the
instructor: a second student's notebook whose HTML output, Javascript() output
and Markdown try to run script (mark every window, read the cookie, write a file
into the instructor's home through Jupyter's API) is collected, graded and opened
in the formgrader (in JupyterLab's tab) and, as feedback, in JupyterLab's viewer
with Trust HTML: nothing of it runs, while the pages' own scripts typeset the
math; a third student plants in the exchange's inbound/, from his own processes,
a folder whose notebook is a link to the course's solution (with a forged
timestamp.txt), then a folder that is a link to the first student's submitted
folder: collect takes neither, make grade grades him not at all, and no feedback
holds solution text. A student's kernel, started from her own
JupyterLab, tries to read what she must not: the served repository's
solutions/, .git and verification specs, the instructor's home with the course
folder and its gradebook, the hub's database; and `make hub` may not have
changed the permissions of any folder on the way to the course's Python. The
instructor presses the formgrader's "Autograde" for a student (the request the
button sends, then the button on its page): the answer points to `make grade`, in
a dialog not headed "Error", and nothing is graded.

The last test stops the hub as the guide does and cleans up with the guide's
command: the Unix users the hub created are gone once it stops, their homes
(the term's data) are not; `make hub-clean` archives the term, with the
gradebook, the submission, the feedback and the student's work, before it
removes anything. (It runs last, after the tests that use the hub, in the
order of this file.)

Each step's time is written to _build/hub-report.md (and printed, with `pytest -s`).

Run alone with `pytest -m hub`. Needs root (the hub's users are real Unix
users, created by the hub and removed when it stops), Node.js with npm (the
hub's proxy) and Chromium; without them the test is skipped with a message,
and with CI=true it fails instead. A term left by an earlier `make hub` is
archived by `make hub-clean`'s code before the test starts, never lost.
"""

import csv
import html
import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import tarfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from tools.hub import cleanup, local, users, views
from tools.assignments.answers import fill_release, solution_code
from tools.assignments.leak_checks import protected_regions
from tools.assignments.wrong_implementations import read_wrong_implementation
from tools.paths import BIN, EXERCISES, ROOT, SOLUTIONS, checks_folder
from tools.site.browser import CHROMIUM, HOW_TO_GET_CHROMIUM, launch, offline_context

pytestmark = pytest.mark.hub

ASSIGNMENT = "ex01_by_hand"
STUDENT = "ada"
#: Her one mistake, in the last task: its visible tests pass, so "Run All" runs every cell (a visible failure
#: stops it before ex01's last, ungraded cell), and its hidden tests fail with a message the feedback shows.
MISTAKE = checks_folder(ASSIGNMENT) / "wrong_implementations" / "gaps_from_exponentials.py"
COMMENT = "Clear and correct: well done. (Comment typed in the formgrader.)"
REPORT = ROOT / "_build" / "hub-report.md"
STEPS = {}
#: The permissions of the folders on the way to the course's Python and repository, before the hub started.
MODES_BEFORE = {}
#: The hub's JupyterHub process and the archives the test made (the last test stops it and cleans up).
STATE = {}

# The guide's commands, as instructor/hub.md and releasing.md show them (the repository's path filled in).
PENALTY_LINE = 'c.LateSubmissionPlugin.penalty_method = "zero"'
GUIDE_MAKE_GRADE = [f"make -C {ROOT} grade \\", "    ASSIGNMENT=ex01_by_hand COURSE=$HOME/self-attention"]
#: The guide's due date: ten minutes before it is typed, so that a submission made just before is late by a little
#: less than that (the guide's sample line says 9 min 38 s), whenever the guide is followed.
GUIDE_DUEDATE = ["nbgrader db assignment add ex01_by_hand \\",
                 "    --duedate=\"$(date -u -d '10 minutes ago' '+%Y-%m-%d %H:%M:%S UTC')\""]


def missing():
    """Why the hub cannot run here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ("the hub test creates Unix users: run it as root, or as a user with passwordless sudo "
                "(sudo .venv/bin/python -m pytest -m hub)")
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        return "the hub test needs useradd and userdel (Debian's passwd)"
    lacking = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if lacking:
        return f"the hub's proxy needs Node.js: {' and '.join(lacking)} not found (apt-get install nodejs npm)"
    if not CHROMIUM.exists():
        return HOW_TO_GET_CHROMIUM
    recorded = users.created_users()
    for user in users.USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        if user not in recorded:
            return f"a Unix user {user!r} exists that the hub did not create: the test would use their home"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Timer:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.start = time.monotonic()

    def __exit__(self, *exc):
        STEPS[self.name] = time.monotonic() - self.start


def folder_modes():
    """{folder: permission bits} for every folder on the way to .venv's Python and to the repository."""
    targets = [Path(os.path.realpath(BIN / "python")).parent, ROOT]
    return {str(folder): stat.S_IMODE(os.stat(folder).st_mode)
            for target in targets for folder in [*target.parents, target]}


def can_sudo():
    if shutil.which("sudo") is None:
        return False
    return subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0


def run_as_root():
    """Run this module's test as root through passwordless sudo (GitHub's runners
    run the suite as a user with sudo), in a pytest of its own; fail if it fails."""
    path = f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin"
    passed_on = [f"{k}={os.environ[k]}" for k in ("CI", "CHROMIUM") if k in os.environ]
    proc = subprocess.run(
        ["sudo", "-n", "env", f"PATH={path}", "PYTHONDONTWRITEBYTECODE=1", "COURSE_NESTED_SESSION=1",
         *passed_on, str(BIN / "python"), "-m", "pytest", "tests/test_hub_term_as_the_guide_tells_it.py", "-m", "hub",
         "-p", "no:cacheprovider", "-q", "-s"],
        cwd=ROOT, text=True, capture_output=True, timeout=1500)
    assert proc.returncode == 0, f"the hub test, run as root through sudo, failed:\n{proc.stdout[-6000:]}"
    print(proc.stdout[-3000:])


@pytest.fixture(scope="module")
def hub():
    """The base URL of a freshly set-up JupyterHub, nothing released; None
    when the test already ran as root through sudo (run_as_root)."""
    if os.geteuid() != 0 and can_sudo():
        run_as_root()
        yield None
        return
    reason = missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    if users.TERM.exists() or users.created_users():
        cleanup.clean()  # an earlier term: archived in hub-backups/, then removed
    shutil.rmtree(users.HUB, ignore_errors=True)
    MODES_BEFORE.update(folder_modes())
    port = free_port()
    with Timer("set up the hub (users, proxy, configuration, course folder)"):
        command = local.setup(port=port, hub_port=free_port(), api_port=free_port())
    log = open(ROOT / "_build" / "hub-test-jupyterhub.log", "w")  # outside _build/hub, which the clean-up removes
    STATE["process"] = process = local.start(command, log=log)
    base = f"http://127.0.0.1:{port}"
    try:
        with Timer("start JupyterHub"):
            local.wait_until_up(base, process)
        yield base
    finally:
        try:
            local.wait_for_setup()
        except users.HubError:
            pass  # already reported by the test
        local.stop(process)  # (again: the last test stops it as the guide does)
        log.close()
        if "archive" not in STATE:  # the last test did not get to clean up: do it, keeping the term archived
            cleanup.clean()


@pytest.fixture(scope="module")
def browser(hub):
    if hub is None:  # the test ran as root through sudo
        yield None
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def student(hub, browser):
    """STUDENT logged in, her JupyterLab up (None when the test ran as root through sudo)."""
    if hub is None:
        yield None
        return
    with Timer("student logs in (her JupyterLab starts)"):
        page = lab_ready(start_log_in(browser, hub, STUDENT), STUDENT)
    yield page


@pytest.fixture(scope="module")
def teacher(hub, browser):
    """The instructor, logged in, his JupyterLab up (None when the test ran as root through sudo)."""
    if hub is None:
        yield None
        return
    with Timer("instructor logs in (his JupyterLab starts)"):
        page = lab_ready(start_log_in(browser, hub, users.INSTRUCTOR), users.INSTRUCTOR)
    yield page


def start_log_in(browser, base, user):
    """A new browser context that reaches only the hub, logging in as ``user``:
    their JupyterLab starts while the test goes on. Return the page."""
    context = offline_context(browser, base, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.goto(f"{base}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", users.PASSWORD)
    page.click("#login_submit", no_wait_after=True)
    return page


def lab_ready(page, user):
    """Wait for ``user``'s JupyterLab to be up in ``page``."""
    page.wait_for_url(f"**/user/{user}/lab**", timeout=120_000)
    page.wait_for_selector(".jp-LabShell #jp-main-dock-panel")
    return page


def menu(page, *labels):
    """Click through JupyterLab's menu bar: menu(page, "File", "New", "Terminal")."""
    page.locator(f".lm-MenuBar-itemLabel:text-is('{labels[0]}')").click()
    for label in labels[1:]:
        page.locator(f".lm-Menu:visible .lm-Menu-itemLabel:text-is('{label}')").last.click()


def open_assignments(page):
    menu(page, "Nbgrader", "Assignment List")
    page.wait_for_selector("#released_assignments_list")


def item(page, listing):
    """The top-level row of ASSIGNMENT in one of the Assignments tab's lists."""
    return page.locator(f"#{listing} > .list_item:not(.nested_list_item)", has_text=ASSIGNMENT).first


# The terminals the user's server runs (Jupyter's REST API, authenticated as JupyterLab is).
LIST_TERMINALS = """async (base) => {
  const xsrf = decodeURIComponent((document.cookie.match(/(?:^|;\\s*)_xsrf=([^;]*)/) || [])[1] || "");
  const reply = await fetch(base + "api/terminals", {headers: {"X-XSRFToken": xsrf}});
  if (!reply.ok) throw new Error("listing the terminals: HTTP " + reply.status);
  return await reply.json();
}"""

# Listens to the JupyterLab terminal just opened (the last one the server lists), as a second
# client of it: everything the terminal prints is appended to window.courseTerminal.
LISTEN_TO_TERMINAL = """async (base) => {
  const terminals = await (LIST_TERMINALS)(base);
  if (!terminals.length) throw new Error("no terminal is running");
  const name = terminals[terminals.length - 1].name;
  window.courseTerminal = "";
  const socket = new WebSocket(location.origin.replace(/^http/, "ws") + base + "terminals/websocket/" + name);
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message[0] === "stdout") window.courseTerminal += message[1];
  };
  await new Promise((opened, failed) => {
    socket.onopen = opened;
    socket.onerror = () => failed(new Error("the terminal's websocket failed"));
  });
  window.courseTerminalSocket = socket;
  return name;
}""".replace("(LIST_TERMINALS)", "(" + LIST_TERMINALS + ")")

# What the terminal printed from `start` on, without colours and titles; done when it ends at a prompt.
TERMINAL_SINCE = r"""(start) => window.courseTerminal.slice(start)
  .replace(/\x1b\][^\x07]*\x07/g, "").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "")"""


class Terminal:
    """The terminal of JupyterLab's File > New > Terminal, typed into as a person would."""

    def __init__(self, page, user):
        self.page = page
        with Timer(f"{user} opens a terminal (File > New > Terminal)"):
            menu(page, "File", "New", "Terminal")
            page.locator(".jp-Terminal:visible .xterm-helper-textarea").wait_for()
            deadline = time.monotonic() + 60
            while not page.evaluate(LIST_TERMINALS, f"/user/{user}/"):
                assert time.monotonic() < deadline, "File > New > Terminal started no terminal within 60 s"
                page.wait_for_timeout(250)  # (not time.sleep: the browser waits on this process to route requests)
            page.evaluate(LISTEN_TO_TERMINAL, f"/user/{user}/")

    def type(self, *lines, timeout=300):
        """Type ``lines`` (one command, continued over lines as the guide writes it), Enter after
        each; wait for the shell's next prompt; return what the terminal printed."""
        page = self.page
        start = page.evaluate("() => window.courseTerminal.length")
        # Back to the terminal's tab (the formgrader's may be in front), and into the terminal.
        # (its label is the title the shell sets; its icon is the terminal's)
        page.locator(".lm-TabBar-tab:has([data-icon='ui-components:terminal'])").first.click()
        page.locator(".jp-Terminal:visible .xterm-helper-textarea").focus()
        for line in lines:
            page.keyboard.type(line)
            page.keyboard.press("Enter")
        page.wait_for_function(f"start => /\\n[^\\n]*\\$ $/.test(({TERMINAL_SINCE})(start))", arg=start,
                               timeout=timeout * 1000, polling=250)
        return page.evaluate(f"start => ({TERMINAL_SINCE})(start)", start)


def max_score():
    nb = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells)


def points_lost():
    """The points of the test cells that her mistake fails: those after the task it changes."""
    _, answers = read_wrong_implementation(MISTAKE)
    nb = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    lost, changed = 0, False
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            changed = meta.get("grade_id") in answers
        elif meta.get("grade") and changed:
            lost += meta.get("points", 0)
    return lost


def feedback_checks(page):
    """What a page shows of math, wrapping and tests: typeset equations, raw TeX left, error
    blocks wider than the page, the summary's entries."""
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    return page.evaluate("""() => ({
      typeset: document.querySelectorAll('mjx-container').length,
      raw: (document.body.innerText.match(/\\$[^$\\n]{1,60}\\$|\\\\frac|\\\\sqrt/g) || []).slice(0, 3),
      errors: [...document.querySelectorAll('.output_error pre')].map(pre => ({
        wraps: getComputedStyle(pre).whiteSpace === 'pre-wrap', wider: pre.scrollWidth > pre.clientWidth + 1,
        text: pre.innerText.slice(0, 200)})),
      summary: [...document.querySelectorAll('#toc li')].map(li => li.innerText.trim()),
    })""")


def test_a_term_on_the_hub(hub, student, teacher):
    if hub is None:
        return  # it ran, and passed, as root through sudo (run_as_root)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    total = max_score()
    raw = total - points_lost()
    assert 0 < raw < total, f"her mistake should cost some points, not all: {raw} of {total}"
    with Timer("the class list, set up in the background, is done"):
        local.wait_for_setup()
    outbound = users.EXCHANGE / users.COURSE_ID / "outbound"
    assert not outbound.exists() or not list(outbound.iterdir()), \
        f"make hub released assignments by itself: {sorted(p.name for p in outbound.iterdir())}"

    # 1. The instructor's terminal, and the guide's commands as typed.
    terminal = Terminal(teacher, users.INSTRUCTOR)
    with Timer("instructor sets the late penalty and releases ex01_by_hand in the terminal"):
        out = terminal.type("cd ~/self-attention")
        out += terminal.type(f"echo '{PENALTY_LINE}' >> nbgrader_config.py")
        out += terminal.type(f"nbgrader release_assignment {ASSIGNMENT}")
    assert "command not found" not in out, f"the terminal does not find the guide's commands:\n{out}"
    assert sorted(p.name for p in outbound.iterdir()) == [ASSIGNMENT], \
        f"release_assignment did not release {ASSIGNMENT} alone:\n{out}"

    # 2. The student fetches, answers, runs, saves and submits.
    with Timer("student fetches the assignment in the Assignments tab"):
        open_assignments(student)
        item(student, "released_assignments_list").get_by_role("button", name="Fetch").click()
        item(student, "fetched_assignments_list").wait_for()
    offered = student.locator("#released_assignments_list > .list_item:not(.nested_list_item)").all_inner_texts()
    others = [a.name for a in EXERCISES.iterdir() if a.name != ASSIGNMENT and any(a.name in t for t in offered)]
    assert not others, f"the student is offered assignments that were never released: {others}"
    notebook = users.home(STUDENT) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert notebook.is_file(), f"fetching did not put the notebook at {notebook}"

    # Her answers: the reference solution, but for the mistake, in the notebook she fetched.
    answers = {**solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), **read_wrong_implementation(MISTAKE)[1]}
    views.as_user(STUDENT, ["tee", notebook], input=nbformat.writes(fill_release(notebook, answers)),
                     stdout=subprocess.DEVNULL)

    with Timer("student opens the notebook, runs every cell, saves"):
        fetched = item(student, "fetched_assignments_list")
        fetched.locator("a.assignment-notebooks-link").click()  # unfolds its notebooks
        student.locator(f"#fetched_assignments_list .nested_list_item a:text-is('{ASSIGNMENT}')").click()
        panel = student.locator(".jp-NotebookPanel:visible")
        panel.locator(".jp-Notebook .jp-Cell").first.wait_for()
        # JupyterLab may ask which kernel to start (it offers the notebook's own): accept it.
        choose = student.locator(".jp-Dialog", has_text="Select Kernel").get_by_role("button", name="Select")
        try:
            choose.click(timeout=5_000)
        except PlaywrightTimeout:
            pass
        student.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
        menu(student, "Run", "Run All Cells")
        student.wait_for_function(
            """() => {
              const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) '
                                + '.jp-CodeCell .jp-InputPrompt')];
              return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            timeout=90_000,
        )
        menu(student, "File", "Save Notebook")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            saved = nbformat.read(notebook, as_version=4)
            if all(c.execution_count for c in saved.cells if c.cell_type == "code"):
                break
            student.wait_for_timeout(200)  # (lets Playwright route the save request)
    unrun = [i for i, c in enumerate(saved.cells) if c.cell_type == "code" and not c.execution_count]
    assert not unrun, f"the notebook was not run and saved: code cells {unrun} of {len(saved.cells)} have no count"

    with Timer("student submits in the Assignments tab"):
        open_assignments(student)
        item(student, "fetched_assignments_list").get_by_role("button", name="Submit").click()
        item(student, "submitted_assignments_list").wait_for()

    # 3. The due date (before her submission: she is late), collect, make grade; all typed.
    guide = (ROOT / "instructor" / "hub.md").read_text()
    assert all(line in guide for line in GUIDE_DUEDATE + GUIDE_MAKE_GRADE[1:]), "the guide's commands changed"
    with Timer("instructor records the due date, collects and runs make grade in the terminal"):
        out = terminal.type(*GUIDE_DUEDATE)
        out += terminal.type(f"nbgrader collect {ASSIGNMENT}")
        submitted = users.course_folder() / "submitted" / STUDENT / ASSIGNMENT
        assert (submitted / f"{ASSIGNMENT}.ipynb").is_file(), f"nothing collected into {submitted}:\n{out}"
        graded = terminal.type(*GUIDE_MAKE_GRADE)
    line = next((line for line in graded.splitlines() if f"{ASSIGNMENT}  {STUDENT}:" in line), "")
    assert re.search(rf"{STUDENT}: {raw:g} / {total:g} .*LATE by (\d+ (d|h|min|s) ?)+: late penalty {raw:g}, "
                     rf"so 0 / {total:g} in grades.csv", line), f"make grade's line for {STUDENT}:\n{graded}"
    with open(users.course_folder() / "grades.csv", newline="") as file:
        rows = {row["student_id"]: row for row in csv.DictReader(file)}
    row = rows[STUDENT]
    assert (float(row["raw_score"]), float(row["late_submission_penalty"]), float(row["score"])) == (raw, raw, 0), row
    assert 5 * 60 < float(row["seconds_late"]) < 11 * 60, row  # due ten minutes before it was typed

    # 4. The formgrader, from JupyterLab's menu; math typeset; a comment.
    with Timer("instructor opens Nbgrader > Formgrader and the submission in Manual Grading"):
        menu(teacher, "Nbgrader", "Formgrader")
        formgrader = teacher.frame_locator("iframe[src*='formgrader']")
        formgrader.get_by_role("link", name="Manual Grading").click()
        formgrader.get_by_role("link", name=ASSIGNMENT, exact=True).first.click()  # the assignment
        formgrader.get_by_role("link", name=ASSIGNMENT, exact=True).first.click()  # its notebook
        row = formgrader.locator("tr", has_text=re.compile("Submission #|" + STUDENT, re.I)).last
        row.wait_for()
        assert re.search(rf"\b{raw:g}(\.0+)?\s*/\s*{total:g}\b", row.inner_text()), row.inner_text()
        row.locator("a", has_text=re.compile("Submission #|" + STUDENT, re.I)).first.click()
        formgrader.locator("mjx-container").first.wait_for()
    raw_tex = formgrader.locator("body").inner_text()
    assert not re.search(r"\$[^$\n]{1,60}\$|\\frac|\\sqrt", raw_tex), "raw TeX left in the formgrader's view"
    with Timer("instructor types a comment in the formgrader"):
        comment = formgrader.locator("textarea.comment[placeholder]").first
        comment.wait_for()
        comment.fill(COMMENT)
        comment.press("Tab")  # leaving the box saves the comment
        deadline = time.monotonic() + 20
        while COMMENT not in manual_comments() and time.monotonic() < deadline:
            teacher.wait_for_timeout(200)
    assert COMMENT in manual_comments(), "the formgrader did not save the comment in the gradebook"

    with Timer("instructor runs make grade again in the terminal"):
        # (FORCE=1: the submission is unchanged, and make grade would skip it: graded again, the comment stays)
        again = terminal.type(GUIDE_MAKE_GRADE[0], GUIDE_MAKE_GRADE[1] + " FORCE=1")
    assert f"{STUDENT}: {raw:g} / {total:g}" in again, again
    assert COMMENT in manual_comments(), "make grade lost the comment typed in the formgrader"

    # 5. Feedback: released in the terminal, fetched and read by the student.
    with Timer("instructor releases the feedback in the terminal"):
        out = terminal.type(f"nbgrader release_feedback {ASSIGNMENT}")
    assert "error" not in out.lower(), out
    with Timer("student fetches and reads the feedback in the Assignments tab"):
        student.reload()
        student.wait_for_selector(".jp-LabShell #jp-main-dock-panel")
        open_assignments(student)
        item(student, "submitted_assignments_list").get_by_role("button", name="Fetch Feedback").click()
        item(student, "submitted_assignments_list").get_by_text("view feedback").first.wait_for()
        pages = sorted((users.home(STUDENT) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        assert pages, "fetching the feedback put no page in the student's folder"
        relative = pages[-1].relative_to(users.home(STUDENT))
        feedback = student.context.new_page()
        feedback.goto(f"{hub}/user/{STUDENT}/files/{relative}")
        shown = feedback_checks(feedback)
        text = feedback.locator("body").inner_text()
    assert COMMENT in text, "the instructor's comment is not in the feedback"
    assert re.search(rf"Score: 0(\.0+)? / {total}", text), text[:2000]
    assert re.search(r"Submitted (\d+ (d|h|min|s) ?)+ after the due date", text), shown["summary"]
    assert f"Late submission penalty (Score: -{raw:g}" in text, shown["summary"]
    assert shown["typeset"] > 0 and not shown["raw"], f"math not typeset in the feedback: {shown['raw']}"
    tests = [entry for entry in shown["summary"] if entry.startswith(tuple("0123456789"))]
    assert tests and not any("Test cell" in entry for entry in shown["summary"]), shown["summary"]
    assert shown["errors"], "her failing test shows no error message in the feedback"
    assert all(e["wraps"] and not e["wider"] for e in shown["errors"]), shown["errors"]
    # Lines of the hidden tests that the student has not seen (not in her notebook):
    hidden = {
        line for region, lines in protected_regions(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
        if region == "HIDDEN TESTS" for line in lines if re.search(r"\w", line)
    } - notebook_lines(notebook)
    autograded = users.course_folder() / "autograded" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert hidden & notebook_lines(autograded), "nothing to hide: is the test looking at the right lines?"
    visible = {line.strip() for line in text.splitlines()}
    assert not hidden & visible, f"the feedback shows hidden test lines: {sorted(hidden & visible)[:3]}"


# What a hostile student's notebook tries at the instructor's address: mark every window it can reach, read the
# _xsrf cookie, and with it write a file into the instructor's home over Jupyter's contents API.
PAYLOAD = """(function (kind) {
  [window, window.parent, window.top].forEach(function (w) {
    try { w.__hostile = (w.__hostile || []).concat([kind]); } catch (e) {}
  });
  var xsrf = (document.cookie.match(/_xsrf=([^;]*)/) || [])[1] || "";
  fetch("/user/instructor/api/contents/hostile-" + kind + ".txt", {method: "PUT", credentials: "include",
    headers: {"Content-Type": "application/json", "X-XSRFToken": decodeURIComponent(xsrf)},
    body: JSON.stringify({type: "file", format: "text", content: kind + " " + document.cookie})});
})"""
HOSTILE_KINDS = ("html-onerror", "javascript-output", "markdown-img", "markdown-script")
HOSTILE = "grace"  # hands in a notebook that attacks the instructor's pages
PLANTER = "alan"  # plants links in the exchange's inbound/


def hostile_cells():
    """A code cell whose outputs are an HTML <img onerror> and a Javascript(), and a Markdown cell with
    <img onerror> and <script>: each runs PAYLOAD with its kind, wherever it runs."""
    def call(kind):
        return PAYLOAD.replace("\n", " ") + f"('{kind}')"

    def img(kind):
        return f'<img src="x" onerror="{html.escape(call(kind))}">'

    code = ("from IPython.display import HTML, Javascript, display\n"
            f"display(HTML({img('html-onerror')!r}))\n"
            f"display(Javascript({call('javascript-output')!r}))\n")
    markdown = (f"A note on my answer.\n\n<div>{img('markdown-img')}</div>\n\n"
                f"<script>{call('markdown-script')}</script>\n")
    return [nbformat.v4.new_code_cell(code), nbformat.v4.new_markdown_cell(markdown)]


def hostile_marks(page):
    """What PAYLOAD left: markers in every frame of ``page`` and files in the instructor's home."""
    marks = {}
    for frame in page.frames:
        try:
            found = frame.evaluate("() => window.__hostile || []")
        except Exception:  # a frame that went away, or one Playwright cannot reach
            continue
        if found:
            marks[frame.url] = found
    files = sorted(p.name for p in users.home(users.INSTRUCTOR).glob("hostile-*"))
    return marks, files


def test_what_students_hand_in_takes_nothing_from_the_instructor(hub, teacher):
    """A student's notebook with script in it (HTML output with onerror, a Javascript output, Markdown with
    <img onerror> and <script>) is collected, graded and opened in the formgrader and, as feedback, in the
    instructor's JupyterLab with Trust HTML: nothing of it runs at the instructor's address. Another student
    plants, from his own processes, submission folders in the exchange's inbound/: one whose notebook is a
    symbolic link to the course's solution (with a forged timestamp.txt), then one that is itself a link to
    the first student's submitted folder: collect takes neither, and make grade gives him nothing."""
    if hub is None:
        return  # it ran, and passed, as root through sudo (run_as_root)
    local.wait_for_setup()
    course = users.course_folder()
    # The hostile notebook: the reference answers (full marks), with the attack cells at the end.
    with Timer("a hostile student fetches, answers and submits (her own processes)"):
        views.as_user(HOSTILE, [BIN / "nbgrader", "fetch_assignment", ASSIGNMENT, "--log-level=WARN"])
        notebook = users.home(HOSTILE) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = fill_release(notebook, solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"))
        nb.cells.extend(hostile_cells())
        views.as_user(HOSTILE, ["tee", notebook], input=nbformat.writes(nb), stdout=subprocess.DEVNULL)
        views.as_user(HOSTILE, [BIN / "nbgrader", "submit", ASSIGNMENT, "--log-level=WARN"],
                         cwd=users.home(HOSTILE))
    # The planted links, made by the other student (in his view: paths as the instructor's collect will see them).
    inbound = users.EXCHANGE / users.COURSE_ID / "inbound"
    solution = course / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    stamp = (datetime.now(timezone.utc) - timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    plant_file = inbound / f"{PLANTER}+{ASSIGNMENT}+{stamp}+planted1"
    views.as_user(PLANTER, ["sh", "-c", 'mkdir "$1" && ln -s "$2" "$1/$3" && echo "$4" > "$1/timestamp.txt"',
                               "plant", plant_file, solution, f"{ASSIGNMENT}.ipynb", stamp])
    with Timer("the instructor collects (a link to the solution is planted)"):
        first = views.as_user(users.INSTRUCTOR, [BIN / "nbgrader", "collect", ASSIGNMENT], cwd=course,
                                 check=False, capture_output=True)
    assert (course / "submitted" / HOSTILE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file(), first.stderr
    problems = []  # every attack is tried, and every one that worked is reported
    taken = course / "submitted" / PLANTER
    if taken.exists():
        problems.append(f"nbgrader collect took {PLANTER}'s planted link to the solution: "
                        f"{sorted(p.name for p in taken.rglob('*'))}")
    if "Not collecting" not in first.stderr + first.stdout:
        problems.append(f"nbgrader collect said nothing of the planted link:\n{first.stderr[-1500:]}")
    later = (datetime.now(timezone.utc) - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    plant_folder = inbound / f"{PLANTER}+{ASSIGNMENT}+{later}+planted2"
    views.as_user(PLANTER, ["ln", "-s", course / "submitted" / STUDENT / ASSIGNMENT, plant_folder])
    with Timer("the instructor collects --update (a link to another student's submission is planted)"):
        second = views.as_user(users.INSTRUCTOR, [BIN / "nbgrader", "collect", "--update", ASSIGNMENT],
                                  cwd=course, check=False, capture_output=True)
    theirs = course / "submitted" / PLANTER / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    if theirs.is_file() and theirs.read_bytes() == (course / "submitted" / STUDENT / ASSIGNMENT /
                                                    f"{ASSIGNMENT}.ipynb").read_bytes():
        problems.append(f"nbgrader collect took {PLANTER}'s link to {STUDENT}'s submitted folder")
    with Timer("make grade with the hostile notebook and the planted links"):
        graded = views.as_user(users.INSTRUCTOR, ["make", "-C", ROOT, "grade", f"ASSIGNMENT={ASSIGNMENT}",
                                                        f"COURSE={course}"], cwd=course, check=False,
                                  capture_output=True)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    total = max_score()
    assert f"{HOSTILE}: {total:g} / {total:g}" in graded.stdout, graded.stdout[-3000:]
    planter = [line for line in graded.stdout.splitlines() if re.search(rf"\b{PLANTER}: \d", line)]
    if planter:
        problems.append(f"make grade graded {PLANTER}: {planter}")
    leaked = [str(page.relative_to(course)) for page in (course / "feedback").rglob("*.html")
              if "BEGIN SOLUTION" in page.read_text()]
    if leaked:
        problems.append(f"solution text in feedback: {leaked}")

    # The hostile submission in the formgrader (in JupyterLab's tab), then its feedback in JupyterLab, trusted.
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        submission_id = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, HOSTILE).id
    with Timer("the instructor opens the hostile submission in the formgrader"):
        teacher.goto(f"{hub}/user/{users.INSTRUCTOR}/lab")
        teacher.wait_for_selector(".jp-LabShell #jp-main-dock-panel")
        menu(teacher, "Nbgrader", "Formgrader")
        deadline = time.monotonic() + 60
        while not [f for f in teacher.frames if "/formgrader" in f.url] and time.monotonic() < deadline:
            teacher.wait_for_timeout(200)
        frame = [f for f in teacher.frames if "/formgrader" in f.url][-1]
        frame.goto(f"{hub}/user/{users.INSTRUCTOR}/formgrader/submissions/{submission_id}/")
        frame.wait_for_selector("mjx-container")  # the page's own scripts run: its math is typeset
        frame.wait_for_load_state("load")  # every image, the student's broken ones too, has loaded or failed
        teacher.wait_for_timeout(500)  # (Playwright routes the requests a payload would send)
    assert frame.locator("textarea.comment").count() > 0, "the formgrader's grading view did not render"
    served = teacher.request.get(f"{hub}/user/{users.INSTRUCTOR}/formgrader/submissions/{submission_id}/"
                                 f"{ASSIGNMENT}.ipynb")
    policy = served.headers.get("content-security-policy", "")
    if served.status != 200:
        problems.append(f"the formgrader did not serve the submission's notebook: HTTP {served.status}")
    elif not re.search(r"(^|;)\s*sandbox\s*(;|$)", policy):
        problems.append(f"the formgrader serves a submission's files unsandboxed: {policy!r}")
    marks = hostile_marks(teacher)
    if marks != ({}, []):
        problems.append(f"the hostile notebook ran in the formgrader: {marks}")
    for left in users.home(users.INSTRUCTOR).glob("hostile-*"):
        left.unlink()  # (so that the next view is judged on its own)
    feedback = (course / "feedback" / HOSTILE / ASSIGNMENT / f"{ASSIGNMENT}.html").relative_to(
        users.home(users.INSTRUCTOR))
    with Timer("the instructor opens the hostile feedback in JupyterLab and trusts it"):
        teacher.goto(f"{hub}/user/{users.INSTRUCTOR}/lab/tree/{feedback}")
        teacher.locator(".jp-HTMLViewer:visible").wait_for()
        teacher.locator(".jp-Toolbar:visible").get_by_text("Trust HTML", exact=True).click()
        page = teacher.frame_locator(".jp-HTMLViewer:visible iframe")
        page.locator("mjx-container").first.wait_for()  # trusted, the page's own scripts typeset its math
        teacher.wait_for_timeout(500)
    marks = hostile_marks(teacher)
    if marks != ({}, []):
        problems.append(f"the hostile feedback ran in the instructor's JupyterLab: {marks}")
    assert not problems, "\n".join(problems)


# Runs `code` in a new kernel of the JupyterLab open in the page, over Jupyter's kernel
# API, as a notebook does; returns what it printed (and the error, if it raised).
RUN_IN_KERNEL = """async ([base, code]) => {
  const xsrf = decodeURIComponent((document.cookie.match(/(?:^|;\\s*)_xsrf=([^;]*)/) || [])[1] || "");
  const headers = {"Content-Type": "application/json", "X-XSRFToken": xsrf};
  const started = await fetch(base + "api/kernels", {method: "POST", headers, body: JSON.stringify({name: "python3"})});
  if (!started.ok) throw new Error("starting a kernel: HTTP " + started.status);
  const kernel = await started.json();
  try {
    const channels = base + "api/kernels/" + kernel.id + "/channels";
    const socket = new WebSocket(location.origin.replace(/^http/, "ws") + channels);
    const id = "hub-test-" + Date.now();
    return await new Promise((resolve, reject) => {
      let out = "";
      socket.onerror = () => reject(new Error("the kernel's websocket failed"));
      socket.onopen = () => socket.send(JSON.stringify({
        header: {msg_id: id, msg_type: "execute_request", session: id, username: "", version: "5.3",
                 date: new Date().toISOString()},
        parent_header: {}, metadata: {}, channel: "shell", buffers: [],
        content: {code, silent: false, store_history: false, user_expressions: {}, allow_stdin: false,
                  stop_on_error: true},
      }));
      socket.onmessage = (event) => {
        const message = JSON.parse(event.data);
        if (message.parent_header.msg_id !== id) return;
        if (message.msg_type === "stream") out += message.content.text;
        if (message.msg_type === "error") out += message.content.ename + ": " + message.content.evalue;
        if (message.msg_type === "status" && message.content.execution_state === "idle") {
          socket.close();
          resolve(out);
        }
      };
    });
  } finally {
    await fetch(base + "api/kernels/" + kernel.id, {method: "DELETE", headers});
  }
}"""

# What the student's kernel runs: try to read each path (a folder: list it), print what happened.
TRY_TO_READ = """
import json, os
def attempt(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as file:
                file.read(1)
        return "read"
    except OSError as error:
        return type(error).__name__
print(json.dumps({name: attempt(path) for name, path in json.loads(%r).items()}))
"""


def test_a_student_cannot_read_the_course(hub, student):
    if hub is None:
        return  # it ran, and passed, as root through sudo (run_as_root)
    local.wait_for_setup()  # the gradebook is there
    course = users.course_folder()
    secrets = {
        "the repository's solutions/": ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        "the repository's verification spec": ROOT / "solutions" / ASSIGNMENT / "checks" / "verification.py",
        "the repository's git history": ROOT / ".git",
        "the course folder's solutions/": course / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        "the gradebook": course / "gradebook.db",
        "the course folder": course,
        "the instructor's home": users.home(users.INSTRUCTOR),
        "the hub's database": users.HUB / "jupyterhub.sqlite",
    }
    needed = {"the exchange": users.EXCHANGE, "the course's Python": BIN / "python"}
    paths = {name: str(path) for name, path in {**secrets, **needed}.items()}
    absent = [name for name, path in paths.items() if not os.path.exists(path)]
    assert not absent, f"the test looks for files that are not there: {absent}"

    with Timer("a student's kernel tries to read the course"):
        printed = student.evaluate(RUN_IN_KERNEL, [f"/user/{STUDENT}/", TRY_TO_READ % json.dumps(paths)])
    outcome = json.loads(printed.strip().splitlines()[-1]) if printed.strip().startswith("{") else printed
    assert isinstance(outcome, dict), f"the student's kernel did not run the attempt: {printed}"
    problems = []
    read = {name: paths[name] for name in secrets if outcome[name] == "read"}
    if read:
        problems.append(f"a student's notebook can read these: {read}")
    unreachable = {name: outcome[name] for name in needed if outcome[name] != "read"}
    if unreachable:
        problems.append(f"a student cannot reach what she needs: {unreachable}")
    changed = {folder: f"{before:o} -> {stat.S_IMODE(os.stat(folder).st_mode):o}"
               for folder, before in MODES_BEFORE.items() if stat.S_IMODE(os.stat(folder).st_mode) != before}
    if changed:
        problems.append(f"make hub changed the permissions of folders while it runs: {changed}")
    assert not problems, "\n".join(problems)


# The request the formgrader's "Autograde" button sends; returns the formgrader's JSON answer.
PRESS_AUTOGRADE = """async (url) => {
  const xsrf = decodeURIComponent((document.cookie.match(/(?:^|;\\s*)_xsrf=([^;]*)/) || [])[1] || "");
  const reply = await fetch(url, {method: "POST", headers: {"X-XSRFToken": xsrf}});
  if (!reply.ok) throw new Error("the formgrader answered HTTP " + reply.status);
  return JSON.parse(await reply.text());
}"""


def test_the_formgraders_autograde_button_points_to_make_grade(hub, teacher):
    if hub is None:
        return  # it ran, and passed, as root through sudo (run_as_root)
    local.wait_for_setup()
    graded = users.course_folder() / "autograded" / STUDENT

    def snapshot():
        return {str(p): p.stat().st_mtime_ns for p in graded.rglob("*")} if graded.exists() else {}

    before = snapshot()
    with Timer("the instructor presses Autograde in the formgrader"):
        teacher.wait_for_url(f"**/user/{users.INSTRUCTOR}/**", timeout=120_000)  # his server is up
        formgrader = f"{hub}/user/{users.INSTRUCTOR}/formgrader"
        teacher.goto(f"{formgrader}/manage_assignments")
        answer = teacher.evaluate(PRESS_AUTOGRADE, f"{formgrader}/api/submission/{ASSIGNMENT}/{STUDENT}/autograde")
    message = f"{answer.get('log', '')}{answer.get('error', '')}"
    assert answer["success"] is False, f"the formgrader autograded {STUDENT}'s submission:\n{message[-1500:]}"
    assert "make grade" in message, f"the formgrader's answer does not point to make grade:\n{message[-1500:]}"
    assert snapshot() == before, "the formgrader's Autograde changed autograded/"
    with Timer("the instructor presses Autograde on the Manage Submissions page"):
        teacher.goto(f"{formgrader}/manage_submissions/{ASSIGNMENT}")
        teacher.locator("tr", has_text=STUDENT).locator(".autograde a").first.click()
        dialog = teacher.locator(".modal-dialog:visible")
        dialog.wait_for()
    title, shown = dialog.locator(".modal-title").inner_text(), dialog.inner_text()
    assert "error" not in title.lower(), f"the answer to Autograde is headed {title!r}:\n{shown}"
    assert "make grade" in shown and "Nothing was graded" in shown, shown
    assert snapshot() == before, "the formgrader's Autograde changed autograded/"


def test_stopping_and_cleaning_up_keep_the_terms_data(hub):
    """Runs last (this file's order): the hub stops as Ctrl-C stops it, then the guide's clean-up."""
    if hub is None:
        return  # it ran, and passed, as root through sudo (run_as_root)
    created = users.created_users()
    assert set(created) == set(users.USERS), f"the hub did not record the users it created: {created}"
    with Timer("the hub stops (Ctrl-C): its users are removed"):
        local.stop(STATE["process"])
    still_there = []
    for user in created:
        try:
            pwd.getpwnam(user)
            still_there.append(user)
        except KeyError:
            pass
    assert not still_there, f"the Unix users the hub created are still on the machine after it stopped: {still_there}"
    course = users.HOMES / users.INSTRUCTOR / users.COURSE_ID
    kept = [course / "gradebook.db", course / "submitted" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
            course / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html",
            users.HOMES / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"]
    lost = [str(path) for path in kept if not path.is_file()]
    assert not lost, f"stopping the hub lost the term's data: {lost}"

    with Timer("make hub-clean archives the term, then removes it"):
        proc = subprocess.run(["make", "hub-clean"], cwd=ROOT,
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = re.search(r"archived in (\S+\.tar\.gz)", proc.stdout)
    assert found, proc.stdout
    STATE["archive"] = archive = Path(found.group(1))
    assert archive.parent == cleanup.BACKUPS and stat.S_IMODE(archive.stat().st_mode) == 0o600, archive
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    missing_from_archive = [str(path.relative_to(users.TERM.parent)) for path in kept
                            if str(path.relative_to(users.TERM.parent)) not in names]
    assert not missing_from_archive, f"the archive lacks the term's data: {missing_from_archive}"
    assert not users.TERM.exists(), "make hub-clean left the term's folder"
    archive.unlink()  # the test's own term


def notebook_lines(path):
    return {line.strip() for cell in nbformat.read(path, as_version=4).cells for line in cell.source.splitlines()}


def manual_comments():
    """Every manual comment on the student's submission, from the course's gradebook."""
    from nbgrader.api import Gradebook

    db = users.course_folder() / "gradebook.db"
    with Gradebook(f"sqlite:///{db}") as gb:
        notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, STUDENT)
        return [c.manual_comment for c in notebook.comments if c.manual_comment]


@pytest.fixture(scope="session", autouse=True)
def report():
    yield
    if STEPS:
        lines = [f"{seconds:6.1f} s  {step}" for step, seconds in STEPS.items()]
        lines.append(f"{sum(STEPS.values()):6.1f} s  in all")
        REPORT.parent.mkdir(exist_ok=True)
        REPORT.write_text("\n".join(lines) + "\n")
        print("\nthe hub test, step by step:\n" + "\n".join(lines))
