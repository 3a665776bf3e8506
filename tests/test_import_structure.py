"""The import structure of ``tune_risk`` and ``rl_tasks`` (issue #17): layers without circles, and no
private name used across modules.

Read with ``ast`` (nothing is imported), over every module of both packages:

* **Cycles.** The module graph has an edge ``A -> B`` for every import of ``B`` in ``A``: module level,
  inside functions and under ``if TYPE_CHECKING`` alike (a type-only import still makes the lower module
  know the upper one). ``from P import x`` is an edge to ``P.x`` when that is a module, else to ``P``.
  Every strongly connected component of more than one module is a cycle.
* **Private names.** ``from M import _name`` and ``M._name`` (``M`` an imported project module) where
  ``M`` is another module; dunder names are public. A private *module* (``tune_risk._name``) belongs
  to its package: modules of that package may import it, others may not.
* **Private members of other objects.** ``obj._name`` where ``obj`` is not ``self``/``cls`` and ``_name``
  is not defined in the same module (a ``def _name`` or a ``self._name = ...``): a private member is for
  the module of the class that defines it. ``ALLOWED_PRIVATE_ATTRIBUTES`` lists the exceptions, each
  with its reason.
* **Layers.** Every import between two packages (``tune_risk.gp``, ``tune_risk.risk``, ...; a top-level
  module such as ``tune_risk.settings`` counts as a package of its own) must be listed in ``LAYERS``, the
  table of which package may import which. The table itself has no circle, so it orders the packages:
  ``gp <- risk <- engine <- tune <- offline``, with ``oscbo <- lengthscale`` beside ``risk`` and
  ``benchmarks`` on top.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tune_risk", "rl_tasks")

ALLOWED_PRIVATE_ATTRIBUTES = {
    # namedtuple's public API is spelt with a leading underscore (to avoid field-name clashes)
    ("*", "_replace"): "namedtuple API",
    ("*", "_asdict"): "namedtuple API",
    ("*", "_fields"): "namedtuple API",
    # BoTorch's Standardize has no public way to fix its constants: ConditionedGP.to_botorch_model sets the
    # buffers that Standardize.forward would have set (checked against BoTorch by tests/gp/test_models.py)
    ("tune_risk.gp.models", "_stdvs_sq"): "BoTorch Standardize internals",
    ("tune_risk.gp.models", "_is_trained"): "BoTorch Standardize internals",
}


LAYERS: dict[str, set[str]] = {
    # package -> the packages its modules may import (besides its own modules)
    "botorch_without_jax": set(),  # imports BoTorch without JAX: every module that uses BoTorch imports it first
    "schedules": set(),
    "space": set(),  # configurations <-> the unit cube, no Ray
    "settings": {"schedules"},
    "gp": {"botorch_without_jax"},  # GP algebra: no settings, no engine
    "risk": {"gp", "settings", "botorch_without_jax"},  # ERAHBO's model
    "oscbo": {"gp", "botorch_without_jax"},  # the OSCBO game: on gp's public names only
    "lengthscale": {"oscbo", "gp"},  # strategies, engine-agnostic
    "engine": {"risk", "gp", "lengthscale", "oscbo", "settings", "schedules"},  # no Ray
    "tune": {"engine", "risk", "gp", "settings", "space"},  # the Ray Tune adapters
    "offline": {"tune", "engine", "risk", "gp", "settings", "space", "schedules"},  # table replays
    "benchmarks": {"botorch_without_jax"},  # synthetic objectives (the OSCBO harness is lab code in experiments/)
    "datasets": {"offline"},  # the shipped tables by name: the public face of offline.shipped
    "cli": {"tune_risk"},  # --version; the subcommands' modules are found by name when it runs
    "__main__": {"cli"},  # python -m tune_risk: the tune-risk command
    "tune_risk": {"engine", "tune", "settings"},  # the public face (lazy)
    "rl_tasks": set(),  # JAX training; imports nothing of tune_risk
}
"""Allowed imports between packages: ``gp <- risk <- engine <- tune``, ``offline`` may use ``engine`` and
``tune``, ``oscbo`` builds on ``gp``, ``benchmarks`` (synthetic objectives) on nothing of the project but the
BoTorch door, and nothing below ``tune`` imports ``tune`` or ``offline``."""


@dataclass(frozen=True)
class Import:
    """One imported module (``target``) and the names taken from it (empty for ``import target``)."""

    target: str
    names: tuple[str, ...]
    line: int


def is_private(name: str) -> bool:
    """``_name`` but not ``__name__``."""
    return name.startswith("_") and not name.endswith("__")


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``PACKAGES``."""
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = project_modules()


