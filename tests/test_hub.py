"""Promise: on the course's JupyterHub (`make hub`, instructor/hub.md), a whole
assignment goes round as the instructor guide describes, in a real browser.

One hub is started for this module, from scratch (tools/hub.py), and driven
in headless Chromium (Playwright, the system's browser as in test_site.py):

1. a student logs in; in the Assignments tab (Nbgrader > Assignment List) she
   fetches ex01_by_hand, opens it, runs every cell and saves it: her answers are
   the reference solution, written into the fetched notebook as she would type
   them; then she submits it from the Assignments tab;
2. the instructor collects the submission (`nbgrader collect`) and runs
   `make grade`;
3. the instructor opens the formgrader, sees the full score there, and types a
   comment on the student's answer;
4. `make grade` runs again, and the comment is still there (the guide promises
   that grading again never touches a manual comment), in the formgrader and in
   the feedback;
5. the instructor releases the feedback (`nbgrader release_feedback`); the
   student fetches it in the Assignments tab and reads it: her score and the
   instructor's comment are there, and no line of a hidden test is.

Two more tests use the same hub. A student's kernel, started from her own
JupyterLab, tries to read what she must not: the served repository's
solutions/, .git and verification specs, the instructor's home with the course
folder and its gradebook, the hub's database; and `make hub` may not have
changed the permissions of any folder on the way to the course's Python (it
used to let everyone into /root while it ran). The instructor presses the
formgrader's "Autograde" for a student (the request the button sends): the
answer points to `make grade` and nothing is graded.

Each step's time is written to _build/hub-report.md (and printed, with `pytest -s`).

Run alone with `pytest -m hub`. Needs root (the hub's users are real Unix
users, created for the test and removed after it), Node.js with npm (the
hub's proxy) and Chromium; without them the test is skipped with a message,
and with CI=true it fails instead.
"""

import json
import os
import pwd
import re
import shutil
import socket
import stat
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from tools import hub as hubtools
from tools.nbgrader_course import fill_release, protected_regions, solution_code
from tools.paths import BIN, ROOT, SOLUTIONS
from tools.site import CHROMIUM, HOW_TO_GET_CHROMIUM, launch

pytestmark = pytest.mark.hub

ASSIGNMENT = "ex01_by_hand"
STUDENT = "ada"
COMMENT = "Clear and correct: well done. (Comment typed in the formgrader.)"
REPORT = ROOT / "_build" / "hub-report.md"
STEPS = {}
#: The permissions of the folders on the way to the course's Python and repository, before the hub started.
MODES_BEFORE = {}


def missing():
    """Why the hub cannot run here, or None."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ("the hub test creates Unix users: run it as root, or as a user with passwordless sudo "
                "(sudo .venv/bin/python -m pytest -m hub)")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        return "the hub test needs useradd and runuser (Debian's passwd and util-linux)"
    lacking = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if lacking:
        return f"the hub's proxy needs Node.js: {' and '.join(lacking)} not found (apt-get install nodejs npm)"
    if not CHROMIUM.exists():
        return HOW_TO_GET_CHROMIUM
    recorded = json.loads(hubtools.CREATED_USERS.read_text()) if hubtools.CREATED_USERS.is_file() else []
    for user in hubtools.USERS:
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


def reset():
    """Leave no trace of a hub: its users and their homes, its folder."""
    hubtools.remove_users()
    shutil.rmtree(hubtools.HUB, ignore_errors=True)


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
         *passed_on, str(BIN / "python"), "-m", "pytest", "tests/test_hub.py", "-m", "hub",
         "-p", "no:cacheprovider", "-q", "-s"],
        cwd=ROOT, text=True, capture_output=True, timeout=900)
    assert proc.returncode == 0, f"the hub test, run as root through sudo, failed:\n{proc.stdout[-6000:]}"
    print(proc.stdout[-3000:])


@pytest.fixture(scope="module")
def hub():
    """The base URL of a freshly set-up JupyterHub, every assignment released;
    None when the test already ran as root through sudo (run_as_root)."""
    if os.geteuid() != 0 and can_sudo():
        run_as_root()
        yield None
        return
    reason = missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    reset()
    MODES_BEFORE.update(folder_modes())
    port = free_port()
    with Timer("set up the hub (users, proxy, configuration, course folder)"):
        command = hubtools.setup(port=port, hub_port=free_port(), api_port=free_port(), released=[ASSIGNMENT])
    log = open(hubtools.HUB / "jupyterhub.log", "w")
    process = hubtools.start(command, log=log)
    base = f"http://127.0.0.1:{port}"
    try:
        with Timer("start JupyterHub"):
            hubtools.wait_until_up(base, process)
        yield base
    finally:
        try:
            hubtools.wait_for_setup()
        except hubtools.HubError:
            pass  # already reported by the test
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        reset()


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
    """The instructor, logging in: his JupyterLab may still be starting (None when
    the test ran as root through sudo)."""
    yield None if hub is None else start_log_in(browser, hub, hubtools.INSTRUCTOR)


def start_log_in(browser, base, user):
    """A new browser context, logging in as ``user``: their JupyterLab starts
    while the test goes on. Return the page."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.goto(f"{base}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hubtools.PASSWORD)
    page.click("#login_submit", no_wait_after=True)
    return page


