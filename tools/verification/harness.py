"""The verification harness: runs inside the sandbox, next to one submission's code.

``python harness.py PROGRAM INPUTS RESULTS`` (started by tools/verification/sandbox_run.py only,
wrapped by tools.sandbox.bubblewrap.sandboxed_command). PROGRAM is a JSON file of steps
in the order of the assignment's notebook:

- ``trusted``: a locked set-up cell, taken from the course's source notebook;
- ``student``: the code of one of the student's solution cells;
- ``imports``: the import statements of a test cell (what the notebook would
  have imported there; the test code itself never comes here);
- ``check``: the probes for one graded test cell. A probe calls one of the
  student's functions, or builds one of their classes, on inputs the grader
  generated (INPUTS: ``.npy`` files) and records what came back.

For every step the harness writes ``step-<n>.json`` into RESULTS as soon as the
step is over (arrays go next to it as ``.npy`` files), so that a submission that
crashes or hangs in a later cell keeps the results of the earlier ones.

Nothing written here is believed: student code runs in this very process and
can change anything in it. The grader reads the results as plain data
(JSON and ``.npy`` without pickles), checks their types, shapes and sizes, and
compares them with its own reference outputs. This file therefore holds no
reference answers, no hidden tests and no secret; it only has to make an
honest submission's answers arrive intact.
"""

import builtins
import json
import os
import signal
import sys

import numpy as np
from numpy.lib import format as npy_format

# What the harness needs, bound before any student code can replace it.
_open = builtins.open
_dumps = json.dumps
_replace = os.replace
_write_array = npy_format.write_array
_load = np.load
_isinstance = builtins.isinstance
_repr = builtins.repr
_str = builtins.str
_type = builtins.type
_len = builtins.len
_getattr = builtins.getattr
_exec = builtins.exec
_compile = builtins.compile

MAX_TEXT = 2000  # characters kept of an error message or a string
MAX_ITEMS = 10_000  # elements of a returned list or tuple
MAX_DEPTH = 6  # nesting of returned lists and tuples
MAX_ELEMENTS = 4_000_000  # elements of one returned array
ARRAY_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64"}


class StepTimeout(BaseException):
    """A step ran past its time limit."""


def _on_alarm(signum, frame):
    raise StepTimeout()


class Writer:
    """Writes one step's result and its arrays into the results folder."""

    def __init__(self, folder, step):
        self.folder = folder
        self.prefix = f"step-{step}"
        self.count = 0

    def array(self, array, kind):
        array = np.ascontiguousarray(array)
        name = f"{self.prefix}-{self.count}.npy"
        self.count += 1
        with _open(os.path.join(self.folder, name), "wb") as f:
            _write_array(f, array, allow_pickle=False)
        return {"array": name, "kind": kind, "dtype": _str(array.dtype), "shape": list(array.shape)}

    def finish(self, record):
        path = os.path.join(self.folder, f"{self.prefix}.json")
        with _open(path + ".part", "w") as f:
            f.write(_dumps(record))
        _replace(path + ".part", path)


def text(value):
    try:
        result = _str(value)
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything
        result = "<unprintable>"
    return result[:MAX_TEXT]


def raised(error):
    """An exception as its class name, message and the names of its base classes."""
    try:
        bases = [text(c.__name__)[:200] for c in _type(error).__mro__[1:]][:50]
    except BaseException:  # noqa: BLE001
        bases = []
    return {"raised": [text(_type(error).__name__)[:200], text(error), bases]}


class Recorder:
    """A callable argument (probes.Recorded): calls the wrapped one, keeping a copy of each call's first argument."""

    def __init__(self, wrapped):
        self.wrapped, self.inputs = wrapped, []

    def __call__(self, *args, **kwargs):
        if args:
            torch = sys.modules.get("torch")
            first = args[0]
            self.inputs.append(first.detach().clone() if torch is not None and _isinstance(first, torch.Tensor)
                               else first)
        return self.wrapped(*args, **kwargs)


def encode(value, writer, depth=0):
    """A returned value as plain data: JSON scalars, sequences and arrays."""
    if _type(value) is Recorder:
        return encode(value.inputs, writer, depth)
    if value is None or _isinstance(value, bool):
        return value
    if _type(value) is int:
        return value if abs(value) < 2**53 else {"object": "int", "text": text(value)}
    if _type(value) is float:
        return value if value == value and abs(value) != float("inf") else {"float": _repr(value)}
    if _type(value) is str:
        return {"str": value[:MAX_TEXT]}
    if _isinstance(value, (tuple, list)):
        if depth >= MAX_DEPTH or _len(value) > MAX_ITEMS:
            return {"object": _type(value).__name__, "text": "too deep or too long"}
        kind = "tuple" if _isinstance(value, tuple) else "list"
        return {"seq": [encode(item, writer, depth + 1) for item in value], "type": kind}
    torch = sys.modules.get("torch")
    if torch is not None and _isinstance(value, torch.Tensor):
        return encode_tensor(value, writer, torch)
    if _isinstance(value, (np.ndarray, np.generic)):
        return encode_array(np.asarray(value), writer, "ndarray")
    if hasattr(_type(value), "__array__"):
        # What np.asarray makes of it here, as a NumPy test would: only numbers cross.
        try:
            return encode_array(np.asarray(value), writer, "array-like")
        except BaseException as error:  # noqa: BLE001
            return {"object": text(_type(value).__name__), "text": text(error)}
    return {"object": text(_type(value).__name__)}


