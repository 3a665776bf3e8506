"""tune_risk: risk-aware, seed-efficient hyperparameter optimisation of RL for Ray Tune.

``RiskAwareSearch`` (a Ray Tune ``Searcher``) and ``ReplicateScheduler`` (its companion
``TrialScheduler``) run ERAHBO: one Tune trial per training seed, mean-variance objective,
replicates cancelled once a configuration is certified worse than the incumbent. The pure ask/tell
``Engine`` underneath (``EngineSettings``; ``ask()`` answers a replicate, ``WAIT`` or ``DONE``) has no
Ray or JAX dependency. This package never imports JAX.

The layers, each importing only those before it (README, "Architecture"): ``gp`` (GP algebra),
``risk`` (ERAHBO's mean-variance model), ``engine`` (the ask/tell state machine), ``tune`` (the Ray
Tune adapters), then the applications ``offline`` (table replays) and ``benchmarks``; ``oscbo`` and
``lengthscale`` (calibrated lengthscales) sit on ``gp`` and below the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["DONE", "WAIT", "Engine", "EngineSettings", "ReplicateScheduler", "RiskAwareSearch", "__version__",
           "load_results", "restore_tuner"]

if TYPE_CHECKING:
    from tune_risk.engine.core import Engine
    from tune_risk.engine.records import DONE, WAIT
    from tune_risk.settings import EngineSettings
    from tune_risk.tune.load import load_results
    from tune_risk.tune.restore import restore_tuner
    from tune_risk.tune.scheduler import ReplicateScheduler
    from tune_risk.tune.searcher import RiskAwareSearch

_LAZY = {
    "Engine": "tune_risk.engine.core",
    "EngineSettings": "tune_risk.settings",
    "DONE": "tune_risk.engine.records",
    "WAIT": "tune_risk.engine.records",
    "RiskAwareSearch": "tune_risk.tune.searcher",
    "ReplicateScheduler": "tune_risk.tune.scheduler",
    "restore_tuner": "tune_risk.tune.restore",
    "load_results": "tune_risk.tune.load",
}


def __getattr__(name: str) -> Any:
    """Import lazily: ``import tune_risk`` stays cheap and Ray loads only for the Tune adapters."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tune_risk' has no attribute {name!r}")
