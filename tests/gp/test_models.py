"""The hand-written GP conditioning against BoTorch/gpytorch (docs/algorithms.md §1.4, models.py).

``ConditionedGP`` replaces a BoTorch ``SingleTaskGP`` for speed; it must give the same posterior
(mean and latent variance) to 1e-10 for homoscedastic and fixed heteroscedastic noise, both
kernels and both standardisation modes, and ``kernel_matrix`` must equal gpytorch's kernels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from botorch.models import SingleTaskGP
from gpytorch.kernels import MaternKernel, RBFKernel
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_risk.gp.exact import kernel_matrix, standardization_constants
from tune_risk.gp.models import NOISE_FLOOR, ConditionedGP, GPHyperparameters, fit_hyperparameters

KERNELS = ["rbf", "matern52"]


def gpytorch_kernel(kind: str, lengthscale: torch.Tensor):
    d = lengthscale.numel()
    kernel = RBFKernel(ard_num_dims=d) if kind == "rbf" else MaternKernel(nu=2.5, ard_num_dims=d)
    kernel = kernel.to(torch.float64)
    kernel.lengthscale = lengthscale.reshape(1, d)
    return kernel


def problem(seed: int, n: int = 9, d: int = 3, m: int = 12):
    rng = np.random.default_rng(seed)
    X = torch.from_numpy(rng.uniform(size=(n, d)))
    y = torch.from_numpy(np.sin(6 * X.numpy()).sum(1) + 0.1 * rng.normal(size=n) + 3.0)
    noise = torch.from_numpy(rng.uniform(1e-3, 0.2, size=n))
    Xq = torch.cat([torch.from_numpy(rng.uniform(size=(m, d))), X[:3]])  # includes training points
    lengthscale = tuple(float(v) for v in rng.uniform(0.1, 1.0, size=d))
    return X, y, noise, Xq, lengthscale


def hyperparameters(kind: str, lengthscale, noise: float | None) -> GPHyperparameters:
    return GPHyperparameters(kind, lengthscale, constant=0.3, noise=noise, y_mean=2.5, y_std=1.7)


def botorch_posterior(model: SingleTaskGP, Xq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        posterior = model.posterior(Xq)
    return posterior.mean.squeeze(-1), posterior.variance.squeeze(-1)


@pytest.mark.parametrize("kind", KERNELS)
@pytest.mark.parametrize("noise_kind", ["homoscedastic", "fixed"])
@pytest.mark.parametrize("standardization", ["frozen", "per_build"])
@pytest.mark.parametrize("seed", [0, 1])
def test_conditioned_gp_equals_botorch(kind, noise_kind, standardization, seed):
    """``ConditionedGP.predict`` equals ``to_botorch_model().posterior`` and an independently built
    ``SingleTaskGP`` (gpytorch kernel, manual standardisation) to 1e-10."""
    X, y, noise, Xq, lengthscale = problem(seed)
    hp = hyperparameters(kind, lengthscale, 0.04 if noise_kind == "homoscedastic" else None)
    fixed = None if noise_kind == "homoscedastic" else noise
    gp = ConditionedGP(hp, X, y, fixed, standardization)
    mean, sd = gp.predict(Xq)

    ref_mean, ref_var = botorch_posterior(gp.to_botorch_model(), Xq)
    assert torch.allclose(mean, ref_mean, atol=1e-10, rtol=0)
    assert torch.allclose(sd**2, ref_var, atol=1e-10, rtol=0)

    # independent construction from the raw inputs, not from the object's internals
    y_mean, y_std = (hp.y_mean, hp.y_std) if standardization == "frozen" else (float(y.mean()), float(y.std()))
    train_noise = torch.full_like(y, 0.04) if fixed is None else (fixed / y_std**2).clamp_min(NOISE_FLOOR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SingleTaskGP(
            X, ((y - y_mean) / y_std).unsqueeze(-1), train_Yvar=train_noise.unsqueeze(-1),
            covar_module=gpytorch_kernel(kind, torch.tensor(lengthscale, dtype=torch.float64)),
            outcome_transform=None,
        ).to(torch.float64)
    model.mean_module.constant = torch.tensor(hp.constant, dtype=torch.float64)
    model.eval()
    ind_mean, ind_var = botorch_posterior(model, Xq)
    assert torch.allclose(mean, ind_mean * y_std + y_mean, atol=1e-10, rtol=0)
    assert torch.allclose(sd**2, ind_var * y_std**2, atol=1e-10, rtol=0)
    assert (gp.y_mean, gp.y_std) == pytest.approx((y_mean, y_std), abs=1e-15)


def test_botorch_outcome_transform_means_are_the_build_constants():
    """Item 14: the BoTorch model's ``Standardize.means`` equals the constants used by the build."""
    X, y, noise, _, lengthscale = problem(3)
    hp = hyperparameters("rbf", lengthscale, None)
    frozen = ConditionedGP(hp, X, y, noise, "frozen").to_botorch_model().outcome_transform
    assert float(frozen.means) == hp.y_mean and float(frozen.stdvs) == hp.y_std
    per_build = ConditionedGP(hp, X, y, noise, "per_build").to_botorch_model().outcome_transform
    assert float(per_build.means) == pytest.approx(float(y.mean()), abs=1e-14)
    assert float(per_build.stdvs) == pytest.approx(float(y.std()), rel=1e-13)


