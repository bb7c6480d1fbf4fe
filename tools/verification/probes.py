"""How a check is written: probes for the sandbox, a judge for the grader.

Each assignment's spec module (``solutions/<assignment>/checks/verification.py``) maps
every graded test cell to a *check builder*: ``CHECKS = {grade_id: builder}``.
A builder runs in the trusted grader process, once per grading run:

.. code-block:: python

    def test_softmax(p):                       # p: CheckPlan
        S = p.rng.normal(size=(4, 6))          # fresh inputs, from this run's seed
        ref = reference_softmax(S)             # trusted reference, computed here
        h = p.call("softmax", S)               # a probe: call the student's softmax(S)

        def judge(r):                          # r: CheckResults of one submission
            got = r.ndarray(h, "softmax(S)")   # plain numbers, or Fail
            close_numpy(got, ref, rtol=1e-7, atol=1e-12, what="softmax on a (4, 6) matrix")

        return judge

The probes travel to the sandbox as JSON (arguments as ``.npy`` files); what
comes back is decoded here from JSON and ``.npy`` files without pickles, each
checked for its kind, dtype and size. A judge passes by returning and fails by
raising ``Fail`` (any other exception fails it too): the check is worth its
cell's points or nothing.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import zlib
from dataclasses import dataclass

import numpy as np

from ..sandbox.limits import read_bounded

# Limits on what a sandboxed process may hand back.
MAX_JSON_BYTES = 4 * 1024**2
MAX_ARRAY_BYTES = 64 * 1024**2
MAX_TOTAL_BYTES = 512 * 1024**2  # all that is read from one submission's results
MAX_ELEMENTS = 4_000_000
ARRAY_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64"}
ARRAY_NAME = re.compile(r"step-\d{1,4}-\d{1,6}\.npy")
MAX_SEQ = 10_000
MAX_DEPTH = 8


class Fail(Exception):
    """A check failed; the message says where, for the instructor. ``cause`` is
    the short code of the likely mistake (the spec's ``CAUSES``), if the check knows it."""

    def __init__(self, message="", cause=None):
        super().__init__(message)
        self.cause = cause


class BadResult(Fail):
    """What came back from the sandbox is not plain data of the expected form."""

    def __init__(self, message=""):
        super().__init__(message, cause="bad_result")


# --- causes as data -------------------------------------------------------------
#
# A check that names a likely mistake also names its code, one of its spec's
# ``CAUSES``: ``expect(..., cause="mask_inverted")``, or, from a helper that works
# out the cause from what came back, ``return diagnosis("mask_inverted", text)``.
# The code a failed check reports is the one given to the comparison that failed,
# else the last diagnosis made since the check's previous comparison passed, else
# "other". Only the grader reads codes, from the judge it runs outside the
# kernel: nothing a kernel prints is taken for a cause.

_DIAGNOSED = threading.local()
OTHER = "other"


def diagnosis(code: str, text: str = "") -> str:
    """``text``, the likely cause of a wrong result; the judge's next failure reports ``code``."""
    _DIAGNOSED.code = code
    return text


def clear_diagnosis():
    _DIAGNOSED.code = None


def failed_cause(error: Exception) -> str:
    """The code of the cause of a failed check (``OTHER`` if it names none)."""
    code = getattr(error, "cause", None) or getattr(_DIAGNOSED, "code", None) or OTHER
    clear_diagnosis()
    return code if isinstance(code, str) else OTHER


# The codes any check may report, whatever its assignment: {code: what it means}.
# A spec's own ``CAUSES`` are {code: (what the mistake is, the chapter section that teaches it)}.
GENERAL_CAUSES = {
    OTHER: "a check failed without naming a likely mistake",
    "not_attempted": "not attempted: the release's stub was left, or the cell deleted",
    "raised": "the student's function raised an exception",
    "timed_out": "the check ran out of time",
    "no_result": "the check never ran: the code before it crashed or stopped",
    "bad_result": "what came back is not plain data of the expected form",
    "no_validation": "bad input is accepted instead of raising an error",
    "wrong_exception": "bad input raises the wrong kind of exception",
    "vague_error": "the error message does not say what was expected and what arrived",
    "stricter_test": "nbgrader's hidden test failed where verification passed",
}


def _failed(message, cause=None):
    return Fail(message, cause=cause or getattr(_DIAGNOSED, "code", None))


@dataclass(frozen=True)
class Raised:
    """The student's code raised an exception: its type name and message."""

    type: str
    message: str
    bases: tuple = ()

    def is_a(self, name: str) -> bool:
        """True if the exception's class is, or derives from, a class called ``name``."""
        return name == self.type or name in self.bases

    def __str__(self):
        return f"{self.type}: {self.message}"


@dataclass(frozen=True)
class Array:
    """A returned array: ``data`` (NumPy), ``kind`` ("Tensor", "ndarray", or "array-like"
    for another object that NumPy converted) and the dtype it had."""

    data: np.ndarray
    kind: str
    dtype: str


@dataclass(frozen=True)
class Other:
    """A returned object that is not plain data; only its type name is known."""

    type: str


@dataclass(frozen=True)
class Facts:
    """A module's structure as the harness reported it (validated plain types)."""

    facts: dict


@dataclass(frozen=True)
class Handle:
    """Where one probe's (or one module action's) result will be."""

    probe: int
    action: int | None = None


# --- building probes --------------------------------------------------------


class Transposed:
    """An argument tensor whose axes ``a`` and ``b`` are swapped in memory (not contiguous)."""

    def __init__(self, tensor, axes):
        self.tensor, self.axes = tensor, tuple(axes)


class RequiresGrad:
    """An argument tensor with ``requires_grad=True``."""

    def __init__(self, tensor):
        self.tensor = tensor


class Recorded:
    """An argument that is a callable (a ``Nested`` layer, say) which records the first
    argument of every call: the probe's ``after`` sends it back as the list of those inputs."""

    def __init__(self, callable_):
        self.callable = callable_


class Nested:
    """An argument that is the result of another of the student's functions:
    ``Nested("split_heads", x, 4)``."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args


class Plan:
    """All probes of one assignment for one grading run, and their inputs."""

    # True when the checks run in the notebook's kernel as its hidden tests
    # (tools/verification/in_kernel.py): a heavy check may then leave out what
    # its cell's visible part has just run (a training run, say).
    in_kernel = False

    def __init__(self, assignment: str, seed: int, trusted_code=(), limits=None):
        from ..course_settings import VerificationLimits

        self.assignment = assignment
        self.seed = seed
        # The graded course's limits (a check may be sized by them: ex07's long sequence).
        self.limits = limits or VerificationLimits()
        self.trusted_code = list(trusted_code)
        self.inputs: dict[str, np.ndarray] = {}
        self.checks: dict[str, tuple[list, object]] = {}
        self._setup = None

    def setup(self) -> dict:
        """The namespace of the notebook's locked set-up cells (the worked
        example, say), run here: they are the course's own code."""
        if self._setup is None:
            namespace = {"__name__": "verification_setup"}
            for code in self.trusted_code:
                exec(compile(code, "<set-up cell>", "exec"), namespace)  # noqa: S102 - the course's source notebook
            self._setup = namespace
        return self._setup

    def add_check(self, grade_id: str, builder):
        plan = CheckPlan(self, grade_id)
        judge = builder(plan)
        if not callable(judge):
            raise TypeError(f"the builder of {grade_id} must return its judge")
        self.checks[grade_id] = (plan.probes, judge)

    def add_input(self, array: np.ndarray) -> str:
        name = f"in{len(self.inputs)}"
        self.inputs[name] = np.ascontiguousarray(array)
        return name

    def write_inputs(self, folder):
        os.makedirs(folder, exist_ok=True)
        for name, array in self.inputs.items():
            np.save(os.path.join(folder, f"{name}.npy"), array, allow_pickle=False)