def encode_tensor(value, writer, torch):
    dtype = text(value.dtype).replace("torch.", "")
    try:
        plain = torch.Tensor.detach(value).as_subclass(torch.Tensor).cpu()
        if plain.dtype == torch.bfloat16:
            plain = plain.float()
        array = plain.numpy()
    except BaseException as error:  # noqa: BLE001
        return {"object": "Tensor", "text": text(error)}
    record = encode_array(array, writer, "Tensor")
    if "array" in record:
        record["dtype"] = dtype
    return record


def encode_array(array, writer, kind):
    if _str(array.dtype) not in ARRAY_DTYPES:
        return {"object": kind, "text": f"dtype {array.dtype}"}
    if array.size > MAX_ELEMENTS:
        return {"object": kind, "text": f"{array.size} elements"}
    return writer.array(array, kind)


class FakeIPython:
    """``get_ipython()`` for code written for a notebook: magics that wrap code
    (``%%time``, ``%%capture``) run it; every other magic or IPython call does
    nothing. Nothing an IPython call does can change a verification result."""

    def __init__(self, namespace):
        self._namespace = namespace

    def run_cell_magic(self, name, line, cell):
        if name in ("time", "timeit", "capture", "prun"):
            run_code(cell, self._namespace, "<%%" + name + ">")

    def run_line_magic(self, name, line, *args, **kwargs):
        if name == "time":
            run_code(line, self._namespace, "<%time>")

    def __getattr__(self, name):
        return Nothing()


