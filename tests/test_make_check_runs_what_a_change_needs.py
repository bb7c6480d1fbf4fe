"""Promise: `make check` runs what a change to an assignment or a chapter needs, found rather than listed.

- the test modules come from the modules themselves (their ``MAKE_CHECK``), so the test that puts the chapters'
  code in the answers' place runs after a change to an assignment and after a change to a chapter;
- ``make check CHAPTER=ch07`` runs that chapter's notebook and the chapter modules, and leaves out the tests of
  the other chapters (tests/plugins/selection.py), also in the programs run beside the suite;
- without ASSIGNMENT or CHAPTER, the paths a change touches choose (tests/make_check.py);
- the background programs of the test modules are started and stopped by one helper (``BackgroundRun``).
"""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests import make_check
from tests.plugins.background_runs import BackgroundRun
from tests.plugins.selection import chosen_chapters, named_chapters
from tools.paths import CHAPTERS, ROOT


def dry_run(*variables):
    """What `make check` with ``variables`` says it would run (its --dry-run), and its exit status."""
    result = subprocess.run(["make", "-s", "check", *variables, "PYTEST_ARGS=--dry-run"], cwd=ROOT,
                            capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    return result.returncode, result.stdout + result.stderr


def pytest_line(output):
    (line,) = [line for line in output.splitlines() if " -m pytest " in line]
    return line.split()


def test_make_check_of_an_assignment_runs_its_modules_and_the_chapter_code_test():
    returncode, output = dry_run("ASSIGNMENT=ex02_softmax_masking")
    assert returncode == 0, output
    paths = pytest_line(output)
    for module in ("test_chapter_code_earns_nothing.py", "test_wrong_implementations_lose_points.py",
                   "test_visible_tests_warn_at_the_mistake.py", "test_release_is_exactly_the_generated_one.py"):
        assert f"tests/{module}" in paths, output
    assert not any(p.startswith("chapters/") for p in paths), output
    assert "assignments ex02_softmax_masking; chapters none" in output


def test_make_check_of_a_chapter_runs_that_chapter_only():
    returncode, output = dry_run("CHAPTER=ch07")
    assert returncode == 0, output
    paths = pytest_line(output)
    notebooks = [p for p in paths if p.startswith("chapters/")]
    assert notebooks == ["chapters/ch07_word_order.ipynb"], output
    for module in ("test_every_cpu.py", "test_launch_buttons_open_what_works.py", "test_chapter_code_earns_nothing.py",
                   "test_chapters_show_only_their_figures.py", "test_site_works_offline_in_a_browser.py"):
        assert f"tests/{module}" in paths, output
    assert "tests/test_wrong_implementations_lose_points.py" not in paths, output


def test_make_check_names_what_it_does_not_know():
    returncode, output = dry_run("CHAPTER=ch7")
    assert returncode != 0 and "no chapter called ch7" in output and "ch07" in output, output
    returncode, output = dry_run("ASSIGNMENT=ex2")
    assert returncode != 0 and "no assignment called ex2" in output and "ex02_softmax_masking" in output, output


def test_a_change_is_mapped_to_its_assignments_and_chapters():
    found_a, found_c, others = make_check.touched([
        "solutions/ex05_positions/checks/wrong_implementations/eq_always_true.py",
        "exercises/ex01_by_hand/ex01_by_hand.ipynb",
        "chapters/ch03_scaling.ipynb",
        "tools/grading/run.py",
        "solutions/ex99_unknown/x.py",
        "chapters/README.md",
    ])
    assert sorted(found_a) == ["ex01_by_hand", "ex05_positions"]
    assert sorted(found_c) == ["ch03"]
    assert others == ["tools/grading/run.py", "solutions/ex99_unknown/x.py", "chapters/README.md"]
    _, every_chapter, _ = make_check.touched(["chapters/course.py"])
    assert sorted(every_chapter) == sorted(p.name[:4] for p in CHAPTERS.glob("ch*.ipynb"))


def test_a_module_declares_what_it_checks_in_words_make_check_knows(tmp_path):
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        make_check.declared(path)  # raises on a declaration make check cannot read
    wrong = tmp_path / "test_x.py"
    wrong.write_text('import os\nMAKE_CHECK = ("chapters",)\n')
    with pytest.raises(ValueError, match=r"MAKE_CHECK should be a tuple of \('assignment', 'chapter'\)"):
        make_check.declared(wrong)


def test_course_chapters_chooses_chapters_and_their_tests(monkeypatch):
    seven = CHAPTERS / "ch07_word_order.ipynb"
    monkeypatch.setenv("COURSE_CHAPTERS", "ch07")
    assert chosen_chapters() == [seven]
    monkeypatch.setenv("COURSE_CHAPTERS", "ch7")
    with pytest.raises(ValueError, match="ch07_word_order"):
        chosen_chapters()

    def item(**params):
        return SimpleNamespace(callspec=SimpleNamespace(params=params), path=ROOT / "tests" / "test_x.py")

    assert named_chapters(item(path=seven)) == {"ch07"}
    assert named_chapters(item(page="chapters/ch02_queries_keys_values")) == {"ch02"}
    assert named_chapters(item(page="exercises/ex01_by_hand")) == {"page exercises/ex01_by_hand"}
    assert named_chapters(item(assignment="ex01_by_hand")) == set()
    assert named_chapters(SimpleNamespace(path=seven)) == {"ch07"}  # the notebook nbval runs


def test_a_background_run_is_stopped_past_its_time_and_keeps_its_output(tmp_path):
    done = BackgroundRun([sys.executable, "-c", "import sys; print('result'); print('progress', file=sys.stderr)"],
                         out=tmp_path / "out.json", log=tmp_path / "run.log")
    assert done.wait(timeout=120) == 0
    assert done.out.read_text() == "result\n" and done.output() == "progress\n"
    assert done.wait(timeout=0) == 0 and done.waited is not None  # waiting again returns at once
    hung = BackgroundRun(["sleep", "600"], log=tmp_path / "hung.log")
    with pytest.raises(subprocess.TimeoutExpired):
        hung.wait(timeout=0.5)
    assert hung.process.returncode is not None, "a run past its time is left running"
