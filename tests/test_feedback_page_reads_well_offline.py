"""Promise: lateness is shown where an instructor and a student look, and the
feedback names its tests and typesets math offline (tools/lateness.py,
tools/feedback/page.py); the hub's clean-up archives the term before it
removes it (tools/hub/cleanup.py, back_up).

Fast checks of the pieces, without grading: the walk through a real hub, in a
browser, is tests/test_hub_term_as_the_guide_tells_it.py's.
"""

import csv
import os
from datetime import datetime, timedelta

import nbformat
import pytest

from tools.hub import cleanup, machine, users
from tools.feedback import page as feedback_page
from tools.feedback.page import feedback_summary, mathjax_scripts
from tools.lateness import COLUMNS, LateCsvExport, duration, summary
from tools.paths import SOLUTIONS, assignments


@pytest.mark.parametrize("seconds, text", [(0, "0 s"), (52, "52 s"), (532, "8 min 52 s"), (3600, "1 h"),
                                           (93784, "1 d 2 h 3 min 4 s")])
def test_duration_reads_as_a_person_would_say_it(seconds, text):
    assert duration(seconds) == text


@pytest.mark.parametrize("assignment", assignments())
def test_every_test_is_named_by_its_task_and_names_are_distinct(assignment):
    nb = nbformat.read(SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    names = feedback_page.test_names(nb.cells)
    tests = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
             if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    assert sorted(names) == sorted(tests)
    assert len(set(names.values())) == len(names), names
    assert all(name[0].isdigit() and "points" not in name for name in names.values()), names


def test_a_task_with_several_tests_names_each_test():
    nb = nbformat.read(SOLUTIONS / "ex04_multi_head" / "ex04_multi_head.ipynb", as_version=4)
    names = feedback_page.test_names(nb.cells)
    assert names["test_averaged"] == "2. What it computes: averaged"
    assert names["test_parameters"] == "1. What it stores"


def test_the_feedback_summary_names_tests_and_tells_lateness():
    nb = nbformat.read(SOLUTIONS / "ex01_by_hand" / "ex01_by_hand.ipynb", as_version=4)
    body = ('<div id="toc"><ol><li><a href="#test_weights_by_hand">Test cell</a> (Score: 3.0 / 3.0)</li>'
            '<li class="late-penalty">Late submission penalty (Score: -2.0)</li></ol></div>')
    resources = {"nbgrader": {"max_score": 10, "late_by": "8 min 52 s"}}
    out = feedback_summary(body, nb, resources)
    assert '<a href="#test_weights_by_hand">2. One row, with and without scaling, by hand</a>' in out
    assert out.index("Submitted 8 min 52 s after the due date") < out.index("late-penalty")
    assert feedback_summary(body, nb, {}) == body  # a formgrader page: unchanged


def test_mathjax_is_written_into_the_page():
    scripts = mathjax_scripts()
    assert scripts.count("<script>") == 3 and "http" not in scripts[:300]
    assert len(scripts) > 1_000_000  # MathJax itself, not a link to it
    assert "</script" not in scripts.replace("</script>\n", "")


def test_remembered_highlighting_is_nbconverts(monkeypatch):
    """The feedback's code highlighting (tools/feedback/hide_hidden_tests.py, RememberedHighlight) gives nbconvert's HTML for every
    cell of every solution, the first time and when it answers from memory; a source past its bound is highlighted
    afresh every time, and what it keeps stays within its total."""
    from nbconvert.filters.highlight import Highlight2HTML

    from tools.feedback import hide_hidden_tests as feedback

    monkeypatch.setattr(feedback, "_HIGHLIGHTED", {})
    monkeypatch.setattr(feedback, "_HIGHLIGHTED_CHARS", [0])
    remembered, plain = feedback.RememberedHighlight(pygments_lexer="ipython3"), Highlight2HTML(pygments_lexer="ipython3")
    sources = [c.source for a in assignments() for c in nbformat.read(SOLUTIONS / a / f"{a}.ipynb", as_version=4).cells
               if c.cell_type == "code"]
    for source in sources + sources:
        assert remembered(source) == plain(source)
    assert remembered("x = 1", "python") == plain("x = 1", "python") != plain("x = 1")
    assert len(feedback._HIGHLIGHTED) == len(set(sources)) + 1
    huge = "y = 2\n" * (feedback.HIGHLIGHT_SOURCE_CHARS // 6 + 1)
    assert remembered(huge) == plain(huge) and len(feedback._HIGHLIGHTED) == len(set(sources)) + 1
    monkeypatch.setattr(feedback, "_HIGHLIGHTED_CHARS", [feedback.HIGHLIGHT_KEPT_CHARS])
    assert remembered("z = 3") == plain("z = 3") and len(feedback._HIGHLIGHTED) == len(set(sources)) + 1


def gradebook_with(tmp_path, late_seconds, penalty):
    from nbgrader.api import Gradebook

    due = datetime(2027, 2, 12, 17, 0, 0)
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment("ex01_by_hand", duedate=due)
        gb.add_student("ada", first_name="Ada", last_name="Lovelace, Countess")
        gb.add_student("alan")
        submission = gb.add_submission("ex01_by_hand", "ada", timestamp=due + timedelta(seconds=late_seconds))
        gb.db.commit()
        assert submission.duedate == due
    return url


def test_grades_csv_has_nbgraders_columns_then_seconds_late(tmp_path):
    from nbgrader.api import Gradebook

    url = gradebook_with(tmp_path, 532, 0)
    plugin = LateCsvExport()
    plugin.to = str(tmp_path / "grades.csv")
    with Gradebook(url) as gb:
        plugin.export(gb)
    with open(tmp_path / "grades.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == COLUMNS + ["seconds_late"]
    by_id = {row["student_id"]: row for row in rows}
    assert float(by_id["ada"]["seconds_late"]) == 532 and by_id["ada"]["last_name"] == "Lovelace, Countess"
    assert float(by_id["alan"]["seconds_late"]) == 0 and by_id["alan"]["timestamp"] == ""


def test_make_grades_line_says_late_and_that_no_penalty_is_configured(tmp_path):
    url = gradebook_with(tmp_path, 532, 0)
    assert "LATE by 8 min 52 s: no penalty" in summary(url, "ex01_by_hand", "ada")
    assert summary(url, "ex01_by_hand", "alan") == ""


def test_the_clean_up_archives_the_term_first(tmp_path, monkeypatch):
    import tarfile

    term = tmp_path / "hub-term"
    (term / "home" / "ada" / "ex01_by_hand").mkdir(parents=True)
    (term / "home" / "ada" / "ex01_by_hand" / "ex01_by_hand.ipynb").write_text("{}")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the term's")
    (term / "home" / "ada" / "link").symlink_to(outside)
    os.mkfifo(term / "home" / "ada" / "pipe")
    deep = term / "home" / "ada"
    for _ in range(1100):  # deeper than Python's recursion limit
        deep = deep / "d"
        deep.mkdir()
    monkeypatch.setattr(cleanup, "TERM", term)
    monkeypatch.setattr(cleanup, "HUB", tmp_path / "hub")
    monkeypatch.setattr(cleanup, "BACKUPS", tmp_path / "backups")
    monkeypatch.setattr(users, "CREATED_USERS", term / "users.json")
    archive = cleanup.clean(out=open(os.devnull, "w"))
    assert not term.exists()
    assert oct(archive.stat().st_mode & 0o777) == oct(0o600)
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert "hub-term/home/ada/ex01_by_hand/ex01_by_hand.ipynb" in members
    assert members["hub-term/home/ada/link"].issym()  # kept as a link, not followed
    assert "hub-term/home/ada/pipe" not in members
    assert outside.read_text() == "not the term's"


def test_a_page_runs_only_its_own_scripts():
    """The formgrader's view and the feedback page: page_policy comes first in <head>, the header's scripts
    (nbgrader's and MathJax) and the formgrader's navigation carry the page's nonce, and nothing of the
    notebook does (the walk in a browser, with a hostile notebook, is the hub test's)."""
    resources = {"submission_id": "s1"}
    header = feedback_page.page_header(
        '<!DOCTYPE html>\n<html>\n<head>\n<script src="jquery.js"></script>MATHJAX</head>', "MATHJAX", "<style/>",
        resources)
    nonce = resources["course_nonce"]
    assert header.index('http-equiv="Content-Security-Policy"') < header.index("<script")
    assert f"script-src 'nonce-{nonce}'" in header and "unsafe-inline" not in header
    assert header.count("<script") == header.count(f'<script nonce="{nonce}"') > 1  # jquery and MathJax's three
    body = ('<body><nav><script>tooltips()</script></nav><div id="notebook"><script>student()</script>'
            '<img src=x onerror="student()"></div></body>')
    out = feedback_page.page_body_scripts(body, resources)
    assert f'<nav><script nonce="{nonce}">tooltips()' in out and "<script>student()" in out
    assert feedback_page.page_body_scripts(body, {"nbgrader": {}}) == body  # the feedback: nothing marked
    again = {}
    feedback_page.page_header("<head></head>", "", "", again)
    assert again["course_nonce"] != nonce, "a nonce drawn once for every page"


def test_make_hub_stops_at_once_on_a_venv_made_elsewhere(tmp_path, monkeypatch):
    bin_folder = tmp_path / ".venv" / "bin"
    bin_folder.mkdir(parents=True)
    monkeypatch.setattr(machine, "BIN", bin_folder)

    def scripts(first_lines):
        for name in machine.VENV_SCRIPTS:
            (bin_folder / name).write_text(first_lines + "\nimport sys\n")

    scripts(f"#!{bin_folder / 'python'}")
    machine.check_venv_scripts()
    # pip's trampoline for a long path: /bin/sh first, the interpreter on the second line
    scripts(f"#!/bin/sh\n'''exec' \"{bin_folder / 'python3.11'}\" \"$0\" \"$@\"\n' '''")
    machine.check_venv_scripts()
    scripts("#!/elsewhere/project/.venv/bin/python")
    with pytest.raises(users.HubError, match=r"jupyterhub-singleuser starts /elsewhere/project/\.venv/bin/python"):
        machine.check_venv_scripts()
    (bin_folder / "nbgrader").unlink()
    with pytest.raises(users.HubError, match="nbgrader: No such file"):
        machine.check_venv_scripts()
