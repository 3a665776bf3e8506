"""Mean-variance confidence bounds from ERAHBO's two GPs (docs/algorithms.md §1.4-1.5, ERAHBO eqs. 9, 19, 23, 24).

Given the evaluated configurations ``D = {(x_c, m_c, s2_c, k_c)}`` and frozen hyperparameters,
``RiskModel`` conditions ``G_var`` on the sample variances, derives eq. 19's per-point noise for the
mean GP (``mean_gp_noise``; ``variance_gp_noise`` is ``G_var``'s, A-6)::

    Sigma_c = clip(UCB_var(x_c), eps, rho_bar^2) / k_c,   UCB_var = mu_var + kappa_acq * sigma_var

conditions ``G_f`` on the sample means, and returns for any ``x``::

    UCB^MV(x; kappa) = UCB_f(x) - alpha * LCB_var(x)        (eq. 9, 23)
    LCB^MV(x; kappa) = LCB_f(x) - alpha * UCB_var(x)        (eq. 9, 24)

with ``UCB_f = mu_f + kappa sigma_f`` etc. on the *latent* posteriors. ``LCB_var`` is not clamped
(CODE-RAHBO does not clamp it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tune_risk.gp.exact import DTYPE
from tune_risk.gp.models import NOISE_FLOOR, ConditionedGP, GPHyperparameters, fit_hyperparameters
from tune_risk.settings import EngineSettings


@dataclass(frozen=True)
class RiskData:
    """Training data of both GPs: one row per configuration (``n x d`` inputs, ``n`` statistics)."""

    X: Tensor
    mean: Tensor
    variance: Tensor
    k: Tensor

    @classmethod
    def from_rows(cls, rows: list[tuple], dim: int) -> RiskData:
        """Rows ``(x, sample_mean, sample_variance, k)`` -> tensors (float64)."""
        if not rows:
            return cls(torch.empty(0, dim, dtype=DTYPE), *(torch.empty(0, dtype=DTYPE) for _ in range(3)))
        xs, means, variances, ks = zip(*rows, strict=True)
        return cls(
            torch.as_tensor([list(x) for x in xs], dtype=DTYPE),
            torch.as_tensor(means, dtype=DTYPE),
            torch.as_tensor(variances, dtype=DTYPE),
            torch.as_tensor(ks, dtype=DTYPE),
        )


@dataclass(frozen=True)
class RiskHyperparameters:
    """Frozen hyperparameters of the pair ``(G_var, G_f)``."""

    variance_gp: GPHyperparameters
    mean_gp: GPHyperparameters

    def to_dict(self) -> dict:
        return {"variance_gp": self.variance_gp.to_dict(), "mean_gp": self.mean_gp.to_dict()}

    @classmethod
    def from_dict(cls, state: dict) -> RiskHyperparameters:
        return cls(GPHyperparameters.from_dict(state["variance_gp"]), GPHyperparameters.from_dict(state["mean_gp"]))


def variance_gp_noise(k: Tensor, settings: EngineSettings, rho_bar_sq: float) -> Tensor | None:
    """Noise of ``G_var`` in raw units (A-6): learned (``None``), the uniform bound
    ``R^2 = 2 rho_bar^4 / (k_min - 1)`` or the k-aware ``2 rho_bar^4 / (k_c - 1)`` (App. A, Ass. 2)."""
    if settings.var_noise == "learned":
        return None
    k_eff = torch.full_like(k, settings.k_min) if settings.var_noise == "theory" else k
    return 2.0 * rho_bar_sq**2 / (k_eff - 1.0)


def variance_posterior(variance_gp: ConditionedGP, X: Tensor, settings: EngineSettings) -> tuple[Tensor, Tensor]:
    """``(mu_var, sigma_var)`` of ``G_var`` at ``X``; with ``var_posterior="nonnegative"`` the mean is
    ``max(mu_var, 0)`` (A-20): a variance cannot be negative, and a negative ``mu_var`` would give eq. 19 the
    noise floor (a 2-seed configuration at a return ceiling then looks certain) and LCB^MV a bonus (eq. 24)."""
    mu_var, sd_var = variance_gp.predict(X)
    if settings.var_posterior == "nonnegative":
        mu_var = mu_var.clamp_min(0.0)
    return mu_var, sd_var


def eq19_noise(
    variance_gp: ConditionedGP, data: RiskData, settings: EngineSettings, rho_bar_sq: float
) -> tuple[Tensor, Tensor]:
    """``(UCB_var, Sigma)`` at the data: ``G_var``'s upper bound ``mu_var + kappa_acq sigma_var`` and from it the
    fixed noise of ``G_f`` (:func:`mean_gp_noise`), as both the hyperparameter fit and the model use them."""
    mu_var, sd_var = variance_posterior(variance_gp, data.X, settings)
    ucb_var = mu_var + settings.kappa_acq * sd_var
    return ucb_var, mean_gp_noise(ucb_var, data.variance, data.k, settings, rho_bar_sq)


def mean_gp_noise(ucb_var: Tensor, s2: Tensor, k: Tensor, settings: EngineSettings, rho_bar_sq: float) -> Tensor:
    """Fixed noise ``Sigma_c`` of ``G_f`` (A-4): ERAHBO eq. 19, the plug-in ``s2/k`` or RAHBO's code ``s2``."""
    if settings.mean_noise == "eq19":
        return ucb_var.clamp(NOISE_FLOOR, rho_bar_sq) / k  # ERAHBO eq. 19
    if settings.mean_noise == "plugin":
        return s2.clamp_min(NOISE_FLOOR) / k
    return s2.clamp_min(NOISE_FLOOR)