class CheckPlan:
    """The probes of one check. ``rng`` (NumPy) and ``gen`` (PyTorch) are seeded
    from the run's seed and the check's name: fresh for every run."""

    def __init__(self, plan: Plan, grade_id: str):
        self.plan = plan
        self.grade_id = grade_id
        self.rng = np.random.default_rng([plan.seed, zlib.crc32(f"{plan.assignment}/{grade_id}".encode())])
        self._gen = None
        self.probes: list[dict] = []

    def setup(self) -> dict:
        return self.plan.setup()

    @property
    def in_kernel(self) -> bool:
        """True in the notebook's kernel (the hidden tests), False in verification."""
        return self.plan.in_kernel

    @property
    def limits(self):
        """The limits of the course being graded (tools/course_settings.py)."""
        return self.plan.limits

    @property
    def gen(self):
        """A torch.Generator seeded like ``rng``."""
        if self._gen is None:
            import torch

            self._gen = torch.Generator().manual_seed(int(self.rng.integers(0, 2**62)))
        return self._gen

    def randn(self, *shape, scale=1.0, dtype=None):
        """torch.randn from this check's generator (float32 unless ``dtype``)."""
        import torch

        x = torch.randn(*shape, generator=self.gen, dtype=torch.float64) * scale
        return x.to(dtype or torch.float32)

    def argument(self, value):
        """The JSON description of an argument (arrays and tensors become inputs)."""
        if isinstance(value, (Transposed, RequiresGrad)):
            spec = self.argument(value.tensor)
            if isinstance(value, Transposed):
                spec["transpose"] = list(value.axes)
            else:
                spec["requires_grad"] = True
            return spec
        if isinstance(value, Nested):
            return {"call": value.fn, "args": [self.argument(a) for a in value.args]}
        if isinstance(value, Recorded):
            return {"recorded": self.argument(value.callable)}
        if isinstance(value, np.ndarray):
            return {"input": self.plan.add_input(value), "as": "ndarray"}
        if _is_tensor(value):
            return {"input": self.plan.add_input(value.detach().cpu().numpy()), "as": "tensor"}
        if isinstance(value, list):
            return {"list": [self.argument(v) for v in value]}
        if isinstance(value, tuple):
            return {"tuple": [self.argument(v) for v in value]}
        if isinstance(value, float) and not np.isfinite(value):
            return {"float": repr(value)}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise TypeError(f"cannot pass a {type(value).__name__} to the sandbox")

    def _add(self, probe) -> Handle:
        self.probes.append(probe)
        return Handle(len(self.probes) - 1)

    def get(self, name: str) -> Handle:
        """The value of a global the student's cells define."""
        return self._add({"op": "get", "name": name})

    def call(self, fn: str, *args, after=(), **kwargs) -> Handle:
        """``fn(*args, **kwargs)``; ``after`` lists positional arguments to send back after the call."""
        return self._add({"op": "call", "fn": fn, "args": [self.argument(a) for a in args],
                          "kwargs": {k: self.argument(v) for k, v in kwargs.items()}, "after": list(after)})

    def grad(self, fn: str, *args, weight, wrt=0, item=None, **kwargs) -> Handle:
        """The gradient of ``(fn(*args, **kwargs) * weight).sum()`` with respect to ``args[wrt]``; with
        ``wrt=None``, with respect to the one tensor the arguments wrap in RequiresGrad (inside a Nested,
        say). ``item``: differentiate that item of the returned tuple."""
        args = list(args)
        if wrt is not None:
            args[wrt] = RequiresGrad(args[wrt])
        probe = {"op": "grad", "fn": fn, "args": [self.argument(a) for a in args],
                 "kwargs": {k: self.argument(v) for k, v in kwargs.items()},
                 "weight": self.argument(weight), "wrt": wrt}
        if item is not None:
            probe["item"] = int(item)
        return self._add(probe)

    def module(self, cls: str, *args, **kwargs) -> "ModuleProbe":
        """An instance of the student's class ``cls(*args, **kwargs)``, then actions on it."""
        probe = {"op": "module", "cls": cls, "args": [self.argument(a) for a in args],
                 "kwargs": {k: self.argument(v) for k, v in kwargs.items()}, "actions": []}
        handle = self._add(probe)
        return ModuleProbe(self, probe, handle.probe)


