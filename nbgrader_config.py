"""nbgrader configuration for the course.

The instructor versions of the assignments live in solutions/ (nbgrader's
"source" folder) and the student versions in exercises/ ("release"). Run every
nbgrader command from this folder with the project's .venv/bin first on PATH
(the Makefile does this): nbgrader starts `alembic` as a subprocess.
"""

import os

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "self-attention"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"

# Only the notebook itself is released: no data files, no helper modules.
c.CourseDirectory.include = ["*.ipynb"]

# The stub students see in place of each solution.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# nbgrader scores a test cell 0 if it wrote anything to stderr. Library
# warnings (a UserWarning from torch, say) are not mistakes: drop stderr output
# that is a warning before grading. A real failure raises an error, which
# still scores 0.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"\w*Warning\b"

# Each cell of a submission gets at most this many seconds; an endless loop
# costs the student that cell, not the whole class its grading.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
