"""The suite's own bill: the CPU-seconds every process of the session used, and its wall time, in one line of the
terminal summary: ``CPU-seconds: N (user U, system S); wall: W s``. The budget is 1,000 CPU-seconds for the whole
`make test` (issue 37): then a 2-core machine finishes it within 10 minutes.

"Every process" means what cgroup accounting counts: pytest, the shared grading run and its workers, every kernel,
the sandboxed programs under bubblewrap (which run in pid namespaces of their own) and any process that outlived
its parent and was reparented. Two ways of counting, the first that works on this machine:

1. cgroup v2 (``cgroup``). At configure time the session makes a cgroup of its own *below* the one it runs in (so
   every limit the machine puts on it still applies), moves itself there and reads that cgroup's ``cpu.stat`` at the
   end: the kernel charges every descendant's CPU to the cgroup it runs in, whoever its parent is, and bubblewrap
   does not leave it (``--unshare-cgroup`` only changes what a process sees). ``cpu.stat``'s ``usage_usec``,
   ``user_usec`` and ``system_usec`` exist in every cgroup v2, with or without the cpu controller. What pytest used
   before the move (start-up, collection's imports) is its own ``getrusage``, added.
2. A child subreaper (``subreaper``), where no cgroup can be made (no cgroup v2 mounted, or a cgroup the user may not
   write). ``prctl(PR_SET_CHILD_SUBREAPER)`` makes every orphaned descendant a child of pytest instead of init, and the
   session reaps them at the end, so ``getrusage(RUSAGE_SELF) + getrusage(RUSAGE_CHILDREN)`` includes them (a
   parent's waited children include theirs). A descendant still running at the end is not counted: the line says
   how many there were.

The second line of the summary names the way used. A session started inside the suite (``COURSE_NESTED_SESSION``)
makes its cgroup inside the outer one's, so the outer line still counts it.
"""

import ctypes
import errno
import os
import resource
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
STATE = {}


def cgroup2_mount(mountinfo="/proc/self/mountinfo"):
    """Where cgroup v2 is mounted (``/sys/fs/cgroup`` on most machines, ``/sys/fs/cgroup/unified`` on hybrid ones),
    or None."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        if after.split(" ", 1)[0] == "cgroup2":
            return Path(before.split(" ")[4].replace("\\040", " "))
    return None


def own_cgroup2(proc_cgroup="/proc/self/cgroup"):
    """This process's cgroup v2 path (the ``0::`` line), or None."""
    try:
        for line in Path(proc_cgroup).read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        pass
    return None


def read_cpu_stat(cgroup):
    """{"usage_usec": ..., "user_usec": ..., "system_usec": ...} of a cgroup v2 directory."""
    fields = dict(line.split() for line in (cgroup / "cpu.stat").read_text().splitlines() if line.strip())
    return {key: int(fields[key]) for key in ("usage_usec", "user_usec", "system_usec")}


def enter_own_cgroup():
    """Make a cgroup below this process's and move this process into it; return its directory, or raise OSError
    saying why not."""
    mount, path = cgroup2_mount(), own_cgroup2()
    if mount is None or path is None:
        raise OSError(errno.ENOENT, "no cgroup v2 is mounted, or this process is in none")
    parent = mount / path.lstrip("/")
    if not (parent / "cgroup.procs").is_file():
        raise OSError(errno.ENOENT, f"{parent} is not visible in this mount namespace")
    own = parent / f"pytest-{os.getpid()}"
    own.mkdir()
    try:
        read_cpu_stat(own)
        (own / "cgroup.procs").write_text(str(os.getpid()))
    except (OSError, KeyError, ValueError):
        own.rmdir()
        raise
    return own, parent


def started_at():
    """When this process started, in seconds of CLOCK_BOOTTIME (its start-up, before pytest ran a hook, included)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22, starttime, in clock ticks since boot
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.clock_gettime(time.CLOCK_BOOTTIME)


def rusage_seconds(who):
    usage = resource.getrusage(who)
    return usage.ru_utime, usage.ru_stime


def pytest_configure(config):
    if STATE:
        return
    STATE["wall"] = started_at()
    try:
        STATE["cgroup"], STATE["parent"] = enter_own_cgroup()
        # What pytest used before it moved (start-up, collection so far) was charged to the cgroup it left.
        STATE["before"] = tuple(map(sum, zip(rusage_seconds(resource.RUSAGE_SELF),
                                              rusage_seconds(resource.RUSAGE_CHILDREN))))
        STATE["method"] = f"cgroup v2 {STATE['cgroup']}/cpu.stat: every process the session started, however parented"
    except (OSError, KeyError, ValueError) as error:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            STATE["method"] = (f"getrusage of pytest and its waited children only (no cgroup: {error}; "
                               f"no subreaper: {os.strerror(ctypes.get_errno())}): reparented processes are missed")
        else:
            STATE["method"] = (f"getrusage with pytest as the child subreaper (no cgroup: {error}): "
                               f"orphaned descendants are reaped at the end and counted")


def children():
    """How many children this process has (the subreaper's orphans included), exited or not."""
    count = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            count += len((task / "children").read_text().split())
        except OSError:
            pass
    return count


def reap_orphans(patience=2.0):
    """Reap every child that has exited (the subreaper's orphans); a child still exiting (one that has closed its
    files but is not yet a zombie) is given ``patience`` seconds. Return how many children still run."""
    deadline = time.monotonic() + patience
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return 0
        running = children()
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def measure():
    """(cpu seconds, user, system, a note) for the session so far."""
    if "cgroup" in STATE:
        stat = read_cpu_stat(STATE["cgroup"])
        user = stat["user_usec"] / 1e6 + STATE["before"][0]
        system = stat["system_usec"] / 1e6 + STATE["before"][1]
        return user + system, user, system, ""
    running = reap_orphans()
    self_user, self_system = rusage_seconds(resource.RUSAGE_SELF)
    children_user, children_system = rusage_seconds(resource.RUSAGE_CHILDREN)
    user, system = self_user + children_user, self_system + children_system
    note = f"; {running} process(es) still running were not counted" if running else ""
    return user + system, user, system, note


def pytest_terminal_summary(terminalreporter):
    if "wall" not in STATE:
        return
    cpu, user, system, note = measure()
    wall = time.clock_gettime(time.CLOCK_BOOTTIME) - STATE["wall"]
    terminalreporter.write_line(f"CPU-seconds: {cpu:.1f} (user {user:.1f}, system {system:.1f}); wall: {wall:.1f} s",
                                bold=True)
    terminalreporter.write_line(f"(counted by {STATE['method']}{note})")


def pytest_unconfigure(config):
    """Move back into the cgroup the session came from, and remove its own if nothing is left in it (a process that
    outlived the session keeps it, and it is left)."""
    if "cgroup" not in STATE:
        return
    try:
        (STATE["parent"] / "cgroup.procs").write_text(str(os.getpid()))
        STATE["cgroup"].rmdir()
    except OSError:
        pass
