"""Promise: every launch button on the site opens something that works.

- **Colab** (or any plain Jupyter): each chapter notebook, alone in an empty folder, runs top to bottom in a fresh
  environment that holds only what Colab gives it: PyTorch, NumPy, Matplotlib and a Jupyter kernel (the course's
  pinned versions, with what they depend on), and no MyST-NB, no ``course.py`` beside the notebook. The first cell
  fetches ``chapters/course.py`` from the course's repository; here that one download is answered from the working
  tree's copy, and any other download fails. The environment is a venv without pip whose only packages are links to
  those distributions in .venv: made in a second, offline, and with nothing else importable.
- The address the first cell fetches is the repository and branch that ``_config.yml`` gives the site's buttons,
  and ``course.SOURCE_URL`` says the same.
- **Binder** builds ``binder/``: CPU PyTorch, NumPy and Matplotlib at the versions of ``requirements.txt``, and
  nothing for building, grading or testing.
- **JupyterHub**: its button is shown only when ``_config.yml`` names a hub, never a placeholder host.
"""

import json
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.plugins.background_runs import background_kernel
from tests.plugins.selection import chosen_chapters
from tools.paths import BUILD_HTML, CHAPTERS, ROOT

# `make check` runs this module after a change to a chapter (tests/make_check.py).
MAKE_CHECK = ("chapter",)

