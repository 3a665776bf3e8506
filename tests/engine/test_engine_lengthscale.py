"""Lengthscale strategies inside the ERAHBO engine (docs/algorithms.md §3.10) and under Ray Tune."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch

from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE
from tune_risk.gp.models import DTYPE, ConditionedGP
from tune_risk.risk.model import RiskData, RiskHyperparameters, RiskModel
from tune_risk.settings import EngineSettings


def noisy(x, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return float(math.sin(6 * x[0]) + x[1] ** 2 + rng.normal() * (0.1 + 0.5 * x[1]))


def settings(lengthscale: str, **overrides) -> EngineSettings:
    base = dict(budget=40, k_min=2, k_max=6, lengthscale=lengthscale, seed=1, raw_samples=64, num_restarts=2)
    return EngineSettings.for_method("erahbo", **{**base, **overrides})


def round_closed(engine: Engine, t: int) -> bool:
    return any(r.phase == "bo" and r.round == t and not r.running for r in engine.records)


def drive(engine: Engine, stop_at_round: int | None = None) -> Engine:
    """Run to completion, or until round ``stop_at_round`` has stopped sampling (0: hyperparameters fitted)."""
    while True:
        if stop_at_round == 0 and engine.hyperparameters is not None:
            return engine
        if stop_at_round and round_closed(engine, stop_at_round) and not engine.in_flight_runs():
            return engine
        request = engine.ask()
        if request is DONE:
            return engine
        engine.tell(request.run_id, noisy(request.x, request.seed))


@pytest.mark.parametrize("name", ["oscbo", "oscbo-l1", "a-gp-ucb", "lb-gp-ucb"])
def test_strategies_run_in_the_engine_and_set_the_mean_gp(name):
    engine = drive(Engine(settings(name), dim=2))
    adapter = engine.lengthscale_adapter
    assert adapter is not None and engine.rounds >= 5
    rounds_with_data = sum(1 for r in engine.records if r.phase == "bo" and engine.has_data(r))
    assert len(adapter.diagnostics) == rounds_with_data
    mean_hp = engine.hyperparameters.mean_gp
    assert mean_hp.kernel == "matern52" and mean_hp.constant == 0.0
    assert len(set(mean_hp.lengthscale)) == 1  # isotropic
    assert list(mean_hp.lengthscale[:1]) == adapter.played[str(engine.rounds)]
    # G_var is ERAHBO's own fit (same initial design as the MLL engine), changed only with the warp
    reference = drive(Engine(settings("mll"), dim=2), stop_at_round=0)
    assert engine.snapshots[0].hyperparameters.variance_gp == reference.hyperparameters.variance_gp
    for before, after in zip(engine.snapshots, engine.snapshots[1:], strict=False):
        if before.warp_index == after.warp_index:
            assert before.hyperparameters.variance_gp == after.hyperparameters.variance_gp


def test_oscbo_feedback_is_the_heteroscedastic_residual_of_the_played_theta():
    engine = drive(Engine(settings("oscbo"), dim=2), stop_at_round=4)
    adapter = engine.lengthscale_adapter
    record = [r for r in engine.records if r.phase == "bo" and r.round == 4][0]
    records = [r for r in engine.records if engine.has_data(r) and r.config_id <= record.config_id]
    snapshot = engine.snapshot_of(record)  # the round's model: G_var, standardisation, warp
    rows = engine.data_rows(records, snapshot)
    hp = snapshot.hyperparameters
    full = RiskModel(RiskData.from_rows(rows, engine.dim), hp, engine.settings, snapshot.rho_bar_sq)
    played = adapter._mean_hyperparameters(hp, adapter.played["4"], engine.dim)
    assert played == hp.mean_gp, "round 4 was not decided with the lengthscale played for it"
    prev = RiskModel(RiskData.from_rows(rows[:-1], engine.dim), RiskHyperparameters(hp.variance_gp, played),
                     engine.settings, snapshot.rho_bar_sq)
    mu, sd = prev.mean_gp.predict(torch.tensor([record.x], dtype=DTYPE))
    gp: ConditionedGP = prev.mean_gp
    m_hat = (rows[-1][1] - gp.y_mean) / gp.y_std
    sigma_hat = float(full.mean_gp.noise[-1])
    z = (m_hat - (float(mu[0]) - gp.y_mean) / gp.y_std) / math.sqrt(sigma_hat + (float(sd[0]) / gp.y_std) ** 2)
    last = adapter.diagnostics[-1]
    assert last["t"] == 4 and last["z"] == pytest.approx(z, abs=1e-10)
    assert last["calibration"] == pytest.approx(z**2 / engine.settings.kappa_acq**2 - 1.0, abs=1e-10)
    assert adapter.strategy.game.config.T == 40 // 2 and adapter.beta == pytest.approx(2.5)


def test_restore_mid_run_continues_exactly():
    full = drive(Engine(settings("oscbo", seed=4), dim=2))
    half = drive(Engine(settings("oscbo", seed=4), dim=2), stop_at_round=3)
    restored = Engine.from_state_dict(pickle.loads(pickle.dumps(half.state_dict())))
    assert restored.state_dict() == half.state_dict()
    drive(restored)
    assert restored.state_dict() == full.state_dict()


def test_oscbo_options_reach_the_game_and_the_default_lambda_balances_the_nlml():
    engine = drive(Engine(settings("oscbo-l1", oscbo_lambda_init=0.7, oscbo_omega=0.05, oscbo_form="literal"),
                          dim=2), stop_at_round=0)
    game = engine.lengthscale_adapter.strategy.game
    assert (game.config.lambda_init, game.config.omega, game.config.form, game.config.p) == (0.7, 0.05, "literal", 1)
    assert game.lam == 0.7 and len(game.history) == engine.settings.n_initial  # literal: D_0 rows are rounds
    default = drive(Engine(settings("oscbo"), dim=2), stop_at_round=0)
    adapter = default.lengthscale_adapter
    noise = adapter.game_data(default).noise  # Sigma_hat of the initial design, standardised units
    expected = default.settings.kappa_acq ** 2 * float((1.0 / torch.log1p(1.0 / noise)).mean())
    assert adapter.strategy.game.lam == pytest.approx(expected, rel=1e-12)
    assert adapter.strategy.game.config.lambda_init is None and adapter.strategy.game.config.omega == 0.001


def test_oscbo_options_are_validated():
    with pytest.raises(ValueError, match="oscbo_omega set the OSCBO game, which runs only with"):
        settings("mll", oscbo_omega=0.1)
    with pytest.raises(ValueError, match=r"oscbo_lambda_init must be > 0, got oscbo_lambda_init=-1"):
        settings("oscbo", oscbo_lambda_init=-1.0)
    with pytest.raises(ValueError, match="unknown oscbo_form='bogus'"):
        settings("oscbo", oscbo_form="bogus")
    from tune_risk import RiskAwareSearch

    RiskAwareSearch(lengthscale="oscbo", oscbo_lambda_init=1.0, oscbo_omega=0.1, oscbo_form="literal")
    with pytest.raises(ValueError, match="RiskAwareSearch: oscbo_lambda_init set the OSCBO game"):
        RiskAwareSearch(lengthscale="a-gp-ucb", oscbo_lambda_init=1.0)


def test_unknown_lengthscale_is_rejected():
    with pytest.raises(ValueError, match="lengthscale"):
        EngineSettings(lengthscale="bogus")


def test_risk_aware_search_with_oscbo_under_tune(ray_session, tmp_path):
    from ray import tune

    from tests.tune.trainables import make_noisy_trainable
    from tune_risk import ReplicateScheduler, RiskAwareSearch

    searcher = RiskAwareSearch(random_state_seed=5, k_max=4, n_initial=3, lengthscale="oscbo",
                               max_active_configs=1, raw_samples=64, num_restarts=2)
    tuner = tune.Tuner(
        make_noisy_trainable(iterations=1),
        param_space={"x": tune.uniform(0.0, 1.0), "opt": tune.choice(["a", "b"])},
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), metric="return",
                                    mode="max", num_samples=22, max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0, name="oscbo"),
    )
    results = tuner.fit()
    engine = searcher.engine
    assert len(results) == 22 and not results.errors
    assert engine.settings.lengthscale == "oscbo" and engine.rounds >= 2
    assert len(engine.lengthscale_adapter.diagnostics) >= 1
    assert searcher.best_config is not None
