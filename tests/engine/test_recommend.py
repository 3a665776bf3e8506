"""``Engine.recommend()``: the paper's ``argmax LCB^MV``, the ``posterior`` rule and the ``evidence`` rule (A-21)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tune_risk.engine.core import Engine
from tune_risk.engine.records import sample_mv_lower_bound
from tune_risk.offline.replay import ReplayTask, replay_direct
from tune_risk.offline.table import OfflineTable
from tune_risk.settings import EngineSettings

TABLE = Path(__file__).resolve().parents[2] / "datasets" / "dqn_acrobot.parquet"


@pytest.fixture(scope="module")
def engines():
    task = ReplayTask.from_table(OfflineTable.load(TABLE), test_seeds=20)
    return {rule: replay_direct(task, "tune-risk", 1, 150, warp="online", recommend=rule).engine
            for rule in ("lcb", "posterior", "evidence")}


def test_posterior_rule_deploys_the_best_posterior_mv_among_configurations_with_enough_seeds(engines):
    engine = engines["posterior"]
    records = [r for r in engine.records if engine.has_data(r)]
    seeds = np.array([r.n_incorporated for r in records])
    needed = min(math.ceil(engine.settings.k_max / 2), seeds.max())
    model = engine.risk_model()
    mu_f, _, mu_var, _ = (t.detach().numpy() for t in model.predict(Engine.x_tensor(records)))
    mv = mu_f - engine.settings.alpha * np.maximum(mu_var, 0.0)
    chosen = engine.recommend()
    assert chosen.n_incorporated >= needed
    assert mv[records.index(chosen)] == pytest.approx(mv[seeds >= needed].max())
    assert (seeds < needed).any()  # the rule had configurations to leave out


def test_evidence_rule_deploys_the_best_own_seed_lower_bound_among_configurations_with_enough_seeds(engines):
    engine = engines["evidence"]
    records = [r for r in engine.records if engine.has_data(r)]
    seeds = np.array([r.n_incorporated for r in records])
    needed = min(math.ceil(engine.settings.k_max / 2), seeds.max())
    alpha = engine.settings.alpha
    bound = np.array([(lambda y: y.mean() - np.sqrt(y.var(ddof=1) / y.size)
                       - alpha * y.var(ddof=1) * (1 + np.sqrt(2 / (y.size - 1))))(
        np.asarray(engine.warp(np.asarray(r.incorporated_values())))) for r in records])
    chosen = engine.recommend()
    assert chosen.n_incorporated >= needed and (seeds < needed).any()
    assert bound[records.index(chosen)] == pytest.approx(bound[seeds >= needed].max())


def test_sample_mv_lower_bound_subtracts_one_standard_error_of_mean_and_variance():
    y = np.array([0.1, 0.4, 0.2, 0.5])
    k, m, v = 4, y.mean(), y.var(ddof=1)
    assert sample_mv_lower_bound(y, 2.0) == pytest.approx(m - np.sqrt(v / k) - 2.0 * (v + v * np.sqrt(2 / (k - 1))))


def test_evidence_rule_does_not_deploy_a_configuration_that_never_learns_where_lcb_does():
    """dqn_acrobot, budget 300, repeat 6: argmax LCB^MV is a configuration with -500 on each of its 20 seeds
    (zero spread, the table's worst return), while a configuration that learns on some seeds has a higher
    true MV; its own seeds show it, the nearly constant G_f does not."""
    task = ReplayTask.from_table(OfflineTable.load(TABLE), test_seeds=20)
    picks = {rule: replay_direct(task, "tune-risk", 6, 300, warp="online", recommend=rule).engine.recommend()
             for rule in ("lcb", "evidence")}
    assert np.ptp(picks["lcb"].incorporated_values()) == 0.0 and picks["lcb"].n_incorporated == 20
    assert task.true_mv[picks["evidence"].pool_index] > task.true_mv[picks["lcb"].pool_index] + 0.05


def test_lcb_rule_is_the_papers_argmax_lcb(engines):
    engine = engines["lcb"]
    records = [r for r in engine.records if engine.has_data(r)]
    lcb = engine.risk_model().lcb_mv(Engine.x_tensor(records), engine.settings.kappa_acq).detach().numpy()
    assert records.index(engine.recommend()) == int(np.argmax(lcb))


def test_same_search_whatever_the_rule(engines):
    """The rule only reports: both engines evaluated the same configurations with the same seeds."""
    a, b, c = engines["lcb"], engines["posterior"], engines["evidence"]
    assert [(r.pool_index, r.n_incorporated) for r in a.records] == [(r.pool_index, r.n_incorporated) for r in c.records]
    assert [(r.pool_index, r.n_incorporated) for r in a.records] == [(r.pool_index, r.n_incorporated) for r in b.records]


def test_a_bad_rule_names_the_field_and_its_choices():
    with pytest.raises(ValueError, match="recommend.*'lcb', 'posterior', 'evidence'"):
        EngineSettings(recommend="argmax")


def test_the_logged_recommendation_sees_the_intensification_seeds():
    """Seeds added after the last round (intensification) reach the recommendation that runs.csv reports."""
    task = ReplayTask.from_table(OfflineTable.load(TABLE), test_seeds=20)
    for repeat in range(4):  # in repeat 2 the intensification seeds change the pick
        engine = replay_direct(task, "tune-risk", repeat, 150, warp="online").engine
        assert engine.intensification_runs > 0
        assert engine.recommendations[-1][1] == engine.recommend().config_id, repeat
