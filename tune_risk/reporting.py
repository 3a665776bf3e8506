"""Per-configuration summaries of an engine run (``RiskAwareSearch.results()``, replay logs).

Columns: ``config_id``, ``phase``, ``round``, ``status`` (running, initial, certified, k_max,
budget, failed), ``k`` (incorporated replicates), ``completed`` / ``cancelled`` / ``failed``
replicate runs, ``mean`` and ``variance`` of the raw returns, ``mv`` = ``m - alpha s2`` on the
warped scale, ``lcb_mv`` / ``ucb_mv`` under the current model with ``kappa_acq`` (eqs. 23-24), and
the round's ``incumbent_lcb`` (``B_t``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tune_risk.models import DTYPE
from tune_risk.records import RunStatus

if TYPE_CHECKING:
    from tune_risk.engine import Engine

_CANCELLED = (RunStatus.CANCELLED, RunStatus.CANCEL_REQUESTED, RunStatus.DISCARDED)


def config_rows(engine: Engine, sign: float = 1.0) -> list[dict[str, Any]]:
    """One dict per configuration, in proposal order. ``sign=-1`` reports minimised metrics."""
    model = engine.risk_model()
    bounds = None
    if model is not None and engine.records:
        X = torch.tensor([list(r.x) for r in engine.records], dtype=DTYPE)
        with torch.no_grad():
            bounds = model.bounds(X, engine.settings.kappa_acq)
    per_config = {r.config_id: {"completed": 0, "cancelled": 0, "failed": 0} for r in engine.records}
    for run in engine.runs.values():
        key = "failed" if run.status is RunStatus.FAILED else "cancelled" if run.status in _CANCELLED else (
            "completed" if run.status in (RunStatus.USED, RunStatus.BUFFERED) else None)
        if key:
            per_config[run.config_id][key] += 1
    rows = []
    for i, record in enumerate(engine.records):
        raw = np.asarray(record.incorporated_values(), dtype=np.float64) * sign
        stats = engine.statistics(record)
        rows.append({
            "config_id": record.config_id,
            "phase": record.phase,
            "round": record.round,
            "status": record.status,
            "k": record.n_incorporated,
            **per_config[record.config_id],
            "mean": float(raw.mean()) if raw.size else float("nan"),
            "variance": float(raw.var(ddof=1)) if raw.size > 1 else float("nan"),
            "mv": float("nan") if stats is None else stats[0] - engine.settings.alpha * stats[1],
            "ucb_mv": float("nan") if bounds is None else float(bounds[0][i]),
            "lcb_mv": float("nan") if bounds is None else float(bounds[1][i]),
            "incumbent_lcb": record.incumbent_lcb,
        })
    return rows
