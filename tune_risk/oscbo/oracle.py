"""Projected-Adam oracle for lengthscale objectives (OSCBO FTPL oracle §3.3 and the MLL fits of §4.1).

Parameterisation (docs/algorithms.md §3.3, O-14, O-17): ``theta = softplus(r)``, gpytorch's default
``Positive`` constraint. Adam (lr 0.01, 50 steps) moves ``r``; after every step ``theta`` is clamped
to ``Theta = [0.025, 10]^{d_theta}`` and ``r`` reset to ``softplus^{-1}(theta)`` (projected Adam).
The objective is evaluated at the start point and after every step (51 evaluations) and the iterate
with the lowest value is returned, so the oracle never increases the objective. Adam moves ``r`` by
about ``lr`` per step, i.e. by at most ~0.5 per call: ``theta`` moves by at most ~0.3 near 1 and
proportionally less for short lengthscales.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from tune_risk.oscbo.gp import THETA_BOUNDS, as_theta
from tune_risk.oscbo.losses import negative_log_marginal_likelihood

INITIAL_LENGTHSCALE = math.log(2.0)  # gpytorch's softplus(0): the MLL fit's start on D_0 (O-3)


@dataclass(frozen=True)
class OracleResult:
    """Best iterate of the projected-Adam oracle."""

    theta: tuple[float, ...]
    value: float  # objective at ``theta``
    start_value: float  # objective at the start point
    evaluations: int


def inverse_softplus(theta: Tensor) -> Tensor:
    """``r`` with ``softplus(r) = theta`` (stable for small and large ``theta``)."""
    return theta + torch.log(-torch.expm1(-theta))


def projected_adam(
    objective: Callable[[Tensor], Tensor],
    theta_init,
    bounds: tuple[float, float] = THETA_BOUNDS,
    lr: float = 0.01,
    steps: int = 50,
) -> OracleResult:
    """Minimise ``objective(theta)`` over ``Theta`` from ``theta_init``; return the best of ``steps + 1`` iterates."""
    lo, hi = bounds
    theta0 = as_theta(theta_init).clamp(lo, hi)
    raw = inverse_softplus(theta0).clone().requires_grad_(True)
    optimizer = torch.optim.Adam([raw], lr=lr)
    best_theta, best_value, start_value = theta0.clone(), math.inf, math.nan
    for step in range(steps + 1):
        theta = torch.nn.functional.softplus(raw)
        last = step == steps
        with torch.set_grad_enabled(not last):
            value = objective(theta)
        current = float(value.detach())
        if step == 0:
            start_value = current
        if current < best_value:  # NaN never wins
            best_value, best_theta = current, theta.detach().clone()
        if last:
            break
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        with torch.no_grad():
            raw.copy_(inverse_softplus(torch.nn.functional.softplus(raw).clamp(lo, hi)))
    if not math.isfinite(best_value):
        best_theta, best_value = theta0, start_value
    return OracleResult(tuple(float(v) for v in best_theta), best_value, start_value, steps + 1)


def fit_lengthscale_mll(
    X: Tensor, y: Tensor, noise, theta_init=INITIAL_LENGTHSCALE, ard: bool = False,
    bounds: tuple[float, float] = THETA_BOUNDS, lr: float = 0.01, steps: int = 50, kernel: str = "matern52",
) -> tuple[float, ...]:
    """MLL lengthscale (§4.1): projected Adam on the exact NLML, no prior, warm start ``theta_init``."""
    dim_theta = X.shape[1] if ard else 1
    start = as_theta(theta_init, dim_theta)
    if start.numel() != dim_theta:
        start = start[:1].expand(dim_theta).clone() if ard else start.mean().reshape(1)
    result = projected_adam(
        lambda theta: negative_log_marginal_likelihood(theta, X, y, noise, kernel), start, bounds, lr, steps
    )
    return result.theta