class ModuleProbe:
    """Actions on one instance of a student's class, in order. Each returns a Handle."""

    def __init__(self, plan: CheckPlan, probe: dict, index: int):
        self.plan, self.probe, self.index = plan, probe, index

    @property
    def created(self) -> Handle:
        """The construction itself (its result is None, or what it raised)."""
        return Handle(self.index, None)

    def _act(self, action) -> Handle:
        self.probe["actions"].append(action)
        return Handle(self.index, len(self.probe["actions"]) - 1)

    def facts(self, *linears) -> Handle:
        return self._act({"do": "facts", "linears": list(linears)})

    def set(self, weights: dict) -> Handle:
        """Copy grader-chosen tensors into the named parameters ("W_q.weight", ...)."""
        return self._act({"do": "set", "weights": {k: self.plan.argument(v) for k, v in weights.items()}})

    def eval(self) -> Handle:
        return self._act({"do": "eval"})

    def train(self) -> Handle:
        return self._act({"do": "train"})

    def seed(self, value: int) -> Handle:
        return self._act({"do": "seed", "value": int(value)})

    def call(self, *args, **kwargs) -> Handle:
        return self._act({"do": "call", "args": [self.plan.argument(a) for a in args],
                          "kwargs": {k: self.plan.argument(v) for k, v in kwargs.items()}})


