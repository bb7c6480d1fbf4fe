"""Promise: every place the course reaches into nbgrader's or jupyter_client's
internals (and nbclient's, nbconvert's, jupyter_server's) is listed in
tools/nbgrader_patches.py, and the list fails here, naming the upstream
function and what to re-check, as soon as an upgrade changes the source of a
function a patch replaces, wraps, copies or relies on.

"Listed" is checked from the code, not trusted: no module of tools/ but
nbgrader_patches.py assigns to an attribute of something it imported from
those packages, and every private method that a class of the course overrides
from one of their classes is in the list. The list's own entries name code
that exists, and an override's class really derives from the upstream class.
"""

import ast
import importlib
import inspect

import pytest

from tools.nbgrader_patches import PATCHES, changed_upstream, upstream_fingerprint
from tools.paths import ROOT

UPSTREAM = ("nbgrader", "jupyter_client", "nbclient", "nbconvert", "jupyter_server")
TOOLS = ROOT / "tools"


def resolve(dotted):
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
            break
        except ImportError:
            continue
    for name in parts[cut:]:
        obj = inspect.getattr_static(obj, name)
    return obj


@pytest.mark.parametrize("patch", PATCHES, ids=[p.upstream for p in PATCHES])
def test_upstream_function_is_the_one_the_patch_was_written_for(patch):
    found = changed_upstream([patch])
    assert not found, (
        f"{patch.upstream} is not the source {patch.course} was written for ({patch.version}; fingerprint "
        f"{patch.fingerprint}, found {found[0][1]}). Re-check that {patch.recheck}; then, in "
        f"tools/nbgrader_patches.py, give its entry the installed version and fingerprint {found[0][1]}.")


def test_fingerprints_are_of_the_source_text():
    """A fingerprint changes with one character of upstream's source: the check above can fail."""
    from tools import nbgrader_patches

    source = nbgrader_patches.upstream_source(PATCHES[0].upstream)
    assert upstream_fingerprint(PATCHES[0].upstream) == PATCHES[0].fingerprint
    original = nbgrader_patches.upstream_source
    try:
        nbgrader_patches.upstream_source = lambda dotted: source.replace("(", "( ", 1)
        assert changed_upstream(PATCHES[:1]) and changed_upstream(PATCHES[:1])[0][0] is PATCHES[0]
    finally:
        nbgrader_patches.upstream_source = original


@pytest.mark.parametrize("patch", PATCHES, ids=[p.upstream for p in PATCHES])
def test_entry_names_code_that_exists(patch):
    upstream, course = resolve(patch.upstream), resolve(patch.course)
    assert patch.how in ("replaced", "wrapped", "copied", "overridden", "relied on"), patch.how
    if patch.how == "overridden":
        owner = resolve(patch.course.rsplit(".", 1)[0])
        upstream_class = resolve(patch.upstream.rsplit(".", 1)[0])
        users = [owner, *owner.__subclasses__()]  # (a mixin of the course's: the classes that use it)
        assert any(issubclass(c, upstream_class) for c in users), f"{owner} does not derive from {upstream_class}"
        assert patch.course.rsplit(".", 1)[1] == patch.upstream.rsplit(".", 1)[1]
    assert upstream is not None and course is not None


def tool_modules():
    return sorted(p for p in TOOLS.rglob("*.py") if p.name != "__main__.py")


def module_name(path):
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def upstream_assignments(tree):
    """Lines that assign to an attribute of a name imported from an upstream package."""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith(UPSTREAM)}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(UPSTREAM):
            imported |= {a.asname or a.name for a in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            targets = []
        for target in targets:
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value
            if target is not root and isinstance(root, ast.Name) and root.id in imported:
                found.append(f"line {node.lineno}: {ast.unparse(target)} = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and \
                node.args and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            root = node.args[0]
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_only_nbgrader_patches_changes_upstream_objects():
    found = {}
    for path in tool_modules():
        if path.name == "nbgrader_patches.py":
            continue
        lines = upstream_assignments(ast.parse(path.read_text(), str(path)))
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert not found, f"these change an object of {'/'.join(UPSTREAM)} outside tools/nbgrader_patches.py: {found}"


def private_overrides():
    """(course's Class.method, upstream Class.method) for every private method (or property) that a class of
    tools/, or a mixin of the course's it derives from, defines over one of an upstream base class."""
    pairs = set()
    for path in tool_modules():
        module = importlib.import_module(module_name(path))
        for cls in vars(module).values():
            if not inspect.isclass(cls) or cls.__module__ != module.__name__:
                continue
            upstream_bases = [base for base in cls.__mro__ if base.__module__.startswith(UPSTREAM)]
            for own in [c for c in cls.__mro__ if c.__module__.startswith("tools.")]:
                for name, value in vars(own).items():
                    if not name.startswith("_") or name.startswith("__"):
                        continue
                    if not (inspect.isfunction(value) or isinstance(value, (property, classmethod, staticmethod))):
                        continue  # (traitlets' own bookkeeping, class constants)
                    for base in upstream_bases:
                        if name in vars(base):
                            pairs.add((f"{own.__module__}.{own.__qualname__}.{name}",
                                       f"{base.__module__}.{base.__qualname__}.{name}"))
                            break
    return sorted(pairs)


def test_every_private_override_is_listed():
    listed = {p.course for p in PATCHES if p.how in ("overridden", "copied")}
    overrides = private_overrides()
    assert overrides, "no override found: the search itself is broken"
    missing = [f"{course} overrides {upstream}" for course, upstream in overrides if course not in listed]
    assert not missing, f"list these in tools/nbgrader_patches.py (PATCHES): {missing}"
