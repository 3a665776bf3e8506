"""Exact GP algebra with fixed hyperparameters, shared by ERAHBO's two GPs (``gp.models.ConditionedGP``,
docs/algorithms.md §1.4) and OSCBO's GP (``oscbo.gp.FixedGP``, §3.1).

A GP with unit amplitude (``k(x, x) = 1``), prior mean 0 and kernel ``k`` (RBF or Matérn-5/2 with ARD
lengthscales), conditioned on residuals ``r`` at inputs ``X`` with per-point noise variances
``D = diag(noise)``: with ``K + D = L L^T`` and ``a = (K + D)^{-1} r``, the latent posterior is::

    mu(x)      = k(x, X) a
    sigma^2(x) = 1 - ||L^{-1} k(X, x)||^2

Outputs are standardised as BoTorch's ``Standardize`` does: ``ỹ = (y - mean(y)) / std(y)`` (unbiased
std, 1 when degenerate). Everything is float64 and differentiable in the query points and in the
lengthscale. No BoTorch model here: this is the part both GPs compute by hand (``gp.models`` says why).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

DTYPE = torch.float64
JITTERS = (0.0, 1e-10, 1e-8, 1e-6, 1e-4)
"""Diagonal jitters tried in turn until the Cholesky factorisation succeeds (0 first: jitter only if needed)."""
MIN_STD = 1e-8  # BoTorch Standardize's min_stdv: a smaller std means constant outputs
_MAX_SCALED_SQDIST = 1400.0  # exp(-700) ~ 1e-304 > float64's subnormal range (see kernel_matrix)


def kernel_matrix(kind: str, lengthscale: Tensor, X1: Tensor, X2: Tensor) -> Tensor:
    r"""``k(X1, X2)`` for the RBF or Matern-5/2 kernel with ARD ``lengthscale`` and unit amplitude.

    RBF: ``exp(-r^2/2)``; Matern-5/2: ``(1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)``, with
    ``r = ||(x1 - x2)/lengthscale||``. Same values as gpytorch's ``RBFKernel``/``MaternKernel``
    (a test checks), but the scaled squared distance is capped at 1400: ``exp`` of arguments below
    about -708 yields subnormal floats, which are ~100x slower on CPUs and dominated the engine's
    run time with short lengthscales. The cap changes RBF values only below 1e-304 and Matern-5/2
    values only below 1e-32 (relative to ``k(x, x) = 1``, far below float64 resolution).
    """
    a, b = X1 / lengthscale, X2 / lengthscale
    centre = a.mean(-2, keepdim=True)  # centring reduces cancellation error (as gpytorch's sq_dist)
    a, b = a - centre, b - centre
    # ||a - b||^2 = ||a||^2 + ||b||^2 - 2 a.b (one matmul, as gpytorch does); clamp rounding below 0
    sqdist = (a.pow(2).sum(-1, keepdim=True) + b.pow(2).sum(-1).unsqueeze(-2) - 2.0 * a @ b.transpose(-1, -2))
    sqdist = sqdist.clamp(0.0, _MAX_SCALED_SQDIST)
    if kind == "rbf":
        return torch.exp(-0.5 * sqdist)
    r = math.sqrt(5.0) * sqdist.clamp_min(1e-30).sqrt()
    return (1.0 + r + r.pow(2) / 3.0) * torch.exp(-r)


def cholesky_with_jitter(matrix: Tensor, jitters: tuple[float, ...] = JITTERS) -> Tensor:
    """Lower Cholesky factor of ``matrix + j I`` for the first ``j`` in ``jitters`` that factorises.

    Raises ``RuntimeError`` if none does. Differentiable in ``matrix`` (OSCBO's closed form, §3.3).
    """
    eye = torch.eye(matrix.shape[-1], dtype=matrix.dtype)
    for jitter in jitters:
        chol, info = torch.linalg.cholesky_ex(matrix + jitter * eye if jitter else matrix)
        if int(info) == 0:
            return chol
    raise RuntimeError(f"GP covariance is not positive definite even with jitter {jitters[-1]}")


def standardization_constants(y: Tensor) -> tuple[float, float]:
    """``(mean, std)`` as BoTorch's ``Standardize`` computes them (unbiased std; 1 if degenerate or not finite)."""
    mean = float(y.mean())
    std = float(y.std()) if y.numel() > 1 else 1.0
    return mean, (std if std > MIN_STD and math.isfinite(std) else 1.0)


def standardize(y: Tensor) -> tuple[Tensor, float, float]:
    """``(ỹ, mean, std)`` with ``ỹ = (y - mean)/std`` and the constants of ``standardization_constants``."""
    mean, std = standardization_constants(y)
    return (y - mean) / std, mean, std


class ExactPosterior:
    r"""Latent posterior of a zero-mean, unit-amplitude GP conditioned on residuals (module docstring).

    Args:
        kernel: ``"rbf"`` or ``"matern52"``.
        lengthscale: 1 (isotropic) or ``d`` (ARD) entries.
        X: ``n x d`` inputs (``n = 0``: the prior).
        noise: ``n`` noise variances, in the units of ``residual``.
        residual: ``n`` targets minus the prior mean.
    """

    def __init__(self, kernel: str, lengthscale: Tensor, X: Tensor, noise: Tensor, residual: Tensor) -> None:
        self.kernel, self.lengthscale, self.X, self.noise = kernel, lengthscale, X, noise
        self.chol = cholesky_with_jitter(self.covariance(X, X) + torch.diag(noise))
        self.alpha = torch.cholesky_solve(residual.unsqueeze(-1), self.chol).squeeze(-1)

    def covariance(self, X1: Tensor, X2: Tensor) -> Tensor:
        """Prior covariance ``k(X1, X2)`` (unit amplitude)."""
        return kernel_matrix(self.kernel, self.lengthscale, X1, X2)

    def latent(self, Xq: Tensor) -> tuple[Tensor, Tensor]:
        """``(mu, sigma^2)`` at ``Xq`` (``m x d``), prior mean excluded, in the units of the residuals."""
        k_star = self.covariance(Xq, self.X)
        v = torch.linalg.solve_triangular(self.chol, k_star.transpose(-1, -2), upper=False)
        return k_star @ self.alpha, (1.0 - (v * v).sum(-2)).clamp_min(1e-12)
