"""Surrogates of the OSCBO paper's GP-UCB baselines that are not lengthscale strategies
(docs/algorithms.md §4.3 OCBO, §4.6 SCGP, §4.7 VanillaBO).

Each builder returns a ``Surrogate``: a latent posterior ``predict(X) -> (mu, var)`` in the loop's
standardised output units, the UCB multiplier ``kappa`` it is played with (``mu + kappa sigma``),
and the observation noise of its predictive band (for the coverage diagnostics).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.stats import norm
from torch import Tensor

import tune_risk.botorch_without_jax  # noqa: F401
from tune_risk.gp.exact import DTYPE
from tune_risk.oscbo.gp import NOISE, THETA_BOUNDS, FixedGP
from tune_risk.oscbo.oracle import fit_lengthscale_mll


@dataclass
class Surrogate:
    """What the GP-UCB loop plays in one round."""

    predict: Any  # Tensor (m x d) -> (mu, var), latent, standardised units
    kappa: float
    noise: float = NOISE
    theta: tuple[float, ...] | None = None
    info: dict[str, Any] = field(default_factory=dict)


def fixed_gp_surrogate(X: Tensor, y: Tensor, theta, kappa: float) -> Surrogate:
    gp = FixedGP(X, y, theta)
    return Surrogate(gp.predict, kappa, NOISE, tuple(float(v) for v in gp.theta))


# ---------------------------------------------------------------------------------------------- OCBO
def loo_pit_quantile(X: Tensor, y: Tensor, theta, level: float = 0.9, noise: float = NOISE) -> float:
    """``q_t = Quantile_level(u_i)`` of the closed-form LOO PIT values (§4.3 steps 2-4)::

        mu_{-i} = y_i - [K~^-1 y]_i / [K~^-1]_ii,   sigma^2_{-i} + sigma_n^2 = 1/[K~^-1]_ii
    """
    gp = FixedGP(X, y, theta, noise)
    inverse = torch.cholesky_inverse(gp.chol)
    diag = torch.diagonal(inverse)
    mu_loo = y - (inverse @ y) / diag
    u = torch.as_tensor(norm.cdf(((y - mu_loo) * diag.sqrt()).numpy()), dtype=DTYPE)
    return float(torch.quantile(u, level))


class OCBO:
    """OCBO (Deshpande et al. 2025; §4.3): MLL lengthscale, UCB multiplier ``Phi^-1(q_t)``."""

    def __init__(self, dim: int, beta: float = 2.0, level: float = 0.9) -> None:
        self.beta, self.level, self.theta = beta, level, None
        self.negative_multiplier_rounds = 0

    def surrogate(self, t: int, X: Tensor, y: Tensor) -> Surrogate:
        self.theta = fit_lengthscale_mll(X, y, NOISE, self.theta if self.theta else math.log(2.0))
        q = loo_pit_quantile(X, y, self.theta, self.level) if X.shape[0] >= 3 else float(norm.cdf(math.sqrt(self.beta)))
        q = min(max(q, 1e-12), 1 - 1e-12)
        kappa = float(norm.ppf(q))
        self.negative_multiplier_rounds += int(kappa < 0)
        surrogate = fixed_gp_surrogate(X, y, self.theta, kappa)
        surrogate.info = {"q": q}
        return surrogate


# ---------------------------------------------------------------------------------------------- SCGP
class SCGP:
    """Sharp calibrated GP (Capone et al. 2023) in GP-UCB (§4.6, our concretisation).

    Seeded split into regression (80 %) and calibration (20 %, at least 2) sets; the mean is the
    regression GP's (MLL lengthscale); a separate lengthscale ``theta_c`` of the uncertainty is
    chosen to minimise ``beta(theta_c) * mean_cal sqrt(sigma_c^2 + sigma_n^2)`` where ``beta`` is the
    0.9-quantile of the calibration scores; the UCB is ``mu + beta_delta sigma^cal``.
    """

    def __init__(self, dim: int, seed: int = 0, level: float = 0.9, beta: float = 2.0) -> None:
        self.seed, self.level, self.beta = seed, level, beta
        self.theta_reg: tuple[float, ...] | None = None
        self.fallback_theta: tuple[float, ...] | None = None

    def surrogate(self, t: int, X: Tensor, y: Tensor) -> Surrogate:
        n = X.shape[0]
        if n < 5:
            self.fallback_theta = fit_lengthscale_mll(X, y, NOISE, self.fallback_theta or math.log(2.0))
            return fixed_gp_surrogate(X, y, self.fallback_theta, math.sqrt(self.beta))
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, t, 7]))
        order = torch.as_tensor(rng.permutation(n))
        n_cal = max(2, round(0.2 * n))
        cal, reg = order[:n_cal], order[n_cal:]
        self.theta_reg = fit_lengthscale_mll(X[reg], y[reg], NOISE, self.theta_reg or math.log(2.0))
        mean_gp = FixedGP(X[reg], y[reg], self.theta_reg)
        with torch.no_grad():
            mu_cal = mean_gp.predict(X[cal])[0]
        residual = (y[cal] - mu_cal).abs()

        def sharpness(log_theta: Tensor) -> tuple[Tensor, Tensor]:
            var = FixedGP(X[reg], y[reg], log_theta.exp()).predict(X[cal])[1]
            scale = (var + NOISE).sqrt()
            beta = torch.quantile(residual / scale, self.level)  # sub-gradient of the sorted scores
            return beta * scale.mean(), beta

        theta_c, beta_delta = self._calibrate(sharpness, rng)
        uncertainty_gp = FixedGP(X[reg], y[reg], theta_c)

        def predict(Xq: Tensor) -> tuple[Tensor, Tensor]:
            return mean_gp.predict(Xq)[0], uncertainty_gp.predict(Xq)[1]

        return Surrogate(predict, beta_delta, NOISE, self.theta_reg, {"theta_cal": theta_c, "beta_delta": beta_delta})

    def _calibrate(self, sharpness, rng) -> tuple[tuple[float, ...], float]:
        lo, hi = math.log(THETA_BOUNDS[0]), math.log(THETA_BOUNDS[1])
        starts = [math.log(self.theta_reg[0])] + list(rng.uniform(lo, hi, 4))
        best = (math.inf, starts[0], 1.0)
        for start in starts:
            log_theta = torch.tensor([start], dtype=DTYPE, requires_grad=True)
            optimizer = torch.optim.Adam([log_theta], lr=0.05)
            for step in range(51):
                value, beta = sharpness(log_theta)
                if float(value.detach()) < best[0]:
                    best = (float(value.detach()), float(log_theta.detach()[0]), float(beta.detach()))
                if step == 50:
                    break
                optimizer.zero_grad()
                value.backward()
                optimizer.step()
                with torch.no_grad():
                    log_theta.clamp_(lo, hi)
        return (math.exp(best[1]),), best[2]


# ---------------------------------------------------------------------------------------------- VanillaBO
class VanillaBO:
    """BoTorch's default ``SingleTaskGP`` (RBF ARD, dimension-scaled priors, learned noise,
    ``Standardize``), MAP-fitted every round, played with the same UCB (§4.7)."""

    def __init__(self, dim: int, beta: float = 2.0) -> None:
        self.beta = beta

    def surrogate(self, t: int, X: Tensor, y: Tensor) -> Surrogate:
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from gpytorch.mlls import ExactMarginalLogLikelihood

        model = SingleTaskGP(X, y.unsqueeze(-1)).to(DTYPE)  # y is already standardised: Standardize ~ identity
        with warnings.catch_warnings(), torch.random.fork_rng():
            warnings.simplefilter("ignore")
            torch.manual_seed(t)
            try:
                fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
            except Exception:  # keep the prior mode when the fit fails
                pass
        model.eval()
        noise = float(model.likelihood.noise.detach().reshape(-1)[0]) * float(model.outcome_transform.stdvs.reshape(-1)[0]) ** 2

        def predict(Xq: Tensor) -> tuple[Tensor, Tensor]:
            posterior = model.posterior(Xq.unsqueeze(-2) if Xq.dim() == 2 else Xq)
            return posterior.mean.reshape(Xq.shape[:-1]), posterior.variance.reshape(Xq.shape[:-1]).clamp_min(1e-12)

        theta = tuple(float(v) for v in model.covar_module.lengthscale.detach().reshape(-1))
        return Surrogate(predict, math.sqrt(self.beta), noise, theta)
