"""Build the book into _build/html, treating every warning as an error.

Usage: ``python -m tools.site.book`` (what ``make book`` runs). Exits with the
builder's status, so a warning or a chapter that fails to execute fails the
command.

The test suite builds the same site from the chapters' committed outputs
(``build(execute=False)``): nbval, in the same session, re-executes every
chapter and proves that those outputs are exactly what execution produces, so
executing them a second time for the site would check nothing new.
"""

import os
import subprocess
import sys

from ..paths import BIN, ROOT


def build_command(config=None):
    command = [str(BIN / "jupyter-book"), "build", str(ROOT), "--builder", "html", "--warningiserror",
               "--keep-going", "--all"]
    return command + (["--config", str(config)] if config else [])


def config_without_execution():
    """_config.yml with the chapters' execution turned off, written under _build/."""
    text = (ROOT / "_config.yml").read_text()
    switch = "execute_notebooks: force"
    if switch not in text:
        raise RuntimeError(f"_config.yml no longer says '{switch}': update tools/site/book.py")
    path = ROOT / "_build" / "config-committed-outputs.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace(switch, 'execute_notebooks: "off"'))
    return path


def build(capture=False, execute=True):
    """Run the build; return the CompletedProcess (output captured if asked).
    With execute=False the chapters' committed outputs are rendered as they are."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    config = None
    if not execute:
        config = config_without_execution()
        # Sphinx imports the book's own extensions (tools.site.offline_mathjax) from
        # the folder of the configuration file, which is now _build/.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(build_command(config), cwd=ROOT, env=env, text=True, capture_output=capture)


if __name__ == "__main__":
    sys.exit(build().returncode)
