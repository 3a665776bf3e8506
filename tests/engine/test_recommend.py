"""``Engine.recommend()``: the paper's ``argmax LCB^MV`` and the evidence-based ``posterior`` rule (A-21)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tune_risk.engine.core import Engine
from tune_risk.offline.replay import ReplayTask, replay_direct
from tune_risk.offline.table import OfflineTable
from tune_risk.settings import EngineSettings

TABLE = Path(__file__).resolve().parents[2] / "datasets" / "dqn_acrobot.parquet"


@pytest.fixture(scope="module")
def engines():
    task = ReplayTask.from_table(OfflineTable.load(TABLE), test_seeds=20)
    return {rule: replay_direct(task, "tune-risk", 1, 150, warp="online", recommend=rule).engine
            for rule in ("lcb", "posterior")}


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


def test_lcb_rule_is_the_papers_argmax_lcb(engines):
    engine = engines["lcb"]
    records = [r for r in engine.records if engine.has_data(r)]
    lcb = engine.risk_model().lcb_mv(Engine.x_tensor(records), engine.settings.kappa_acq).detach().numpy()
    assert records.index(engine.recommend()) == int(np.argmax(lcb))


def test_same_search_whatever_the_rule(engines):
    """The rule only reports: both engines evaluated the same configurations with the same seeds."""
    a, b = engines["lcb"], engines["posterior"]
    assert [(r.pool_index, r.n_incorporated) for r in a.records] == [(r.pool_index, r.n_incorporated) for r in b.records]


def test_a_bad_rule_names_the_field_and_its_choices():
    with pytest.raises(ValueError, match="recommend.*'lcb', 'posterior'"):
        EngineSettings(recommend="argmax")


def test_the_logged_recommendation_sees_the_intensification_seeds():
    """Seeds added after the last round (intensification) reach the recommendation that runs.csv reports."""
    task = ReplayTask.from_table(OfflineTable.load(TABLE), test_seeds=20)
    for repeat in range(4):  # in repeat 2 the intensification seeds change the pick
        engine = replay_direct(task, "tune-risk", repeat, 150, warp="online").engine
        assert engine.intensification_runs > 0
        assert engine.recommendations[-1][1] == engine.recommend().config_id, repeat
