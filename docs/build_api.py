"""Build the API reference (HTML) from the docstrings with pdoc: ``make docs`` -> ``docs/api/index.html``.

Every module of ``tune_risk`` and ``rl_tasks`` is passed to pdoc by name (found with ``pkgutil``), because
``tune_risk/__init__.py`` (like ``tune_risk.offline`` and ``rl_tasks``) exports its public classes lazily
(``__getattr__``) and limits ``__all__`` to them, so pdoc, walking from the package alone, would render one page
and none of the submodules.  pdoc cannot resolve lazy names statically; its warnings about names that do
resolve at run time are silenced, every other warning is kept.  Usage: ``python docs/build_api.py [OUT_DIR]`` (default ``docs/api``, which git ignores).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

import pdoc

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tune_risk", "rl_tasks")


def module_names(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every importable module of ``packages``, packages first, in dotted-name order."""
    names = []
    for package in packages:
        module = importlib.import_module(package)
        names.append(package)
        names += [info.name for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}.")
                  if not info.name.rsplit(".", 1)[-1].startswith("_")]
    return sorted(names)


def lazy_exports(names: list[str]) -> list[tuple[str, str]]:
    """``(module, name)`` for every ``__all__`` entry that only ``__getattr__`` provides (and does provide)."""
    found = []
    for module_name in names:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            if name not in vars(module) and getattr(module, name, None) is not None:
                found.append((module_name, name))
    return found


def build(out: Path) -> list[str]:
    """Write the HTML reference of every module into ``out``; return the module names documented."""
    names = module_names()
    with warnings.catch_warnings():
        for module, name in lazy_exports(names):  # resolvable, only not statically: documented at home
            warnings.filterwarnings("ignore", message=f"Found '{name}' in {module}.__all__, but it does not resolve")
        # pdoc walks the submodules of a package without a restrictive __all__ itself, so those named here too
        # are specified twice; it renders each once.
        warnings.filterwarnings("ignore", message=r"The module specification '[\w.]+' adds a module named [\w.]+, "
                                                  "but a module with this name has already been added")
        pdoc.pdoc(*names, output_directory=out)
    return names


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "api"
    documented = build(target)
    print(f"API reference of {len(documented)} modules: {target / 'index.html'}")
