"""nbgrader configuration for the course.

The instructor versions of the assignments live in solutions/ (nbgrader's
"source" folder) and the student versions in exercises/ ("release"). Run every
nbgrader command from this folder with the project's .venv/bin first on PATH
(the Makefile does this): nbgrader starts `alembic` as a subprocess.

Beyond stock nbgrader, this file switches on the course's two protections
(instructor/protections.md explains them):

- every submission's kernel runs in a sandbox (tools/sandbox/kernel.py,
  tools/sandbox/bubblewrap.py): no view of solutions/, the gradebook or other students'
  work, no network, limits on memory, CPU and time. It needs bubblewrap
  (`apt-get install bubblewrap`). GRADING_SANDBOX=off in the environment
  turns it off (student code then runs with your permissions; the other
  switches are listed in tools/course_settings.py, Switches);
- the feedback students receive shows no hidden test (tools/feedback/hide_hidden_tests.py).
"""

import os

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

HERE = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = HERE
c.CourseDirectory.course_id = "self-attention"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"

# What nbgrader's exchange carries (release_assignment, collect): notebooks,
# plus the two files that a student's `nbgrader submit` writes itself:
# timestamp.txt (when it was submitted, which decides whether it is late) and
# submission_secret.txt (the key that release_feedback files the student's
# feedback under; without these two, no collected submission is ever late and
# `nbgrader release_feedback` fails). Nothing else: no data file or helper
# module is released, and whatever else a student leaves in their assignment
# folder (scratch files, a module of their own) stays behind. The exchange's
# location is the machine's, not the course's: /etc/jupyter/nbgrader_config.py
# names it for everyone (instructor/setup.md).
c.CourseDirectory.include = ["*.ipynb", "timestamp.txt", "submission_secret.txt"]

# `nbgrader collect` takes from the exchange only what `nbgrader submit` makes: a
# real folder of regular files, owned by the student it is named after, with no
# symbolic or hard link in it (a student can write into the exchange's inbound/,
# and stock nbgrader follows links there: tools/hub/guarded_collect.py).
c.ExchangeFactory.collect = "tools.hub.guarded_collect.GuardedCollect"

# The stub students see in place of each solution.
# solutions/<assignment>/checks/ proves the grading (verification, wrong
# implementations, attacks): it never leaves for a release, a student's graded
# folder (which the notebook's kernel sees) or feedback.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "checks"]
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# nbgrader scores a test cell 0 if it wrote anything to stderr. Library
# warnings (a UserWarning from torch, say) are not mistakes: drop stderr output
# that is a warning before grading. A real failure raises an error, which
# still scores 0.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"\w*Warning\b"

# Time limits. Every cell of these assignments runs in well under a second;
# the first one also imports NumPy or PyTorch, which takes a few seconds on a
# busy machine. A cell still running after 30 s is interrupted and scores 0
# (an endless loop costs its student that cell, not the class its grading),
# and a whole notebook gets 300 s of wall-clock time.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
c.SandboxedExecute.notebook_timeout = 300

# The course's additions to nbgrader (tools.*, named below) are a package that
# `make venv` installs into the course's virtual environment (pyproject.toml).

# grades.csv (`make grade`'s and `nbgrader export`'s): nbgrader's columns, then
# seconds_late, how long after the due date each submission came (tools/lateness.py).
c.ExportApp.plugin_class = "tools.lateness.LateCsvExport"

# The switches of one run that the environment may flip (GRADING_SANDBOX,
# GRADING_WARM, GRADING_VERIFY, VERIFY_SEED): read here, once, through the one
# reader of them (tools/course_settings.py, Switches, says what each does), and
# kept in this configuration, which make grade hands to every part of the run.
try:
    from tools.course_settings import Switches
except ImportError:  # no tools/ found above: the sandbox is still asked for (and grading fails without it)
    sandboxed = True
else:
    switches = Switches.from_environment()
    switches.apply(c)
    sandboxed = switches.sandbox

# The sandbox: each kernel may use 2 GiB of memory per process and 120 s of
# CPU time in all, may write only to its own folder, and sees no network.
if sandboxed:
    c.Autograde.autograde_preprocessors = [
        "tools.sandbox.kernel.SandboxedExecute",  # in place of nbgrader's Execute
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
c.SandboxedKernelManager.memory_bytes = 2 * 1024**3
c.SandboxedKernelManager.cpu_seconds = 120

# Feedback: nbgrader's, minus the hidden tests (they stay in autograded/ and
# in the formgrader, for you).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "tools.feedback.hide_hidden_tests.HideHiddenTests",
    "tools.feedback.page.LateBy",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# nbconvert's HTML exporter, compiling its templates once per process rather
# than once per submission (the same HTML; tools/feedback/hide_hidden_tests.py).
c.GenerateFeedback.exporter_class = "tools.feedback.hide_hidden_tests.FeedbackExporter"

# The feedback page and the formgrader's notebook view: math typeset without a
# network (MathJax inside the page), error messages that wrap, tests named in
# the feedback's summary, lateness told, and a Content-Security-Policy that runs
# only the page's own scripts, none of the student's notebook (tools/feedback/page.py).
try:
    from tools.feedback.page import TEMPLATES
except ImportError:  # no tools/ found above
    pass
else:
    c.HTMLExporter.template_file = "course_page.html.j2"
    c.HTMLExporter.extra_template_paths = [str(TEMPLATES)]
    c.HTMLExporter.filters = {"course_mathjax": "tools.feedback.page.mathjax_scripts",
                              "course_header": "tools.feedback.page.page_header",
                              "course_body_scripts": "tools.feedback.page.page_body_scripts",
                              "course_feedback_summary": "tools.feedback.page.feedback_summary"}

# The formgrader's "Autograde" button would grade one submission without the rest
# of `make grade` (verification, feedback, grades.csv): it answers with the
# `make grade` command to run instead, and grades nothing (tools/hub/formgrader_guard.py).
# `nbgrader autograde` on the command line is not affected.
try:
    from tools.hub.formgrader_guard import guard_formgrader
except ImportError:  # no tools/ found above: this copy of the file has nothing to guard with
    pass
else:
    guard_formgrader()
