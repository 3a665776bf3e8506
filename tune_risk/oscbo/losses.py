"""OSCBO's per-round feedback and its closed form from one Cholesky factor (docs/algorithms.md §3.2-3.3).

Per round ``t`` (OSCBO eqs. 6, 7), with ``mu, s^2`` the latent posterior at ``x_t`` given
``D_{t-1}``, observation noise ``sigma_t^2`` and exponent ``p in {1, 2}``::

    L^s_t = log(1 + s^2/sigma_t^2) / log(1 + 1/sigma_t^2)                 in [0, 1]
    L^c_t = |ỹ_t - mu|^p / (sqrt(beta) sqrt(s^2 + sigma_t^2))^p - 1        (<= 0 iff covered)

Closed form (S5, S12, S13): order the data as ``D_0`` then the BO rounds and factor
``K_theta + diag(sigma^2) = L L^T``; then ``z = L^{-1} ỹ`` are the prequential residuals and
``2 log L_ii = log(sigma_i^2 + s^2_{i-1}(x_i))``, so for any set ``H`` of rows::

    sum_H L^s = sum_H (2 log L_ii - log sigma_i^2) / log(1 + 1/sigma_i^2)
    sum_H lambda L^c = sum_H lambda_i (|z_i|^p / beta^{p/2} - 1)

With a constant noise this is the paper's ``(log det(K + sigma^2 I) - n log sigma^2)/log(1+1/sigma^2)``
when ``H`` covers all rows; per-point noise (``Sigma_hat`` of ERAHBO, §3.10) is the heteroscedastic
generalisation. The cost is one ``O(n^3)`` factorisation per evaluation, differentiable in ``theta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from tune_risk.gp.exact import DTYPE, cholesky_with_jitter, kernel_matrix
from tune_risk.oscbo.gp import as_theta, noise_vector


@dataclass(frozen=True)
class RoundLosses:
    """Feedback of one round under the played lengthscale (eqs. 6, 7) and its diagnostics."""

    sharpness: float  # L^s_t
    calibration: float  # L^c_t
    z: float  # standardised residual (ỹ_t - mu)/sqrt(s^2 + sigma_t^2)
    width_obs: float  # 2 sqrt(beta) sqrt(s^2 + sigma_t^2)
    width_latent: float  # 2 sqrt(beta) s


def sharpness_loss(s2: Tensor | float, noise: Tensor | float) -> Tensor:
    """``L^s = log(1 + s^2/sigma^2)/log(1 + 1/sigma^2)`` (OSCBO eq. 6; per-point ``sigma^2`` for §3.10)."""
    s2, noise = torch.as_tensor(s2, dtype=DTYPE), torch.as_tensor(noise, dtype=DTYPE)
    return torch.log1p(s2 / noise) / torch.log1p(1.0 / noise)


def calibration_loss(y: Tensor | float, mu: Tensor | float, s2: Tensor | float, noise: Tensor | float,
                     beta: float, p: int) -> Tensor:
    """``L^c = |y - mu|^p / (sqrt(beta) sqrt(s^2 + sigma^2))^p - 1`` (OSCBO eq. 7)."""
    y, mu = torch.as_tensor(y, dtype=DTYPE), torch.as_tensor(mu, dtype=DTYPE)
    scale = math.sqrt(beta) * torch.sqrt(torch.as_tensor(s2, dtype=DTYPE) + noise)
    return (torch.abs(y - mu) / scale) ** p - 1.0


def round_losses(y: float, mu: float, s2: float, noise: float, beta: float, p: int,
                 clip: float | None = None) -> RoundLosses:
    """The realised ``(L^s_t, L^c_t)`` of one round; ``clip`` caps ``|L^c|`` (O-16, off by default)."""
    lc = float(calibration_loss(y, mu, s2, noise, beta, p))
    if clip is not None:
        lc = max(-clip, min(clip, lc))
    return RoundLosses(
        sharpness=float(sharpness_loss(s2, noise)), calibration=lc,
        z=(y - mu) / math.sqrt(s2 + noise),
        width_obs=2.0 * math.sqrt(beta) * math.sqrt(s2 + noise),
        width_latent=2.0 * math.sqrt(beta) * math.sqrt(max(s2, 0.0)),
    )


def prequential_factor(theta, X: Tensor, y: Tensor, noise, kernel: str = "matern52") -> tuple[Tensor, Tensor]:
    """``(2 log diag(L), z = L^{-1} y)`` for ``K_theta + diag(noise) = L L^T`` (S13).

    Row ``i`` gives ``log(noise_i + s^2_{i-1}(x_i))`` and the prequential residual
    ``(y_i - mu_{i-1}(x_i))/sqrt(noise_i + s^2_{i-1}(x_i))`` of the GP conditioned on rows ``< i``.
    Differentiable in ``theta``; jitter is added only if the factorisation fails.
    """
    gram = kernel_matrix(kernel, as_theta(theta), X, X) + torch.diag(noise_vector(noise, X.shape[0]))
    chol = cholesky_with_jitter(gram)
    z = torch.linalg.solve_triangular(chol, y.unsqueeze(-1), upper=False).squeeze(-1)
    return 2.0 * torch.log(torch.diagonal(chol)), z


def closed_form_sums(theta, X: Tensor, y: Tensor, noise, rows: list[int], lambdas: list[float],
                     beta: float, p: int, kernel: str = "matern52") -> tuple[Tensor, Tensor]:
    """``(sum_H L^s(theta), sum_H lambda_j L^c(theta))`` over rows ``H`` (S5, S12, S13).

    ``rows`` are the row indices of the rounds in ``H`` within ``(X, y)`` (ordered as revealed),
    ``lambdas`` the multipliers ``lambda_{j-1}`` played in those rounds (O-1).
    """
    if not rows:
        zero = torch.zeros((), dtype=DTYPE)
        return zero, zero
    log_diag, z = prequential_factor(theta, X, y, noise, kernel)
    index = torch.as_tensor(rows, dtype=torch.long)
    noise_h = noise_vector(noise, X.shape[0])[index]
    sharp = ((log_diag[index] - torch.log(noise_h)) / torch.log1p(1.0 / noise_h)).sum()
    lam = torch.as_tensor(lambdas, dtype=DTYPE)
    calib = (lam * (z[index].abs() ** p / beta ** (p / 2.0) - 1.0)).sum()
    return sharp, calib


def negative_log_marginal_likelihood(theta, X: Tensor, y: Tensor, noise, kernel: str = "matern52") -> Tensor:
    """Exact GP NLML ``0.5 y^T (K + D)^-1 y + 0.5 log det(K + D) + n/2 log 2 pi`` (no prior), §4.1."""
    log_diag, z = prequential_factor(theta, X, y, noise, kernel)
    return 0.5 * (z * z).sum() + 0.5 * log_diag.sum() + 0.5 * X.shape[0] * math.log(2.0 * math.pi)