CHAPTER_FILES = sorted(CHAPTERS.glob("ch*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
#: What Colab provides that a chapter may use; everything else must come from course.py.
COLAB_HAS = ["torch", "numpy", "matplotlib", "ipykernel"]
#: What a chapter opened alone must not find (it is not on Colab).
NOT_ON_COLAB = ["myst_nb", "course", "nbval", "sphinx"]
RAW = re.compile(r'^RAW = "(?P<url>[^"]+)"$', re.MULTILINE)
# Seconds the session waits for the run: it is at the lowest priority and may wait for the CPU until the rest of
# the suite is done, so this only catches a chapter that hangs.
RUN_TIMEOUT = 1800
LOG = ROOT / "_build" / "every-cpu"  # the run's log (tests/test_every_cpu.py, LOG_DIR)


def first_code_cell(path):
    return next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code").source


def raw_base():
    """https://raw.githubusercontent.com/<owner>/<name>/<branch>/ for the repository of _config.yml."""
    repository = CONFIG["repository"]
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", repository["url"])
    assert match, f"_config.yml: repository url {repository['url']!r} is not a GitHub repository"
    return f"https://raw.githubusercontent.com/{match[1]}/{match[2]}/{repository.get('branch', 'main')}/"


# Where the helpers come from ------------------------------------------------


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_first_cell_fetches_the_helpers_from_the_configured_repository(path):
    source = first_code_cell(path)
    match = RAW.search(source)
    assert match, f"{path.name}: the first code cell must set RAW = \"<raw repository URL>\" and fetch course.py"
    assert match["url"] == raw_base(), (
        f"{path.name} fetches course.py from {match['url']}, but _config.yml's repository is {raw_base()}"
    )
    assert 'urlretrieve(RAW + "chapters/course.py", "course.py")' in source
    assert source.index("urlretrieve") < source.index("import course")
    assert "myst_nb" not in "".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"), (
        f"{path.name} imports myst_nb, which Colab does not have: use course.glue"
    )


def test_course_source_url_names_the_configured_repository():
    sys.path.insert(0, str(CHAPTERS))
    try:
        import course
    finally:
        sys.path.remove(str(CHAPTERS))
    assert course.SOURCE_URL == raw_base() + "chapters/course.py"


# Colab, simulated -------------------------------------------------------------


def closure(names):
    """The installed distributions that ``names`` need, themselves included (by canonical name)."""
    found, todo = {}, list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            found[name] = distribution(name)
        except PackageNotFoundError:
            continue  # an optional dependency that .venv does not have: Colab's kernel will not need it either
        for line in found[name].requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def top_level_entries(dist):
    """The files and folders that ``dist`` put directly into site-packages."""
    entries = set()
    for file in dist.files or []:
        parts = Path(file).parts
        if parts and parts[0] not in {"..", "__pycache__"} and not parts[0].endswith(".pth"):
            entries.add(parts[0])
    return entries


SHIM = '''"""Colab, offline: the notebook's one download, chapters/course.py, comes from the working tree."""
import os
import urllib.request
from pathlib import Path

_urlretrieve = urllib.request.urlretrieve


def urlretrieve(url, filename=None, *args, **kwargs):
    if url != {url!r}:
        raise OSError(f"no network in this test; the notebook asked for {{url}}")
    return _urlretrieve(Path({source!r}).as_uri(), filename, *args, **kwargs)


urllib.request.urlretrieve = urlretrieve

# Only in the run that also checks the chapters' outputs (tests/test_every_cpu.py, IN_COLAB): without MyST-NB,
# course.glue pastes nothing, so its values could not be compared with the book's. Here course.glue still runs as
# in Colab (its import of myst_nb fails, and it shows what it is asked to show); a value glued without display is
# then also written as the record MyST-NB's glue writes (the value's display formats under RECORD), which is what
# the committed outputs hold. myst_nb stays unimportable.
if os.environ.get("COLAB_GLUE_RECORDS") == "1":
    import importlib.machinery
    import sys

    RECORD = "application/papermill.record/"

    def _recording(glue):
        def recording_glue(name, value, display=True):
            glue(name, value, display=display)
            if not display:
                from IPython.core.formatters import format_display_data
                from IPython.display import display as show

                bundle, metadata = format_display_data(value)
                metadata["scrapbook"] = dict(name=name, mime_prefix=RECORD)
                show({{RECORD + k: v for k, v in bundle.items()}}, raw=True, metadata=metadata)
        return recording_glue

    class _CourseFinder(importlib.machinery.PathFinder):
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name != "course":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                execute = spec.loader.exec_module

                def exec_module(module):
                    execute(module)
                    module.glue = _recording(module.glue)
                spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _CourseFinder)
'''


def make_colab(root):
    """A kernelspec folder whose kernel "colab" runs in an environment with only COLAB_HAS, under ``root``."""
    env = root / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    (site,) = env.glob("lib/python*/site-packages")
    packages = root / "packages"
    packages.mkdir()
    here = Path(distribution("numpy").locate_file(""))
    for dist in closure(COLAB_HAS).values():
        for entry in top_level_entries(dist):
            if (here / entry).exists() and not (packages / entry).exists():
                (packages / entry).symlink_to(here / entry)
    (site / "colab_packages.pth").write_text(f"{packages}\nimport colab_offline\n")
    (site / "colab_offline.py").write_text(
        SHIM.format(url=raw_base() + "chapters/course.py", source=str(CHAPTERS / "course.py"))
    )
    kernels = root / "kernels"
    (kernels / "colab").mkdir(parents=True)
    (kernels / "colab" / "kernel.json").write_text(json.dumps({
        "argv": background_kernel(env / "bin" / "python"),  # (Colab's own command, at low priority)
        "display_name": "Colab (simulated)", "language": "python",
    }))
    return {"python": env / "bin" / "python", "kernels": kernels}


def figure_count(notebook):
    return sum("image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {})
               for c in notebook.cells if c.cell_type == "code" for o in c.outputs)


# The chapters run as in Colab in the background, once the session has collected this module
# (tests/plugins/background_runs.py, IN_BACKGROUND), at low priority, one chapter after another: it is the run of
# tests/test_every_cpu.py on the AVX2-laptop switches (IN_COLAB there), which compares every output with the
# committed one as well, and writes what the tests here judge (tests/plugins/colab_outcome.py); its tests run last.
COLAB_DIR = ROOT / "_build" / "colab"
RUNS_FIXTURE = "colab"  # the tests that read the run (tests/plugins/background_runs.py, reads_runs): the others start none
_colab = {}


def make_colab_once():
    """The simulated Colab under COLAB_DIR, made once per session, with a copy of each chosen chapter alone in an
    empty folder (as Colab's working folder is but for the notebook)."""
    if not _colab:
        shutil.rmtree(COLAB_DIR, ignore_errors=True)
        COLAB_DIR.mkdir(parents=True)
        colab = make_colab(COLAB_DIR)
        colab["results"], colab["notebooks"] = COLAB_DIR / "results", []
        for chapter in chosen_chapters():
            folder = COLAB_DIR / "content" / chapter.stem
            folder.mkdir(parents=True)
            shutil.copyfile(chapter, folder / chapter.name)
            colab["notebooks"].append(folder / chapter.name)
        _colab.update(colab)
    return _colab


def start_runs():
    from tests import test_every_cpu

    test_every_cpu.start_runs(only=(test_every_cpu.IN_COLAB,))


@pytest.fixture(scope="session")
def colab():
    """The simulated Colab, and the chapters' run in it (waited for)."""
    from tests import test_every_cpu

    start_runs()  # when this module is run on its own
    test_every_cpu._started[test_every_cpu.IN_COLAB].wait(timeout=RUN_TIMEOUT)
    return _colab


def test_the_colab_environment_has_only_what_colab_has(colab):
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    found = subprocess.run([str(colab["python"]), "-c", probe, *COLAB_HAS, *NOT_ON_COLAB], cwd=colab["kernels"],
                           capture_output=True, text=True, check=True).stdout
    assert eval(found) == COLAB_HAS, f"the simulated Colab finds {found.strip()}, expected only {COLAB_HAS}"


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_chapter_runs_alone_as_in_colab(colab, path):
    result_file = COLAB_DIR / "results" / f"{path.stem}.json"
    assert result_file.is_file(), f"{path.name} was not run as in Colab: {(LOG / 'avx2-laptop.log').read_text()[-3000:]}"
    result = json.loads(result_file.read_text())
    if result["error"] is not None:
        pytest.fail(f"{path.name}, opened alone as in Colab, stops with an error:\n{result['error']}")
    assert result["fetched"], "the first cell did not fetch course.py"
    committed = figure_count(nbformat.read(path, as_version=4))
    assert result["figures"] == committed, f"{path.name} drew {result['figures']} figures alone, {committed} in the book"


# Binder ---------------------------------------------------------------------


def pins(path):
    """{canonical name: version} of the name==version lines of a requirements file (local versions dropped)."""
    result = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", f"{path}: {line} is not pinned"
            result[canonicalize_name(requirement.name)] = spec.version.split("+")[0]
    return result


def test_binder_installs_the_chapters_pinned_cpu_environment():
    binder = ROOT / "binder" / "requirements.txt"
    wanted, course_pins = pins(binder), pins(ROOT / "requirements.txt")
    assert sorted(wanted) == ["matplotlib", "numpy", "torch"], f"binder/ should install only what chapters need: {wanted}"
    for name, version in wanted.items():
        assert version == course_pins[name], f"binder/ pins {name}=={version}, requirements.txt {course_pins[name]}"
    text = binder.read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text and "torch==" in text and "+cpu" in text
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.1[1-3]", runtime), f"binder/runtime.txt asks for {runtime}, not Python 3.11-3.13"


# JupyterHub -----------------------------------------------------------------


def test_jupyterhub_button_only_for_a_real_hub():
    url = CONFIG.get("launch_buttons", {}).get("jupyterhub_url") or ""
    assert not re.search(r"(^|[/.])example\.(com|org|net|edu)\b", url), (
        f"_config.yml names a placeholder hub, {url}: leave jupyterhub_url empty until the course has a hub"
    )


def test_built_pages_link_to_no_placeholder_host(book):
    """No button or link leads to example.com/.org/.net/.edu (an address in an example, such as a student's
    e-mail in a CSV file, is fine: it is no link)."""
    pages = list(BUILD_HTML.rglob("*.html"))
    assert pages
    link = re.compile(r"""href=["']https?://[^"']*\bexample\.(com|org|net|edu)\b""")
    placeholders = [str(p.relative_to(BUILD_HTML)) for p in pages if link.search(p.read_text())]
    assert not placeholders, f"pages link to a placeholder host: {placeholders[:5]}"

