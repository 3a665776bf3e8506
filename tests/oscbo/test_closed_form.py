"""docs/algorithms.md §5 items 17-22, 24, 27, 28: OSCBO's losses, their closed form and the GP plumbing."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from oscbo_helpers import make_data

import tune_risk.botorch_without_jax  # noqa: F401
from tune_risk.gp.models import DTYPE
from tune_risk.oscbo import (
    NOISE,
    FixedGP,
    calibration_loss,
    closed_form_sums,
    negative_log_marginal_likelihood,
    prequential_factor,
    projected_adam,
    sharpness_loss,
)

N0 = 5  # rows of D_0 in the test data; the others are BO rounds


def per_round(theta, X, y, noise, row, beta=2.0, p=2):
    """(L^s, L^c, z, 2 log L_ii) of row ``row`` from an explicit GP conditioned on the rows before it."""
    noise_vec = torch.as_tensor(noise, dtype=DTYPE).expand(X.shape[0]) if torch.as_tensor(noise).dim() == 0 else noise
    gp = FixedGP(X[:row], y[:row], theta, noise_vec[:row])
    mu, s2 = gp.predict(X[row:row + 1])
    mu, s2, nz = float(mu), float(s2), float(noise_vec[row])
    z = (float(y[row]) - mu) / math.sqrt(s2 + nz)
    return (float(sharpness_loss(s2, nz)), float(calibration_loss(float(y[row]), mu, s2, nz, beta, p)), z,
            math.log(nz + s2))


@pytest.mark.parametrize("theta", [0.1, 0.4, [0.2, 0.5, 1.3]])
def test_item17_prequential_residuals_and_diagonal(data, theta):
    X, y = data
    log_diag, z = prequential_factor(theta, X, y, NOISE)
    for row in range(X.shape[0]):
        _, _, z_row, log_var = per_round(theta, X, y, NOISE, row)
        assert abs(float(z[row]) - z_row) < 1e-10
        assert abs(float(log_diag[row]) - log_var) < 1e-10


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("form", ["prefix", "literal"])
def test_item18_closed_form_equals_sum_of_round_losses(data, p, form):
    X, y = data
    theta, beta = 0.3, 2.0
    rows = list(range(N0, X.shape[0])) if form == "prefix" else list(range(X.shape[0]))
    lambdas = list(np.random.default_rng(1).uniform(0.1, 3.0, len(rows)))
    sharp, calib = closed_form_sums(theta, X, y, NOISE, rows, lambdas, beta, p)
    losses = [per_round(theta, X, y, NOISE, r, beta, p) for r in rows]
    assert abs(float(sharp) - sum(ls for ls, *_ in losses)) < 1e-10
    assert abs(float(calib) - sum(lam * lc for lam, (_, lc, *_) in zip(lambdas, losses, strict=True))) < 1e-10
    if form == "literal":  # the paper's log det form (S12)
        gram = FixedGP(X, y, theta).covariance(X, X) + NOISE * torch.eye(X.shape[0], dtype=DTYPE)
        logdet = float(torch.logdet(gram))
        assert abs(float(sharp) - (logdet - X.shape[0] * math.log(NOISE)) / math.log1p(1 / NOISE)) < 1e-10


def test_item19_botorch_posterior_equals_explicit_formulas(data):
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.input import Normalize
    from gpytorch.kernels import MaternKernel
    from gpytorch.means import ZeroMean

    X, y = data
    Xq = torch.rand(7, X.shape[1], dtype=DTYPE, generator=torch.Generator().manual_seed(3))
    for theta in (0.3, [0.2, 0.6, 1.1]):
        gp = FixedGP(X, y, theta)
        mu, var = gp.predict(Xq)
        post = gp.to_botorch_model().posterior(Xq)
        assert torch.allclose(post.mean.squeeze(-1), mu, atol=1e-10)
        assert torch.allclose(post.variance.squeeze(-1), var, atol=1e-10)
    # the spec's plumbing: raw inputs with Normalize(bounds=...) give the same posterior
    lo, hi = -2.0, 5.0
    bounds = torch.tensor([[lo] * 3, [hi] * 3], dtype=DTYPE)
    kernel = MaternKernel(nu=2.5).to(DTYPE)
    kernel.lengthscale = 0.3
    model = SingleTaskGP(
        lo + (hi - lo) * X, y.unsqueeze(-1), train_Yvar=torch.full((X.shape[0], 1), NOISE, dtype=DTYPE),
        covar_module=kernel, mean_module=ZeroMean(), outcome_transform=None,
        input_transform=Normalize(d=3, bounds=bounds),
    ).eval()
    post = model.posterior(lo + (hi - lo) * Xq)
    mu, var = FixedGP(X, y, 0.3).predict(Xq)
    assert torch.allclose(post.mean.squeeze(-1), mu, atol=1e-10)
    assert torch.allclose(post.variance.squeeze(-1), var, atol=1e-10)
    assert torch.allclose(kernel(X[:1], X[:1]).to_dense(), torch.ones(1, 1, dtype=DTYPE))  # k(x, x) = 1


def test_item20_p2_with_constant_lambda_is_affine_in_nlml(data):
    X, y = data
    beta = 2.0
    c = math.log1p(1 / NOISE)
    lam = beta / c
    rows = list(range(X.shape[0]))

    def J(theta):
        sharp, calib = closed_form_sums(theta, X, y, NOISE, rows, [lam] * len(rows), beta, 2)
        return float(sharp + calib)

    thetas = [0.05, 0.1, 0.3, 0.7, 2.0, 6.0]
    js = np.array([J(t) for t in thetas])
    nlml = np.array([float(negative_log_marginal_likelihood(t, X, y, NOISE)) for t in thetas])
    slope, intercept = np.polyfit(nlml, js, 1)
    assert abs(slope - 2.0 / c) < 1e-10
    assert np.max(np.abs(js - (slope * nlml + intercept))) < 1e-10
    grid = np.exp(np.linspace(np.log(0.025), np.log(10), 200))
    assert grid[np.argmin([J(t) for t in grid])] == grid[np.argmin([float(negative_log_marginal_likelihood(t, X, y, NOISE)) for t in grid])]


def test_item21_sharpness_only_objective_drifts_to_theta_hi(data):
    X, y = data
    rows = list(range(N0, X.shape[0]))

    def sharp_only(theta):
        return closed_form_sums(theta, X, y, NOISE, rows, [0.0] * len(rows), 2.0, 2)[0]

    grid = np.exp(np.linspace(np.log(0.025), np.log(10.0), 40))
    values = np.array([float(sharp_only(t)) for t in grid])
    assert np.all(np.diff(values) < 1e-12)  # log det decreases towards long lengthscales (this instance)
    result = projected_adam(sharp_only, 1.0, lr=0.1, steps=400)
    assert result.theta[0] == pytest.approx(10.0)


def test_item22_gradient_matches_finite_differences_and_oracle_descends(data):
    X, y = data
    rows = list(range(N0, X.shape[0]))
    lambdas = [1.0, 0.5, 2.0, 1.2, 0.9, 1.1, 0.7, 1.3, 1.0][: len(rows)]
    for p in (1, 2):
        def J(theta, p=p):
            sharp, calib = closed_form_sums(theta, X, y, NOISE, rows, lambdas, 2.0, p)
            return sharp + calib - 0.05 * theta.sum()

        theta = torch.tensor([0.35, 0.8, 0.2], dtype=DTYPE, requires_grad=True)
        J(theta).backward()
        h = 1e-6
        for i in range(3):
            e = torch.zeros(3, dtype=DTYPE)
            e[i] = h
            fd = (float(J(theta.detach() + e)) - float(J(theta.detach() - e))) / (2 * h)
            assert abs(float(theta.grad[i]) - fd) < 1e-6 * max(1.0, abs(fd))
        for start in (0.03, 1.0, 9.9):
            result = projected_adam(J, [start] * 3)
            assert result.value <= result.start_value
            assert all(0.025 <= v <= 10.0 for v in result.theta)
            assert result.evaluations == 51
            assert abs(float(J(torch.tensor(result.theta, dtype=DTYPE))) - result.value) < 1e-9


def test_item24_loss_ranges_and_band_equivalence():
    rng = np.random.default_rng(0)
    for _ in range(200):
        s2 = rng.uniform(0, 1)
        noise = rng.choice([0.01, rng.uniform(1e-4, 1.0)])
        assert 0.0 <= float(sharpness_loss(s2, noise)) <= 1.0
        mu, y, beta = rng.normal(), rng.normal(scale=3), rng.uniform(0.5, 4)
        inside = abs(y - mu) <= math.sqrt(beta) * math.sqrt(s2 + noise)
        for p in (1, 2):
            assert (float(calibration_loss(y, mu, s2, noise, beta, p)) <= 0.0) == inside
    # Monte Carlo on a calibrated Gaussian predictive distribution
    beta, s2, noise, n = 2.0, 0.3, 0.01, 400_000
    g = torch.Generator().manual_seed(0)
    y = torch.randn(n, generator=g, dtype=DTYPE) * math.sqrt(s2 + noise)
    mean_p2 = float(calibration_loss(y, 0.0, s2, noise, beta, 2).mean())
    mean_p1 = float(calibration_loss(y, 0.0, s2, noise, beta, 1).mean())
    assert abs(mean_p2 - (1 / beta - 1)) < 0.01
    assert abs(mean_p1 - (math.sqrt(2 / (math.pi * beta)) - 1)) < 0.01


def test_item27_heteroscedastic_identities():
    X, y = make_data(n=12, d=2, seed=4)
    noise = torch.as_tensor(np.random.default_rng(2).uniform(0.002, 0.3, X.shape[0]), dtype=DTYPE)
    theta = 0.25
    log_diag, z = prequential_factor(theta, X, y, noise)
    rows = list(range(4, X.shape[0]))
    lambdas = [0.5 + 0.1 * i for i in range(len(rows))]
    sharp, calib = closed_form_sums(theta, X, y, noise, rows, lambdas, 2.5, 2)
    expected_sharp = expected_calib = 0.0
    for lam, row in zip(lambdas, rows, strict=True):
        ls, lc, z_row, log_var = per_round(theta, X, y, noise, row, beta=2.5)
        assert abs(float(z[row]) - z_row) < 1e-10 and abs(float(log_diag[row]) - log_var) < 1e-10
        weight = 1.0 / math.log1p(1.0 / float(noise[row]))
        assert abs(weight * (float(log_diag[row]) - math.log(float(noise[row]))) - ls) < 1e-10
        expected_sharp += ls
        expected_calib += lam * lc
    assert abs(float(sharp) - expected_sharp) < 1e-10 and abs(float(calib) - expected_calib) < 1e-10


def test_item28_standardize_pitfall(data):
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.kernels import MaternKernel
    from gpytorch.means import ZeroMean

    X, _ = data
    y_raw = 3.0 + 4.0 * torch.sin(5 * X[:, 0])  # raw outputs with std far from 1
    std = float(y_raw.std())
    yvar = torch.full((X.shape[0], 1), NOISE, dtype=DTYPE)
    ours = FixedGP(X, (y_raw - y_raw.mean()) / std, 0.3)
    ours_botorch = ours.to_botorch_model()
    assert torch.allclose(ours.noise, torch.full_like(ours.noise, NOISE))
    assert torch.allclose(ours_botorch.likelihood.noise, torch.full((X.shape[0],), NOISE, dtype=DTYPE))
    pitfall = SingleTaskGP(X, y_raw.unsqueeze(-1), train_Yvar=yvar, covar_module=MaternKernel(nu=2.5),
                           mean_module=ZeroMean(), outcome_transform=Standardize(m=1)).to(DTYPE)
    noise_model_units = pitfall.likelihood.noise.reshape(-1)[0]
    assert abs(float(noise_model_units) - NOISE / std**2) < 1e-12
    assert abs(float(noise_model_units) - NOISE) > 1e-3  # the pitfall is real: not 0.01
