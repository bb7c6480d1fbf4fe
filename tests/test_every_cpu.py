"""Promise: every chapter prints and glues the same on every CPU and thread count.

nbval (run by `make test` over chapters/) re-executes each chapter on this
machine's own vector paths and compares every output with the committed one.
Readers, maintainers and CI runners have other CPUs: PyTorch, MKL and OpenBLAS
choose their kernels by the instruction sets they find, and the last bits of a
float result change with that choice. A chapter shows only what is meaningful at
its precision, so its outputs must not change. This module re-executes every
chapter twice more, with the libraries switched onto the code paths of other
CPUs, and requires outputs identical to the committed ones. A chapter added to
chapters/ is covered without any change here.

The switches, and why each is here (measured with torch 2.13.0+cpu and NumPy
2.4's bundled OpenBLAS 0.3.31 on an AMD EPYC with AVX2 but no AVX-512):

- ``ATEN_CPU_CAPABILITY``: PyTorch's own kernels (softmax, exp, sum, small
  matmuls, SDPA) exist in ``default`` (SSE), ``avx2`` and ``avx512`` builds;
  ``default`` changes the bits of all of them. A machine with AVX-512 runs a
  third set. One run takes ``default``, the other ``avx2`` (which is this
  machine's own, and differs from what an AVX-512 machine runs natively).
- ``MKL_CBWR``: MKL (PyTorch's BLAS on x86) picks its GEMM code path by CPU;
  ``COMPATIBLE`` forces the portable SSE2 path and changes the bits of every
  matmul from 16×16 up. ``MKL_ENABLE_INSTRUCTIONS`` caps MKL's instruction
  set on Intel CPUs; it changed nothing on the AMD machine above (where MKL
  already takes its generic path) and is set for Intel machines.
- ``ONEDNN_MAX_CPU_ISA``: caps oneDNN, which PyTorch uses for some layers
  (convolutions, and matmuls in reduced precision); it changed none of the
  float32 operations the chapters use, and is set so that a chapter which
  starts to rely on oneDNN is covered.
- ``OPENBLAS_CORETYPE``: NumPy's OpenBLAS picks its kernels per CPU at run
  time; ``Prescott`` (SSE3) and ``Nehalem`` change the bits of NumPy's matmul
  (chapter 1 computes with NumPy).
- ``NPY_DISABLE_CPU_FEATURES``: NumPy's own loops (exp, sums, argmax) are
  compiled for its baseline (x86-64-v2) and dispatched at run time to
  x86-64-v3 (AVX2) or -v4 (AVX-512) versions. The portable run turns the
  dispatch off; the other run keeps x86-64-v3 and turns AVX-512 off, which is
  what an AVX2 laptop runs.
- ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` 1 and 4: how many threads
  share a reduction. ``course.setup()`` pins PyTorch to one thread, so this
  reaches OpenBLAS and whatever a chapter runs before its set-up cell.

The AVX2-laptop run executes the chapters in the simulated Colab of
tests/test_launch_buttons_open_what_works.py (each a copy alone in an empty
folder, with only what Colab has), so that one execution serves both promises:
its failures of an output count here, its errors, fetch and figures there.

The two runs start in the background as soon as the test session has collected
its tests and run at low priority while the rest of the suite works, and this
test (moved to the end of the session) waits for them.
"""

import json
import os
import re
import sys

import pytest

from tests.plugins.background_runs import BackgroundRun, background_kernel
from tests.plugins.selection import chosen_chapters
from tools.paths import ROOT

# `make check` runs this module after a change to a chapter (tests/make_check.py).
MAKE_CHECK = ("chapter",)

LOG_DIR = ROOT / "_build" / "every-cpu"

# Two runs that between them move every switch off this machine's own choice.
RUNS = {
    "portable-sse": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "OPENBLAS_CORETYPE": "Prescott",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 X86_V3",
        "OMP_NUM_THREADS": "4",
        "OPENBLAS_NUM_THREADS": "4",
    },
    "avx2-laptop": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Nehalem",
        "NPY_DISABLE_CPU_FEATURES": "AVX512_ICL AVX512_SPR X86_V4",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    },
}

# The run that executes the chapters in the simulated Colab (tests/test_launch_buttons_open_what_works.py): Colab's
# own CPUs are not the switches' business, only which kernels the chapters run on.
IN_COLAB = "avx2-laptop"

RUNS_FIXTURE = "run"  # the tests that read the runs (tests/plugins/background_runs.py, reads_runs): the test of the kernels' priority starts none
_started = {}
# Seconds each run took, and how long the suite waited for it at the end: what
# this check adds to the time of `make test` (printed in the terminal summary).
TIMINGS = {}


