"""The module paths of tune_risk 0.1.0's flat layout, so that its checkpoints still load.

Until the package layout of issue #17 every module sat flat in ``tune_risk/`` (``tune_risk.searcher``,
``tune_risk.warping``, ...). A pickle names each class by the module that defines it, and Ray Tune
restores an experiment from pickles: ``tuner.pkl`` holds the ``RiskAwareSearch`` and the
``ReplicateScheduler`` objects, ``searcher-state-*.pkl`` the searcher's fields (``TuneSpaceCodec``,
``FrozenWarp``, ``RestorePoints``, ``EngineSettings``). The engine's own ``state_dict`` is plain
containers and names no class.

``install()`` (run by ``import tune_risk``, which every unpickling of a ``tune_risk.*`` name does first)
adds an import hook: importing an old path gives the module at its new path, the same module object,
so an old pickle rebuilds today's classes. It also warns (``DeprecationWarning``) with the new path, for
code that still imports the old one. A name that was never a tune_risk module fails as usual.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

MOVED: dict[str, str] = {
    "tune_risk.exact_gp": "tune_risk.gp.exact",
    "tune_risk.models": "tune_risk.gp.models",
    "tune_risk.warping": "tune_risk.risk.warping",
    "tune_risk.risk_model": "tune_risk.risk.model",
    "tune_risk.acquisition": "tune_risk.risk.acquisition",
    # tune_risk.engine (the module of Engine) is now the package tune_risk.engine, which exports Engine
    "tune_risk.records": "tune_risk.engine.records",
    "tune_risk.design": "tune_risk.engine.design",
    "tune_risk.snapshots": "tune_risk.engine.snapshots",
    "tune_risk.state": "tune_risk.engine.state",
    "tune_risk.threads": "tune_risk.engine.threads",
    "tune_risk.simulate": "tune_risk.engine.simulate",
    "tune_risk.reporting": "tune_risk.engine.reporting",
    "tune_risk.lengthscale.engine_hooks": "tune_risk.engine.lengthscale",
    "tune_risk.searcher": "tune_risk.tune.searcher",
    "tune_risk.scheduler": "tune_risk.tune.scheduler",
    "tune_risk.tune_space": "tune_risk.tune.space",
    "tune_risk.restore": "tune_risk.tune.restore",
    "tune_risk.objectives": "tune_risk.benchmarks.objectives",
}
"""Old module path -> new module path (modules that were moved, not the ones that stayed)."""


def current_module(name: str) -> str:
    """The module path of today's layout for a module path of either layout."""
    return MOVED.get(name, name)


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths, and nothing else."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module; exec_module replaces it

    def exec_module(self, module: ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(f"{module.__name__} is now {new} (tune_risk's modules moved into subpackages); import it "
                      "from there: the old path is kept only so that older checkpoints load", DeprecationWarning,
                      stacklevel=2)
        # The import system returns whatever sys.modules holds for the name after exec_module: the new module.
        sys.modules[module.__name__] = importlib.import_module(new)


def install() -> None:
    """Put the hook first in ``sys.meta_path`` (once). First: an old path must give today's module even
    where another finder would find a file there (an editable install of an older checkout, a stale
    ``tune_risk/searcher.py`` left by an upgrade), or the classes would exist twice."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OldPaths())
