"""nbgrader's autograde with every notebook's kernel in the sandbox of tools/sandbox/bubblewrap.py.

nbgrader_config.py puts ``SandboxedExecute`` in place of nbgrader's ``Execute``
preprocessor, so every ``nbgrader autograde`` of this course — by ``make
grade``, by hand, or from the formgrader — runs student code this way:

- ``SandboxedKernelManager`` starts the kernel inside bubblewrap — forked
  from this process's warm template (tools/sandbox/warm.py), which makes each kernel
  a sandbox of its own, or, with ``GRADING_WARM=off``, as a new Python: the kernel
  sees a read-only system and Python, works in a scratch copy of the
  submission's folder (tools/sandbox/bubblewrap.py: what it writes there is never read
  back), has no network and limits on memory, CPU time and processes. It
  talks to nbgrader over unix sockets (ZeroMQ's ``ipc`` transport) in a
  private folder bound into the sandbox, since TCP cannot cross the sandbox's
  empty network; grading never reads that folder, connects to each socket
  through a handle taken on it when the kernel made it (``pin_sockets``: a
  link put in its place later leads nowhere), and removes the folder without
  following links.
- ``SandboxedExecute`` bounds what a notebook's outputs may hold, in bytes per
  cell and per notebook: past that, output that cannot change a grade is
  dropped (with a note saying so), and what can (an error, stderr, a result)
  is kept, shortened; a single message larger than ``MESSAGE_BYTES``, or
  holding more than ``MESSAGE_VALUES`` JSON values (counted on its raw
  frames), is never decoded. The grading worker's memory stays bounded
  whatever a notebook prints: by these budgets, plus one decoded message of
  at most those sizes and the frames of at most RECEIVE_QUEUE messages of at
  most MAX_MESSAGE_BYTES (instructor/protections.md gives the measured cost).
- ``SandboxedExecute`` keeps grading when the kernel dies (``os._exit``, CPU
  limit) or stops answering (an endless loop that ignores interrupts): the cell
  that was running and every later cell score 0 with a message that says why,
  cells before keep their points, and the next submission is graded as usual.
  A whole notebook also has a wall-clock budget.

Settings (nbgrader_config.py): ``c.SandboxedKernelManager.memory_bytes``,
``c.SandboxedKernelManager.cpu_seconds``, ``c.SandboxedExecute.notebook_timeout``,
``c.SandboxedExecute.cell_output_bytes``, ``c.SandboxedExecute.notebook_output_bytes``,
and nbgrader's own ``c.Execute.timeout`` (seconds per cell).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path
from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import run_sync
from nbformat import NotebookNode
from traitlets import Bool, DottedObjectName, Integer, Type, default

from nbgrader.preprocessors import Execute

from . import bubblewrap as sandbox, warm
from .limits import json_values_at_most
from ..course_settings import KERNEL_CPU_SECONDS, KERNEL_MEMORY_BYTES, NOTEBOOK_SECONDS

TOOLS = Path(__file__).resolve().parent.parent  # the course's tools, which the hidden tests import


# The largest IOPub message that is decoded, in bytes and in JSON values
# (tools/sandbox/limits.py's bound, counted on the raw frames before
# anything is decoded): a larger one stands in the notebook as a note that it
# was too large (GuardedIOPubChannel). Twice a cell's default output budget:
# what is larger could not be kept whole anyway (an output that can decide a
# grade is kept as a stand-in of the same kind). instructor/protections.md
# gives what one such message costs the grader, measured.
MESSAGE_BYTES = 2 * 1024**2
MESSAGE_VALUES = 100_000
# The largest message received at all, and how many may wait in the
# grader: ZeroMQ drops the connection of a kernel that sends a larger one
# (the notebook then stops: SandboxedExecute), and a kernel that sends faster
# than the grader reads keeps the rest in its own memory.
MAX_MESSAGE_BYTES = 32 * 1024**2
RECEIVE_QUEUE = 4
# Past a cell's or a notebook's output budget, outputs that can decide a
# grade (nbgrader scores a test cell by its first error, stderr or result)
# are still kept, this many per cell, each shortened to KEPT_CHARS.
KEPT_OUTPUTS = 20
KEPT_CHARS = 4096

# Seconds this process spent starting kernels (until they answer), running
# cells, and stopping kernels: tools/grading/run.py reports them per phase.
PHASES = Counter()


# The private methods of jupyter_client's and nbclient's classes that the classes below override are
# listed, with the upstream version they were written for, in tools/nbgrader_patches.py (PATCHES).
class WatchedChannel(AsyncZMQSocketChannel):
    """A channel that knows when ZeroMQ dropped its connection (a message
    over MAX_MESSAGE_BYTES): ``dropped()``."""

    def __init__(self, socket, session, loop=None):
        super().__init__(socket, session, loop)
        address = f"inproc://watch-{id(self)}-{os.getpid()}"
        socket.monitor(address, zmq.EVENT_DISCONNECTED)
        self.watch = zmq.Context.shadow(socket.context.underlying).socket(zmq.PAIR)
        self.watch.connect(address)
        self.was_dropped = False

    def dropped(self) -> bool:
        while not self.was_dropped and self.watch.poll(0):
            self.watch.recv_multipart()
            self.was_dropped = True
        return self.was_dropped

    def close(self):
        try:
            self.socket.disable_monitor()
        except (zmq.ZMQError, AttributeError):
            pass
        self.watch.close(linger=0)
        super().close()

    stop = close  # (the base class binds its own close to this name)


class GuardedIOPubChannel(WatchedChannel):
    """The IOPub channel, which never decodes a message larger than
    MESSAGE_BYTES or holding more than MESSAGE_VALUES JSON values (counted
    on its raw frames): such a message is received as ZeroMQ frames (not
    decoded) and stands in the notebook as a short output of the same kind
    saying that it was too large. A notebook that prints a lot at once (a
    flush of ipykernel's buffer is one message) or sends a message of
    millions of empty lists thus costs the grader at most one message of
    MESSAGE_BYTES bytes and MESSAGE_VALUES values decoded, and the frames of
    one of at most MAX_MESSAGE_BYTES."""

    async def _recv(self, **kwargs):
        frames = await self.socket.recv_multipart(copy=False)
        if sum(len(frame) for frame in frames) <= MESSAGE_BYTES:
            raw = [frame.bytes for frame in frames]
            if sum(json_values_at_most(part) for part in raw) <= MESSAGE_VALUES:
                _, message = self.session.feed_identities(raw)
                message = self.session.deserialize(message)
                if any(b"\\ud" in part or b"\\uD" in part for part in raw):  # a surrogate, written as an escape
                    try:
                        message["content"] = without_surrogates(message["content"])
                    except RecursionError:
                        return too_large(frames, self.session)
                return message
        return too_large(frames, self.session)


def without_surrogates(value):
    """``value`` (decoded JSON) with every lone surrogate (JSON can hold
    ``"\\udcff"``; UTF-8 cannot) replaced by ``?``: the graded notebook and
    the feedback page are written as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {without_surrogates(key): without_surrogates(item) for key, item in value.items()}
    return value


def too_large(frames, session):
    """The stand-in for an IOPub message of more than MESSAGE_BYTES: its
    header and parent header (when they are small), and a short content of
    the same kind. Its signature is not checked: it holds nothing of the
    kernel's but the ids that route it to its cell."""
    import json

    delimiter = next((i for i, frame in enumerate(frames[:64])
                      if len(frame) == 9 and frame.bytes == b"<IDS|MSG>"), None)
    parts = frames[delimiter + 1:] if delimiter is not None else []

    def small_json(index):
        if index < len(parts) and len(parts[index]) <= 64 * 1024:
            try:
                value = json.loads(parts[index].bytes)
                return value if isinstance(value, dict) else {}
            except ValueError:
                return {}
        return {}

    header, parent = small_json(1), small_json(2)
    kind = header.get("msg_type")
    start = bytes(parts[4].buffer[:200]) if len(parts) > 4 else b""
    text = TOO_LARGE.format(sum(len(frame) for frame in frames) / 1024**2)
    if kind == "error":
        content = {"ename": "OutputTooLarge", "evalue": text, "traceback": [text]}
    elif kind in ("execute_result", "display_data"):
        content = {"data": {"text/plain": text}, "metadata": {}}
        if kind == "execute_result":
            content["execution_count"] = None
    else:
        kind = "stream"
        name = "stderr" if b'"stderr"' in start else "stdout"
        content = {"name": name, "text": text}
    header = {**header, "msg_type": kind}
    return {"header": header, "msg_id": header.get("msg_id", ""), "msg_type": kind, "parent_header": parent,
            "metadata": {}, "content": content, "buffers": []}


# The kernel's sockets, by channel. It binds them in its private folder,
# which it can write to: a name there could later be a link to any socket
# of the grader's machine. So the grader connects to each by a handle on the
# socket it found there first (``pin_sockets``), never by its name again.
CHANNELS = ("shell", "iopub", "stdin", "control", "hb")
SOCKET_WAIT_SECONDS = 60  # how long a starting kernel has to bind its sockets
_PINNED = {}  # {socket path: O_PATH handle on the socket found there}


def pin_sockets(paths) -> dict:
    """{path: address to connect to} for a kernel's unix sockets ``paths``:
    ``/proc/self/fd/N``, where N is a handle (``O_PATH | O_NOFOLLOW``) on the
    socket at ``path``, taken once all of them exist (ipykernel binds them all
    before it runs any code of the notebook's). Linux connects through such a
    handle to that very socket: when the kernel later puts a link or another
    file in its place, ZeroMQ's reconnections still go to the kernel's own
    socket (refused once it has closed it), never where the link points.
    Raises RuntimeError if one is not a socket, or if they do not all appear
    within SOCKET_WAIT_SECONDS."""
    import stat

    missing = [p for p in paths if p not in _PINNED]
    deadline = time.monotonic() + SOCKET_WAIT_SECONDS
    while missing:
        present = []
        for path in missing:
            try:
                os.lstat(path)
                present.append(path)
            except FileNotFoundError:
                pass
        if len(present) == len(missing):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the kernel did not make its sockets within {SOCKET_WAIT_SECONDS} s")
        time.sleep(0.005)
    for path in missing:
        fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.close(fd)
            raise RuntimeError(f"the kernel's {os.path.basename(path)} is not a socket: the grader does not connect")
        _PINNED[path] = fd
    return {path: f"/proc/self/fd/{_PINNED[path]}" for path in paths}


def release_sockets():
    """Close the handles of the sockets of kernels whose private folder is
    gone: stopped kernels, whose clients stopped their channels since."""
    for path in [p for p in _PINNED if not os.path.lexists(os.path.dirname(p))]:
        os.close(_PINNED.pop(path))


class PinnedSockets:
    """For a kernel client or manager on the ``ipc`` transport: every channel
    connects to the kernel's socket through a pinned handle (``pin_sockets``)."""

    def _make_url(self, channel: str) -> str:
        if self.transport != "ipc":
            return super()._make_url(channel)
        paths = {name: f"{self.ip}-{getattr(self, f'{name}_port')}" for name in CHANNELS}
        return "ipc://" + pin_sockets(list(paths.values()))[paths[channel]]


class SandboxedKernelClient(PinnedSockets, AsyncKernelClient):
    """jupyter_client's client, with shorter waits while a kernel starts.

    A forked kernel is ready about 0.1 s after it is asked for; jupyter_client
    8.10 then spends twice that waiting: its sockets retry a connection every
    100 ms (ZeroMQ's default), and once the kernel has answered it waits for
    0.2 s of silence on IOPub. Here the sockets retry every 10 ms and the
    silence is 10 ms: every message the kernel sent before it answered has
    arrived by then, and nbclient ignores later ones that answer no cell."""

    reconnect_ms = 10
    quiet_seconds = 0.01
    iopub_channel_class = Type(GuardedIOPubChannel)
    shell_channel_class = Type(WatchedChannel)

    def start_channels(self, *args, **kwargs):
        self.context.setsockopt(zmq.RECONNECT_IVL, self.reconnect_ms)  # for the sockets made from now on
        self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        self.context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
        # No stdin channel: nothing reads it (nbclient never allows input), so
        # whatever a kernel sent there would pile up in the grader.
        kwargs["stdin"] = False
        return super().start_channels(*args, **kwargs)

    def dropped(self) -> list:
        """The channels whose connection ZeroMQ dropped: a message too large."""
        return [name for name in ("shell", "iopub")
                if getattr(self, f"_{name}_channel", None) is not None
                and getattr(self, f"_{name}_channel").dropped()]

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                msg = None
            if msg is not None and msg["msg_type"] == "kernel_info_reply":
                try:  # IOPub is connected once something arrives there (ipykernel 7 greets each subscriber)
                    await self.iopub_channel.get_msg(timeout=0.2)
                except Empty:
                    pass
                else:
                    self._handle_kernel_info_reply(msg)
                    break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
        while True:  # what IOPub still holds from the start
            try:
                await self.iopub_channel.get_msg(timeout=self.quiet_seconds)
            except Empty:
                break

    wait_for_ready = _async_wait_for_ready  # (AsyncKernelClient binds the base class's function by name)


class SandboxedKernelManager(PinnedSockets, AsyncKernelManager):
    """A kernel manager that starts the kernel inside the bubblewrap sandbox,
    in a scratch copy of its working folder (the submission's), with its
    private folder (connection file, sockets) as the only other place it may
    write to."""

    memory_bytes = Integer(
        KERNEL_MEMORY_BYTES, help="Address space each process of the kernel may use, in bytes."
    ).tag(config=True)
    cpu_seconds = Integer(
        KERNEL_CPU_SECONDS, help="CPU seconds each process of the kernel may use (RLIMIT_CPU); the kernel's own "
        "process runs the whole notebook, so for it this is a budget for the notebook; then it is stopped."
    ).tag(config=True)

    warm = Bool(
        True, help="Fork the kernel from a warm template (tools/sandbox/warm.py) instead of starting Python; "
        "GRADING_WARM=off in the environment also switches it off."
    ).tag(config=True)

    client_class = DottedObjectName("tools.sandbox.kernel.SandboxedKernelClient")
    client_factory = Type(SandboxedKernelClient, klass=AsyncKernelClient)

    _private = None  # this kernel's connection file and sockets

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # Whether a stopping kernel has ended is asked every 10 ms, not 100 ms.
        await super()._async_wait(pollinterval=min(pollinterval, 0.01))

    async def _async_pre_start_kernel(self, **kw):
        sandbox.check_available()
        self._remove_private()
        release_sockets()
        # Short path: a unix socket's path is limited to about 100 characters.
        parent = warm.kernel_private_root() if warm.enabled() else None
        self._private = Path(tempfile.mkdtemp(prefix="nbg-kernel-", dir=parent))
        sandbox.let_sandbox_write(self._private)  # the kernel binds its sockets here
        self.transport = "ipc"
        self.connection_file = str(self._private / "connection.json")
        self.ip = str(self._private / "socket")
        # The kernel is not a direct child of ours: interrupt it with a message,
        # which ipykernel turns into SIGINT inside the sandbox.
        self.kernel_spec.interrupt_mode = "message"
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if sandbox.as_root():
            Path(self.connection_file).chmod(0o644)  # (its folder is reachable by root only)
        workdir = Path(kw.get("cwd") or os.getcwd())
        # Home, IPython's and Matplotlib's folders in the sandbox's own /tmp:
        # nothing the kernel writes lands where the grader looks.
        env = sandbox.sandbox_env(
            kw.get("env") or os.environ,
            HOME="/tmp",
            IPYTHONDIR="/tmp/.ipython",
            MPLCONFIGDIR="/tmp/matplotlib",
            PATH=f"{Path(cmd[0]).absolute().parent}:{sandbox.DEFAULT_ENV['PATH']}",
            # Inside the sandbox's PID namespace the kernel's parent is PID 1;
            # "1" tells ipykernel not to watch its parent (bwrap does that).
            JPY_PARENT_PID=1,
        )
        template = self._warm_template(cmd, workdir)
        if template is not None:
            request = template.request(
                "kernel", cmd[3:], cwd=workdir, writable=[self._private], env=env, scratch=True,
                memory_bytes=self.memory_bytes, cpu_seconds=self.cpu_seconds,
            )
            return template.client_command(request, self._private / "request.json"), kw
        cmd = sandbox.sandboxed_command(
            cmd,
            workdir,
            memory_bytes=self.memory_bytes,
            cpu_seconds=self.cpu_seconds,
            writable=[self._private],
            # The course's tools (public code): the hidden tests run their checks with them.
            readable=[TOOLS],
            env=env,
            scratch=True,
        )
        return cmd, kw

    def _warm_template(self, cmd, workdir):
        """This process's warm template (tools/sandbox/warm.py) if it can start this
        kernel: the course's own Python running ipykernel; else None."""
        if not self.warm or cmd[1:3] != ["-m", "ipykernel_launcher"]:
            return None
        if Path(shutil.which(cmd[0]) or cmd[0]).resolve() != (warm.BIN / "python").resolve():
            return None
        try:
            return warm.kernel_template(workdir, self.memory_bytes)
        except Exception as error:  # noqa: BLE001 - the kernel then starts as a fresh sandboxed Python
            self.log.warning("No warm template (%s): the kernel starts a fresh sandboxed Python", error)
            return None

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            self._remove_private()

    # nbclient calls the public name, which the base class bound to its own method.
    cleanup_resources = _async_cleanup_resources

    def _remove_private(self):
        if self._private is not None:
            try:
                sandbox.remove_tree(self._private)  # the kernel wrote there: no link followed
            except OSError as error:
                self.log.warning("Could not remove %s: %s", self._private, error)
            self._private = None

    def exit_status(self):
        """The sandbox's exit status once the kernel has stopped, else None."""
        process = getattr(self.provisioner, "process", None)
        return None if process is None else process.poll()

    def describe_exit(self):
        """Why the kernel stopped, in words for the student and the grader."""
        status = self.exit_status()
        if status == 128 + signal.SIGXCPU:
            return f"it used up its CPU time limit of {self.cpu_seconds} s"
        if status in (128 + signal.SIGKILL, -signal.SIGKILL):
            return "it was killed: out of CPU time or memory"
        if status is None:
            return "it stopped answering"
        return f"it exited with status {status}, for example through os._exit() or a crash"


def error_output(ename, evalue):
    """An error output, as a kernel would send it: the cell scores 0."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


TOO_LARGE_STOP = ("This cell sent an output of more than {:g} MiB at once; the grader stops reading such a "
                  "notebook, so its output is incomplete and the cells after it do not run.")
TOO_LARGE = "[output left out: one message of {:.0f} MiB, more than the grader reads at once]"
TRUNCATED = "\n[output truncated: the grader keeps {:g} MiB of a cell's output and less of a notebook's]\n"


def content_bytes(msg) -> int:
    """About how many bytes a message's output would add to the notebook."""
    import json

    content = msg.get("content", {})
    if msg.get("msg_type") == "stream":
        return len(content.get("text", ""))
    try:
        return len(json.dumps(content))
    except (TypeError, ValueError):
        return 0


def shortened(msg):
    """A copy of an output message cut down to what can decide a grade, each
    text at most KEPT_CHARS long: a stream's text, an error's name, message
    and the end of its traceback, a result's plain text."""

    def cut(value, limit=KEPT_CHARS):
        if isinstance(value, list):
            value = "".join(str(v) for v in value[:1000])
        return str(value)[:limit]

    content = msg.get("content", {})
    kind = msg.get("msg_type")
    if kind == "stream":
        name = content.get("name")
        content = {"name": name if name in ("stdout", "stderr") else "stdout", "text": cut(content.get("text", ""))}
    elif kind == "error":
        traceback = content.get("traceback")
        content = {"ename": cut(content.get("ename", ""), 200), "evalue": cut(content.get("evalue", "")),
                   "traceback": [cut(line, 1000) for line in (traceback if isinstance(traceback, list) else [])[-4:]]}
    else:  # execute_result
        data = content.get("data") if isinstance(content.get("data"), dict) else {}
        count = content.get("execution_count")
        content = {"data": {"text/plain": cut(data.get("text/plain", ""))}, "metadata": {},
                   "execution_count": count if isinstance(count, int) else None}
    return {**msg, "content": content}


UNSTOPPABLE = "This cell ran past its time limit of {} s and did not stop when interrupted."


class SandboxedExecute(Execute):
    """nbgrader's Execute preprocessor with the sandboxed kernel, and grading
    that survives a kernel that dies or hangs."""

    notebook_timeout = Integer(
        NOTEBOOK_SECONDS, help="Wall-clock seconds for a whole notebook; cells after that do not run and score 0."
    ).tag(config=True)
    recover_timeout = Integer(
        10, help="Seconds a kernel has to answer again after a timed-out cell was interrupted."
    ).tag(config=True)
    cell_output_bytes = Integer(
        1024**2, help="Bytes of output one cell keeps; past that, only outputs that decide a grade, shortened."
    ).tag(config=True)
    notebook_output_bytes = Integer(
        8 * 1024**2, help="Bytes of output a whole notebook keeps; past that, as for a cell."
    ).tag(config=True)

    def __init__(self, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(**kwargs)

    @default("shutdown_kernel")
    def _shutdown_kernel_default(self):
        # Once the last cell has run, the kernel and its sandbox are killed at
        # once: nothing is left to save, and a student's atexit hooks could
        # only delay the next submission.
        return "immediate"

    def preprocess(self, nb, resources=None, km=None):
        self._stopped = None  # why the remaining cells do not run, once the kernel is gone
        self._notebook_bytes, self._cell_bytes, self._kept, self._noted = 0, Counter(), Counter(), set()
        self._deadline = time.monotonic() + self.notebook_timeout
        start, before = time.monotonic(), dict(PHASES)
        try:
            return super().preprocess(nb, resources, km)
        finally:
            inside = sum(PHASES[k] - before.get(k, 0.0) for k in ("kernel start", "cells"))
            PHASES["kernel stop"] += time.monotonic() - start - inside

    def start_new_kernel(self, **kwargs):
        start = time.monotonic()
        try:
            return super().start_new_kernel(**kwargs)
        finally:
            PHASES["kernel start"] += time.monotonic() - start

    def start_new_kernel_client(self):
        start = time.monotonic()
        try:
            return super().start_new_kernel_client()
        finally:
            PHASES["kernel start"] += time.monotonic() - start

    def preprocess_cell(self, cell, resources, index):
        start = time.monotonic()
        try:
            return self._preprocess_cell(cell, resources, index)
        finally:
            PHASES["cells"] += time.monotonic() - start

    def _preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or not cell.source.strip():
            return super().preprocess_cell(cell, resources, index)
        if self._stopped is None and time.monotonic() > self._deadline:
            self._stop(f"the notebook used up its time limit of {self.notebook_timeout} s")
        if self._stopped is not None:
            cell.outputs = [error_output("NotRun", f"This cell did not run: {self._stopped}.")]
            return cell, resources
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            why = self.km.describe_exit() if hasattr(self.km, "describe_exit") else "it died"
            self.log.warning("The kernel stopped while running cell %d: %s", index, why)
            cell.outputs.append(
                error_output("KernelDied", f"The notebook's Python process stopped while running this cell: {why}.")
            )
            self._stopped = f"the notebook's Python process had stopped in an earlier cell ({why})"
            return cell, resources
        except CellTimeoutError:
            if self._too_large(cell):
                return cell, resources
            # Interrupted after its time limit, the kernel never went idle again.
            cell.outputs.append(error_output("CellTimeoutError", UNSTOPPABLE.format(self.timeout)))
            self._stop("an earlier cell ran past its time limit and did not stop when interrupted")
            return cell, resources
        if self._too_large(cell):
            return cell, resources
        timed_out = any(o.get("ename") == self.error_on_timeout.get("ename") for o in cell.outputs)
        if timed_out and not self._responds():
            self._stop("an earlier cell ran past its time limit and did not stop when interrupted")
        return cell, resources

    def _too_large(self, cell) -> bool:
        """If the kernel sent a message too large to receive, this cell's
        outputs are incomplete: it scores 0 and the notebook stops."""
        dropped = self.kc.dropped() if hasattr(self.kc, "dropped") else []
        if not dropped:
            return False
        cell.outputs.append(error_output("OutputTooLarge", TOO_LARGE_STOP.format(MAX_MESSAGE_BYTES / 1024**2)))
        self._stop(f"an earlier cell sent an output of more than {MAX_MESSAGE_BYTES / 1024**2:g} MiB at once")
        return True

    def output(self, outs, msg, display_id, cell_index):
        size = content_bytes(msg)
        if (self._cell_bytes[cell_index] + size <= self.cell_output_bytes
                and self._notebook_bytes + size <= self.notebook_output_bytes):
            self._cell_bytes[cell_index] += size
            self._notebook_bytes += size
            return super().output(outs, msg, display_id, cell_index)
        if cell_index not in self._noted:
            self._noted.add(cell_index)
            limit = min(self.cell_output_bytes, self.notebook_output_bytes)
            outs.append(NotebookNode(output_type="stream", name="stdout", text=TRUNCATED.format(limit / 1024**2)))
        content = msg.get("content", {})
        decides = msg["msg_type"] in ("error", "execute_result") or (
            msg["msg_type"] == "stream" and content.get("name") == "stderr")
        if decides and self._kept[cell_index] < KEPT_OUTPUTS and sum(self._kept.values()) < 5 * KEPT_OUTPUTS:
            self._kept[cell_index] += 1
            return super().output(outs, shortened(msg), None, cell_index)  # (no display id: never updated)
        return None

    def _update_display_id(self, display_id, msg):
        # An update rewrites every output shown with that id: it costs its size
        # that many times. If that does not fit, the outputs keep what they show.
        shown = sum(len(indices) for indices in self._display_id_map.get(display_id, {}).values())
        cost = content_bytes(msg) * shown
        if self._notebook_bytes + cost <= self.notebook_output_bytes and cost <= self.cell_output_bytes:
            self._notebook_bytes += cost
            super()._update_display_id(display_id, msg)

    def _stop(self, reason):
        self.log.warning("Stopping the kernel: %s", reason)
        self._stopped = reason
        try:
            run_sync(self.km.shutdown_kernel)(now=True)
        except Exception:  # already gone
            pass

    def _responds(self):
        return run_sync(self._async_responds)()

    async def _async_responds(self):
        """True if the kernel answers a kernel_info request within recover_timeout."""
        msg_id = self.kc.kernel_info()
        deadline = time.monotonic() + self.recover_timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await self.kc.shell_channel.get_msg(timeout=left)
            except Empty:
                return False
            if msg["parent_header"].get("msg_id") == msg_id:
                return True
        return False