def fit_risk_hyperparameters(
    data: RiskData, settings: EngineSettings, rho_bar_sq: float, init: RiskHyperparameters | None = None
) -> RiskHyperparameters:
    """MAP-fit ``G_var`` first, then eq. 19's noise from it, then ``G_f`` (§1.4.4 order)."""
    var_noise = variance_gp_noise(data.k, settings, rho_bar_sq)
    var_hp = fit_hyperparameters(
        data.X, data.variance, var_noise, settings.kernel, init.variance_gp if init else None
    )
    var_gp = ConditionedGP(var_hp, data.X, data.variance, var_noise, settings.standardization)
    _, noise = eq19_noise(var_gp, data, settings, rho_bar_sq)
    mean_hp = fit_hyperparameters(data.X, data.mean, noise, settings.kernel, init.mean_gp if init else None)
    return RiskHyperparameters(var_hp, mean_hp)


class RiskModel:
    """``G_var`` and ``G_f`` conditioned on ``data`` with frozen hyperparameters (§1.8 step 2).

    ``rho_bar_sq`` is the variance bound of the (warped) returns that clips eq. 19.
    """

    def __init__(
        self, data: RiskData, hyperparameters: RiskHyperparameters, settings: EngineSettings, rho_bar_sq: float
    ) -> None:
        self.data = data
        self.settings = settings
        self.variance_gp = ConditionedGP(
            hyperparameters.variance_gp, data.X, data.variance, variance_gp_noise(data.k, settings, rho_bar_sq),
            settings.standardization,
        )
        self.ucb_var_at_data, self.mean_noise = eq19_noise(self.variance_gp, data, settings, rho_bar_sq)
        self.mean_gp = ConditionedGP(
            hyperparameters.mean_gp, data.X, data.mean, self.mean_noise, settings.standardization
        )

    def predict(self, X: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(mu_f, sigma_f, mu_var, sigma_var)`` at ``X`` (``m x d``), latent posteriors."""
        mu_f, sd_f = self.mean_gp.predict(X)
        mu_var, sd_var = variance_posterior(self.variance_gp, X, self.settings)
        return mu_f, sd_f, mu_var, sd_var

    def bounds(self, X: Tensor, kappa: float) -> tuple[Tensor, Tensor]:
        """``(UCB^MV, LCB^MV)`` at ``X`` for multiplier ``kappa`` (eqs. 23, 24)."""
        return mv_bounds(*self.predict(X), kappa, self.settings.alpha)

    def ucb_mv(self, X: Tensor, kappa: float) -> Tensor:
        """``UCB^MV(x; kappa)`` (eq. 9, 23)."""
        return self.bounds(X, kappa)[0]

    def lcb_mv(self, X: Tensor, kappa: float) -> Tensor:
        """``LCB^MV(x; kappa)`` (eq. 9, 24)."""
        return self.bounds(X, kappa)[1]

    def posterior_mv(self, X: Tensor) -> Tensor:
        """The posterior mean of ``MV`` at ``X``: ``mu_f(x) - alpha max(mu_var(x), 0)`` (eq. 5 under both GPs'
        posterior means; a variance below 0 is no variance, A-21)."""
        mu_f, _, mu_var, _ = self.predict(X)
        return mu_f - self.settings.alpha * mu_var.clamp_min(0.0)


def mv_bounds(
    mu_f: Tensor, sd_f: Tensor, mu_var: Tensor, sd_var: Tensor, kappa: float, alpha: float
) -> tuple[Tensor, Tensor]:
    """``UCB^MV = UCB_f - alpha LCB_var`` and ``LCB^MV = LCB_f - alpha UCB_var`` (eqs. 9, 23, 24)."""
    ucb_mv = (mu_f + kappa * sd_f) - alpha * (mu_var - kappa * sd_var)  # eq. 23
    lcb_mv = (mu_f - kappa * sd_f) - alpha * (mu_var + kappa * sd_var)  # eq. 24
    return ucb_mv, lcb_mv
