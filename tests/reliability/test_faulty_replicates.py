"""Faulty replicates under a real Tune run: 20 % raise, 10 % report NaN/inf, 8 % never report the metric.

The faults are a fixed function of the replicate ``(table row, seed)`` (``reliability_support.fault_of``),
so the test knows in advance which trials must end failed. Checks: ``fit()`` completes, every
trial is accounted for exactly once (completed, cancelled or failed) and the failures are visible
in ``searcher.results()`` per configuration; no NaN/inf or intermediate value is ever an observation.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
from reliability_support import FAULT_KINDS, fault_of, make_faulty_trainable

from tune_risk import ReplicateScheduler, RiskAwareSearch
from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.engine.records import RunStatus
from tune_risk.offline.table import OfflineTable

NUM_SAMPLES = 60
FIGURES: dict[str, object] = {}  # read by the soak/README figures


def test_faulty_replicates_complete_and_are_accounted(ray_session, tmp_path, monkeypatch):
    from ray import tune

    # Tune itself rejects results without the metric unless strict checking is off.
    monkeypatch.setenv("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    X, Y = make_pool_table(get_objective("hartmann3"), 32, 8, seed=5)
    table = OfflineTable.from_arrays(pd.DataFrame(X, columns=["x0", "x1", "x2"]), Y, name="faulty")
    candidates = [{**table.config(row), "table_row": row} for row in range(table.n_configs)]
    faults = {(row, seed): fault_of(row, seed) for row in range(table.n_configs) for seed in range(16)}
    searcher = RiskAwareSearch(
        table.space, metric="return", mode="max", k_max=4, n_initial=3, random_state_seed=7,
        common_random_numbers=True, candidates=candidates, max_failures_per_config=2,
    )
    tuner = tune.Tuner(
        make_faulty_trainable(table.returns, faults),
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher),
                                    num_samples=NUM_SAMPLES, max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="faulty", verbose=0),
    )
    results = tuner.fit()  # nothing crashes

    engine = searcher.engine
    counts = engine.counts()
    assert len(results) == NUM_SAMPLES == counts["runs_launched"] and counts["runs_in_flight"] == 0
    assert counts["runs_completed"] + counts["runs_cancelled"] + counts["runs_failed"] == NUM_SAMPLES

    # Each trial ends as its injected fault says: a faulty replicate is failed (or was cancelled
    # first), a healthy one is never failed.
    injected: Counter[str] = Counter()
    for trial_id, run_id in searcher._trial_to_run.items():
        run = engine.runs[run_id]
        row = engine.records[run.config_id].pool_index
        kind = faults[(row, run.seed_index)]
        injected[kind] += 1
        if kind == "ok":
            assert run.status is not RunStatus.FAILED, (trial_id, kind)
        else:
            assert run.status in (RunStatus.FAILED, RunStatus.CANCELLED), (trial_id, kind, run.status)
    n_raise = injected["raise_early"] + injected["raise_late"]
    assert n_raise >= 5 and injected["nan"] + injected["inf"] + injected["-inf"] >= 2
    assert injected["silent"] + injected["mute"] >= 1
    # Tune reports a raising trial as an error, unless the scheduler stopped it first (cancelled).
    status = {t.trial_id: t.status for t in results._experiment_analysis.trials}
    for trial_id, run_id in searcher._trial_to_run.items():
        run = engine.runs[run_id]
        kind = faults[(engine.records[run.config_id].pool_index, run.seed_index)]
        if status[trial_id] == "ERROR":
            assert kind.startswith("raise"), (trial_id, kind)
        elif kind.startswith("raise"):
            assert run.status is RunStatus.CANCELLED, (trial_id, kind, status[trial_id])
    assert len(results.errors) == sum(s == "ERROR" for s in status.values()) >= 5

    # Failures are visible per configuration in results(), and a configuration with more than
    # max_failures_per_config failed runs is marked failed and never proposed again.
    frame = searcher.results()
    assert frame.failed.sum() == counts["runs_failed"] >= n_raise
    for record, row in zip(engine.records, frame.itertuples(), strict=True):
        assert row.failed == record.failures == sum(
            run.status is RunStatus.FAILED for run in engine.runs.values() if run.config_id == record.config_id)
        if record.status == "failed":
            assert record.failures == engine.settings.max_failures_per_config + 1
        values = record.incorporated_values()
        assert all(math.isfinite(v) for v in values)
        seeds = [engine.runs[s.run_id].seed_index for s in record.slots[: record.n_incorporated]]
        assert values == [float(table.returns[record.pool_index, s % 8]) for s in seeds]  # final, not intermediate
    assert searcher.best_config is not None and np.isfinite(frame.loc[frame.k >= 2, "metric_mean"]).all()
    FIGURES.update(trials=NUM_SAMPLES, injected={k: injected[k] for k in FAULT_KINDS},
                   failed_runs=counts["runs_failed"], failed_configs=int((frame.stop_reason == "failed").sum()))
    print("faulty replicates:", FIGURES)
