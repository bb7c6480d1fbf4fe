"""Plugin of one background run only: what each chapter did in the simulated Colab, written as plain data.

The every-CPU run on the AVX2-laptop switches (tests/test_every_cpu.py) executes every chapter with nbval in the
simulated Colab (tests/test_launch_buttons_open_what_works.py), each chapter a copy alone in an empty folder, so
that one execution serves both promises: nbval compares the outputs with the committed ones, and this plugin
(loaded into that run with ``-p tests.plugins.colab_outcome``, never into the suite) writes for each chapter what
the Colab test judges: the first error a cell raised (an exception, a timeout, a dead kernel; not an output that
differs, which is the every-CPU test's), whether the first cell fetched course.py, and how many figures it drew.
The results go to ``$COLAB_RESULTS/<chapter>.json``."""

import json
import os
from pathlib import Path

import pytest

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
_outcomes = {}  # chapter file -> {"error", "figures"}


def _figures(outputs):
    return sum("image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {}) for o in outputs or ())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if call.when != "call" or not hasattr(item, "test_outputs"):
        return
    path = Path(str(item.fspath))
    outcome = _outcomes.setdefault(path, {"error": None, "figures": 0})
    outcome["figures"] += _figures(item.test_outputs)
    if report.failed and outcome["error"] is None:
        text = str(report.longrepr)
        if "Cell outputs differ" not in text:
            outcome["error"] = f"{item.name}: {text[-3000:]}"


def pytest_sessionfinish(session):
    results = Path(os.environ["COLAB_RESULTS"])
    results.mkdir(parents=True, exist_ok=True)
    for path, outcome in _outcomes.items():
        fetched = (path.parent / "course.py").is_file() and (
            (path.parent / "course.py").read_bytes() == (CHAPTERS / "course.py").read_bytes())
        (results / f"{path.stem}.json").write_text(json.dumps({**outcome, "fetched": fetched}))
