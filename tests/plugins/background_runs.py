"""Plugin: the programs test modules run beside the suite, and the one way to start them (``BackgroundRun``).

A module whose checks run as programs of their own is listed in IN_BACKGROUND and has a ``start_runs()``: once the
session has collected it, this plugin calls it, and the module starts its programs with ``BackgroundRun`` at the
lowest priority (nice 19; their Jupyter kernels too: ``background_kernel``), so that they take the CPU the rest of
the suite leaves idle, as at its single-threaded end; the tests that wait for them run last (tests/plugins/order.py).
A session that ends early stops every program still running."""

import subprocess
import time
from pathlib import Path

import pytest

from tests.plugins.cpu_seconds import in_cgroup, part_cgroup
from tools.paths import ROOT

IN_BACKGROUND = (
    "tests/test_chapter_code_earns_nothing.py",
    "tests/test_every_cpu.py",
    "tests/test_launch_buttons_open_what_works.py",
)

RUNNING = []  # every BackgroundRun of the session, stopped at its end if still running


class BackgroundRun:
    """``argv`` started in the project's folder at the lowest priority (``nice -n 19``), its output written to
    ``log`` (standard output and error), or, with ``out``, its standard output to ``out`` and its errors to ``log``;
    its CPU is billed as ``name`` (default: the log's folder and name).
    ``wait`` waits for it once (stopping it past ``timeout`` seconds) and closes the files; ``took`` is the seconds
    from its start to the end of that wait, ``waited`` those the test spent waiting."""

    def __init__(self, argv, *, log, out=None, env=None, name=None):
        self.log, self.out = Path(log), Path(out) if out is not None else None
        self._files = [open(self.log, "w")]
        if self.out is not None:
            self._files.append(open(self.out, "w"))
        self.started = time.monotonic()
        self.took = self.waited = None
        # Its CPU is counted apart from the foreground's (tests/plugins/cpu_seconds.py), under ``name``.
        cgroup = part_cgroup(name or f"{self.log.parent.name}/{self.log.stem}")
        self.process = subprocess.Popen(in_cgroup(["nice", "-n", "19", *argv], cgroup), cwd=ROOT, env=env,
                                        stdout=self._files[-1], stderr=self._files[0])
        RUNNING.append(self)

    def wait(self, timeout):
        """The program's exit status, once it has ended; past ``timeout`` seconds it is stopped and
        subprocess.TimeoutExpired raised."""
        if self.waited is not None:
            return self.process.wait()
        waiting = time.monotonic()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        finally:
            self.took, self.waited = time.monotonic() - self.started, time.monotonic() - waiting
            for file in self._files:
                file.close()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def output(self):
        """What the program wrote to its log."""
        return self.log.read_text()


def background_kernel(python):
    """The argv of a kernelspec for the Jupyter kernels of a background program (IN_BACKGROUND): ``python``'s
    ipykernel, at the lowest priority. Linux's autogroups (on in Debian's and Ubuntu's kernels) share the CPU out
    session by session, whatever the nice values inside a session, and jupyter_client starts every kernel in a
    session of its own: such a kernel would otherwise weigh as much as the whole foreground. The shell first lowers
    its session's weight as low as it goes (/proc/self/autogroup, which any user may lower); where the kernel has no
    autogroups the write fails quietly and the nice value the kernel inherits does the same."""
    return ["/bin/sh", "-c", 'echo 19 > /proc/self/autogroup 2>/dev/null; exec "$0" -m ipykernel_launcher -f "$1"',
            str(python), "{connection_file}"]


def in_background(item):
    return item.nodeid.startswith(IN_BACKGROUND)


def reads_runs(item):
    """Whether a selected test of an IN_BACKGROUND module reads the module's background runs: every test does, unless
    the module names the fixture its readers use (RUNS_FIXTURE); `-k binder` then starts no run."""
    fixture = getattr(item.module, "RUNS_FIXTURE", None)
    return fixture is None or fixture in getattr(item, "fixturenames", ())


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    """Start the background modules' runs (after the shared grading run: tests/plugins/shared_grading_run.py);
    none for a session that only collects (--collect-only), whose tests never read them."""
    if session.config.option.collectonly:
        return
    started = {item.module for item in session.items if in_background(item) and reads_runs(item)}
    for module in sorted(started, key=lambda module: module.__name__):
        module.start_runs()


def pytest_sessionfinish(session):
    """A session stopped early (-x, Ctrl-C) leaves no background run behind."""
    for run in RUNNING:
        run.stop()