class Nothing:
    """Any attribute, any call, any item: nothing happens."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self


def run_code(code, namespace, label):
    try:
        compiled = _compile(code, label, "exec")
    except SyntaxError:
        # Notebook syntax (%magic, !shell): translate it as IPython would.
        from IPython.core.inputtransformer2 import TransformerManager

        compiled = _compile(TransformerManager().transform_cell(code), label, "exec")
    _exec(compiled, namespace)


class Harness:
    def __init__(self, program, inputs, results):
        self.program = program
        self.inputs_folder = inputs
        self.results = results
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.namespace["get_ipython"] = lambda: self.ipython
        self.namespace["display"] = lambda *args, **kwargs: None
        self.ipython = FakeIPython(self.namespace)
        self.inputs = {}
        self.leaves = []  # the tensors made with requires_grad, for a "grad" probe

    # --- arguments ------------------------------------------------------

    def input_array(self, name):
        if name not in self.inputs:
            path = os.path.join(self.inputs_folder, f"{name}.npy")
            self.inputs[name] = _load(path, allow_pickle=False)
        return self.inputs[name].copy()

    def argument(self, spec):
        """A fresh Python object from an argument's description."""
        if _isinstance(spec, dict):
            if "input" in spec:
                array = self.input_array(spec["input"])
                if spec.get("as") == "ndarray":
                    return array
                import torch

                tensor = torch.from_numpy(array)
                if spec.get("transpose"):
                    # Same values, laid out so that the requested axes are swapped in memory.
                    a, b = spec["transpose"]
                    tensor = tensor.transpose(a, b).contiguous().transpose(a, b)
                if spec.get("requires_grad"):
                    tensor.requires_grad_(True)
                    self.leaves.append(tensor)
                return tensor
            if "call" in spec:
                # The result of another of the student's functions (merge_heads(split_heads(x, 4))).
                args = [self.argument(a) for a in spec.get("args", [])]
                return self.lookup(spec["call"])(*args)
            if "recorded" in spec:
                return Recorder(self.argument(spec["recorded"]))
            if "list" in spec:
                return [self.argument(item) for item in spec["list"]]
            if "tuple" in spec:
                return tuple(self.argument(item) for item in spec["tuple"])
            if "float" in spec:
                return float(spec["float"])
            raise ValueError(f"unknown argument {spec}")
        return spec

    def arguments(self, probe):
        args = [self.argument(a) for a in probe.get("args", [])]
        kwargs = {k: self.argument(v) for k, v in probe.get("kwargs", {}).items()}
        return args, kwargs

    def lookup(self, name):
        if name not in self.namespace:
            raise NameError(f"name '{name}' is not defined")
        return self.namespace[name]

    # --- probes ---------------------------------------------------------

    def probe(self, probe, writer):
        op = probe["op"]
        try:
            if op == "get":
                return {"value": encode(self.lookup(probe["name"]), writer)}
            if op == "call":
                args, kwargs = self.arguments(probe)
                value = self.lookup(probe["fn"])(*args, **kwargs)
                record = {"value": encode(value, writer)}
                if probe.get("after"):
                    record["after"] = [encode(args[i], writer) for i in probe["after"]]
                return record
            if op == "grad":
                self.leaves = []
                args, kwargs = self.arguments(probe)
                value = self.lookup(probe["fn"])(*args, **kwargs)
                if probe.get("item") is not None:
                    value = value[probe["item"]]
                weight = self.argument(probe["weight"])
                (value * weight).sum().backward()
                wrt = probe["wrt"]
                return {"value": encode((args[wrt] if wrt is not None else self.leaves[0]).grad, writer)}
            if op == "module":
                return self.module(probe, writer)
            raise ValueError(f"unknown probe {op}")
        except StepTimeout:
            raise
        except BaseException as error:  # noqa: BLE001 - any failure of student code is a result
            return raised(error)

    def module(self, probe, writer):
        args, kwargs = self.arguments(probe)
        module = self.lookup(probe["cls"])(*args, **kwargs)
        results = []
        for action in probe["actions"]:
            try:
                results.append({"value": self.action(module, action, writer)})
            except StepTimeout:
                raise
            except BaseException as error:  # noqa: BLE001
                results.append(raised(error))
        return {"actions": results}

    def action(self, module, action, writer):
        import torch

        do = action["do"]
        if do == "call":
            args, kwargs = self.arguments(action)
            return encode(module(*args, **kwargs), writer)
        if do == "set":
            with torch.no_grad():
                for path, spec in action["weights"].items():
                    owner = module
                    *parents, leaf = path.split(".")
                    for part in parents:
                        owner = _getattr(owner, part)
                    target = _getattr(owner, leaf)
                    if not _isinstance(target, torch.Tensor):
                        raise TypeError(f"{path} is a {_type(target).__name__}, not a tensor")
                    target.copy_(self.argument(spec))
            return None
        if do == "eval":
            module.eval()
            return None
        if do == "train":
            module.train()
            return None
        if do == "seed":
            torch.manual_seed(action["value"])
            return None
        if do == "facts":
            return {"facts": self.facts(module, action.get("linears", []))}
        raise ValueError(f"unknown action {do}")

    def facts(self, module, linears):
        """What the checks need to know about a module's structure, as built-in types."""
        import torch.nn as nn

        layers = {}
        weight_ids, bias_ids = [], []
        for name in linears:
            layer = _getattr(module, name, None)
            is_linear = _isinstance(layer, nn.Linear)
            layers[name] = {
                "type": text(_type(layer).__name__),
                "linear": is_linear,
                "in_features": int(layer.in_features) if is_linear else None,
                "out_features": int(layer.out_features) if is_linear else None,
                "bias": (layer.bias is not None) if is_linear else None,
            }
            weight_ids.append(id(layer.weight) if is_linear else None)
            bias_ids.append(id(layer.bias) if is_linear and layer.bias is not None else None)
        return {
            "module": _isinstance(module, nn.Module),
            "layers": layers,
            # For each named layer, the first named layer that shares its weight.
            "shared": [weight_ids.index(i) if i is not None else None for i in weight_ids],
            "bias_shared": [bias_ids.index(i) if i is not None else None for i in bias_ids],
            "parameters": sorted([name, [int(s) for s in p.shape]] for name, p in module.named_parameters()),
            "buffers": sorted([name, [int(s) for s in b.shape]] for name, b in module.named_buffers()),
            "dropout": [float(m.p) for m in module.modules() if _isinstance(m, nn.Dropout)],
        }

    # --- steps ----------------------------------------------------------

    def run(self):
        signal.signal(signal.SIGALRM, _on_alarm)
        seconds = float(self.program.get("step_seconds", 60))
        for n, step in enumerate(self.program["steps"]):
            writer = Writer(self.results, n)
            record = {"kind": step["kind"], "name": step["name"]}
            signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                if step["kind"] == "check":
                    record["probes"] = []
                    for probe in step["probes"]:
                        record["probes"].append(self.probe(probe, writer))
                else:
                    run_code(step["code"], self.namespace, f"<cell {step['name']}>")
            except StepTimeout:
                record["timeout"] = seconds
            except BaseException as error:  # noqa: BLE001 - a cell that fails is a result
                record.update(raised(error))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            writer.finish(record)


def main(argv):
    program_path, inputs, results = argv[1:4]
    with _open(program_path) as f:
        program = json.load(f)
    # What the student's code prints goes nowhere: it is not a result.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.setrecursionlimit(3000)
    Harness(program, inputs, results).run()
    # Leave at once: a student's object could hang or crash in interpreter shutdown.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
