"""Exact, picklable, versioned engine state (``Engine.state_dict`` / ``Engine.from_state_dict``).

The state holds only plain Python containers (ints, floats, strings, lists, dicts), so it
pickles, JSON-serialises and compares exactly. Models are not stored: they are a pure function of
the data and the frozen hyperparameters and are rebuilt on demand, bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tune_risk.lengthscale.engine_hooks import EngineLengthscale
from tune_risk.records import ConfigRecord, Run, RunStatus, Slot, SlotState
from tune_risk.risk_model import RiskHyperparameters
from tune_risk.settings import EngineSettings
from tune_risk.warping import FrozenWarp

if TYPE_CHECKING:
    from tune_risk.engine import Engine

STATE_VERSION = 1


def engine_state(engine: Engine) -> dict[str, Any]:
    """Plain-container snapshot of ``engine``."""
    return {
        "version": STATE_VERSION,
        "settings": engine.settings.to_dict(),
        "dim": engine.dim,
        "pool": None if engine.pool is None else engine.pool.tolist(),
        "warp": None if engine.warp is None else engine.warp.state_dict(),
        "hyperparameters": None if engine.hyperparameters is None else engine.hyperparameters.to_dict(),
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
        "lengthscale": None if engine.lengthscale_adapter is None else engine.lengthscale_adapter.state_dict(),
    }


def engine_from_state(cls: type[Engine], state: dict[str, Any]) -> Engine:
    """Rebuild an engine of class ``cls`` from ``engine_state`` output."""
    version = state.get("version") if isinstance(state, dict) else None
    if version != STATE_VERSION:
        raise ValueError(f"unsupported engine state version {version!r}; this tune_risk reads version {STATE_VERSION}")
    engine = cls.__new__(cls)
    engine.settings = EngineSettings(**state["settings"])
    engine.dim = state["dim"]
    engine.pool = None if state["pool"] is None else np.asarray(state["pool"], dtype=np.float64)
    engine._pool_tensor = None if engine.pool is None else torch.from_numpy(engine.pool)
    engine.warp = None if state["warp"] is None else FrozenWarp.from_state_dict(state["warp"])
    engine.hyperparameters = None
    engine._row_cache = {}
    if state["hyperparameters"] is not None:
        engine._set_hyperparameters(RiskHyperparameters.from_dict(state["hyperparameters"]))
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
    engine.lengthscale_adapter = EngineLengthscale.from_state_dict(state.get("lengthscale"))
    return engine


def _record_state(record: ConfigRecord) -> dict[str, Any]:
    return {
        "config_id": record.config_id, "x": list(record.x), "pool_index": record.pool_index,
        "phase": record.phase, "round": record.round, "target": record.target,
        "slots": [[s.replicate_index, s.state.value, s.run_id, s.seed_index, s.value] for s in record.slots],
        "n_incorporated": record.n_incorporated, "status": record.status, "failures": record.failures,
        "next_seed_index": record.next_seed_index, "incumbent_lcb": record.incumbent_lcb,
        "kappa_stop": record.kappa_stop, "trace": [list(t) for t in record.trace],
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