def _is_tensor(value):
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


# --- reading results --------------------------------------------------------


class ResultsFolder:
    """Reads a sandbox's results folder without following links, with size limits."""

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.budget = MAX_TOTAL_BYTES

    def close(self):
        os.close(self.fd)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, name, limit) -> bytes | None:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise BadResult(f"{name} cannot be read: {error}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise BadResult(f"{name} is not a regular file")
            if info.st_size > min(limit, self.budget):
                raise BadResult(f"{name} has {info.st_size} bytes, more than the limit of {limit}")
            data = read_bounded(fd, limit)
            if len(data) > limit:
                raise BadResult(f"{name} grew past the limit of {limit} bytes")
            self.budget -= len(data)
            if self.budget < 0:
                raise BadResult(f"the results add up to more than {MAX_TOTAL_BYTES} bytes")
            return data
        finally:
            os.close(fd)

    def step(self, n: int):
        """The JSON record of step ``n``, or None if the step never finished."""
        data = self._read(f"step-{n}.json", MAX_JSON_BYTES)
        if data is None:
            return None
        try:
            record = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise BadResult(f"step-{n}.json is not valid JSON: {error}") from None
        if not isinstance(record, dict):
            raise BadResult(f"step-{n}.json is not a JSON object")
        return record

    def array(self, name: str) -> np.ndarray:
        if not isinstance(name, str) or not ARRAY_NAME.fullmatch(name):
            raise BadResult(f"bad array file name {name!r}")
        import io

        data = self._read(name, MAX_ARRAY_BYTES)
        if data is None:
            raise BadResult(f"array file {name} is missing")
        try:
            array = np.load(io.BytesIO(data), allow_pickle=False)
        except Exception as error:  # noqa: BLE001 - a malformed file is a bad result, whatever the error
            raise BadResult(f"{name} is not a valid .npy file: {error}") from None
        return self.checked(array, name)

    @staticmethod
    def checked(array, name: str) -> np.ndarray:
        """The array, if it is of a kind and size a result may have."""
        if not isinstance(array, np.ndarray) or str(array.dtype) not in ARRAY_DTYPES:
            raise BadResult(f"{name} holds an array of dtype {getattr(array, 'dtype', '?')}")
        if array.size > MAX_ELEMENTS:
            raise BadResult(f"{name} holds {array.size} elements")
        return array


class CheckResults:
    """One submission's results for one check."""

    def __init__(self, record: dict, folder: ResultsFolder):
        probes = record.get("probes")
        if not isinstance(probes, list):
            raise BadResult("the check's record has no list of probes")
        self.probes = probes
        self.folder = folder
        self.timed_out = "timeout" in record

    def outcome(self, handle: Handle) -> dict:
        if handle.probe >= len(self.probes):
            raise Fail("the check ran out of time" if self.timed_out else "a probe left no result",
                       cause="timed_out" if self.timed_out else "no_result")
        outcome = self.probes[handle.probe]
        if not isinstance(outcome, dict):
            raise BadResult("a probe's result is not a JSON object")
        if handle.action is None or "raised" in outcome:
            return outcome
        actions = outcome.get("actions")
        if not isinstance(actions, list) or handle.action >= len(actions) or not isinstance(actions[handle.action], dict):
            raise BadResult("a module action left no result")
        return actions[handle.action]

    def raised(self, handle: Handle) -> Raised | None:
        """What the probe raised, or None if it returned."""
        outcome = self.outcome(handle)
        if "raised" not in outcome:
            if "value" not in outcome and "actions" not in outcome:
                raise BadResult("a probe's result has neither a value nor an exception")
            return None
        record = outcome["raised"]
        if not (isinstance(record, list) and len(record) == 3 and all(isinstance(s, str) for s in record[:2])
                and isinstance(record[2], list) and all(isinstance(s, str) for s in record[2][:50])):
            raise BadResult("a malformed exception record")
        return Raised(record[0][:200], record[1][:2000], tuple(s[:200] for s in record[2][:50]))

    def value(self, handle: Handle, what: str):
        """The decoded value the probe returned; Fail if it raised."""
        error = self.raised(handle)
        if error is not None:
            raise Fail(f"{what} raised {error}", cause="raised")
        return self.decode(self.outcome(handle)["value"])

    def after(self, handle: Handle, index: int = 0):
        """A positional argument as it was after the call (for in-place changes)."""
        items = self.outcome(handle).get("after")
        if not isinstance(items, list) or index >= len(items):
            raise BadResult("an argument was not sent back after the call")
        return self.decode(items[index])

    def decode(self, item, depth=0):
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, int):
            return item
        if isinstance(item, float):
            return item
        if not isinstance(item, dict) or depth > MAX_DEPTH:
            raise BadResult(f"an undecodable value {str(item)[:80]!r}")
        if "array" in item:
            data = self.folder.array(item["array"])
            kind = item.get("kind")
            dtype = item.get("dtype")
            if kind not in ("Tensor", "ndarray", "array-like") or not isinstance(dtype, str):
                raise BadResult("an array record without kind or dtype")
            if dtype not in ARRAY_DTYPES and dtype != "bfloat16":
                raise BadResult(f"an array of dtype {dtype[:40]}")
            return Array(data, kind, dtype)
        if "seq" in item:
            seq = item["seq"]
            if not isinstance(seq, list) or len(seq) > MAX_SEQ:
                raise BadResult("a malformed sequence")
            values = [self.decode(v, depth + 1) for v in seq]
            return tuple(values) if item.get("type") == "tuple" else values
        if "float" in item:
            try:
                return float(item["float"])
            except (TypeError, ValueError):
                raise BadResult("a malformed float") from None
        if "str" in item and isinstance(item["str"], str):
            return item["str"]
        if "object" in item and isinstance(item["object"], str):
            return Other(item["object"][:200])
        if "facts" in item:
            return Facts(validate_facts(item["facts"]))
        raise BadResult("an unknown value record")

    # --- conveniences for judges ---------------------------------------

    def ndarray(self, handle: Handle, what: str) -> np.ndarray:
        """The returned value as a float64 NumPy array, as ``np.asarray(value, dtype=float)`` would make it."""
        return as_float_array(self.value(handle, what), what)

    def tensor(self, handle: Handle, what: str):
        """The returned value, which must be a tensor, as a torch.Tensor of its dtype."""
        return as_tensor(self.value(handle, what), what)

    def pair(self, handle: Handle, what: str):
        """The returned value, which must be a pair, as two decoded values."""
        value = self.value(handle, what)
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise Fail(f"{what} did not return a pair (it returned {describe(value)})")
        return value

    def tensor_pair(self, handle: Handle, what: str):
        first, second = self.pair(handle, what)
        return as_tensor(first, what), as_tensor(second, what)

    def facts(self, handle: Handle, what: str) -> dict:
        """A module's structure (see harness.Harness.facts), checked field by field."""
        value = self.value(handle, what)
        if not isinstance(value, Facts):
            raise BadResult(f"{what}: no facts came back")
        return value.facts


