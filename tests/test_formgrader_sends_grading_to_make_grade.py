"""Promise: the formgrader's "Autograde" button grades nothing; it tells the
instructor to run `make grade` instead (instructor/grading.md).

The button asks the formgrader for nbgrader's own autograde
(NbGraderAPI.autograde). That would run the submission without the rest of
`make grade`'s pipeline (verification, feedback, grades.csv), and leave
integrity.csv and the feedback silently stale. The course's nbgrader_config.py
replaces it with a message (tools/hub/formgrader_guard.py).

The test builds the formgrader's API object the way its request handlers do
(nbgrader's BaseHandler.api), in a course folder with the course's
configuration and one submission, and presses the button through it.
"""

from types import SimpleNamespace

import nbformat
import pytest

from tools.assignments.nbgrader_course import Course, generate_in_process

ASSIGNMENT = "ex01_by_hand"
STUDENT = "ada"


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course folder with the course's configuration, ASSIGNMENT in the
    gradebook and STUDENT's submission (the untouched release); the working
    folder is the course folder, as when the instructor starts JupyterLab there."""
    from nbgrader.apps.api import NbGraderAPI

    # Loading the course's configuration changes nbgrader's API for the rest of the
    # process: put it back after the test.
    monkeypatch.setattr(NbGraderAPI, "autograde", NbGraderAPI.autograde)
    # Only the course folder's configuration: none from this machine's Jupyter folders.
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", "")
    course = Course(tmp_path / "course", [ASSIGNMENT])
    generate_in_process(course.root, [ASSIGNMENT])
    release = course.root / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    course.submit(STUDENT, ASSIGNMENT, nbformat.read(release, as_version=4))
    monkeypatch.chdir(course.root)
    return course


def press_autograde(course_root):
    """What the formgrader does when the button is pressed for STUDENT's ASSIGNMENT."""
    from nbgrader.server_extensions.formgrader.base import BaseHandler
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    formgrader = FormgradeExtension()
    formgrader.root_dir = str(course_root)
    formgrader.initialize([])
    # The handler's own `api` property: it reloads the configuration, then makes the API.
    handler = SimpleNamespace(coursedir=formgrader.coursedir, authenticator=formgrader.authenticator,
                              log=formgrader.log)
    api = BaseHandler.api.fget(handler)
    return api.autograde(ASSIGNMENT, STUDENT)


def test_the_formgraders_autograde_button_points_to_make_grade(course):
    from nbgrader.api import Gradebook

    result = press_autograde(course.root)
    message = result.get("log", "") + result.get("error", "")
    assert result["success"] is False, f"the formgrader graded the submission:\n...{message[-1500:]}"
    assert "make grade" in message, f"the formgrader's answer does not point to make grade:\n...{message[-1500:]}"
    assert f"ASSIGNMENT={ASSIGNMENT}" in message, message
    assert not (course.root / "autograded").exists(), "the formgrader wrote autograded/"
    with Gradebook(course.db_url) as gb:
        assert gb.assignment_submissions(ASSIGNMENT) == [], "the formgrader put a submission in the gradebook"
