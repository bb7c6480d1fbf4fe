"""Promise: `make report` shows an instructor what the class understood, and nothing a student should not see.

Read from the session's shared grading run (the ``graded_course`` fixture: every assignment's solution, untouched
release and wrong implementations, graded by one `make grade`), with no grading run of its own:

- every wrong implementation states its cause (``# cause: <code>``, a code its assignment's checks may report),
  and `make grade` records exactly that cause, in causes.csv, for the first cell it loses points on;
- the report's numbers (tasks.csv) are the gradebook's: each task's submissions, full marks, mean points and
  not-attempted count (the untouched release attempts nothing, the solution everything), and its causes
  (causes.csv of the report) count the wrong implementations' stated causes;
- its pages load offline in a browser with no console error and no request to another host, at 1280 and 390 px
  wide, with no text past the screen's edge and no text smaller than 12 px;
- no page holds a line of a hidden test or of a reference solution, and no assignment page names a student;
- the folder, which names students on its course page, is its owner's only.

REPORT_SHOTS=<folder> saves each page's screenshots at both widths there (instructor/report.md's pictures).
"""

import csv
import os
import re
import stat
from collections import Counter
from pathlib import Path

import pytest

from tests.plugins.selection import graded_assignments
from tests.plugins.shared_grading_run import submission_name
from tools.assignments.answers import solution_code
from tools.assignments.leak_checks import hidden_lines
from tools.paths import SOLUTIONS, wrong_implementations
from tools.report.data import read_course
from tools.report.pages import write_report
from tools.verification.probes import GENERAL_CAUSES
from tools.verification.report import CAUSES_COLUMNS, CAUSES_CSV
from tools.verification.specs import load_spec

MAKE_CHECK = ("assignment",)  # make check ASSIGNMENT=... runs it (tests/make_check.py)

