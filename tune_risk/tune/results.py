"""The searcher's results in the experiment folder, and :func:`load_results` to read them back.

What a user takes home from a tuning run is one configuration. ``ResultGrid.get_best_result()`` cannot
give it here: it picks the single *trial* with the best metric, i.e. one lucky seed of some configuration,
while ``RiskAwareSearch`` recommends a *configuration* on the evidence of all its seeds
(``argmax LCB^MV``, docs/algorithms.md §1.10). So whenever Tune saves the searcher's state (during the run
and once more at its end), the searcher also writes, beside Tune's own files::

    <experiment>/tune_risk/results.csv          one row per configuration (RiskAwareSearch.results())
    <experiment>/tune_risk/recommendation.json  the recommended configuration and its evidence

``tune_risk.load_results(path)`` (:mod:`tune_risk.tune.load`) reads them from a finished, interrupted or
restored experiment, without Ray running and without touching the searcher's private state.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

FOLDER = "tune_risk"
RESULTS = "results.csv"
RECOMMENDATION = "recommendation.json"
EVIDENCE = ("k", "metric_mean", "metric_std", "warped_mean", "warped_variance", "warped_mv", "warped_lcb_mv",
            "warped_ucb_mv", "stop_reason", "phase")
"""Columns of ``results()`` copied into ``recommendation.json`` as the recommendation's evidence."""


class Recommending(Protocol):
    """What :func:`write_results` reads of a searcher (``RiskAwareSearch`` has it)."""

    engine: Any
    best_config: dict[str, Any] | None
    metric: str | None
    mode: str | None

    def results(self) -> pd.DataFrame: ...


@dataclass(frozen=True)
class TuneRiskResults:
    """A ``RiskAwareSearch`` run as written into its experiment folder.

    ``frame``: one row per configuration (``RiskAwareSearch.results()``: parameters as ``config/<name>``,
    seeds ``k``, statistics, bounds, stop reason); ``recommendation``: ``{"config": ..., "config_id": ...,
    "rule": ..., "evidence": {...}}`` or ``None`` before the initial design finished.

    Example:
        >>> from tune_risk import load_results
        >>> results = load_results("~/ray_results/my_experiment")  # doctest: +SKIP
        >>> results.best_config  # the configuration to deploy  # doctest: +SKIP
        {'lr': 0.0031, 'gamma': 0.99, ...}
        >>> results.frame.sort_values("warped_lcb_mv").tail(3)  # its runners-up  # doctest: +SKIP
    """

    path: Path
    frame: pd.DataFrame
    recommendation: dict[str, Any] | None

    @property
    def best_config(self) -> dict[str, Any] | None:
        """The recommended configuration (hyperparameters only, no seed), or ``None`` if there is none yet."""
        return None if self.recommendation is None else dict(self.recommendation["config"])


def recommendation_of(searcher: Recommending) -> dict[str, Any] | None:
    """The searcher's recommendation with its evidence (seeds, mean, std, MV, bounds), JSON-ready."""
    engine = searcher.engine
    record = None if engine is None else engine.recommend()
    if record is None:
        return None
    frame = searcher.results()
    row = frame.loc[frame["config_id"] == record.config_id].iloc[0]
    evidence = {column: _plain(row[column]) for column in EVIDENCE if column in frame.columns}
    return {"config": searcher.best_config, "config_id": int(record.config_id),
            "rule": "argmax LCB^MV over the configurations with data (docs/algorithms.md §1.10)",
            "metric": searcher.metric, "mode": searcher.mode, "evidence": evidence}


def write_results(searcher: Recommending, experiment_dir: str | os.PathLike) -> Path:
    """Write ``tune_risk/results.csv`` and ``tune_risk/recommendation.json`` under ``experiment_dir``.

    Each file is written to a temporary name and renamed, so a reader (or a kill) never sees half a file.
    """
    folder = Path(experiment_dir) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomic(folder / RESULTS, searcher.results().to_csv(index=False, lineterminator="\n"))
    recommendation = recommendation_of(searcher)
    _write_atomic(folder / RECOMMENDATION, json.dumps(recommendation, indent=1, sort_keys=True, default=_plain) + "\n")
    return folder


def _plain(value: Any) -> Any:
    """numpy / pandas scalars as JSON values (NaN as null)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
