"""Exact, picklable, versioned engine state (``Engine.state_dict`` / ``Engine.from_state_dict``).

The state holds only plain Python containers (ints, floats, strings, lists, dicts), so it
pickles, JSON-serialises and compares exactly. Models are not stored: they are a pure function of
the data and a round's snapshot (warp, hyperparameters, ``rho_bar^2``) and are rebuilt on demand,
bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tune_risk.lengthscale.engine_hooks import EngineLengthscale
from tune_risk.records import ConfigRecord, Run, RunStatus, Slot, SlotState
from tune_risk.risk_model import RiskHyperparameters
from tune_risk.settings import EngineSettings
from tune_risk.snapshots import ModelSnapshot
from tune_risk.warping import FrozenWarp

if TYPE_CHECKING:
    from tune_risk.engine import Engine

STATE_VERSION = 2
"""Version 2 (model snapshots): every warp used (re-fits in order), whether the engine fits the warp
itself, the model snapshot of every round, the recommendations log. Version 1 (one frozen warp and
one set of hyperparameters) still loads, as a run whose warp is never re-fitted."""


def engine_state(engine: Engine) -> dict[str, Any]:
    """Plain-container snapshot of ``engine``."""
    return {
        "version": STATE_VERSION,
        "settings": engine.settings.to_dict(),
        "dim": engine.dim,
        "pool": None if engine.pool is None else engine.pool.tolist(),
        "warps": [warp.state_dict() for warp in engine.warps],
        "online_warp": engine.online_warp,
        "snapshots": [snapshot.to_dict() for snapshot in engine.snapshots],
        "records": [_record_state(r) for r in engine.records],
        "runs": [[r.run_id, r.config_id, r.replicate_index, r.seed_index, r.status.value, r.cost]
                 for r in engine.runs.values()],
        "n_used": engine.n_used,
        "rounds": engine.rounds,
        "initial_points_drawn": engine.initial_points_drawn,
        "compute_spent": engine.compute_spent,
        "intensifying": engine.intensifying,
        "intensification_runs": engine.intensification_runs,
        "intensification_done": engine.intensification_done,
        "recommendations": [list(r) for r in engine.recommendations],
        "lengthscale": None if engine.lengthscale_adapter is None else engine.lengthscale_adapter.state_dict(),
    }


def engine_from_state(cls: type[Engine], state: dict[str, Any]) -> Engine:
    """Rebuild an engine of class ``cls`` from ``engine_state`` output (version 2, or 1 upgraded)."""
    version = state.get("version") if isinstance(state, dict) else None
    if version == 1:
        state = _upgrade_version_1(state)
    elif version != STATE_VERSION:
        raise ValueError(
            f"unsupported engine state version {version!r}; this tune_risk reads versions 1 and {STATE_VERSION}")
    engine = cls.__new__(cls)
    engine.settings = EngineSettings(**state["settings"])
    engine.dim = state["dim"]
    engine.pool = None if state["pool"] is None else np.asarray(state["pool"], dtype=np.float64)
    engine._pool_tensor = None if engine.pool is None else torch.from_numpy(engine.pool)
    engine.warps = [FrozenWarp.from_state_dict(w) for w in state["warps"]]
    engine.online_warp = state["online_warp"]
    engine.snapshots = [ModelSnapshot.from_dict(s) for s in state["snapshots"]]
    engine.hyperparameters = engine.snapshots[-1].hyperparameters if engine.snapshots else None
    engine._row_cache = {}
    engine._model_memo = None
    engine.records = [_record_from_state(r) for r in state["records"]]
    engine.runs = {
        run_id: Run(run_id, config_id, replicate_index, seed_index, RunStatus(status), cost)
        for run_id, config_id, replicate_index, seed_index, status, cost in state["runs"]
    }
    engine.n_used = state["n_used"]
    engine.rounds = state["rounds"]
    engine.initial_points_drawn = state["initial_points_drawn"]
    engine.compute_spent = state["compute_spent"]
    engine.intensifying = state.get("intensifying", False)  # absent before intensification existed
    engine.intensification_runs = state.get("intensification_runs", 0)
    engine.intensification_done = state.get("intensification_done", False)
    engine.recommendations = [tuple(r) for r in state["recommendations"]]
    engine.lengthscale_adapter = EngineLengthscale.from_state_dict(state.get("lengthscale"))
    return engine


def _upgrade_version_1(state: dict[str, Any]) -> dict[str, Any]:
    """A version-1 state as version 2: its one warp and one set of hyperparameters become the single
    snapshot of every round. Version 1 never re-fitted its warp, so neither does the restored run."""
    state = dict(state)
    warp, hyperparameters = state.pop("warp"), state.pop("hyperparameters")
    settings = state["settings"]
    rho_bar_sq = settings.get("rho_bar_sq")
    if rho_bar_sq is None:
        rho_bar_sq = 0.25 if warp is None else FrozenWarp.from_state_dict(warp).variance_bound
    state["warps"] = [] if warp is None else [warp]
    state["online_warp"] = False
    state["snapshots"] = [] if hyperparameters is None else [ModelSnapshot(
        RiskHyperparameters.from_dict(hyperparameters), None if warp is None else 0, rho_bar_sq, 1).to_dict()]
    state["records"] = [{**r, "snapshot": 0 if r["phase"] == "bo" and hyperparameters is not None else None}
                        for r in state["records"]]
    state["recommendations"] = []
    return state


def _record_state(record: ConfigRecord) -> dict[str, Any]:
    return {
        "config_id": record.config_id, "x": list(record.x), "pool_index": record.pool_index,
        "phase": record.phase, "round": record.round, "target": record.target,
        "slots": [[s.replicate_index, s.state.value, s.run_id, s.seed_index, s.value] for s in record.slots],
        "n_incorporated": record.n_incorporated, "status": record.status, "failures": record.failures,
        "next_seed_index": record.next_seed_index, "incumbent_lcb": record.incumbent_lcb,
        "kappa_stop": record.kappa_stop, "snapshot": record.snapshot, "trace": [list(t) for t in record.trace],
        "closed_after_runs": record.closed_after_runs,
    }


def _record_from_state(state: dict[str, Any]) -> ConfigRecord:
    slots = [
        Slot(index, SlotState(slot_state), run_id, seed_index, value)
        for index, slot_state, run_id, seed_index, value in state["slots"]
    ]
    fields = {k: v for k, v in state.items() if k not in ("slots", "x", "trace")}
    return ConfigRecord(
        **fields, x=tuple(state["x"]), slots=slots, trace=[tuple(t) for t in state["trace"]]
    )
