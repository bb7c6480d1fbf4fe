"""The report's flags on a class written by hand: what tools/report/data.py reads from a graded course folder.

The synthetic class of test_report_shows_what_the_class_missed.py is graded on time, every submission verified,
and each student does about as well on every assignment: it never shows a late submission, one NOT GRADED, a
falling grade or a missing one. Here a course folder is written by hand in ``tmp_path`` (an nbgrader gradebook,
integrity.csv and causes.csv, as `make grade` leaves them), so that each flag of instructor/report.md is met at
its edge, and the ones that must stay silent are seen silent. No grading runs; the usual class's gradebook is
written once and copied.
"""

import csv
import shutil
from datetime import datetime, timedelta

import pytest

from tools.report.data import FALLING_POINTS, LOW_MEAN, read_course, students_needing_help
from tools.verification.report import CAUSES_COLUMNS, CAUSES_CSV, CSV_COLUMNS, CSV_NAME

DUE = datetime(2026, 3, 2, 12, 0, 0)
# Two assignments of two tasks each: {assignment: {task: max points}}.
TASKS = {"a1_first": {"t_one": 2.0, "t_two": 3.0}, "a2_second": {"t_three": 4.0, "t_four": 1.0}}
# {(assignment, student): ({task: points}, seconds after the due date, or None on time)}
SUBMISSIONS = {
    ("a1_first", "ada"): ({"t_one": 2, "t_two": 3}, None),
    ("a1_first", "bob"): ({"t_one": 2, "t_two": 3}, 3 * 3600 + 5),  # three hours and 5 s late
    ("a1_first", "cy"): ({"t_one": 0, "t_two": 1}, 0),  # handed in at the due date: on time
    ("a1_first", "dee"): ({"t_one": 2, "t_two": 3}, None),
    ("a2_second", "ada"): ({"t_three": 4, "t_four": 1}, None),
    ("a2_second", "bob"): ({"t_three": 3, "t_four": 1}, None),  # 80 %: exactly 20 points below 100 %
    ("a2_second", "cy"): ({"t_three": 1, "t_four": 0}, None),
    ("a2_second", "dee"): ({"t_three": 4, "t_four": 0}, None),  # 80 % after 100 %
}
STUDENTS = ["ada", "bob", "cy", "dee", "eve"]  # eve handed in nothing

# nbgrader 0.9's add_submission warns that SQLAlchemy will not cascade into objects it has not added yet: its own.
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


def write_rows(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in columns})


def graded_course(root, submissions=SUBMISSIONS, integrity=(), causes=()):
    """A course folder as `make grade` leaves it: its gradebook, integrity.csv and causes.csv."""
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    if submissions is SUBMISSIONS and USUAL_GRADEBOOK:
        shutil.copyfile(USUAL_GRADEBOOK[0], root / "gradebook.db")
    else:
        write_gradebook(root / "gradebook.db", submissions)
        if submissions is SUBMISSIONS:
            USUAL_GRADEBOOK.append(root / "gradebook.db")
    write_rows(root / CSV_NAME, CSV_COLUMNS, integrity)
    write_rows(root / CAUSES_CSV, CAUSES_COLUMNS, causes)
    return root


USUAL_GRADEBOOK = []  # the gradebook of SUBMISSIONS, once written


def write_gradebook(path, submissions):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{path}") as gb:
        for student in STUDENTS:
            gb.add_student(student)
        for assignment, tasks in TASKS.items():
            gb.add_assignment(assignment, duedate=DUE if assignment == "a1_first" else None)
            gb.add_notebook(assignment, assignment)
            for task, points in tasks.items():
                gb.add_grade_cell(task, assignment, assignment, max_score=points, cell_type="code")
        for (assignment, student), (points, late) in submissions.items():
            timestamp = None if late is None else DUE + timedelta(seconds=late)
            gb.add_submission(assignment, student, timestamp=timestamp)
            for task, score in points.items():
                grade = gb.find_grade(task, assignment, assignment, student)
                grade.auto_score = float(score)
            gb.db.commit()


def by_name(reports):
    return {r.name: r for r in reports}


def test_late_submissions_are_those_after_the_due_date_and_only_those(tmp_path):
    reports, students = read_course(graded_course(tmp_path))
    assert students == STUDENTS
    first, second = by_name(reports)["a1_first"], by_name(reports)["a2_second"]
    # bob 3 h 5 s late; cy at the due date itself and ada without a timestamp are on time; a2 has no due date.
    assert first.late == {"bob": 3 * 3600 + 5.0}
    assert second.late == {}
    assert first.totals == {"ada": 5.0, "bob": 5.0, "cy": 1.0, "dee": 5.0} and first.max_score == 5.0


def test_not_graded_and_flagged_submissions_come_from_integrity_csv_and_stay_in_their_assignment(tmp_path):
    integrity = [
        dict(assignment="a1_first", student_id="dee", flagged="yes",
             reason="not graded this run: its grading stopped (out of memory)"),
        dict(assignment="a1_first", student_id="cy", flagged="yes", reason="verified 0 of 5, nbgrader 1"),
        dict(assignment="a1_first", student_id="ada", flagged="no", reason=""),
        dict(assignment="a2_second", student_id="bob", flagged="yes", reason="verified 3 of 5, nbgrader 4"),
        dict(assignment="a9_absent", student_id="ada", flagged="yes", reason="not graded this run: no notebook"),
    ]
    reports = by_name(read_course(graded_course(tmp_path, integrity=integrity))[0])
    first, second = reports["a1_first"], reports["a2_second"]
    assert first.not_graded == {"dee": "not graded this run: its grading stopped (out of memory)"}
    assert set(first.flagged) == {"dee", "cy"}  # NOT GRADED ones included; a row flagged "no" is not a flag
    assert second.not_graded == {} and set(second.flagged) == {"bob"}
    assert "a9_absent" not in reports  # a row of an assignment without submissions makes no page