ASSIGNMENTS = graded_assignments()
CAUSE_LINE = re.compile(r"^# cause: ([a-z0-9_]+)$")
WIDTHS = {"laptop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SMALLEST_TEXT_PX = 12


def stated_cause(path: Path) -> str:
    """The code of the file's ``# cause:`` line, in its header (before the first section)."""
    header = path.read_text().split("\n# %%", 1)[0].splitlines()
    found = [m.group(1) for m in map(CAUSE_LINE.match, header[1:]) if m]
    assert len(found) == 1, f"{path}: its header needs exactly one line '# cause: <code>', found {found}"
    return found[0]


def known_causes(assignment):
    return set(getattr(load_spec(assignment), "CAUSES", {})) | set(GENERAL_CAUSES)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_wrong_implementation_states_a_cause_its_checks_know(assignment):
    known = known_causes(assignment)
    unknown = {p.name: stated_cause(p) for p in wrong_implementations(assignment) if stated_cause(p) not in known}
    assert not unknown, f"{assignment}: causes no check of it may report (CAUSES in its verification.py): {unknown}"


def test_a_failed_check_reports_the_cause_it_names_and_other_when_it_names_none():
    from tools.verification.probes import Fail, clear_diagnosis, diagnosis, expect, failed_cause

    def failure(judge):
        clear_diagnosis()
        try:
            judge()
        except Fail as error:
            return failed_cause(error)
        return None

    assert failure(lambda: expect(False, "wrong", cause="mask_inverted")) == "mask_inverted"
    assert failure(lambda: expect(False, f"wrong: {diagnosis('offset', 'off by m')}")) == "offset"
    assert failure(lambda: expect(False, "wrong")) == "other"
    # A diagnosis made for a comparison that passed is not the cause of a later failure.
    assert failure(lambda: (expect(True, diagnosis("offset", "")), expect(False, "wrong"))) == "other"
    # The code given to the failing comparison wins over an earlier diagnosis.
    assert failure(lambda: expect(False, diagnosis("offset", "x"), cause="changes_dtype")) == "changes_dtype"
    assert failure(lambda: None) is None


def test_a_task_is_attempted_unless_its_cells_hold_the_release_stub():
    from tools.verification.judging import is_stub

    stub = 'def f(x):\n    """Doc."""\n    # YOUR CODE HERE\n    raise NotImplementedError()\n'
    assert is_stub(stub) and is_stub(None)
    assert not is_stub('def f(x):\n    """Doc."""\n    return x\n')
    assert not is_stub('def f(x):\n    # YOUR CODE HERE\n    return x  # raise NotImplementedError() was here\n')


def cause_rows(course):
    """causes.csv's rows, each assignment's cells in the notebook's order (that of its checks)."""
    with open(course.workdir / CAUSES_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and set(CAUSES_COLUMNS) <= set(rows[0])
    order = {a: list(load_spec(a).CHECKS) for a in {r["assignment"] for r in rows}}
    return sorted(rows, key=lambda r: (r["assignment"], r["student_id"], order[r["assignment"]].index(r["grade_id"])))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_wrong_implementation_is_diagnosed_as_its_file_says(graded_course, assignment):
    rows = [r for r in cause_rows(graded_course()) if r["assignment"] == assignment]
    wrong = []
    for path in wrong_implementations(assignment):
        lost = [r for r in rows if r["student_id"] == submission_name(path) and float(r["verified"]) < float(r["points"])]
        got = lost[0]["cause"] if lost else "(no cell lost points in verification)"
        if got != stated_cause(path):
            wrong.append(f"{path.name}: states {stated_cause(path)}, diagnosed {got} on {lost[0]['grade_id'] if lost else '-'}")
    assert not wrong, f"{assignment}: {len(wrong)} wrong implementation(s) diagnosed otherwise:\n" + "\n".join(wrong)


@pytest.fixture(scope="session")
def report(graded_course):
    """The report of the shared graded course: (folder, [AssignmentReport])."""
    course = graded_course()
    reports, students = read_course(course.workdir, ASSIGNMENTS)
    return write_report(course.workdir, reports, students), reports


def read(folder, name):
    with open(folder / name, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_reports_numbers_are_the_gradebooks(graded, graded_course, report, assignment):
    folder, _ = report
    scores = graded(assignment).course.scores(assignment)  # every submission, guests too: the report's class
    tasks = {row["task"]: row for row in read(folder, "tasks.csv") if row["assignment"] == assignment}
    cells = sorted({cell for s in scores.values() for cell in s["cells"]})
    assert sorted(tasks) == cells
    for cell in cells:
        points = [s["cells"][cell] for s in scores.values()]
        top = max(float(tasks[cell]["max_points"]), 0)
        row = tasks[cell]
        assert int(row["submissions"]) == len(points)
        assert int(row["full_marks"]) == sum(1 for p in points if p >= top - 1e-9), cell
        assert float(row["mean_points"]) == pytest.approx(sum(points) / len(points), abs=1e-3), cell
    # The untouched release attempts no task and the solution every one.
    rows = [r for r in cause_rows(graded_course()) if r["assignment"] == assignment]
    assert {r["attempted"] for r in rows if r["student_id"] == "untouched-release"} == {"no"}
    assert {r["attempted"] for r in rows if r["student_id"] == "solution"} == {"yes"}
    assert all(int(tasks[c]["not_attempted"]) >= 1 for c in cells)
    # Each stated cause counts in the report, on the task it is diagnosed on.
    stated = Counter()
    for path in wrong_implementations(assignment):
        lost = [r for r in rows if r["student_id"] == submission_name(path) and float(r["verified"]) < float(r["points"])]
        if lost and scores[submission_name(path)]["cells"][lost[0]["grade_id"]] < float(lost[0]["points"]):
            stated[lost[0]["grade_id"], stated_cause(path)] += 1
    counted = {(r["task"], r["cause"]): int(r["count"]) for r in read(folder, "causes.csv") if r["assignment"] == assignment}
    short = {key: (n, counted.get(key, 0)) for key, n in stated.items() if counted.get(key, 0) < n}
    assert not short, f"causes the report counts fewer times than wrong implementations state them: {short}"


def page_text(folder):
    return {path.name: path.read_text() for path in sorted(folder.glob("*.html"))}


def test_no_page_shows_a_hidden_test_a_reference_value_or_an_assignment_pages_student(report, graded_course):
    folder, reports = report
    pages = page_text(folder)
    assert set(pages) == {"index.html"} | {f"{r.name}.html" for r in reports}
    secret = set()
    for assignment in ASSIGNMENTS:
        source = SOLUTIONS / assignment / f"{assignment}.ipynb"
        secret |= set(hidden_lines(source))
        secret |= {line.strip() for code in solution_code(source).values() for line in code.splitlines()
                   if len(line.strip()) > 12}
    for name, text in pages.items():
        shown = [line for line in secret if line in text]
        assert not shown, f"{name} shows lines of hidden tests or solutions: {shown[:5]}"
    students = {s for r in reports for s in r.totals if "-" in s}
    for r in reports:
        named = [s for s in students if s in pages[f"{r.name}.html"]]
        assert not named, f"{r.name}.html names students: {named[:5]}"
    assert "untouched-release" in pages["index.html"], "the course page should list the students who may need help"


def test_the_report_is_its_owners_only(report, graded_course):
    """In the course folder, which on the hub is in the instructor's home (hub.py: mode 700), and its owner's only
    even where the course folder is not: students cannot reach it."""
    folder, _ = report
    assert folder == graded_course().workdir / "reports"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


# The page's width, the text past the screen's right edge (outside boxes that scroll sideways), and the text
# smaller than SMALLEST_TEXT_PX.
LAYOUT = """() => {
  const screen = document.documentElement.clientWidth, out = [], small = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, parent = node.parentElement;
    if (!node.textContent.trim()) continue;
    const size = parseFloat(getComputedStyle(parent).fontSize);
    const inSvg = parent.closest("svg");
    const range = document.createRange();
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (inSvg) {  // an SVG's text is scaled with the picture: its drawn height is what the reader sees
      if (r.height > 0 && r.height < %d * 0.9) small.push(node.textContent.trim().slice(0, 40) + " " + r.height.toFixed(1));
      continue;
    }
    if (size < %d) small.push(node.textContent.trim().slice(0, 40) + " " + size);
    let box = parent, scrolls = false;
    for (; box && box !== document.body; box = box.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(box).overflowX)) { scrolls = true; break; }
    }
    if (!scrolls && r.right > screen + 1) out.push(node.textContent.trim().slice(0, 60));
  }
  return {width: document.documentElement.scrollWidth, screen: screen, out: out, small: small};
}""" % (SMALLEST_TEXT_PX, SMALLEST_TEXT_PX)


def test_the_pages_work_offline_at_laptop_and_phone_width(report, chromium):
    from tools.site.browser import offline_context, serve

    folder, _ = report
    shots = os.environ.get("REPORT_SHOTS")
    problems = []
    browser = chromium  # (the session's browser: tests/plugins/chromium.py)
    with serve(folder) as base:
        for label, viewport in WIDTHS.items():
            blocked, errors, failed = [], [], []
            context = offline_context(browser, base, blocked, viewport=viewport)
            page = context.new_page()
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.url} {r.status}"))
            page.on("requestfailed", lambda r: r.url.startswith(base) and failed.append(r.url))
            for path in sorted(folder.glob("*.html")):
                page.goto(base + path.name, wait_until="load")
                layout = page.evaluate(LAYOUT)
                if layout["width"] > layout["screen"] + 1 or layout["out"]:
                    problems.append(f"{path.name} at {label} width: wider than the screen "
                                    f"({layout['width']} > {layout['screen']}): {layout['out'][:3]}")
                if layout["small"]:
                    problems.append(f"{path.name} at {label} width: text under {SMALLEST_TEXT_PX} px: "
                                    f"{layout['small'][:3]}")
                if shots:
                    Path(shots).mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(Path(shots) / f"{path.stem}-{viewport['width']}.png"), full_page=True)
            context.close()
            problems += [f"at {label} width, a request to another host: {url}" for url in blocked]
            problems += [f"at {label} width, a console error: {e}" for e in errors]
            problems += [f"at {label} width, a failed request: {r}" for r in failed]
    assert not problems, "\n".join(problems)
