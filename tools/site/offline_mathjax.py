"""Sphinx extension: the site serves MathJax from its own files, not from a CDN.

A page opened without internet must still show its equations. MathJax 3 comes
from the PyPI package ``django-static-mathjax`` (pinned in requirements.txt;
it installs MathJax's browser build as the Python package ``mathjax`` and
needs no Django). At the end of every HTML build the parts of it that a page
can load are copied to ``_build/html/_static/mathjax/``:

- the entry script that ``mathjax_path`` names (set in ``_config.yml``),
- the TeX extensions it loads on demand, the CHTML fonts, the menu and the
  accessibility tools (with their speech-rule data).

Every page loads it, since the sidebar's chapter titles may hold math. The
build fails if the package is missing or if ``mathjax_path`` points anywhere
but this local copy. Loaded from ``_config.yml`` as a local extension.
"""

import importlib.util
import shutil
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path, PurePosixPath

from sphinx.errors import ConfigError, ExtensionError

PACKAGE = "django-static-mathjax"
#: The folder under the site's ``_static/`` that holds the copy.
TARGET = "mathjax"
#: Folders of MathJax's ``es5/`` build that a page may fetch after the entry script.
ON_DEMAND = ["input/tex", "output/chtml", "ui", "a11y", "sre"]


def mathjax_dist() -> Path:
    """The ``es5/`` folder of the installed package (MathJax's browser build)."""
    try:
        version(PACKAGE)
        spec = importlib.util.find_spec("mathjax")
    except (PackageNotFoundError, ImportError):
        spec = None
    dist = Path(spec.origin).parent / "static" / "mathjax" / "es5" if spec and spec.origin else None
    if dist is None or not dist.is_dir():
        raise ExtensionError(
            f"MathJax is not installed: expected the PyPI package {PACKAGE} "
            "(pinned in requirements.txt; `make venv` installs it)"
        )
    return dist


def entry_script(app) -> str:
    """The entry script's path inside the package, from ``mathjax_path``."""
    path = PurePosixPath(app.config.mathjax_path or "")
    if "://" in str(path) or path.is_absolute() or path.parts[:1] != (TARGET,) or len(path.parts) != 2:
        raise ConfigError(
            f"mathjax_path = {app.config.mathjax_path!r}: expected '{TARGET}/<script>.js', "
            "the copy of MathJax inside the site (see tools/site/offline_mathjax.py)"
        )
    return path.name


def check(app, config):
    script = entry_script(app)
    if not (mathjax_dist() / script).is_file():
        raise ConfigError(f"mathjax_path = {config.mathjax_path!r}: MathJax has no script {script!r}")


def copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    source = mathjax_dist()
    target = Path(app.outdir) / "_static" / TARGET
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy2(source / entry_script(app), target)
    shutil.copy2(source.parent / "LICENSE", target / "LICENSE")
    for part in ON_DEMAND:
        shutil.copytree(source / part, target / part)


def setup(app):
    # MathJax on every page, not only on pages with equations: the sidebar shows
    # chapter titles that hold math (such as "Why divide by sqrt(d_k)") everywhere.
    app.set_html_assets_policy("always")
    app.connect("config-inited", check)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
