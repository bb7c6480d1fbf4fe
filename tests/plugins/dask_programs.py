"""A Dask cluster of separate programs, as an instructor starts one (instructor/cluster.md): `dask scheduler` and
`dask worker`, each worker in a bubblewrap namespace in which a given folder (the course's) is an empty one, with
Dask's bookkeeping turned down (tools/grading/cluster.py's QUIET_ENVIRONMENT). ``DaskPrograms.stop`` ends every
process they started, by process id (a worker's nanny starts its worker: the end of bubblewrap does not end them)."""

import os
import shutil
import socket
import subprocess

import psutil

from tools.grading.cluster import QUIET_ENVIRONMENT
from tools.paths import BIN


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaskPrograms:
    """A scheduler on 127.0.0.1 and ``workers`` workers of one single-threaded process each; with ``hide``, each
    worker sees that folder as an empty one. ``address`` is the scheduler's; ``wrap`` turns each program's argv into
    the one started (tests/plugins/cpu_seconds.py's in_cgroup, to bill their CPU apart)."""

    def __init__(self, workers=2, hide=None, wrap=lambda argv: argv):
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        env = {**os.environ, **QUIET_ENVIRONMENT}
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        self.scheduler = subprocess.Popen(wrap([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                                                str(port), "--dashboard-address", ":0"]), **quiet)
        self.workers = []
        try:
            for _ in range(workers):
                hiding = [shutil.which("bwrap"), "--dev-bind", "/", "/", "--tmpfs", str(hide), "--"] if hide else []
                self.workers.append(subprocess.Popen(wrap([*hiding, str(BIN / "dask"), "worker", self.address,
                                                           "--nthreads", "1", "--nworkers", "1", "--no-dashboard"]),
                                                     **quiet))
        except BaseException:
            self.stop()
            raise

    def ask_workers(self, function, *args):
        """{worker address: what ``function(*args)`` returned on it, or the exception it raised}, from every
        worker of the cluster."""
        from distributed import Client

        with Client(self.address, timeout="60s") as client:
            return client.run(function, *args, on_error="return")

    @property
    def programs(self):
        return [self.scheduler, *self.workers]

    def stop(self):
        """Each program and every process it started, killed by process id; then each program waited for."""
        family = []
        for program in self.programs:
            try:
                family += psutil.Process(program.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        for program in self.programs:
            if program.poll() is None:
                try:
                    family.append(psutil.Process(program.pid))
                except psutil.NoSuchProcess:
                    pass
        for process in family:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        for program in self.programs:
            program.wait(timeout=30)
