"""Promise: `nbgrader collect` takes from the exchange only what `nbgrader submit`
makes: a real folder of regular files, each with one name, owned by the student the
folder is named after (tools/hub/guarded_collect.py, which nbgrader_config.py names as the
exchange's collect). A symbolic link (to a file or as the folder itself), a hard link,
a FIFO, a folder of someone else's or one of too many entries is left out with a
warning that says why, and the student's newest folder that passes is collected
instead: a planted folder costs no other student anything.

Fast and without users of its own: the student is the user running the test (the
exchange's folders are owned by them); the case of a folder owned by someone else
needs root (chown) and is skipped otherwise. The walk through a real hub, where a
student plants links from her own processes, is
tests/test_hub_term_as_the_guide_tells_it.py's.
"""

import logging
import os
import pwd
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from tools.hub.guarded_collect import MAX_ENTRIES, GuardedCollect
from tools.nbgrader_patches import alembic_head_in_process

alembic_head_in_process()  # each test's new gradebook without an `alembic` subprocess

ASSIGNMENT = "ex01_by_hand"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
ME = pwd.getpwuid(os.getuid()).pw_name


def exchange(tmp_path):
    """An exchange with the course's inbound/, a course folder, and a file the students must not get."""
    inbound = tmp_path / "exchange" / "self-attention" / "inbound"
    inbound.mkdir(parents=True)
    (tmp_path / "course").mkdir()
    secret = tmp_path / "course" / "solution.ipynb"
    secret.write_text('{"the": "solution"}')
    return inbound, secret


def submission(inbound, hours_ago, name="honest", student=ME):
    """A folder as `nbgrader submit` makes it: the notebook and timestamp.txt."""
    stamp = (datetime.now(timezone.utc) - timedelta(hours=hours_ago)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    folder = inbound / f"{student}+{ASSIGNMENT}+{stamp}+{name}"
    folder.mkdir()
    (folder / NOTEBOOK).write_text(f'{{"answer": "{name}"}}')
    (folder / "timestamp.txt").write_text(stamp)
    return folder


def collect(tmp_path, caplog):
    """Run the course's collect of ASSIGNMENT; return (what was collected for ME, or None; the log)."""
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.course_id = "self-attention"
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.CourseDirectory.include = ["*.ipynb", "timestamp.txt", "submission_secret.txt"]
    config.Exchange.root = str(tmp_path / "exchange")
    coursedir = CourseDirectory(config=config)
    collector = GuardedCollect(coursedir=coursedir, authenticator=Authenticator(config=config), config=config)
    collector.log = logging.getLogger("collect-test")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="collect-test"):
        collector.start()
    collected = tmp_path / "course" / "submitted" / ME / ASSIGNMENT
    answer = (collected / NOTEBOOK).read_text() if (collected / NOTEBOOK).is_file() else None
    return answer, caplog.text


def plant_symlink_to_solution(folder, secret):
    (folder / NOTEBOOK).unlink()
    (folder / NOTEBOOK).symlink_to(secret)
    return "symbolic link"


def plant_hard_link_to_solution(folder, secret):
    (folder / NOTEBOOK).unlink()
    os.link(secret, folder / NOTEBOOK)
    return "hard link"


def plant_fifo(folder, secret):
    (folder / NOTEBOOK).unlink()
    os.mkfifo(folder / NOTEBOOK)
    return "FIFO"


def plant_folder_link(folder, secret):
    target = secret.parent / "someone-elses-submission"
    target.mkdir()
    shutil.copy(secret, target / NOTEBOOK)
    shutil.rmtree(folder)
    folder.symlink_to(target)
    return "not a folder"


def plant_link_deep_inside(folder, secret):
    (folder / "more" / "deeper").mkdir(parents=True)
    (folder / "more" / "deeper" / "notes.ipynb").symlink_to(secret)
    return "symbolic link"


def plant_too_many_entries(folder, secret):
    for index in range(MAX_ENTRIES):
        (folder / f"scratch{index}.txt").touch()
    return f"more than {MAX_ENTRIES}"


def plant_someone_elses_file(folder, secret):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(folder / NOTEBOOK, 65534, 65534)
    return "belongs to"


PLANTS = [plant_symlink_to_solution, plant_hard_link_to_solution, plant_fifo, plant_folder_link,
          plant_link_deep_inside, plant_too_many_entries, plant_someone_elses_file]


def test_an_honest_submission_is_collected_as_it_was_handed_in(tmp_path, caplog):
    inbound, _ = exchange(tmp_path)
    folder = submission(inbound, hours_ago=1)
    (folder / "scratch.py").write_text("not included")
    answer, log = collect(tmp_path, caplog)
    assert answer == '{"answer": "honest"}', log
    collected = tmp_path / "course" / "submitted" / ME / ASSIGNMENT
    assert sorted(p.name for p in collected.iterdir()) == [NOTEBOOK, "timestamp.txt"]
    assert (collected / "timestamp.txt").read_text() == (folder / "timestamp.txt").read_text()
    assert "Not collecting" not in log, log


@pytest.mark.parametrize("plant", PLANTS, ids=lambda plant: plant.__name__.removeprefix("plant_"))
def test_a_planted_folder_is_left_out_and_the_last_real_one_collected(tmp_path, caplog, plant):
    inbound, secret = exchange(tmp_path)
    submission(inbound, hours_ago=2, name="earlier")
    reason = plant(submission(inbound, hours_ago=1, name="planted"), secret)
    answer, log = collect(tmp_path, caplog)
    assert answer == '{"answer": "earlier"}', f"collected {answer!r}, not the earlier real submission:\n{log}"
    assert "Not collecting" in log and reason in log, log


@pytest.mark.parametrize("plant", PLANTS[:3], ids=lambda plant: plant.__name__.removeprefix("plant_"))
def test_a_planted_folder_alone_gives_its_student_nothing(tmp_path, caplog, plant):
    inbound, secret = exchange(tmp_path)
    plant(submission(inbound, hours_ago=1, name="planted"), secret)
    answer, log = collect(tmp_path, caplog)
    assert answer is None and not (tmp_path / "course" / "submitted" / ME).exists(), log


def test_a_folder_whose_name_nbgrader_cannot_read_stops_no_collect(tmp_path, caplog):
    inbound, _ = exchange(tmp_path)
    submission(inbound, hours_ago=1)
    (inbound / f"{ME}+{ASSIGNMENT}+not a time+x").mkdir()
    answer, log = collect(tmp_path, caplog)
    assert answer == '{"answer": "honest"}', log
    assert "Not collecting" in log and "not a time" in log, log


def test_a_link_swapped_in_after_the_check_is_not_copied(tmp_path, caplog):
    """The copy opens each file without following links and checks what it opened: a notebook replaced by a
    link between collect's check and its copy is refused, and nothing is left in submitted/."""
    inbound, secret = exchange(tmp_path)
    folder = submission(inbound, hours_ago=1)
    config = Config()
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.include = ["*.ipynb", "timestamp.txt"]
    collector = GuardedCollect(coursedir=CourseDirectory(config=config), authenticator=None, config=config)
    assert collector.refusal(str(folder), ME) is None
    plant_symlink_to_solution(folder, secret)
    dest = tmp_path / "course" / "submitted" / ME / ASSIGNMENT
    collector.do_copy(str(folder), str(dest))
    assert not dest.exists() and not list(dest.parent.iterdir()), sorted(map(str, dest.parent.rglob("*")))
