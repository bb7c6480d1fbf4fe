"""One submission's grading as a task: bytes in, bytes out.

``grade_task(bundle, submission)`` is the only function a grading worker runs,
whether the worker is one of make grade's local processes or a Dask worker on
another machine (tools/grading/run.py sends it either way). It needs nothing
of the course folder: ``AssignmentBundle`` carries what every submission of
one assignment needs (the course's nbgrader_config.py, the assignment's source
files, the gradebook snapshot, the verification's checks and their inputs, the
folder names and the limits; no secret: nothing under the course folder is
read but these), and ``Submission`` the student's files. The worker writes
them into a private course in a temporary folder of its own, autogrades and
generates feedback there (the same sandbox, limits and warm template as
before: tools/sandbox/), runs the verification's checks, and returns the
autograded folder, the feedback folder, the private gradebook and the checks'
results as bytes, with the scores' log and timings. The grading process
(tools/grading/run.py) writes them into a private folder of its own, bounded
(``unpack_result``), and merges them: it stays the only writer of the
gradebook, grades.csv, integrity.csv and feedback/.

A worker gets its warm template (tools/sandbox/warm.py) once, from
``ready_worker``: a Dask worker plugin calls it when the worker starts, a local
pool's initializer when its process starts, and ``grade_task`` itself if
neither did (a worker that joined late): tools/grading/cluster.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox.limits import read_bounded

# What one submission may bring into grading (its submitted folder) and what
# one graded submission may leave in autograded/ and feedback/.
COPY_BYTES = 64 * 1024**2
COPY_FILES = 200


class CopyRefused(RuntimeError):
    """A folder holds more than a submission may (COPY_BYTES, COPY_FILES)."""


# --- folders as bytes --------------------------------------------------------

def read_regular(source: Path, *, max_bytes=COPY_BYTES, max_files=COPY_FILES, trusted=False) -> tuple[dict, list]:
    """The folders and regular files under ``source`` as ``{relative path:
    bytes}`` (a folder: None), each opened without following a link, and the
    names of what was left out (links, devices, pipes, sockets: nothing of them
    is opened, read or changed). Raises CopyRefused past ``max_bytes`` or
    ``max_files``, and for a hard link (a file with more than one name could be
    the solution's or another student's): a submission's files come from its
    student. ``trusted``: a folder of the instructor's (an assignment's
    source), whose links are followed and whose hard links are read, as
    shutil.copytree does; the bounds still hold."""
    files, left_out = {}, []
    budget = {"bytes": max_bytes, "files": max_files}
    flags = os.O_RDONLY | os.O_CLOEXEC | (0 if trusted else os.O_NOFOLLOW)

    def read_folder(dir_fd, prefix: str):
        with os.scandir(dir_fd) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            budget["files"] -= 1
            if budget["files"] < 0:
                raise CopyRefused(f"{source} holds more than {max_files} files")
            try:
                fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dir_fd)
            except OSError:  # a link (ELOOP), or gone
                left_out.append(name)
                continue
            try:
                info = os.fstat(fd)
                if stat.S_ISDIR(info.st_mode):
                    files[prefix + name] = None
                    read_folder(fd, prefix + name + "/")
                elif stat.S_ISREG(info.st_mode):
                    if info.st_nlink > 1 and not trusted:  # another name for a file that may not be the student's
                        raise CopyRefused(f"{name} in {source} is a hard link ({info.st_nlink} names for one "
                                          "file): a submission's files must be its own")
                    budget["bytes"] -= info.st_size
                    if budget["bytes"] < 0:
                        raise CopyRefused(f"{source} holds more than {max_bytes} bytes")
                    files[prefix + name] = read_file(fd, info.st_size)
                else:
                    left_out.append(name)
            finally:
                os.close(fd)

    def read_file(fd, size: int) -> bytes:
        os.set_blocking(fd, True)
        return read_bounded(fd, size)[:size]  # (never more than fstat said, even if the file grows meanwhile)

    top = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if trusted else os.O_NOFOLLOW))
    try:
        read_folder(top, "")
    finally:
        os.close(top)
    return files, left_out


def write_files(files: dict, target: Path, *, max_bytes=COPY_BYTES, max_files=COPY_FILES):
    """Write what ``read_regular`` returned under ``target`` (which need not
    exist; nothing in it may exist yet). What arrives from elsewhere is
    checked first: a mapping of at most ``max_files`` relative names (no
    empty, ``.`` or ``..`` part, no NUL) to bytes or None, ``max_bytes`` in all."""
    if not isinstance(files, dict):
        raise CopyRefused(f"expected a mapping of relative paths to bytes, got {type(files).__name__}")
    if len(files) > max_files:
        raise CopyRefused(f"{len(files)} files and folders arrived for {target}, more than {max_files}")
    total = 0
    for name, data in files.items():
        parts = name.split("/") if isinstance(name, str) else None
        if not parts or any(part in ("", ".", "..") or "\0" in part for part in parts):
            raise CopyRefused(f"expected a relative path without '..' for {target}, got {name!r}")
        if data is not None and not isinstance(data, bytes):
            raise CopyRefused(f"expected bytes or None for {name!r}, got {type(data).__name__}")
        total += len(data or b"")
        if total > max_bytes:
            raise CopyRefused(f"more than {max_bytes} bytes arrived for {target}")
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):  # (a folder's name sorts before its files')
        path = target / name
        if files[name] is None:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as out:  # (never through a link: every name here is new)
                out.write(files[name])


def copy_regular(source: Path, target: Path, *, max_bytes=COPY_BYTES, max_files=COPY_FILES) -> list:
    """Copy the folders and regular files under ``source`` to ``target``
    (``read_regular``'s rules) and return what was left out."""
    files, left_out = read_regular(source, max_bytes=max_bytes, max_files=max_files)
    write_files(files, target, max_bytes=max_bytes, max_files=max_files)
    return left_out


def digest(*parts) -> str:
    """A hash of bytes, strings and ``read_regular`` mappings (in order)."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, dict):
            for name in sorted(part):
                h.update(name.encode() + b"\0")
                h.update(b"D" if part[name] is None else hashlib.sha256(part[name]).digest())
        elif isinstance(part, str):
            h.update(part.encode() + b"\0")
        else:
            h.update(part or b"")
    return h.hexdigest()


# --- what a task carries -----------------------------------------------------

@dataclass(frozen=True)
class AssignmentBundle:
    """What every submission of one assignment needs, sent once per worker."""

    assignment: str
    config: bytes  # the course's nbgrader_config.py
    release: dict  # the assignment's source folder (read_regular)
    gradebook: bytes  # the gradebook snapshot (SQLite)
    folders: dict  # nbgrader's folder names: source, submitted, autograded, feedback
    ignore: tuple  # what autograde leaves out of the source folder
    preload: tuple = ()  # what a warm template imports (tools/sandbox/warm.py's preload_for)
    memory_bytes: int = 0  # a warm template's memory (the course's setting)
    seconds: float = 600.0  # the submission's deadline
    checks: object = None  # the verification's Assignment, without its judges, or None
    check_inputs: dict = field(default_factory=dict)  # its inputs folder (read_regular)
    # The course's configuration as the run read it (CourseSettings.config, a traitlets Config, the run's switches
    # applied): a worker grades with it and never runs nbgrader_config.py, so a worker elsewhere, whose
    # environment differs, grades with the run's settings. None: the worker reads ``config``.
    run_config: object = None
    warm: bool = True  # warm templates on (the run's setting, CourseSettings.warm)

    @property
    def key(self) -> str:
        return digest(self.assignment, self.config, self.release, self.gradebook, repr(self.folders),
                      repr(self.checks), self.check_inputs, repr(self.run_config), repr(self.warm))


@dataclass(frozen=True)
class Submission:
    assignment: str
    student: str
    files: dict  # the submitted folder (read_regular)
    left_out: tuple = ()  # names read_regular left out

    def key(self, bundle: AssignmentBundle) -> str:
        """A hash of everything this submission's grade depends on."""
        return digest(bundle.key, self.student, self.files)


def checks_for_workers(prepared):
    """A verification Assignment (tools/verification/verify.py) as a worker
    needs it: its probes but not its judges (which stay in the grading
    process) nor its inputs' path (sent as bytes)."""
    if prepared is None:
        return None, {}
    checks = {grade_id: (probes, None) for grade_id, (probes, _judge) in prepared.checks.items()}
    inputs, _ = read_regular(prepared.inputs, max_bytes=256 * 1024**2, max_files=10_000, trusted=True)
    return dataclasses.replace(prepared, checks=checks, inputs=None), inputs


# --- the worker --------------------------------------------------------------

class _Worker:
    """This process's grading folder and warm template (one per worker process)."""

    root: Path | None = None
    preload: tuple | None = None
    inputs: dict = {}  # bundle key -> the checks' inputs folder, written once
    # The resident memory this process was made with (KiB): a forked worker starts with its parent's pages
    # mapped, and its peak (ru_maxrss) counts them; what grading costs is what it grows beyond them.
    started_kib: int = 0


def ready_worker(preload=(), memory_bytes=0, *, base=None, wait=True, warm_on=True):
    """Make this process a grading worker: a private folder of its own (under
    ``base``, default TMPDIR; never the course folder) and, unless warm
    templates are off, its warm template importing ``preload``
    (tools/sandbox/warm.py), started from the thread that will grade (the
    template's sandbox ends with that thread). ``wait=False`` starts the
    template without waiting for its imports (a local pool's initializer: the
    first task waits). ``warm_on``: the run's setting (CourseSettings.warm).
    Called again, it keeps both."""
    from ..nbgrader_patches import unsynced_gradebooks
    from ..sandbox import warm

    if _Worker.root is None or not _Worker.root.is_dir():
        import warnings

        # (as in make grade's own process: nbgrader's gradebook code trips SQLAlchemy 2's warnings)
        warnings.filterwarnings("ignore", module="nbgrader")
        warnings.filterwarnings("ignore", message=".*not in session.*")
        _Worker.root = Path(tempfile.mkdtemp(prefix="nbgrader-worker-", dir=base))
        _Worker.started_kib = resident_kib()
        _Worker.inputs = {}
        unsynced_gradebooks(_Worker.root)  # the private gradebooks: copies, merged by the grading process
        warm.set_kernel_roots([_Worker.root], base=_Worker.root)
        import atexit

        atexit.register(close_worker)
    if _Worker.preload != tuple(preload):
        warm.set_kernel_preload(list(preload))
        _Worker.preload = tuple(preload)
        if warm.kernel_template_running():
            warm.close_kernel_template()
    if warm_on and not warm.kernel_template_running():
        from ..course_settings import KERNEL_MEMORY_BYTES

        try:
            warm.share_kernel_template(warm.Template([_Worker.root], memory_bytes=memory_bytes or KERNEL_MEMORY_BYTES,
                                                     base=_Worker.root, preload=tuple(preload), wait=False))
        except Exception:  # noqa: BLE001 - the kernel then starts one itself, or a fresh sandboxed Python
            pass
    template = warm._kernel_template
    if wait and template is not None and not template.ready:
        try:
            template.wait_ready()
        except warm.TemplateError:  # (it closed itself) the kernel starts another, or a fresh sandboxed Python
            warm.close_kernel_template()
    return _Worker.root


def peak_resident_kib() -> int:
    """This process's largest resident memory so far, in KiB: its own
    (/proc/self/status's VmHWM), not ru_maxrss, which after an exec keeps the
    peak of the program that started it (a worker launched by a 700 MiB
    process would report 700 MiB before doing anything). ru_maxrss where
    /proc cannot be read."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def resident_kib() -> int:
    """This process's resident memory now, in KiB (/proc/self/statm), or 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError, IndexError):
        return 0


def close_worker():
    from ..sandbox import warm
    from ..sandbox.bubblewrap import remove_tree

    warm.close_kernel_template()
    if _Worker.root is not None:
        try:
            remove_tree(_Worker.root)
        except OSError:
            pass
        _Worker.root = None


def grade_task(bundle: AssignmentBundle, submission: Submission) -> dict:
    """Grade one submission in this worker; return a dict: success, log,
    reason, seconds, phases, ran, peak_kib, key, and ``files``: the autograded
    and feedback folders, the private gradebook and the checks' results, as
    bytes (``read_regular``)."""
    import threading

    from .run import SubmissionTimeout, grade_with_deadline, peak_kib
    from ..sandbox.bubblewrap import remove_tree

    root = ready_worker(bundle.preload, bundle.memory_bytes, warm_on=bundle.warm)
    peak_before = peak_kib()
    private = Path(tempfile.mkdtemp(prefix="submission-", dir=root))
    try:
        checks = None
        if bundle.checks is not None:
            inputs = _Worker.inputs.get(bundle.key)
            if inputs is None or not inputs.is_dir():
                inputs = Path(tempfile.mkdtemp(prefix="inputs-", dir=root))
                os.chmod(inputs, 0o755)  # (as verification writes them: the harness reads them as another user)
                write_files(bundle.check_inputs, inputs, max_bytes=256 * 1024**2, max_files=10_000)
                _Worker.inputs[bundle.key] = inputs
            checks = dataclasses.replace(bundle.checks, inputs=inputs)
        # (a Dask worker runs tasks in a thread, where no alarm can be set: there the kernel's own limits
        # and the grading process's watch on each task stand for the deadline)
        seconds = bundle.seconds if threading.current_thread() is threading.main_thread() else None
        result = grade_with_deadline(seconds, bundle, submission, private, checks)
        files = {}
        folders = bundle.folders
        for kind in ("autograded", "feedback"):
            folder = private / folders[kind] / submission.student / submission.assignment
            if folder.is_dir():
                files[kind], _ = read_regular(folder)
        if (private / "gradebook.db").is_file():
            files["gradebook.db"] = (private / "gradebook.db").read_bytes()
        results = private / "verification" / "results"
        if result.get("ran") is not None and results.is_dir():
            files["verification"] = read_results(results)
        result["files"] = files
        result["key"] = submission.key(bundle)
        # (measured once its results are read: what this submission made the worker's peak grow by)
        result["peak_kib"] = peak_kib()
        result["grew_kib"] = result["peak_kib"] - peak_before
        return result
    except SubmissionTimeout:
        raise
    finally:
        try:
            remove_tree(private)
        except OSError:
            shutil.rmtree(private, ignore_errors=True)


def _judged(name: str):
    """The largest a results file the judge reads may be (tools/verification/probes.py's
    ResultsFolder), or None for a name it never reads."""
    import re

    from ..verification.probes import ARRAY_NAME, MAX_ARRAY_BYTES, MAX_JSON_BYTES

    if re.fullmatch(r"step-\d+\.json", name):
        return MAX_JSON_BYTES
    if ARRAY_NAME.fullmatch(name):
        return MAX_ARRAY_BYTES
    return None


def read_results(results: Path) -> dict:
    """What the judge will read of a verification's results folder (already
    bounded in count by tidy_results), as {name: bytes, or a stand-in}: a
    file it reads, up to its limit, as bytes; a larger one as ("size", n),
    a link as ("link",), anything else not a regular file as ("other",), so
    that the judge, in the grading process, says of each what it would have
    said of the original; what it never reads is left out."""
    from ..sandbox.limits import MAX_RESULT_FILES
    from ..verification.probes import MAX_TOTAL_BYTES

    out, budget = {}, MAX_TOTAL_BYTES
    top = os.open(results, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        with os.scandir(top) as entries:
            names = sorted(entry.name for _, entry in zip(range(MAX_RESULT_FILES + 1), entries))
        for name in names:
            limit = _judged(name)
            if limit is None:
                continue
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=top)
            except OSError:
                out[name] = ("link",) if os.path.islink(f"/proc/self/fd/{top}/{name}") else ("other",)
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    out[name] = ("other",)
                elif info.st_size > min(limit, budget):
                    out[name] = ("size", int(info.st_size))
                else:
                    os.set_blocking(fd, True)
                    data = os.read(fd, info.st_size) if info.st_size else b""
                    budget -= len(data)
                    out[name] = data
            finally:
                os.close(fd)
    finally:
        os.close(top)
    return out


def write_results(results: dict, target: Path):
    """Write what read_results returned, checked first: names the judge
    reads only, bytes within their limits, stand-ins as what they stand for
    (a sparse file of that size, a link to nowhere, a named pipe)."""
    from ..sandbox.limits import MAX_RESULT_FILES
    from ..verification.probes import MAX_TOTAL_BYTES

    if not isinstance(results, dict) or len(results) > MAX_RESULT_FILES:
        raise CopyRefused(f"expected at most {MAX_RESULT_FILES} verification results, got {type(results).__name__}")
    total = 0
    for name, data in results.items():
        limit = _judged(name) if isinstance(name, str) else None
        if limit is None:
            raise CopyRefused(f"expected verification results' names, got {name!r}")
        if isinstance(data, bytes):
            total += len(data)
            if len(data) > limit or total > MAX_TOTAL_BYTES:
                raise CopyRefused(f"verification result {name} is larger than the judge reads")
        elif not (data in (("link",), ("other",)) or (isinstance(data, tuple) and len(data) == 2
                                                      and data[0] == "size" and isinstance(data[1], int)
                                                      and 0 <= data[1] < 2**50)):
            raise CopyRefused(f"expected bytes or a stand-in for verification result {name}, got {data!r:.100}")
    target.mkdir(parents=True, exist_ok=True)
    for name, data in results.items():
        path = target / name
        if isinstance(data, bytes):
            with open(path, "xb") as out:
                out.write(data)
        elif data[0] == "size":
            with open(path, "xb") as out:
                out.truncate(data[1])  # (sparse: no space taken)
        elif data[0] == "link":
            os.symlink("/nonexistent", path)
        else:
            os.mkfifo(path)


def unpack_result(result: dict, private: Path, folders: dict, assignment: str, student: str):
    """Write what a worker returned into ``private`` (a folder of the grading
    process), each part bounded as a graded submission's folder is."""
    files = result.get("files") or {}
    if not isinstance(files, dict):
        raise CopyRefused(f"expected a mapping of a graded submission's folders, got {type(files).__name__}")
    for kind in ("autograded", "feedback"):
        if kind in files:
            write_files(files[kind], private / folders[kind] / student / assignment)
    if "gradebook.db" in files:
        data = files["gradebook.db"]
        if not isinstance(data, bytes) or len(data) > 4 * COPY_BYTES:
            raise CopyRefused("the private gradebook that arrived is not bytes of a bounded size")
        (private / "gradebook.db").write_bytes(data)
    if "verification" in files:
        write_results(files["verification"], private / "verification" / "results")

