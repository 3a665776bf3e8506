"""Per-configuration summaries of an engine run (``RiskAwareSearch.results()``, replay logs).

Units are in the column names. ``metric_*`` columns are in the reported metric's own units (sample
statistics of the final returns, sign as reported); ``warped_*`` columns are on the warped,
maximised scale the engine optimises (``mode="min"`` metrics are negated before warping):
``warped_mv = m - alpha s2`` of the processed returns and its model bounds ``warped_lcb_mv`` /
``warped_ucb_mv`` under the current model with ``kappa_acq`` (eqs. 23-24), and the round's
``warped_incumbent_lcb`` (``B_t``, eq. 10).

Other columns: ``config_id``, ``phase`` (initial, bo), ``round``, ``status`` (running, done),
``stop_reason`` (initial design, certified, k_max, budget, failed, stopped; empty while running),
``k`` (incorporated replicates), ``completed`` / ``cancelled`` / ``censored`` / ``failed`` replicate runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tune_risk.engine.records import RunStatus
from tune_risk.gp.exact import DTYPE

if TYPE_CHECKING:
    from tune_risk.engine.core import Engine

_CANCELLED = (RunStatus.CANCELLED, RunStatus.CANCEL_REQUESTED, RunStatus.DISCARDED)
_RUN_COLUMN = {
    RunStatus.FAILED: "failed", RunStatus.CENSORED: "censored", RunStatus.USED: "completed",
    RunStatus.BUFFERED: "completed", **{status: "cancelled" for status in _CANCELLED},
}
_STOP_REASON = {"initial": "initial design"}


def config_rows(engine: Engine, sign: float = 1.0) -> list[dict[str, Any]]:
    """One dict per configuration, in proposal order. ``sign=-1`` reports minimised metrics."""
    model = engine.risk_model()
    bounds = None
    if model is not None and engine.records:
        X = torch.tensor([list(r.x) for r in engine.records], dtype=DTYPE)
        with torch.no_grad():
            bounds = model.bounds(X, engine.settings.kappa_acq)
    per_config = {r.config_id: dict.fromkeys(("completed", "cancelled", "censored", "failed"), 0)
                  for r in engine.records}
    for run in engine.runs.values():
        key = _RUN_COLUMN.get(run.status)
        if key:
            per_config[run.config_id][key] += 1
    rows = []
    for i, record in enumerate(engine.records):
        raw = np.asarray(record.incorporated_values(), dtype=np.float64) * sign
        stats = engine.statistics(record)
        variance = float(raw.var(ddof=1)) if raw.size > 1 else float("nan")
        rows.append({
            "config_id": record.config_id,
            "phase": record.phase,
            "round": record.round,
            "status": "running" if record.running else "done",
            "stop_reason": "" if record.running else _STOP_REASON.get(record.status, record.status),
            "k": record.n_incorporated,
            **per_config[record.config_id],
            "metric_mean": float(raw.mean()) if raw.size else float("nan"),
            "metric_std": float(np.sqrt(variance)),
            "metric_variance": variance,
            "warped_mean": float("nan") if stats is None else stats[0],
            "warped_variance": float("nan") if stats is None else stats[1],
            "warped_mv": float("nan") if stats is None else stats[0] - engine.settings.alpha * stats[1],
            "warped_ucb_mv": float("nan") if bounds is None else float(bounds[0][i]),
            "warped_lcb_mv": float("nan") if bounds is None else float(bounds[1][i]),
            "warped_incumbent_lcb": record.incumbent_lcb,
        })
    return rows
