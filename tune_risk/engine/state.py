"""Versions of the engine's state (``Engine.state_dict`` / ``Engine.from_state_dict``).

The engine writes and reads its own fields; this module owns the rest: the version number, the check
of a state's version, and the upgrade of older versions to the current one. A state holds only plain
Python containers (ints, floats, strings, lists, dicts), so it pickles, JSON-serialises and compares
exactly.
"""

from __future__ import annotations

from typing import Any

from tune_risk.engine.snapshots import ModelSnapshot
from tune_risk.risk.model import RiskHyperparameters
from tune_risk.risk.warping import FrozenWarp

STATE_VERSION = 2
"""Version 2 (model snapshots): every warp used (re-fits in order), whether the engine fits the warp
itself, the model snapshot of every round, the recommendations log. Version 1 (one frozen warp and
one set of hyperparameters) still loads, as a run whose warp is never re-fitted."""


def current_state(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` as a version-``STATE_VERSION`` state: version 1 is upgraded, any other raises ``ValueError``."""
    version = state.get("version") if isinstance(state, dict) else None
    if version == 1:
        return _upgrade_version_1(state)
    if version != STATE_VERSION:
        raise ValueError(
            f"unsupported engine state version {version!r}; this tune_risk reads versions 1 and {STATE_VERSION}")
    return state


def _upgrade_version_1(state: dict[str, Any]) -> dict[str, Any]:
    """A version-1 state as version 2: its one warp and one set of hyperparameters become the single
    snapshot of every round. Version 1 never re-fitted its warp, so neither does the restored run."""
    state = dict(state)
    warp, hyperparameters = state.pop("warp"), state.pop("hyperparameters")
    settings = state["settings"]
    rho_bar_sq = settings.get("rho_bar_sq")
    if rho_bar_sq is None:
        rho_bar_sq = 0.25 if warp is None else FrozenWarp.from_state_dict(warp).variance_bound
    state["version"] = STATE_VERSION
    state["warps"] = [] if warp is None else [warp]
    state["online_warp"] = False
    state["snapshots"] = [] if hyperparameters is None else [ModelSnapshot(
        RiskHyperparameters.from_dict(hyperparameters), None if warp is None else 0, rho_bar_sq, 1).to_dict()]
    state["records"] = [{**r, "snapshot": 0 if r["phase"] == "bo" and hyperparameters is not None else None}
                        for r in state["records"]]
    state["recommendations"] = []
    return state