KERNEL = "course-background"  # this Python's kernel, at low priority (tests/plugins/background_runs.py, background_kernel)
RUN_TIMEOUT = 1800  # seconds the session waits for a run (and a kernel of it for the CPU to start)


def command(chapters=None, kernel=KERNEL):
    """nbval over every chapter (those of COURSE_CHAPTERS under `make check`), or over ``chapters``, strict, as
    `make test` runs it (with ``kernel``: by default this Python's kernel, at low priority)."""
    if chapters is None:
        chapters = [str(p.relative_to(ROOT)) for p in chosen_chapters()]
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
        "--nbval", "--nbval-kernel-name", kernel, "--nbval-sanitize-with", "tests/nbval_sanitize.cfg",
        # (at the lowest priority a kernel may wait for the CPU until the rest of the suite is done: only a hang
        # should time out, within the time the session waits for the run)
        "--nbval-kernel-startup-timeout", str(RUN_TIMEOUT),
        *chapters,
    ]  # fmt: skip


def kernels():
    """A Jupyter path (JUPYTER_PATH) whose one kernelspec is KERNEL."""
    spec = LOG_DIR / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": background_kernel(sys.executable), "display_name": "Python 3 (low priority)", "language": "python",
    }))
    return LOG_DIR / "jupyter"


def start_runs(only=None):
    """Start every run (or those named in ``only``) in the background (called once the session has collected this test). The run in IN_COLAB
    runs in the simulated Colab of tests/test_launch_buttons_open_what_works.py, each chapter alone in an empty
    folder, and also writes what that module's Colab test judges (tests/plugins/colab_outcome.py): the chapters
    are executed once for both promises."""
    from tests import test_launch_buttons_open_what_works as launch

    LOG_DIR.mkdir(parents=True, exist_ok=True)
    path = kernels()
    for name, switches in RUNS.items():
        if name in _started or (only is not None and name not in only):
            continue
        env = {**os.environ, **switches, "PYTHONHASHSEED": "0",
               "JUPYTER_PATH": os.pathsep.join(filter(None, [str(path), os.environ.get("JUPYTER_PATH")]))}
        argv = command()
        if name == IN_COLAB:
            colab = launch.make_colab_once()
            env["JUPYTER_PATH"] = str(colab["kernels"].parent)
            env["COLAB_RESULTS"] = str(colab["results"])
            env["COLAB_GLUE_RECORDS"] = "1"  # (what course.glue pastes, compared: SHIM there)
            argv = command([str(p) for p in colab["notebooks"]], kernel="colab")
            argv[argv.index("--nbval"):argv.index("--nbval")] = ["-p", "tests.plugins.colab_outcome"]
        _started[name] = BackgroundRun(argv, log=LOG_DIR / f"{name}.log", env=env)


def summary(text, limit=6000):
    """The failing cells and the start of their diffs, for the assertion message."""
    failed = [line for line in text.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return "\n".join(failed) + "\n\n" + text[-limit:]


@pytest.mark.parametrize("run", RUNS)
def test_chapters_reproduce_on_other_cpus(run):
    start_runs()  # when this module is run on its own
    background = _started[run]
    returncode = background.wait(timeout=RUN_TIMEOUT)
    text = background.output()
    took = re.findall(r" in ([0-9.]+)s", text)  # pytest's own time for the run
    TIMINGS[run] = (float(took[-1]) if took else background.took, background.waited)
    switches = " ".join(f"{k}={v}" for k, v in RUNS[run].items())
    assert returncode == 0, (
        f"with {switches} the chapters do not reproduce their committed outputs: a cell prints or glues "
        f"digits that depend on the CPU's kernels (round them, or state a bound). "
        f"Full log: {LOG_DIR / (run + '.log')}\n{summary(text)}"
    )


def test_background_kernels_run_at_the_lowest_priority():
    """A kernel of the runs' kernelspec (KERNEL, background_runs.background_kernel), started as nbval starts it, through
    jupyter_client, which gives every kernel a session of its own, runs with its session's autogroup at nice 19, so
    that the runs take only the CPU the rest of the suite leaves idle. Where Linux has no autogroups there is nothing
    to lower."""
    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("this kernel shares the CPU without autogroups: the kernels' nice value is all there is")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(
        kernel_dirs=[str(kernels() / "kernels")]))
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        seen = []
        client.execute_interactive("import os; print(open('/proc/self/autogroup').read().split()[-1], "
                                   "os.getsid(0) == os.getpid(), os.getsid(0) != os.getsid(%d))" % os.getpid(),
                                   output_hook=seen.append, timeout=60)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    printed = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
    assert printed.split() == ["19", "True", "True"], printed
