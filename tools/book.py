"""Build the book into _build/html, treating every warning as an error.

Usage: ``python -m tools.book`` (what ``make book`` runs). Exits with the
builder's status, so a warning or a chapter that fails to execute fails the
command.
"""

import os
import subprocess
import sys

from .paths import BIN, ROOT


def build_command():
    return [str(BIN / "jupyter-book"), "build", str(ROOT), "--builder", "html", "--warningiserror", "--keep-going", "--all"]


def build(capture=False):
    """Run the build; return the CompletedProcess (output captured if asked)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(build_command(), cwd=ROOT, env=env, text=True, capture_output=capture)


if __name__ == "__main__":
    sys.exit(build().returncode)