def test_the_assignment_page_says_each_flag_with_its_count(tmp_path):
    from tools.report.pages import assignment_flags

    integrity = [dict(assignment="a1_first", student_id="dee", flagged="yes", reason="not graded this run: stopped"),
                 dict(assignment="a1_first", student_id="cy", flagged="yes", reason="verified 0 of 5, nbgrader 1")]
    reports = by_name(read_course(graded_course(tmp_path, integrity=integrity))[0])
    flags = " | ".join(assignment_flags(reports["a1_first"]))
    assert "1 submission(s) NOT GRADED" in flags
    assert "1 submission(s) flagged in integrity.csv" in flags  # dee's NOT GRADED row is not counted twice
    assert "1 late submission(s)" in flags
    assert assignment_flags(reports["a2_second"]) == []  # on time, nothing flagged: no flag at all


def test_students_who_may_need_help_are_the_missing_the_low_and_the_falling_only(tmp_path):
    reports, students = read_course(graded_course(tmp_path))
    help_ = dict(students_needing_help(reports, students))
    # ada: 100 %, 100 %. dee: 100 %, 80 %: exactly FALLING_POINTS below her mean, which is falling.
    # bob: 100 %, 80 %: the same. cy: 20 %, 20 %: low, not falling. eve: nothing handed in.
    assert FALLING_POINTS == 20.0 and LOW_MEAN == 50.0, "the cases below sit at these thresholds"
    assert "ada" not in help_
    assert help_["dee"] == ["falling: 80% on the latest, after a mean of 100%"]
    assert help_["bob"] == ["falling: 80% on the latest, after a mean of 100%"]
    assert help_["cy"] == ["mean 20% over 2 assignment(s)"]
    assert help_["eve"] == ["no submission of a1, a2 (2 of 2)"]


def test_a_grade_just_above_the_falling_line_is_not_flagged_and_a_missing_one_is(tmp_path):
    submissions = dict(SUBMISSIONS)
    submissions["a2_second", "dee"] = ({"t_three": 4, "t_four": 0.05}, None)  # 81 %: 19 points below
    del submissions["a2_second", "cy"]  # cy hands in a1 only
    reports, students = read_course(graded_course(tmp_path, submissions=submissions))
    help_ = dict(students_needing_help(reports, students))
    assert "dee" not in help_
    assert help_["cy"] == ["no submission of a2 (1 of 2)", "mean 20% over 1 assignment(s)"]


def test_causes_count_only_lost_points_and_unknown_codes_become_other(tmp_path):
    def row(assignment, student, task, cause, attempted="yes", seconds="2.5"):
        return dict(assignment=assignment, student_id=student, grade_id=task, cause=cause, attempted=attempted,
                    seconds=seconds)

    causes = [
        row("a1_first", "cy", "t_one", "not_attempted", attempted="no"),
        row("a1_first", "cy", "t_two", "made_up_code_<script>"),  # no code its checks know
        row("a1_first", "ada", "t_two", "raised"),  # ada has full marks on t_two: no cause counts
        row("a1_first", "zed", "t_one", "raised"),  # no such submission
        row("a1_first", "ada", "t_nine", "raised"),  # no such task
        row("a2_second", "bob", "t_three", "raised", seconds="not a number"),
        row("a2_second", "ada", "t_four", "stricter_test"),  # counted although ada has full marks
    ]
    reports = by_name(read_course(graded_course(tmp_path, causes=causes))[0])
    first, second = reports["a1_first"], reports["a2_second"]
    one, two = first.tasks
    assert [t.name for t in first.tasks] == ["t_one", "t_two"]
    assert one.causes == {"cy": "not_attempted"} and one.attempted == {"cy": False}
    assert one.not_attempted == 1 and one.share_not_attempted == 0.25
    assert two.causes == {"cy": "other"}
    assert first.seconds == [2.5, 2.5] and first.median_seconds == 2.5  # one per verified submission
    three, four = second.tasks
    assert three.causes == {"bob": "raised"} and second.seconds == [2.5]
    assert four.causes == {"ada": "stricter_test"}
    assert any("nbgrader's hidden test failed 1 submission(s)" in flag for flag in four.flags())


@pytest.mark.parametrize("full, flagged", [(0, True), (1, False)])
def test_almost_nobody_passes_below_a_fifth_with_full_marks(tmp_path, full, flagged):
    # t_one: of five students with a1, `full` have full marks (ada); HARD_TASK is a fifth (1 of 5 is not below it).
    submissions = {key: value for key, value in SUBMISSIONS.items() if key[0] == "a1_first"}
    for student in ["bob", "cy", "dee"]:
        submissions["a1_first", student] = ({"t_one": 1, "t_two": 3}, None)
    submissions["a1_first", "eve"] = ({"t_one": 1, "t_two": 3}, None)
    submissions["a1_first", "ada"] = ({"t_one": 2 if full else 1, "t_two": 3}, None)
    reports = by_name(read_course(graded_course(tmp_path, submissions=submissions))[0])
    flags = reports["a1_first"].tasks[0].flags()
    assert any(flag.startswith("almost nobody passes") for flag in flags) is flagged, flags
