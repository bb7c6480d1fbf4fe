"""Promise: the layout of tools/ is its architecture, and the imports keep to it.

The layers, from the top (CONTRIBUTING.md, "Where things are"):

- the programs: ``grading`` (make grade), ``hub`` (make hub), ``site`` (make book);
- what they are made of: ``verification``, ``feedback``, ``assignments``;
- ``sandbox``, where a submission's code runs (verification runs its checks there);
- the root modules: ``paths``, ``course_settings``, ``lateness``, ``nbgrader_patches``, ``notebook_checks``.

A module imports from its own package and from lower layers only: never from a
higher layer nor from another package of its own layer, so that the programs
are independent of one another and nothing below knows what uses it. The graph
is read from the source (every ``import`` and ``from ... import``, at any depth
in a module, relative or absolute), not kept by hand.
"""

import ast

from tools.paths import ROOT

TOOLS = ROOT / "tools"
LAYERS = {
    "grading": 4, "hub": 4, "site": 4,
    "verification": 3, "feedback": 3, "assignments": 3,
    "sandbox": 2,
    "": 1,  # the modules at the root of tools/
}


def module_name(path, root=ROOT):
    return ".".join(path.relative_to(root).with_suffix("").parts)


def package_of(module):
    """The part of tools/ a module belongs to: a package's name, or "" for the root modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or parts[1] in LAYERS else ""


def imports(path, root=ROOT):
    """The modules of tools/ that the module at ``path`` imports: [(line, module)]."""
    module = module_name(path, root)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            # `from tools import grading` imports the package grading: count each name it could be.
            found += [(node.lineno, target)] if node.module else [(node.lineno, f"{target}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name == "tools" or name.startswith("tools.")]


def upward_imports(paths, root=ROOT):
    wrong = []
    for path in paths:
        module = module_name(path, root)
        own = package_of(module)
        for line, target in imports(path, root):
            if target == "tools":
                continue
            other = package_of(target)
            if other == own:
                continue
            if other not in LAYERS:
                wrong.append(f"{module}:{line} imports {target}: tools/{other} has no layer (add it to LAYERS)")
            elif LAYERS[other] >= LAYERS[own]:
                where = "a higher layer" if LAYERS[other] > LAYERS[own] else "another package of its own layer"
                wrong.append(f"{module}:{line} imports {target}, from {where} ({other or 'the root'})")
    return wrong


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in TOOLS.glob("*/__init__.py")}
    assert packages == set(LAYERS) - {""}, (
        f"tools/ has the packages {sorted(packages)}; LAYERS (and CONTRIBUTING.md) name {sorted(set(LAYERS) - {''})}")


def test_tools_import_only_downward():
    paths = sorted(TOOLS.rglob("*.py"))
    assert len(paths) > 30 and any(imports(p) for p in paths), "no module found: the search itself is broken"
    wrong = upward_imports(paths)
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_an_upward_import_is_found(tmp_path):
    """The check above can fail: a root module that imports the grader, and a sandbox module that imports the
    verification, are both reported."""
    root = tmp_path / "tools"
    (root / "sandbox").mkdir(parents=True)
    (root / "paths.py").write_text("def late():\n    from .grading.run import grade\n")
    (root / "sandbox" / "kernel.py").write_text("from ..verification import verify\nfrom . import warm\n")
    wrong = upward_imports(sorted(root.rglob("*.py")), root=tmp_path)
    assert len(wrong) == 2 and "tools.paths:2 imports tools.grading.run" in wrong[0], wrong
    assert "tools.sandbox.kernel:1 imports tools.verification," in wrong[1], wrong
