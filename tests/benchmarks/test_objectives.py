"""Tests for tune_risk.benchmarks.objectives: synthetic heteroscedastic objectives with known f and ρ² (ERAHBO eqs. 1–5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from tune_risk.benchmarks.objectives import (
    BRANIN_LOWER,
    BRANIN_MAXIMISERS,
    BRANIN_WIDTH,
    OBJECTIVES,
    HeteroscedasticObjective,
    get_objective,
    hartmann_maximiser,
    make_branin,
    make_pool_table,
    make_sine,
    replicate_noise,
)

N_SEEDS = 3000
# With N iid replicates the sample mean has sd ρ/√N and the sample variance has sd ≈ ρ²·√(2/(N−1))
# (Gaussian noise).  The seeds are fixed, so the test is deterministic; 4.5 sd is the stated tolerance.
Z_TOL = 4.5


def probe_points(objective: HeteroscedasticObjective) -> np.ndarray:
    """Points covering low- and high-noise regions of each objective."""
    if objective.name == "sine":
        return np.array([[0.125], [0.4], [0.5], [0.625], [0.9]])
    if objective.name == "branin":
        return np.vstack([(BRANIN_MAXIMISERS - BRANIN_LOWER) / BRANIN_WIDTH, [[0.5, 0.5], [0.05, 0.02]]])
    x_star = hartmann_maximiser(objective.dim)
    return np.vstack([x_star, np.full(objective.dim, 0.9), np.full(objective.dim, 0.05), 0.5 * (x_star + 0.5)])


def test_registry():
    assert OBJECTIVES == ("sine", "branin", "hartmann3", "hartmann6")
    assert [get_objective(n).dim for n in OBJECTIVES] == [1, 2, 3, 6]
    assert [get_objective(n).name for n in OBJECTIVES] == list(OBJECTIVES)
    with pytest.raises(ValueError, match="unknown objective 'rosenbrock'") as info:
        get_objective("rosenbrock")
    assert all(name in str(info.value) for name in OBJECTIVES)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_shapes_and_mv(name):
    objective = get_objective(name)
    x = np.random.default_rng(0).random((7, objective.dim))
    for values in (objective.mean(x), objective.variance(x), objective.mv(x), objective.noise_std(x)):
        assert values.shape == (7,) and np.all(np.isfinite(values))
    assert np.all(objective.variance(x) > 0)
    np.testing.assert_allclose(objective.variance(x), objective.noise_std(x) ** 2)
    np.testing.assert_allclose(objective.mv(x, 2.5), objective.mean(x) - 2.5 * objective.variance(x))
    np.testing.assert_allclose(objective.mv(x), objective.mean(x) - objective.variance(x))
    assert isinstance(objective.sample(x[0], 3), float)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_input_validation(name):
    objective = get_objective(name)
    d = objective.dim
    with pytest.raises(ValueError, match="shape"):
        objective.mean(np.zeros(d + 1))
    with pytest.raises(ValueError, match="shape"):
        objective.mean(np.zeros((2, d + 1)))
    with pytest.raises(ValueError, match="unit cube"):
        objective.variance(np.full((1, d), 1.5))
    with pytest.raises(ValueError, match="unit cube"):
        objective.mean(np.full((1, d), np.nan))
    with pytest.raises(ValueError, match="shape"):
        objective.sample(np.zeros((1, d)), 0)
    with pytest.raises(ValueError, match="seed"):
        objective.sample(np.zeros(d), -1)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_sample_moments_match_mean_and_variance(name):
    objective = get_objective(name)
    x = probe_points(objective)
    y = objective.sample_batch(x, range(N_SEEDS))
    rho2 = objective.variance(x)
    mean_err = np.abs(y.mean(axis=1) - objective.mean(x)) / np.sqrt(rho2 / N_SEEDS)
    var_err = np.abs(y.var(axis=1, ddof=1) - rho2) / (rho2 * math.sqrt(2.0 / (N_SEEDS - 1)))
    assert mean_err.max() < Z_TOL and var_err.max() < Z_TOL


@pytest.mark.parametrize("name", OBJECTIVES)
def test_sample_is_deterministic_and_matches_batch(name):
    objective = get_objective(name)
    x = probe_points(objective)
    batch = objective.sample_batch(x, [0, 5, 17])
    for i in range(x.shape[0]):
        for j, seed in enumerate([0, 5, 17]):
            assert objective.sample(x[i], seed) == pytest.approx(batch[i, j], abs=1e-12)
    assert objective.sample(x[0], 11) == objective.sample(x[0].copy(), 11)
    assert objective.sample(x[0], 11) != objective.sample(x[0], 12)


def test_common_seeds_give_common_noise():
    objective = get_objective("hartmann3")
    x = np.random.default_rng(1).random((5, 3))
    for seed in (0, 1, 2**40):
        z = np.array([(objective.sample(p, seed) - objective.mean(p[None])[0]) / objective.noise_std(p[None])[0] for p in x])
        np.testing.assert_allclose(z, replicate_noise(seed), atol=1e-12)


def test_replicate_noise_is_standard_normal_and_validated():
    z = np.array([replicate_noise(s) for s in range(N_SEEDS)])
    assert abs(z.mean()) < Z_TOL / math.sqrt(N_SEEDS)
    assert abs(z.var(ddof=1) - 1.0) < Z_TOL * math.sqrt(2.0 / (N_SEEDS - 1))
    assert replicate_noise(np.int64(4)) == replicate_noise(4)
    for bad in (-1, 2**64, 1.5, True, "3"):
        with pytest.raises(ValueError, match="seed"):
            replicate_noise(bad)


def test_sine_definition():
    objective = make_sine()
    u = np.array([[0.125], [0.625], [0.375]])
    np.testing.assert_allclose(objective.mean(u), [1.0, 1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(objective.noise_std(u), [0.1 + expit(-22.5), 0.1 + expit(7.5), 0.1 + expit(-7.5)])
    assert make_sine(2.0).noise_std(np.array([[1.0]]))[0] == pytest.approx(0.1 + 2.0 * expit(30.0))


def test_branin_definition():
    objective = make_branin()
    u = (BRANIN_MAXIMISERS - BRANIN_LOWER) / BRANIN_WIDTH
    np.testing.assert_allclose(objective.mean(u), -0.397887, atol=1e-5)
    expected_std = [(expit(2 * (x0 - 3.2)) + 0.2) * (expit(2 * x1) + 0.2) for x0, x1 in BRANIN_MAXIMISERS]
    np.testing.assert_allclose(objective.noise_std(u), expected_std, rtol=1e-12)
    np.testing.assert_allclose(objective.variance(u), [2.0493, 0.6368, 0.0576], atol=1e-4)
    # Branin(x) = 10 + 10(1 - t) cos(x1) + (x2 - b x1^2 + c x1 - r)^2 at the corner (-5, 0)
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    corner = (0 - b * 25 - 5 * c - 6) ** 2 + 10 * (1 - t) * math.cos(-5) + 10
    assert objective.mean(np.zeros((1, 2)))[0] == pytest.approx(-corner, rel=1e-12)


@pytest.mark.parametrize("dim,f_star", [(3, 3.86278), (6, 3.32237)])
def test_hartmann_definition(dim, f_star):
    objective = get_objective(f"hartmann{dim}")
    x_star = hartmann_maximiser(dim)[None]
    assert objective.mean(x_star)[0] == pytest.approx(f_star, abs=1e-5)
    assert objective.variance(x_star)[0] == pytest.approx(1.01, abs=1e-12)
    assert objective.variance(np.full((1, dim), 1.0))[0] < 0.02
    x = np.random.default_rng(2).random((4096, dim))
    assert objective.mean(x).max() < f_star
    with pytest.raises(ValueError, match="dim"):
        hartmann_maximiser(4)


def test_sine_tied_mean_maxima_differ_in_mv():
    objective = get_objective("sine")
    grid = np.linspace(0.0, 1.0, 2001)[:, None]
    mean, mv = objective.mean(grid), objective.mv(grid)
    top = np.flatnonzero(mean >= mean.max() - 1e-12)
    np.testing.assert_allclose(grid[top, 0], [0.125, 0.625])
    assert grid[np.argmax(mv), 0] == pytest.approx(0.125, abs=1e-3)
    assert mv[top].max() - mv[top].min() > 1.0


def test_branin_mv_prefers_least_noisy_maximiser():
    objective = get_objective("branin")
    axis = np.linspace(0.0, 1.0, 301)
    grid = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    mean, mv = objective.mean(grid), objective.mv(grid)
    maximisers = (BRANIN_MAXIMISERS - BRANIN_LOWER) / BRANIN_WIDTH
    nearest = np.argmin(np.linalg.norm(grid[np.argmax(mv)] - maximisers, axis=1))
    assert nearest == 2  # C = (-pi, 12.275)
    near_a = np.linalg.norm(grid - maximisers[0], axis=1) < 0.02
    assert mean[near_a].max() > mean.max() - 0.05  # A is as good in mean ...
    assert mv[near_a].max() < mv.max() - 1.0  # ... but far worse in MV


def test_hartmann3_argmax_mean_is_not_argmax_mv():
    objective = get_objective("hartmann3")
    axis = np.linspace(0.0, 1.0, 31)
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3)
    mean, mv = objective.mean(grid), objective.mv(grid)
    best_mean, best_mv = grid[np.argmax(mean)], grid[np.argmax(mv)]
    assert np.linalg.norm(best_mean - hartmann_maximiser(3)) < 0.05
    assert np.linalg.norm(best_mean - best_mv) > 0.4
    assert mv.max() - mv[np.argmax(mean)] > 0.5
    assert mean.max() - mean[np.argmax(mv)] > 0.1


def test_hartmann6_argmax_mean_is_not_argmax_mv():
    objective = get_objective("hartmann6")
    second = np.array([[0.40465, 0.88244, 0.84610, 0.57399, 0.13893, 0.03850]])  # second local maximum
    x_star = hartmann_maximiser(6)[None]
    points = np.vstack([x_star, second, np.random.default_rng(3).random((8192, 6))])
    mean, mv = objective.mean(points), objective.mv(points)
    assert np.argmax(mean) == 0 and np.argmax(mv) == 1
    assert mv[1] - mv[0] > 0.5


def test_raw_scales_documented():
    sine, branin = get_objective("sine"), get_objective("branin")
    grid = np.linspace(0, 1, 1001)[:, None]
    assert sine.variance(grid).min() == pytest.approx(0.01, abs=1e-6)
    assert sine.variance(grid).max() == pytest.approx(1.21, abs=1e-6)
    axis = np.linspace(0, 1, 201)
    grid2 = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    assert branin.mean(grid2).min() == pytest.approx(-308.13, abs=0.01)
    assert branin.variance(grid2).max() < 1.2**4


def test_make_pool_table():
    objective = get_objective("branin")
    x, y = make_pool_table(objective, 64, 7, seed=4)
    assert x.shape == (64, 2) and y.shape == (64, 7)
    assert x.min() >= 0.0 and x.max() <= 1.0 and np.unique(x, axis=0).shape[0] == 64
    for i in (0, 13, 63):
        for j in (0, 6):
            assert y[i, j] == pytest.approx(objective.sample(x[i], j), abs=1e-12)
    x_again, y_again = make_pool_table(objective, 64, 7, seed=4)
    np.testing.assert_array_equal(x, x_again)
    np.testing.assert_array_equal(y, y_again)
    x_other, _ = make_pool_table(objective, 64, 7, seed=5)
    assert not np.allclose(x, x_other)
    # Sobol balance: with 64 points each half of every axis holds exactly 32 points
    assert all(np.sum(x[:, k] < 0.5) == 32 for k in range(2))
    x_odd, _ = make_pool_table(objective, 10, 2, seed=0)
    assert x_odd.shape == (10, 2)


@pytest.mark.parametrize("n_configs,n_seeds", [(0, 5), (5, 0), (2.5, 5), (True, 3)])
def test_make_pool_table_rejects_bad_sizes(n_configs, n_seeds):
    with pytest.raises(ValueError, match="n_configs|n_seeds"):
        make_pool_table(get_objective("sine"), n_configs, n_seeds, seed=0)
