"""The suite's plugins, one job each (tests/plugins/):

- ``environment``: the venv's programs on PATH, the sandbox or stock nbgrader (``require_sandbox``);
- ``selection``: the part of the course a session checks (COURSE_ASSIGNMENTS, COURSE_CHAPTERS: `make check`);
- ``book``: the site, built once per session (the ``book`` fixture);
- ``shared_grading_run``: every assignment graded by one `make grade` run in the background (``graded``);
- ``background_runs``: the programs test modules run beside the suite (``BackgroundRun``, ``background_kernel``);
- ``order``: the tests that read those runs last, and those marked run_alone after everything;
- ``summary``: what the session prints at its end;
- ``chromium``: one browser for the session's browser tests (``chromium``);
- ``cpu_seconds``: the CPU-seconds of every process the session started, and its wall time, in the summary.

A plugin of another job goes into tests/plugins/ and into this list."""

import pytest

# The plugins' asserts report their values as a test's do (they are imported below before pytest registers them).
pytest.register_assert_rewrite("tests.plugins")

pytest_plugins = [
    "tests.plugins.environment",
    "tests.plugins.selection",
    "tests.plugins.book",
    "tests.plugins.shared_grading_run",
    "tests.plugins.background_runs",
    "tests.plugins.order",
    "tests.plugins.summary",
    "tests.plugins.cpu_seconds",
    "tests.plugins.chromium",
]

# The helpers test modules import, where they were before the split (a module may import them from here or from
# their plugin).
from tests.plugins.background_runs import background_kernel  # noqa: E402,F401
from tests.plugins.environment import require_sandbox  # noqa: E402,F401
from tests.plugins.selection import graded_assignments  # noqa: E402,F401
from tests.plugins.shared_grading_run import submission_name  # noqa: E402,F401