@pytest.mark.parametrize("kind", KERNELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 6), scale=st.floats(0.05, 3.0))
def test_kernel_matrix_equals_gpytorch(kind, seed, d, scale):
    """``kernel_matrix`` equals gpytorch's ``RBFKernel``/``MaternKernel(nu=2.5)`` (ARD) to 1e-12."""
    rng = np.random.default_rng(seed)
    X1 = torch.from_numpy(rng.uniform(size=(7, d)))
    X2 = torch.cat([torch.from_numpy(rng.uniform(size=(5, d))), X1[:2]])  # identical rows: r = 0
    lengthscale = torch.from_numpy(scale * rng.uniform(0.2, 1.0, size=d))
    ours = kernel_matrix(kind, lengthscale, X1, X2)
    with torch.no_grad():
        theirs = gpytorch_kernel(kind, lengthscale)(X1, X2).to_dense()
    assert ours.shape == (7, 7)
    assert torch.allclose(ours, theirs, atol=1e-12, rtol=0)
    assert torch.allclose(torch.diagonal(kernel_matrix(kind, lengthscale, X1, X1)), torch.ones(7, dtype=torch.float64))


@pytest.mark.parametrize("kind,below", [("rbf", 1e-300), ("matern52", 1e-32)])
def test_kernel_cap_changes_only_negligible_values(kind, below):
    """Far-apart points (scaled squared distance over the 1400 cap): the kernel stays at a value
    negligible next to ``k(x, x) = 1``, as gpytorch's; RBF avoids subnormal floats."""
    X1 = torch.zeros(1, 2, dtype=torch.float64)
    X2 = torch.tensor([[1.0, 1.0], [0.06, 0.0]], dtype=torch.float64)
    lengthscale = torch.tensor([1e-3, 1e-3], dtype=torch.float64)
    ours = kernel_matrix(kind, lengthscale, X1, X2)
    with torch.no_grad():
        theirs = gpytorch_kernel(kind, lengthscale)(X1, X2).to_dense()
    assert (ours >= 0).all() and (ours < below).all() and (theirs < below).all()


def test_posterior_variance_is_latent_and_shrinks_at_data():
    """Latent variance (no observation noise, §1.5); at a training point below the prior variance."""
    X, y, noise, _, lengthscale = problem(4)
    hp = hyperparameters("rbf", lengthscale, None)
    gp = ConditionedGP(hp, X, y, noise)
    _, sd_at_data = gp.predict(X)
    assert (sd_at_data < hp.y_std).all()
    far = ConditionedGP(hp, X[:1], y[:1], noise[:1])
    _, sd_far = far.predict(torch.full((1, X.shape[1]), 50.0, dtype=torch.float64))
    assert float(sd_far) == pytest.approx(hp.y_std, rel=1e-12)  # the prior: k(x, x) = 1, no noise


def test_standardization_constants_match_botorch():
    y = torch.tensor([1.0, 2.0, 4.0, 8.0], dtype=torch.float64)
    assert standardization_constants(y) == pytest.approx((3.75, float(torch.std(y))))
    assert standardization_constants(torch.full((3,), 2.0, dtype=torch.float64)) == (2.0, 1.0)
    assert standardization_constants(torch.tensor([5.0], dtype=torch.float64)) == (5.0, 1.0)


def test_fit_hyperparameters_homoscedastic_and_fixed():
    """§1.4.2-1.4.4: MAP fit returns ARD lengthscales within the prior's constraint, a learned noise
    only without fixed noise, and the targets' standardisation constants."""
    X, y, noise, _, _ = problem(5, n=10)
    learned = fit_hyperparameters(X, y, None, "rbf")
    assert learned.noise is not None and learned.noise >= 1e-4
    assert len(learned.lengthscale) == X.shape[1] and min(learned.lengthscale) >= 0.025
    assert (learned.y_mean, learned.y_std) == pytest.approx(standardization_constants(y))
    fixed = fit_hyperparameters(X, y, noise, "matern52")
    assert fixed.noise is None and fixed.kernel == "matern52"
    assert GPHyperparameters.from_dict(fixed.to_dict()) == fixed
