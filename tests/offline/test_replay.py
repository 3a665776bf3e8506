"""Offline replay: the direct loop and the Ray Tune path decide identically; metrics rows are sound."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from ray import tune

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.offline.replay import (
    ReplayTask,
    method_settings,
    parse_methods,
    replay_direct,
    replay_searcher,
    replay_tune,
    rounds_rows,
    runs_rows,
    seed_permutation,
)
from tune_risk.risk.warping import fit_warp


@pytest.fixture(scope="module")
def task() -> ReplayTask:
    X, Y = make_pool_table(get_objective("hartmann3"), 96, 24, seed=3)
    return ReplayTask("h3", X, Y)


def decisions(result) -> list[tuple]:
    return [(r.pool_index, r.n_incorporated, r.status) for r in result.engine.records]


def test_direct_replay_is_repeatable_bit_for_bit(task):
    a, b = replay_direct(task, "erahbo", 1, 60, workers=3), replay_direct(task, "erahbo", 1, 60, workers=3)
    assert a.engine.state_dict() == b.engine.state_dict() and a.compute_at_eval == b.compute_at_eval
    assert decisions(replay_direct(task, "erahbo", 2, 60)) != decisions(a)


@pytest.mark.parametrize("workers", [1, 3])
def test_direct_and_tune_paths_make_the_same_decisions(ray_session, task, tmp_path, workers):
    space = {f"x{i}": tune.uniform(0.0, 1.0) for i in range(3)}
    configs = [{f"x{i}": float(x[i]) for i in range(3)} for x in task.points]
    direct = replay_direct(task, "erahbo", 0, 50, workers=workers)
    tuned = replay_tune(task, space, configs, "erahbo", 0, 50, workers=workers, storage_path=str(tmp_path))
    assert decisions(tuned) == decisions(direct)
    assert [r.incumbent_lcb for r in tuned.engine.records] == [r.incumbent_lcb for r in direct.engine.records]


@pytest.mark.parametrize("method, warp", [("erahbo", "pooled"), ("erahbo-exp", "online"), ("rahbo-k2", "pooled"),
                                          ("gp-ucb", "pooled")])
def test_the_tune_path_engine_has_the_direct_path_settings(task, method, warp):
    """``replay_tune``'s searcher is built from the direct path's settings (``RiskAwareSearch.from_settings``)."""
    space = {f"x{i}": tune.uniform(0.0, 1.0) for i in range(3)}
    configs = [{f"x{i}": float(x[i]) for i in range(3)} for x in task.points]
    settings = method_settings(method, 40, seed=2, warp=warp, max_active_configs=1)
    searcher = replay_searcher(task, space, configs, settings, warp)
    assert isinstance(searcher.suggest("t0"), dict)
    direct = replay_direct(task, method, 2, 40, warp=warp, max_active_configs=1).engine
    assert searcher.engine.settings == direct.settings == settings
    assert (searcher.engine.warp is task.warp) is (warp == "pooled")


def test_common_random_numbers_across_methods(task):
    results = {m: replay_direct(task, m, 4, 40) for m in ("erahbo", "rahbo-k2", "gp-ucb")}
    initial = {m: [r.pool_index for r in res.engine.records if r.phase == "initial"] for m, res in results.items()}
    assert initial["erahbo"] == initial["rahbo-k2"] == initial["gp-ucb"]  # shared initial design
    # Replicate i of configuration c reads the same table column for every method.
    for res in results.values():
        for record in res.engine.records:
            perm = seed_permutation(4, record.pool_index, task.n_seeds)
            values = record.incorporated_values()
            assert values == [task.returns[record.pool_index, perm[i]] for i in range(len(values))]


def test_runs_rows_follow_the_paper_metrics(task):
    result = replay_direct(task, "erahbo", 0, 80)
    runs = pd.DataFrame(runs_rows(result, task))
    assert list(runs.n_eval) == list(range(1, len(runs) + 1)) and len(runs) == result.engine.n_used <= 80
    assert (np.diff(runs.regret) <= 1e-15).all() and (runs.regret >= 0).all()  # simple regret never rises
    assert runs.normalised_regret.iloc[0] <= 1.0 + 1e-12  # item 13
    instantaneous = task.true_mv.max() - task.true_mv[runs.config_row.to_numpy()]
    np.testing.assert_allclose(runs.cumulative_regret, np.cumsum(instantaneous))  # eq. 6
    rounds = pd.DataFrame(rounds_rows(result, task))
    assert rounds.k.sum() == len(runs) and set(rounds.stop_reason) <= {"certified", "k_max", "budget"}
    assert (runs.compute.diff().dropna() >= 0).all() and runs.compute.iloc[-1] >= len(runs)


@pytest.mark.parametrize("method", ["erahbo", "rahbo-k3"])
def test_runs_rows_against_an_independent_recomputation(task, method):
    """Item 13 and A-15 (§1.12), recomputed from the engine's records and the table alone: simple
    regret of the best configuration evaluated (from its first BO replicate), its normalisation by
    the initial design's mean regret, eq. 6 with and without the initial design's replicates, and the
    regret of ``recommend(D)`` (argmax ``LCB^MV(kappa_acq)`` on the data of the rounds completed by
    ``n``, the initial design's before the first)."""
    result = replay_direct(task, method, 5, 45)
    engine, mv = result.engine, task.true_mv
    runs = pd.DataFrame(runs_rows(result, task))
    mv_star = float(mv.max())
    assert (mv_star >= mv).all()
    initial = [r for r in engine.records if r.phase == "initial"]
    bo = [r for r in engine.records if r.phase == "bo"]
    snapshot = engine.snapshot_of(bo[0])  # pooled warp, hyperparameters fitted once: one model
    assert all(engine.snapshot_of(r) == snapshot for r in bo)
    best, cumulative = max(mv[r.pool_index] for r in initial), 0.0
    cumulative_initial = sum(r.n_incorporated * (mv_star - mv[r.pool_index]) for r in initial)
    r0 = mv_star - np.mean([mv[r.pool_index] for r in initial])
    expected, done = [], list(initial)
    for record in bo:
        for i in range(record.n_incorporated):
            best = max(best, mv[record.pool_index]) if i == 0 else best
            cumulative += mv_star - mv[record.pool_index]
            if i == record.n_incorporated - 1:
                done.append(record)  # the round is complete at its last evaluation
            data = [r for r in done if r.n_incorporated >= engine.settings.k_min]
            lcb = engine.build_model(engine.data_rows(data, snapshot), snapshot).lcb_mv(
                torch.tensor([list(r.x) for r in data], dtype=torch.float64), engine.settings.kappa_acq)
            recommended = data[int(torch.argmax(lcb))]
            expected.append((mv_star - best, (mv_star - best) / r0, mv_star - mv[recommended.pool_index],
                             cumulative, cumulative_initial + cumulative))
    columns = ["regret", "normalised_regret", "recommended_regret", "cumulative_regret",
               "cumulative_regret_with_initial"]
    np.testing.assert_allclose(runs[columns].to_numpy(), np.asarray(expected), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(runs.normalised_recommended_regret, runs.recommended_regret / r0, rtol=1e-12)
    assert runs.recommended_regret.nunique() > 1, "the recommendation never changed: the check is weak"


def test_online_warp_replay_measures_regret_on_the_pooled_warp(task):
    """``warp="online"``: the engine fits its own warp on the initial design (and re-fits it), as in
    live use; the metrics still use the table's pooled warp."""
    online = replay_direct(task, "erahbo", 0, 60, warp="online", k_init=2)
    pooled = replay_direct(task, "erahbo", 0, 60, k_init=2)
    assert pooled.engine.warps == [task.warp] and online.engine.warps[0] != task.warp
    initial = np.asarray([v for r in online.engine.records if r.phase == "initial" for v in r.incorporated_values()])
    assert online.engine.warps[0] == fit_warp(initial, bound=online.engine.settings.warp_bound)
    assert len(online.engine.warps) > 1
    runs = pd.DataFrame(runs_rows(online, task))
    np.testing.assert_allclose(runs.cumulative_regret,
                               np.cumsum(task.true_mv.max() - task.true_mv[runs.config_row.to_numpy()]))
    with pytest.raises(ValueError, match="unknown warp='table'"):
        replay_direct(task, "erahbo", 0, 60, warp="table")


def test_method_names():
    assert parse_methods("erahbo, rahbo-k2,rahbo-k20,gp-ucb,erahbo-exp") == [
        "erahbo", "rahbo-k2", "rahbo-k20", "gp-ucb", "erahbo-exp"]
    assert method_settings("rahbo-k5", 100, 0).k_min == 5 and method_settings("gp-ucb", 100, 0).alpha == 0.0
    assert method_settings("erahbo-exp", 100, 0).beta_stop_schedule == "exponential"
    for bad in ("bohb", "rahbo-k1", "rahbo-kx", ""):
        with pytest.raises(ValueError, match="method|rahbo|empty"):
            parse_methods(bad)


def test_bad_replay_inputs(task):
    few_seeds = ReplayTask("few", task.points, task.returns[:, :10])
    with pytest.raises(ValueError, match="few.*10 seeds.*k_max=20"):
        replay_direct(few_seeds, "erahbo", 0, 50)
    with pytest.raises(ValueError, match="budget=1"):
        replay_direct(task, "erahbo", 0, 1)


def test_a_replay_of_a_table_uses_the_tables_own_warp_and_true_mv(tmp_path):
    """One route to the pooled warp and the true MV: the table computes them, the replay reuses them."""
    from tune_risk.offline.table import OfflineTable
    from tune_risk.risk.warping import warp_values

    rng = np.random.default_rng(0)
    returns = rng.normal(size=(12, 6)) * rng.uniform(0.5, 2.0, size=(12, 1))
    table = OfflineTable.from_arrays(pd.DataFrame({"x0": np.linspace(0, 1, 12)}), returns, name="t")
    task = ReplayTask.from_table(table)
    assert task.warp is table.warp()  # not fitted a second time
    np.testing.assert_array_equal(task.true_mv, table.true_mv())
    np.testing.assert_array_equal(table.warped(), warp_values(table.returns))  # the same values as before
    rebuilt = ReplayTask("t", task.points, task.returns)  # without a table: fitted here, identically
    np.testing.assert_array_equal(rebuilt.true_mv, task.true_mv)
