"""``load_results``: a ``RiskAwareSearch`` experiment's recommendation and table, read from its folder.

The searcher writes ``<experiment>/tune_risk/results.csv`` and ``recommendation.json``
(:mod:`tune_risk.tune.results`) whenever Tune saves its state; this module reads them back, or, for an
experiment written before those files existed, restores the searcher from Tune's snapshot
(``searcher-state-*.pkl``) and asks it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from tune_risk.tune.results import FOLDER, RECOMMENDATION, RESULTS, TuneRiskResults, recommendation_of
from tune_risk.tune.searcher import RiskAwareSearch

__all__ = ["TuneRiskResults", "load_results"]


def load_results(path: str | os.PathLike) -> TuneRiskResults:
    """The results of the ``RiskAwareSearch`` experiment at ``path`` (the folder ``tune.Tuner`` wrote:
    ``<storage_path>/<name>``); ``FileNotFoundError`` naming the path and what is missing.

    Args:
        path: the experiment folder, e.g. ``ResultGrid.experiment_path``; also after a crash or a
            ``restore_tuner``.

    Returns:
        A ``TuneRiskResults``: ``best_config``, ``recommendation`` (with its ``evidence``) and ``frame`` (one
        row per configuration).

    Example:
        >>> from tune_risk import load_results
        >>> grid = tuner.fit()  # a tune.Tuner with search_alg=RiskAwareSearch(...)  # doctest: +SKIP
        >>> results = load_results(grid.experiment_path)  # doctest: +SKIP
        >>> results.best_config  # the configuration to deploy  # doctest: +SKIP
        >>> load_results("no/such/run")
        Traceback (most recent call last):
            ...
        FileNotFoundError: load_results: no/such/run is not a directory (pass the experiment folder, e.g. ResultGrid.experiment_path)
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"load_results: {root} is not a directory (pass the experiment folder, e.g. "
                                "ResultGrid.experiment_path)")
    folder = root / FOLDER
    if (folder / RECOMMENDATION).exists() and (folder / RESULTS).exists():
        text = (folder / RESULTS).read_text()
        frame = pd.read_csv(folder / RESULTS) if text.strip() else pd.DataFrame()
        return TuneRiskResults(root, frame, json.loads((folder / RECOMMENDATION).read_text()))
    snapshots = sorted(root.glob("searcher-state-*.pkl"), key=lambda p: p.stat().st_mtime)
    if not snapshots:
        raise FileNotFoundError(
            f"load_results: {root} holds no tune_risk results: neither {FOLDER}/{RECOMMENDATION} nor a searcher "
            "snapshot (searcher-state-*.pkl); is it the folder of a tune.Tuner run with RiskAwareSearch, and has "
            "Tune saved its state at least once?")
    return _from_snapshot(root, snapshots[-1])


def _from_snapshot(root: Path, snapshot: Path) -> TuneRiskResults:
    searcher = RiskAwareSearch()
    searcher.restore(str(snapshot))
    return TuneRiskResults(root, searcher.results(), recommendation_of(searcher))


