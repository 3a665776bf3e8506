"""docs/algorithms.md §5 items 23, 25, 26: the OMD dual, the play/recovery latch and the threshold M;
plus the game's exact state round trip."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oscbo_helpers import make_data

from tune_risk.oscbo import (
    NOISE,
    FixedGP,
    GameData,
    OSCBOConfig,
    OSCBOGame,
    negative_log_marginal_likelihood,
    nlml_balanced_lambda,
    omd_step,
    round_losses,
    threshold_M,
)

N0 = 5


def play_rounds(game: OSCBOGame, X: torch.Tensor, y: torch.Tensor, rounds: range, scale: float = 1.0) -> None:
    """Run the game on rows ``rounds`` of (X, y): predict with the played theta, observe row t."""
    for row in rounds:
        theta = game.begin_round()
        mu, s2 = FixedGP(X[:row], y[:row], theta).predict(X[row:row + 1])
        y_row = scale * float(y[row])
        losses = round_losses(y_row, float(mu), float(s2), 0.01, game.config.beta, game.config.p)
        y_obs = y[: row + 1].clone()
        y_obs[row] = y_row
        game.observe(losses, row, GameData(X[: row + 1], y_obs, 0.01, list(range(row + 1))))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1.0, 200.0, allow_nan=False), min_size=1, max_size=60),
    st.floats(0.01, 3.0), st.sampled_from([1.0 / 0.31622776601683794, 1.0]),
)
def test_item23_dual_stays_in_domain(calibrations, lam0, upper):
    lam = min(lam0, upper)
    for lc in calibrations:
        new = omd_step(lam, lc, 0.001, upper)
        assert 0.0 < new <= upper
        if new < upper and abs(lc) > 1e-9:  # below that exp(omega L^c) rounds to 1
            assert (new > lam) == (lc > 0)
        assert (new <= lam) if lc <= 0 else (new >= lam)
        lam = new


def test_item23_constant_negative_feedback_decays_exponentially():
    lam, omega, c = 1.0, 0.001, 0.5
    for t in range(1, 101):
        lam = omd_step(lam, -c, omega, 3.0)
        assert abs(lam - math.exp(-omega * c * t)) < 1e-12


def test_item26_threshold_values():
    one = dict(lambda_init=1.0)  # the table of docs/algorithms.md §3.6 is for lambda_1 = 1
    assert OSCBOConfig(**one).threshold() == pytest.approx(7646.3, abs=0.05)
    assert OSCBOConfig(T_for_rho=150, **one).threshold() == pytest.approx(9998.5, abs=0.05)
    assert OSCBOConfig(omega=0.1, **one).threshold() == pytest.approx(3067.4, abs=0.05)
    assert OSCBOConfig(ard=True, **one).threshold(dim_theta=5) == pytest.approx(9658.9, abs=0.05)
    # the default lambda_1 = 2/log(101) enters R^D_T: Lambda log(Lambda/lambda_1) grows, M with it
    assert OSCBOConfig().threshold() == pytest.approx(14216.3, abs=0.05)
    assert OSCBOConfig().threshold(lambda_init=1.0) == OSCBOConfig(**one).threshold()
    assert OSCBOConfig().rho_tilde == pytest.approx(0.3162, abs=1e-4)
    assert OSCBOConfig(M_override=3.0).threshold() == 3.0
    assert threshold_M(100, 0.5 ** 0) > 0


def test_item25_latch_switches_once_and_resets_the_rms():
    X, y = make_data(n=20, d=2, seed=5)
    config = OSCBOConfig(T=15, M_override=100.0, seed=3)  # forces a switch after a few violations
    game = OSCBOGame(config, dim=2)
    game.start(GameData(X[:N0], y[:N0], 0.01, list(range(N0))))
    vs = [game.V]
    play_rounds(game, X, y, range(N0, 20), scale=6.0)  # inflated residuals: violations
    vs += [d["V"] for d in game.diagnostics]
    lcs = [d["calibration"] for d in game.diagnostics]
    assert np.allclose(np.diff(vs), lcs, atol=1e-12)  # V_{t+1} = V_t + L^c_t (as played)
    phases = [d["phase"] for d in game.diagnostics]
    assert RECOVERY in phases and phases.count(RECOVERY) == len(phases) - phases.index(RECOVERY)
    switch = game.switched_at
    assert 1 < switch < 15  # mid-run, so the restart of the history is visible
    # switched at the first t with V_t > (T - t) rho + M - 1
    for t, v_before in enumerate(vs[:-1], start=1):
        fires = v_before > (config.T - t) * config.rho_tilde + config.threshold() - 1
        if t < switch:
            assert not fires
        if t == switch:
            assert fires
    assert game.Lambda == 1.0
    after = [d for d in game.diagnostics if d["t"] >= switch]
    assert all(d["lambda"] <= 1.0 and d["lambda_next"] <= 1.0 for d in after)
    assert [key for key, _ in game.history] == [N0 + d["t"] - 1 for d in after]  # history restarted
    # the default M is inactive at T = 100 for the same feedback
    default = OSCBOGame(OSCBOConfig(T=15, seed=3), dim=2)
    default.start(GameData(X[:N0], y[:N0], 0.01, list(range(N0))))
    play_rounds(default, X, y, range(N0, 20), scale=6.0)
    assert default.phase == PLAY and default.switched_at is None


def test_game_first_play_is_mll_and_state_round_trip_is_exact():
    X, y = make_data(n=18, d=3, seed=7)
    game = OSCBOGame(OSCBOConfig(T=13, seed=11, p=1), dim=3)
    theta0 = game.start(GameData(X[:N0], y[:N0], 0.01, list(range(N0))))
    assert 0.025 <= theta0[0] <= 10.0
    play_rounds(game, X, y, range(N0, 11))
    state = pickle.loads(pickle.dumps(game.state_dict()))
    restored = OSCBOGame.from_state_dict(state)
    play_rounds(game, X, y, range(11, 18))
    play_rounds(restored, X, y, range(11, 18))
    assert restored.state_dict() == game.state_dict()
    assert all(0.025 <= d["theta_next"][0] <= 10 for d in game.diagnostics)
    assert all(d["objective_best"] <= d["objective_start"] for d in game.diagnostics)
    assert game.diagnostics[-1]["coverage"] == np.mean([d["covered"] for d in game.diagnostics])
    # the coverage gap is taken against the paper's calibration level 1 - delta (eq. 3, delta = 0.1)
    assert game.diagnostics[-1]["coverage_gap"] == pytest.approx(abs(game.diagnostics[-1]["coverage"] - 0.9))


def test_literal_form_counts_initial_rows():
    X, y = make_data(n=8, d=2, seed=1)
    game = OSCBOGame(OSCBOConfig(form="literal", lambda_init=0.7), dim=2)
    game.start(GameData(X[:N0], y[:N0], 0.01, list(range(N0))), theta=0.4)
    assert game.history == [[k, 0.7] for k in range(N0)]
    assert game.theta == (0.4,)


def test_config_validation():
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        OSCBOConfig(p=3)
    with pytest.raises(ValueError, match="form"):
        OSCBOConfig(form="other")
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="lambda_init must be a finite number > 0"):
            OSCBOConfig(lambda_init=bad)
    with pytest.raises(ValueError, match="omega must be > 0, got omega=0"):
        OSCBOConfig(omega=0)
    with pytest.raises(ValueError, match="noise must be > 0"):
        nlml_balanced_lambda(2.0, 0.0)


def test_default_lambda_init_makes_the_p2_objective_affine_in_the_nlml():
    """lambda_1 = beta/log(1 + sigma^-2) (O-10): J of S5 with p = 2 is an affine function of the NLML with
    slope 2/log(1 + sigma^-2), so the game's first FTPL objective has the MLL minimiser (issue #20)."""
    X, y = make_data(n=12, d=2, seed=3)
    game = OSCBOGame(OSCBOConfig(form="literal"), dim=2)  # every row a round played with lambda_1
    game.start(GameData(X, y, NOISE, list(range(12))), theta=0.5)
    c = math.log1p(1.0 / NOISE)
    assert game.lam == game.lambda_init == 2.0 / c == pytest.approx(0.43336, abs=1e-5)
    J = game.objective(GameData(X, y, NOISE, list(range(12))))
    thetas = [0.05, 0.1, 0.3, 0.7, 2.0, 6.0]
    js = np.array([float(J(torch.tensor([t], dtype=torch.float64))) for t in thetas])
    nlml = np.array([float(negative_log_marginal_likelihood(t, X, y, NOISE)) for t in thetas])
    slope, intercept = np.polyfit(nlml, js, 1)
    assert abs(slope - 2.0 / c) < 1e-10 and np.max(np.abs(js - (slope * nlml + intercept))) < 1e-9
    assert game.threshold == OSCBOConfig().threshold()
    restored = OSCBOGame.from_state_dict(pickle.loads(pickle.dumps(game.state_dict())))
    assert restored.lambda_init == game.lambda_init and restored.lam == game.lam
    # an explicit lambda_init wins; per-point noise averages the weights 1/log(1 + 1/sigma_j^2) (§3.10)
    explicit = OSCBOGame(OSCBOConfig(lambda_init=1.0), dim=2)
    explicit.start(GameData(X[:N0], y[:N0], NOISE, list(range(N0))), theta=0.5)
    assert explicit.lam == 1.0
    noise = torch.tensor([0.01, 0.1, 0.5], dtype=torch.float64)
    expected = 2.5 * float(np.mean([1.0 / math.log1p(1.0 / v) for v in (0.01, 0.1, 0.5)]))
    assert nlml_balanced_lambda(2.5, noise) == pytest.approx(expected, rel=1e-14)
    assert nlml_balanced_lambda(2.5, torch.full((4,), 0.01, dtype=torch.float64)) == pytest.approx(2.5 / c, rel=1e-14)


PLAY, RECOVERY = "play", "recovery"
