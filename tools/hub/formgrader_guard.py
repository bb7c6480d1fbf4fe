"""The formgrader's "Autograde" button, pointed at `make grade`.

In the formgrader (*Manage Assignments* → an assignment's submissions, or
*Manage Students*), the button runs nbgrader's own autograde for one student:
``NbGraderAPI.autograde``, which the formgrader's request handler calls. That
is only one step of the course's grading. `make grade` (tools/grading/run.py) runs
the same sandboxed autograde, then verifies every grade outside the notebook
(integrity.csv), writes the feedback without hidden tests and exports
grades.csv. A grade from the button would skip all three, and leave
integrity.csv and the feedback as they were: silently stale.

So the course's ``nbgrader_config.py`` calls :func:`guard_formgrader`, which
replaces the API's ``autograde`` with an answer that grades nothing and says
which command to run (``refused: "make grade"`` in its JSON). nbgrader 0.9.6's
page (manage_submissions.js) shows any answer that is not a success in a
dialog headed "Error"; the guard adds a few lines to that page
(AUTOGRADE_ANSWER) that show this one in a dialog headed "Autograde is switched
off for this course", with the command. Only this entry point changes:
``nbgrader autograde`` on the command line and `make grade` run nbgrader's
``Autograde`` converter, which is left as it is.

The guard also serves the files of a submission that the formgrader's
notebook view links to (``/formgrader/submissions/<id>/<file>``, nbgrader's
SubmissionFilesHandler) with ``Content-Security-Policy: sandbox``: a page
among them, opened or framed, runs nothing at the instructor's address. (The
view itself runs only its own scripts: tools/feedback/page.py, page_policy.)
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

#: The repository whose `make grade` grades the course (this file is its tools/hub/formgrader_guard.py).
REPOSITORY = Path(__file__).resolve().parents[2]


def make_grade_command(assignment_id, course_root):
    """The `make grade` command line that grades ``assignment_id`` in the course folder ``course_root``."""
    words = ["make", "-C", str(REPOSITORY), "grade", f"ASSIGNMENT={assignment_id}"]
    if course_root and os.path.realpath(course_root) != str(REPOSITORY):
        words.append(f"COURSE={course_root}")
    return shlex.join(words)


def refusal(assignment_id, student_id, course_root):
    """What the button answers instead of grading."""
    return (
        f"Nothing was graded. The formgrader's Autograde is switched off for this course: it would grade "
        f"{student_id}'s {assignment_id} without the rest of the course's grading (verification of every grade, "
        f"feedback without hidden tests, grades.csv), and leave integrity.csv and the feedback out of date.\n\n"
        f"Grade with make grade instead, in a terminal (it grades every submission of the assignment; "
        f"grades and comments you gave in the formgrader are kept):\n\n"
        f"    {make_grade_command(assignment_id, course_root)}\n\n"
        f"The instructor guide explains it (Grading)."
    )


def autograde_with_make_grade(self, assignment_id, student_id, force=True, create=True):
    """In place of ``NbGraderAPI.autograde``: the same arguments and the same kind
    of answer (``success``, ``log``), grading nothing."""
    message = refusal(assignment_id, student_id, self.coursedir.root if self.coursedir else None)
    self.log.warning("formgrader: Autograde of %s for %s refused; it points to make grade", assignment_id,
                     student_id)
    return {"success": False, "refused": "make grade", "log": message}


#: Added to the formgrader's Manage Submissions page: the refusal above in a dialog of its own, not nbgrader's
#: "Error" one (any other answer is shown as nbgrader shows it).
AUTOGRADE_ANSWER = """
<script>
(function () {
  var shown = SubmissionUI.prototype.autograde_success;
  SubmissionUI.prototype.autograde_success = function (response) {
    var answer = JSON.parse(response);
    if (answer.success || answer.refused !== "make grade") {
      return shown.call(this, response);
    }
    this.model.fetch();
    createLogModal("autograde-modal", "Autograde is switched off for this course",
      "Nothing was graded. Grade this assignment with make grade, in a terminal:", answer.log);
  };
})();
</script>
"""


def guard_formgrader():
    """Replace the formgrader's autograde (``NbGraderAPI.autograde``) with the
    message, shown plainly on its page, and serve a submission's files
    sandboxed; calling it again changes nothing (nbgrader reads its
    configuration more than once in a process). How each of nbgrader's
    functions is replaced is in tools/nbgrader_patches.py."""
    from ..nbgrader_patches import add_to_manage_submissions_page, replace_formgrader_autograde, sandbox_submission_files

    replace_formgrader_autograde(autograde_with_make_grade)
    if add_to_manage_submissions_page(AUTOGRADE_ANSWER):  # (no formgrader without jupyter_server: nothing to serve)
        sandbox_submission_files()