def validate_facts(raw) -> dict:
    """The facts record with every field of the expected built-in type, or BadResult."""

    def need(condition):
        if not condition:
            raise BadResult("malformed module facts")

    def shape_list(items):
        need(isinstance(items, list) and len(items) <= 1000)
        out = []
        for item in items:
            need(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                 and isinstance(item[1], list) and all(type(s) is int for s in item[1]))
            out.append((item[0][:200], tuple(item[1])))
        return out

    need(isinstance(raw, dict))
    need(isinstance(raw.get("module"), bool))
    layers = raw.get("layers")
    need(isinstance(layers, dict) and len(layers) <= 20)
    clean_layers = {}
    for name, layer in layers.items():
        need(isinstance(layer, dict) and isinstance(layer.get("linear"), bool) and isinstance(layer.get("type"), str))
        if layer["linear"]:
            need(type(layer.get("in_features")) is int and type(layer.get("out_features")) is int
                 and isinstance(layer.get("bias"), bool))
        clean_layers[name] = {key: layer.get(key) for key in ("type", "linear", "in_features", "out_features", "bias")}
    shared, bias_shared = raw.get("shared"), raw.get("bias_shared")
    for groups in (shared, bias_shared):
        need(isinstance(groups, list) and len(groups) == len(layers)
             and all(g is None or (type(g) is int and 0 <= g < len(layers)) for g in groups))
    dropout = raw.get("dropout")
    need(isinstance(dropout, list) and len(dropout) <= 1000 and all(isinstance(p, (int, float)) for p in dropout))
    return {
        "module": raw["module"],
        "layers": clean_layers,
        "shared": list(shared),
        "bias_shared": list(bias_shared),
        "parameters": shape_list(raw.get("parameters")),
        "buffers": shape_list(raw.get("buffers")),
        "dropout": [float(p) for p in dropout],
    }