def in_project(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def absolute_module(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of ``from ... import`` in ``module`` (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path) -> Iterator[Import]:
    """Every project import of ``module``, at any depth of its syntax tree."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if in_project(alias.name):
                    yield Import(alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            source = absolute_module(module, path, node)
            if in_project(source):
                yield Import(source, tuple(alias.name for alias in node.names), node.lineno)


def edge_targets(found: Import) -> set[str]:
    """Modules an import makes this module depend on: ``P.x`` for a submodule ``x``, else ``P``."""
    if not found.names:
        return {found.target} if found.target in MODULES else set()
    targets = {f"{found.target}.{name}" for name in found.names if f"{found.target}.{name}" in MODULES}
    if any(f"{found.target}.{name}" not in MODULES for name in found.names) and found.target in MODULES:
        targets.add(found.target)
    return targets


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for module, path in MODULES.items():
        for found in imports_of(module, path):
            graph[module] |= edge_targets(found) - {module}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def private_imports() -> list[str]:
    """``module:line <- source._name`` for every private name taken from another module."""
    found_all = []
    for module, path in MODULES.items():
        aliases = module_aliases(module, path)
        for found in imports_of(module, path):
            for name in private_parts(found, module):
                found_all.append(f"{module}:{found.line} <- {found.target}.{name}")
        for line, source, name in module_attribute_uses(path, aliases):
            if source != module:
                found_all.append(f"{module}:{line} <- {source}.{name}")
    return found_all


def private_parts(found: Import, module: str) -> list[str]:
    """Private names (or private modules outside their package) that ``found`` takes into ``module``."""
    dotted = [found.target] if not found.names else [f"{found.target}.{name}" for name in found.names]
    bad = []
    for full in dotted:
        parent, _, last = full.rpartition(".")
        if not is_private(last) or parent == module:
            continue
        own_package = full in MODULES and (module == parent or module.startswith(parent + "."))
        if not own_package:
            bad.append(last)
    return bad


def module_aliases(module: str, path: Path) -> dict[str, str]:
    """Local names bound to project modules (``import a.b as m``, ``from a import b``)."""
    aliases = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if in_project(alias.name):
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = absolute_module(module, path, node)
            for alias in node.names:
                if f"{source}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    return aliases


def module_attribute_uses(path: Path, aliases: dict[str, str]) -> Iterator[tuple[int, str, str]]:
    """``(line, module, name)`` for every ``m._name`` with ``m`` bound to a project module."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = dotted_name(node.value)
            resolved = resolve_alias(owner, aliases) if owner else None
            if resolved in MODULES:
                yield node.lineno, resolved, node.attr


def dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def resolve_alias(owner: str, aliases: dict[str, str]) -> str | None:
    head, _, rest = owner.partition(".")
    if head not in aliases:
        return None
    return aliases[head] + (f".{rest}" if rest else "")


def private_members_defined(tree: ast.Module) -> set[str]:
    """Private names a module defines for its classes: ``def _name`` and ``self._name = ...``."""
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and is_private(node.name):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and dotted_name(node.value) == "self":
            defined.add(node.attr)
    return defined


def private_member_uses() -> list[str]:
    """``module:line obj._name`` for private members, defined in another module, of objects other than
    ``self``/``cls``/a module."""
    found = []
    for module, path in MODULES.items():
        aliases = module_aliases(module, path)
        tree = ast.parse(path.read_text())
        own = private_members_defined(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)) or node.attr in own:
                continue
            owner = dotted_name(node.value)
            if owner in ("self", "cls") or (owner and resolve_alias(owner, aliases) in MODULES):
                continue
            if ("*", node.attr) in ALLOWED_PRIVATE_ATTRIBUTES or (module, node.attr) in ALLOWED_PRIVATE_ATTRIBUTES:
                continue
            found.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    return found


def package_of(module: str) -> str:
    """``tune_risk.engine.core`` -> ``engine``; ``tune_risk.settings`` -> ``settings``; ``tune_risk`` (its
    ``__init__``) -> ``tune_risk``; any module of ``rl_tasks`` -> ``rl_tasks``."""
    parts = module.split(".")
    if parts[0] != "tune_risk":
        return parts[0]
    return parts[1] if len(parts) > 1 else "tune_risk"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """``A -> B  (package a may not import package b)`` for every import between packages not in ``LAYERS``."""
    found = []
    for module in sorted(graph):
        source = package_of(module)
        for target in sorted(graph[module]):
            imported = package_of(target)
            if imported != source and imported not in LAYERS.get(source, set()):
                found.append(f"{module} -> {target}  (package {source!r} may not import {imported!r})")
    return found


def layer_order(table: dict[str, set[str]]) -> list[str]:
    """The packages, each after every package it may import; ``ValueError`` if the table has a circle."""
    order: list[str] = []
    remaining = dict(table)
    while remaining:
        ready = sorted(p for p, allowed in remaining.items() if allowed <= set(order))
        if not ready:
            raise ValueError(f"LAYERS has a circle among {sorted(remaining)}")
        order += ready
        for package in ready:
            del remaining[package]
    return order


def test_the_walker_sees_both_packages():
    assert {"tune_risk.engine.core", "tune_risk.oscbo.gp", "rl_tasks.cli"} <= set(MODULES)
    graph = import_graph()
    assert "tune_risk.gp.models" in graph["tune_risk.risk.model"]  # a plain module-level import
    assert "tune_risk.oscbo.gp" in graph["tune_risk.oscbo"]  # a package __init__ re-exporting


def test_no_import_cycles():
    graph = import_graph()
    cycles = [" <-> ".join(component) + "  (edges: " + ", ".join(
        f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component) + ")"
        for component in strongly_connected(graph)]
    assert not cycles, "import cycles among project modules:\n  " + "\n  ".join(cycles)


def test_no_private_names_across_modules():
    found = private_imports()
    assert not found, "private names used across modules:\n  " + "\n  ".join(found)


def test_no_private_members_of_other_objects():
    found = private_member_uses()
    assert not found, ("private members of objects other than self/cls (make them public, or list a justified "
                       "exception in ALLOWED_PRIVATE_ATTRIBUTES):\n  " + "\n  ".join(found))


@pytest.mark.parametrize("module, found, expected", [
    ("tune_risk.oscbo.gp", Import("tune_risk.gp.models", ("_cholesky", "DTYPE"), 1), ["_cholesky"]),
    ("tune_risk.gp.models", Import("tune_risk._hidden", (), 1), []),  # a private module inside its own package
    ("tune_risk.gp.models", Import("tune_risk", ("_hidden",), 1), []),
    ("rl_tasks.cli", Import("tune_risk._hidden", (), 1), ["_hidden"]),  # ... and outside it
])
def test_private_import_rule(module, found, expected, monkeypatch):
    monkeypatch.setitem(MODULES, "tune_risk._hidden", ROOT / "tune_risk" / "_hidden.py")  # a private module
    assert private_parts(found, module) == expected


def test_every_package_has_a_layer():
    unplaced = sorted({package_of(module) for module in MODULES} - set(LAYERS))
    assert not unplaced, f"packages missing from LAYERS (say which packages each may import): {unplaced}"
    assert all(allowed <= set(LAYERS) for allowed in LAYERS.values())


def test_the_layers_have_no_circle():
    order = layer_order(LAYERS)
    assert order.index("gp") < order.index("risk") < order.index("engine") < order.index("tune") < order.index("offline")


def test_imports_go_down_the_layers_only():
    found = layer_violations(import_graph())
    assert not found, ("imports against the layer order (move the code, or, if the new dependency is right, "
                       "add it to LAYERS):\n  " + "\n  ".join(found))


@pytest.mark.parametrize("module, target, allowed", [
    ("tune_risk.risk.model", "tune_risk.gp.models", True),
    ("tune_risk.offline.replay", "tune_risk.tune.searcher", True),
    ("tune_risk.engine.core", "tune_risk.engine.records", True),  # inside one package
    ("tune_risk.gp.exact", "tune_risk.risk.model", False),  # upwards
    ("tune_risk.engine.core", "tune_risk.tune.searcher", False),  # the engine knows no Ray
    ("tune_risk.tune.searcher", "tune_risk.offline.replay", False),
    ("tune_risk.gp.models", "tune_risk.settings", False),  # gp has no settings
    ("tune_risk.oscbo.gp", "tune_risk.risk.model", False),
    ("rl_tasks.cli", "tune_risk.engine.core", False),
])
def test_layer_rule(module, target, allowed):
    assert (not layer_violations({module: {target}})) is allowed


def test_a_circle_in_the_table_is_refused():
    with pytest.raises(ValueError, match="circle"):
        layer_order({**LAYERS, "gp": {"botorch_without_jax", "engine"}})