def lab_ready(page, user):
    """Wait for ``user``'s JupyterLab to be up in ``page``."""
    page.wait_for_url(f"**/user/{user}/lab**", timeout=120_000)
    page.wait_for_selector(".jp-LabShell #jp-main-dock-panel")
    return page


def open_assignments(page):
    page.locator(".lm-MenuBar-itemLabel:text-is('Nbgrader')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Assignment List')").click()
    page.wait_for_selector("#released_assignments_list")


def item(page, listing):
    """The top-level row of ASSIGNMENT in one of the Assignments tab's lists."""
    return page.locator(f"#{listing} > .list_item:not(.nested_list_item)", has_text=ASSIGNMENT).first


def as_instructor(*args):
    return hubtools.as_user(hubtools.INSTRUCTOR, args, cwd=hubtools.course_folder(),
                            capture_output=True, check=False)


def make_grade():
    # .venv is set up already (by root): -o keeps make from reinstalling it as the instructor.
    proc = as_instructor("make", "-C", ROOT, "-o", ".venv/.requirements-installed", "grade",
                         f"ASSIGNMENT={ASSIGNMENT}", f"COURSE={hubtools.course_folder()}")
    assert proc.returncode == 0, f"make grade failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def max_score():
    nb = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells)


def test_a_term_on_the_hub(hub, student, teacher):
    # The student's JupyterLab is up; the instructor's starts while she works (the fixtures).
    if hub is None:
        return  # it ran, and passed, as root through sudo (run_as_root)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    total = max_score()

    with Timer("the release and the class list, set up in the background, are done"):
        hubtools.wait_for_setup()
    with Timer("student fetches the assignment in the Assignments tab"):
        open_assignments(student)
        item(student, "released_assignments_list").get_by_role("button", name="Fetch").click()
        item(student, "fetched_assignments_list").wait_for()
    notebook = hubtools.home(STUDENT) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert notebook.is_file(), f"fetching did not put the notebook at {notebook}"

    # Her answers: the reference solution in the solution cells of the notebook she fetched.
    answered = fill_release(notebook, solution_code(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"))
    hubtools.as_user(STUDENT, ["tee", notebook], input=nbformat.writes(answered), stdout=subprocess.DEVNULL)

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
        student.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
        student.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()
        student.wait_for_function(
            """() => {
              const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) '
                                + '.jp-CodeCell .jp-InputPrompt')];
              return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            timeout=90_000,
        )
        student.keyboard.press("Control+s")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            saved = nbformat.read(notebook, as_version=4)
            if all(c.execution_count for c in saved.cells if c.cell_type == "code"):
                break
            time.sleep(0.2)
    errors = [o for c in saved.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert all(c.execution_count for c in saved.cells if c.cell_type == "code"), "the notebook was not run and saved"
    assert not errors, f"the reference solution raised in the student's JupyterLab: {errors[0]}"

    with Timer("student submits in the Assignments tab"):
        open_assignments(student)
        item(student, "fetched_assignments_list").get_by_role("button", name="Submit").click()
        item(student, "submitted_assignments_list").wait_for()

    with Timer("instructor collects (nbgrader collect)"):
        proc = as_instructor(BIN / "nbgrader", "collect", ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    submitted = hubtools.course_folder() / "submitted" / STUDENT / ASSIGNMENT
    assert (submitted / f"{ASSIGNMENT}.ipynb").is_file(), f"nothing collected into {submitted}:\n{proc.stderr}"

    with Timer("instructor runs make grade"):
        out = make_grade()
    assert f"{STUDENT}: {total} / {total}" in out, out

    with Timer("instructor's JupyterLab is ready (he logged in at the start)"):
        lab_ready(teacher, hubtools.INSTRUCTOR)
    formgrader = f"{hub}/user/{hubtools.INSTRUCTOR}/formgrader"
    with Timer("instructor sees the grade in the formgrader"):
        teacher.goto(f"{formgrader}/gradebook/{ASSIGNMENT}/{ASSIGNMENT}")
        row = teacher.locator("tr", has_text=STUDENT).first
        row.wait_for()
        assert re.search(rf"\b{total}(\.0+)?\s*/\s*{total}\b", row.inner_text()), row.inner_text()
    with Timer("instructor types a comment in the formgrader"):
        row.locator("a", has_text=re.compile("Submission #|" + STUDENT, re.I)).first.click()
        # The comment boxes are ready once the page has loaded the comments (and set a placeholder).
        comment = teacher.locator("textarea.comment[placeholder]").first
        comment.wait_for()
        comment.fill(COMMENT)
        comment.press("Tab")  # leaving the box saves the comment
        deadline = time.monotonic() + 20
        while COMMENT not in manual_comments() and time.monotonic() < deadline:
            time.sleep(0.2)
    assert COMMENT in manual_comments(), "the formgrader did not save the comment in the gradebook"
    submission_page = teacher.url

    with Timer("instructor runs make grade again"):
        out = make_grade()
    assert f"{STUDENT}: {total} / {total}" in out, out
    assert COMMENT in manual_comments(), "make grade lost the comment typed in the formgrader"
    teacher.goto(submission_page)
    teacher.locator("textarea.comment").first.wait_for()
    teacher.wait_for_function(
        "text => [...document.querySelectorAll('textarea.comment')].some(t => t.value === text)", arg=COMMENT
    )

    with Timer("instructor releases the feedback (nbgrader release_feedback)"):
        proc = as_instructor(BIN / "nbgrader", "release_feedback", ASSIGNMENT)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    with Timer("student fetches and reads the feedback in the Assignments tab"):
        student.reload()
        student.wait_for_selector(".jp-LabShell #jp-main-dock-panel")
        open_assignments(student)
        item(student, "submitted_assignments_list").get_by_role("button", name="Fetch Feedback").click()
        item(student, "submitted_assignments_list").get_by_text("view feedback").first.wait_for()
        pages = sorted((hubtools.home(STUDENT) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        assert pages, "fetching the feedback put no page in the student's folder"
        relative = pages[-1].relative_to(hubtools.home(STUDENT))
        feedback = student.context.new_page()
        feedback.goto(f"{hub}/user/{STUDENT}/files/{relative}")
        text = feedback.locator("body").inner_text()
    assert COMMENT in text, "the instructor's comment is not in the feedback"
    assert re.search(rf"Score: {total}(\.0+)? / {total}", text), text[:2000]
    # Lines of the hidden tests that the student has not seen (not in her notebook):
    hidden = {
        line for region, lines in protected_regions(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
        if region == "HIDDEN TESTS" for line in lines if re.search(r"\w", line)
    } - notebook_lines(notebook)
    autograded = hubtools.course_folder() / "autograded" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert hidden & notebook_lines(autograded), "nothing to hide: is the test looking at the right lines?"
    shown = {line.strip() for line in text.splitlines()}
    assert not hidden & shown, f"the feedback shows hidden test lines: {sorted(hidden & shown)[:3]}"


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
    hubtools.wait_for_setup()  # the gradebook is there
    course = hubtools.course_folder()
    secrets = {
        "the repository's solutions/": ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        "the repository's verification spec": ROOT / "solutions" / ASSIGNMENT / "checks" / "verification.py",
        "the repository's git history": ROOT / ".git",
        "the course folder's solutions/": course / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
        "the gradebook": course / "gradebook.db",
        "the course folder": course,
        "the instructor's home": hubtools.home(hubtools.INSTRUCTOR),
        "the hub's database": hubtools.HUB / "jupyterhub.sqlite",
    }
    needed = {"the exchange": hubtools.EXCHANGE, "the course's Python": BIN / "python"}
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
    hubtools.wait_for_setup()
    graded = hubtools.course_folder() / "autograded" / STUDENT

    def snapshot():
        return {str(p): p.stat().st_mtime_ns for p in graded.rglob("*")} if graded.exists() else {}

    before = snapshot()
    with Timer("the instructor presses Autograde in the formgrader"):
        teacher.wait_for_url(f"**/user/{hubtools.INSTRUCTOR}/**", timeout=120_000)  # his server is up
        formgrader = f"{hub}/user/{hubtools.INSTRUCTOR}/formgrader"
        teacher.goto(f"{formgrader}/manage_assignments")
        answer = teacher.evaluate(PRESS_AUTOGRADE, f"{formgrader}/api/submission/{ASSIGNMENT}/{STUDENT}/autograde")
    message = f"{answer.get('log', '')}{answer.get('error', '')}"
    assert answer["success"] is False, f"the formgrader autograded {STUDENT}'s submission:\n{message[-1500:]}"
    assert "make grade" in message, f"the formgrader's answer does not point to make grade:\n{message[-1500:]}"
    assert snapshot() == before, "the formgrader's Autograde changed autograded/"


def notebook_lines(path):
    return {line.strip() for cell in nbformat.read(path, as_version=4).cells for line in cell.source.splitlines()}


def manual_comments():
    """Every manual comment on the student's submission, from the course's gradebook."""
    from nbgrader.api import Gradebook

    db = hubtools.course_folder() / "gradebook.db"
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