def effective_params(params: dict, names, facts: dict) -> dict:
    """The weights a module really holds after ``set(params)`` (``params`` in
    the order of ``names``): layers that share one tensor — ``self.W_q =
    self.W_k = nn.Linear(...)``, say — keep the last value written to it, as
    the module's own weights would show in a hidden test."""
    result = dict(params)
    for kind, groups in (("weight", facts["shared"]), ("bias", facts["bias_shared"])):
        for i, name in enumerate(names):
            key = f"{name}.{kind}"
            if key not in params or groups[i] is None:
                continue
            writers = [j for j, group in enumerate(groups) if group == groups[i] and f"{names[j]}.{kind}" in params]
            result[key] = params[f"{names[max(writers)]}.{kind}"]
    return result


def describe(value) -> str:
    if isinstance(value, Array):
        return f"a {value.kind} of shape {tuple(value.data.shape)} and dtype {value.dtype}"
    if isinstance(value, Other):
        return f"a {value.type}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


def as_float_array(value, what) -> np.ndarray:
    if isinstance(value, Array):
        if value.dtype == "bfloat16":
            raise Fail(f"{what} returned bfloat16")
        return value.data.astype(np.float64)
    if isinstance(value, (list, tuple, int, float)) and not isinstance(value, bool):
        try:
            return np.asarray(_plain(value), dtype=float)
        except (TypeError, ValueError):
            pass
    raise Fail(f"{what} returned {describe(value)}, not an array of numbers")


