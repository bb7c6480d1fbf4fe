"""Plugin: the environment every test runs in. nbgrader's calls find the venv's programs, and the grading tests run
sandboxed where bubblewrap is installed (and on stock nbgrader execution where it is not, outside CI);
``require_sandbox`` skips, or under CI fails, a test that needs the sandbox."""

import os

import pytest

from tools.paths import BIN
from tools.sandbox.bubblewrap import SandboxUnavailable, check_available

# Every nbgrader call needs the venv's `alembic` on PATH.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"

# The grading tests (wrong implementations lose points, feedback, make grade)
# are about scores, not the sandbox: on a machine without bubblewrap they run
# on stock nbgrader execution, and test_submissions_cannot_harm_grading.py skips saying what to
# install. CI installs bubblewrap (.ci/run) and runs everything sandboxed.
try:
    check_available()
except SandboxUnavailable:
    if os.environ.get("CI") != "true":
        os.environ["GRADING_SANDBOX"] = "off"


def require_sandbox(what):
    """Skip a test that needs the sandbox where bubblewrap is missing, saying
    what to install; under CI=true, fail instead: CI must run ``what``."""
    try:
        check_available()
    except SandboxUnavailable as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run {what}: {error}")
        pytest.skip(f"{error}; then run these tests again")
