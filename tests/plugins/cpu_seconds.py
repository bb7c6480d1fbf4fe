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

Where the bill goes, with cgroups: a program run beside the suite (``BackgroundRun``, the shared grading run) is
started in a cgroup of its own below the session's (``part_cgroup``, ``in_cgroup``), and the rest, the foreground, is
charged to the test module whose test was running (its fixtures' set-up and tear-down included). The summary then
lists the parts that cost the most: the place to look first for a saving.
"""

import ctypes
import errno
import os
import re
import resource
import time
from collections import Counter
from pathlib import Path

import pytest

PR_SET_CHILD_SUBREAPER = 36
STATE = {}
PARTS = {}  # name -> the cgroup of a program run beside the suite
MODULES = Counter()  # test module -> foreground CPU microseconds while its tests ran
SHOWN = 12  # parts named in the summary; the rest are added up


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


def part_cgroup(name):
    """A cgroup below the session's for a program named ``name`` that runs beside the suite, so that its CPU is counted
    apart from the foreground's; None where the session counts without cgroups, or the cgroup cannot be made."""
    if "cgroup" not in STATE:
        return None
    path = STATE["cgroup"] / ("part-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name))
    try:
        path.mkdir(exist_ok=True)
        read_cpu_stat(path)
    except (OSError, KeyError, ValueError):
        return None
    PARTS[name] = path
    return path


def in_cgroup(argv, cgroup):
    """``argv``, started so that its first process moves itself into ``cgroup`` before it runs the program (so all its
    descendants are counted there); ``argv`` itself if ``cgroup`` is None. If the move fails, the program runs anyway,
    counted with the foreground."""
    if cgroup is None:
        return [str(a) for a in argv]
    return ["/bin/sh", "-c", 'echo $$ > "$0" 2>/dev/null; exec "$@"', str(cgroup / "cgroup.procs"), *map(str, argv)]


def usage_usec(cgroup):
    try:
        return read_cpu_stat(cgroup)["usage_usec"]
    except (OSError, KeyError, ValueError):
        return 0


def foreground_usec():
    """The session's CPU so far, without that of the programs in part cgroups."""
    return usage_usec(STATE["cgroup"]) - sum(usage_usec(path) for path in PARTS.values())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if "cgroup" not in STATE:
        yield
        return
    before = foreground_usec()
    STATE.setdefault("first test", before)
    yield
    MODULES[item.nodeid.split("::", 1)[0]] += foreground_usec() - before


def bill_by_part():
    """[(CPU seconds, what)] for the programs beside the suite and the test modules, the costliest first."""
    parts = [(usage_usec(path) / 1e6, f"{name} (beside the suite)") for name, path in PARTS.items()]
    parts += [(usec / 1e6, module) for module, usec in MODULES.items()]
    if "first test" in STATE:
        parts.append((STATE["first test"] / 1e6 + sum(STATE["before"]), "start-up and collection (foreground)"))
    return sorted(parts, reverse=True)


def pytest_terminal_summary(terminalreporter):
    if "wall" not in STATE:
        return
    cpu, user, system, note = measure()
    wall = time.clock_gettime(time.CLOCK_BOOTTIME) - STATE["wall"]
    terminalreporter.write_line(f"CPU-seconds: {cpu:.1f} (user {user:.1f}, system {system:.1f}); wall: {wall:.1f} s",
                                bold=True)
    terminalreporter.write_line(f"(counted by {STATE['method']}{note})")
    parts = bill_by_part()
    if len(parts) > 1:
        shown, rest = parts[:SHOWN], parts[SHOWN:]
        terminalreporter.write_line("where it went (CPU-seconds): " + "; ".join(f"{what} {seconds:.1f}"
                                                                                for seconds, what in shown)
                                    + (f"; {len(rest)} more {sum(s for s, _ in rest):.1f}" if rest else ""))


def pytest_unconfigure(config):
    """Move back into the cgroup the session came from, and remove its own if nothing is left in it (a process that
    outlived the session keeps it, and it is left)."""
    if "cgroup" not in STATE:
        return
    try:
        (STATE["parent"] / "cgroup.procs").write_text(str(os.getpid()))
        for path in PARTS.values():
            path.rmdir()
        STATE["cgroup"].rmdir()
    except OSError:
        pass