def _plain(value):
    if isinstance(value, Array):
        return value.data.astype(np.float64)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise TypeError("not a number")


def as_tensor(value, what):
    import torch

    if not isinstance(value, Array) or value.kind != "Tensor":
        raise Fail(f"{what} returned {describe(value)}, not a torch.Tensor")
    if value.dtype == "bfloat16":
        return torch.from_numpy(value.data.copy()).to(torch.bfloat16)
    return torch.from_numpy(value.data.copy())


# --- comparisons, as the hidden tests make them -------------------------------


def expect(condition, message, cause=None):
    """Pass, or fail with ``message``; ``cause``: the code of the mistake this failure shows, if known."""
    if not condition:
        raise _failed(message, cause)
    clear_diagnosis()


def _notebook_checks(torch=None):
    """The notebooks' own helpers (tools/notebook_checks.py), which judge here as in a test cell."""
    from .. import notebook_checks

    if torch is not None:
        notebook_checks.torch = torch  # they compare tensors with the notebook's torch, a global there
    return notebook_checks


def close_torch(got, ref, *, atol, rtol, what, on="", cause="", code=None):
    """torch.testing.assert_close, run here on plain data; the message is the
    notebooks' (how many entries are off, the largest difference, ``cause``),
    never the expected values; ``code``: the cause's code, if known."""
    import torch

    try:
        _notebook_checks(torch).expect_close(what, got, ref, atol=atol, rtol=rtol, on=on, cause=cause)
    except AssertionError as error:
        raise _failed(str(error), code) from None
    clear_diagnosis()


def close_numpy(got, ref, *, atol, rtol, what, on="", cause="", code=None):
    """numpy.testing.assert_allclose, run here on plain data; the message as close_torch's."""
    try:
        _notebook_checks().expect_close(what, np.asarray(got, dtype=float), np.asarray(ref, dtype=float),
                                        atol=atol, rtol=rtol, on=on, cause=cause)
    except AssertionError as error:
        raise _failed(str(error), code) from None
    clear_diagnosis()


def first_line(error) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return "; ".join(lines[:2])[:300]


def expect_value_error(r: CheckResults, handle: Handle, what: str, mentions=(), patterns=()):
    """The probe must have raised a ValueError (or a subclass) whose message contains
    every text of ``mentions`` and matches every regular expression of ``patterns``."""
    error = r.raised(handle)
    if error is None:
        raise Fail(f"{what} returned instead of raising ValueError", cause="no_validation")
    expect(error.is_a("ValueError"), f"{what} raised {error.type}, not ValueError", cause="wrong_exception")
    missing = [m for m in mentions if m not in error.message]
    missing += [p for p in patterns if not re.search(p, error.message)]
    expect(not missing, f"the ValueError of {what} does not mention {missing}: {error.message[:200]!r}",
           cause="vague_error")


def names_shape(message, shape):
    """The notebooks' rule for an error message that names a shape (their own
    `names_shape`; tests/test_visible_tests_warn_at_the_mistake.py holds the two to the same
    answers): the message writes the shape as (3, 4), (3,4), [3, 4],
    torch.Size([3, 4]), 3x4 or 3×4, and not as the start or end of a longer shape."""
    written = re.findall(r"(?<![\w.])\d+(?:\s*(?:,|x|×)\s*\d+)*(?![\w.])(?!\s*(?:,|x|×)\s*\d)", str(message))
    sizes = [int(size) for size in shape]
    return any([int(n) for n in re.split(r"\s*(?:,|x|×)\s*", text)] == sizes for text in written)
