"""Load a script of ``experiments/`` as a module (``experiments/`` is not a package), for tests of its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def load_script(name: str) -> ModuleType:
    """``experiments/<kind>/<name>.py`` imported as the module ``name`` (its ``main`` is not run)."""
    (path,) = EXPERIMENTS.glob(f"*/{name}.py")  # examples/, benchmarks/ or studies/
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses (and pickling) look a class's module up there
    spec.loader.exec_module(module)
    return module
