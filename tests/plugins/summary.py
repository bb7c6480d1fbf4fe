"""Plugin: what the session prints at its end, for the record: each page's load time and size, the background
runs' and the shared grading run's times, the points each known-wrong implementation lost; last, in one line, what
was not checked here and why (a program this machine lacks)."""

import json
import sys
import time

from tests.plugins.shared_grading_run import REPORT_DIR, SHARED_RUN
from tools.paths import ROOT

# Written by test_site_works_offline_in_a_browser.py: each page's load time and size (printed if this session wrote it).
SITE_REPORT = ROOT / "_build" / "site-report.md"
SESSION = {"start": 0.0}


def pytest_sessionstart(session):
    SESSION["start"] = time.time()


def pytest_terminal_summary(terminalreporter):
    """Print, for the record, each page's load time and size, and the points each
    known-wrong implementation lost; last, in one line, what was not checked
    here and why (a program this machine lacks)."""
    try:
        _report(terminalreporter)
    finally:
        skipped = {}
        for report in terminalreporter.stats.get("skipped", []):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            reason = reason.removeprefix("Skipped: ")
            skipped[reason] = skipped.get(reason, 0) + 1
        if skipped:
            terminalreporter.write_line(
                f"NOT CHECKED HERE: {sum(skipped.values())} test(s): "
                + "; ".join(f"{count} because {reason}" for reason, count in sorted(skipped.items())),
                yellow=True, bold=True)


def _report(terminalreporter):
    if SITE_REPORT.is_file() and SITE_REPORT.stat().st_mtime >= SESSION["start"]:
        terminalreporter.section("site report (_build/site-report.md)")
        for line in SITE_REPORT.read_text().splitlines():
            terminalreporter.write_line(line)
    every_cpu = sys.modules.get("tests.test_every_cpu")
    if every_cpu is not None and every_cpu.TIMINGS:
        terminalreporter.section("chapters on other CPUs (tests/test_every_cpu.py)")
        for run, (took, waited) in every_cpu.TIMINGS.items():
            terminalreporter.write_line(f"{run}: ran {took:.0f} s in the background; the suite waited {waited:.0f} s for it")
    if not REPORT_DIR.is_dir():
        return
    timing = REPORT_DIR / "timing.txt"
    if timing.is_file():
        terminalreporter.section("the shared grading run (tools/grading/run.py's own account)")
        if "took" in SHARED_RUN:
            terminalreporter.write_line(f"ran {SHARED_RUN['took']:.0f} s in the background; "
                                        f"the suite waited {SHARED_RUN['waited']:.0f} s for it")
        for line in timing.read_text().splitlines():
            terminalreporter.write_line(line)
    for path in sorted(REPORT_DIR.glob("*.json")):
        rows = json.loads(path.read_text())
        terminalreporter.section(f"grading of {path.stem}")
        for name, row in rows.items():
            terminalreporter.write_line(f"{row['score']:5.1f} / {row['max_score']:.0f}  {name}")
