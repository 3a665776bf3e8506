"""The fixed-hyperparameter GP of OSCBO and its baselines (docs/algorithms.md §3.1, §4.1).

Matérn-5/2 (or RBF) kernel with outputscale 1 (``k(x, x) = 1``), zero prior mean and a fixed
observation noise (``sigma^2 = 0.01`` in *standardised* units, O-13) on inputs in the unit cube.
The lengthscale ``theta`` (isotropic: one entry; ARD: ``d`` entries) is the only free
hyperparameter. Posteriors use the explicit formulas (OSCBO eqs. 1-2)::

    mu(x)      = k(x, X) (K + diag(noise))^-1 y
    sigma^2(x) = 1 - k(x, X) (K + diag(noise))^-1 k(X, x)

with one Cholesky factor; ``to_botorch_model`` builds the equivalent ``SingleTaskGP`` and the tests
assert both agree (§5 item 19). Everything is float64 and differentiable in the query points and
in ``theta``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from tune_risk.models import DTYPE, _cholesky, kernel_matrix

NOISE = 0.01  # sigma^2 of OSCBO Table S1, in standardised output units
THETA_BOUNDS = (0.025, 10.0)  # Theta on normalised inputs (O-14)


def as_theta(theta, dim_theta: int | None = None) -> Tensor:
    """A lengthscale as a 1-D float64 tensor (``dim_theta`` entries if given)."""
    value = torch.as_tensor(theta, dtype=DTYPE).reshape(-1)
    if dim_theta is not None and value.numel() == 1 and dim_theta > 1:
        value = value.expand(dim_theta).clone()
    return value


def standardize(y: Tensor) -> tuple[Tensor, float, float]:
    """``(ỹ, mean, std)`` with ``ỹ = (y - mean)/std`` (unbiased std; 1 when degenerate), §3.1."""
    mean = float(y.mean())
    std = float(y.std()) if y.numel() > 1 else 1.0
    std = std if std > 1e-12 and math.isfinite(std) else 1.0
    return (y - mean) / std, mean, std


def noise_vector(noise: float | Tensor, n: int) -> Tensor:
    """Per-point noise variances (a scalar is broadcast)."""
    value = torch.as_tensor(noise, dtype=DTYPE)
    return value.expand(n).clone() if value.dim() == 0 else value.reshape(-1)


class FixedGP:
    r"""Zero-mean, unit-amplitude GP conditioned on ``(X, y)`` with fixed lengthscale and noise.

    Args:
        X: ``n x d`` inputs in the unit cube.
        y: ``n`` targets in standardised units.
        theta: lengthscale, isotropic (1 entry) or ARD (``d`` entries).
        noise: observation noise variance(s), a scalar or ``n`` values (heteroscedastic, §3.10).
        kernel: ``"matern52"`` (OSCBO) or ``"rbf"``.
    """

    def __init__(self, X: Tensor, y: Tensor, theta, noise: float | Tensor = NOISE, kernel: str = "matern52") -> None:
        if X.dim() != 2 or y.dim() != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(f"X must be n x d and y of length n, got X {tuple(X.shape)} and y {tuple(y.shape)}")
        self.X, self.y, self.kernel = X, y, kernel
        self.theta = as_theta(theta)
        self.noise = noise_vector(noise, X.shape[0])
        gram = self.covariance(X, X) + torch.diag(self.noise)
        self.chol = _cholesky(gram) if X.shape[0] else gram
        self.alpha = torch.cholesky_solve(y.unsqueeze(-1), self.chol).squeeze(-1) if X.shape[0] else y

    def covariance(self, X1: Tensor, X2: Tensor) -> Tensor:
        """Prior covariance ``k(X1, X2)``."""
        return kernel_matrix(self.kernel, self.theta, X1, X2)

    def predict(self, Xq: Tensor) -> tuple[Tensor, Tensor]:
        """Latent posterior mean and *variance* at ``Xq`` (``m x d``), standardised units."""
        if self.X.shape[0] == 0:
            return torch.zeros(Xq.shape[:-1], dtype=DTYPE), torch.ones(Xq.shape[:-1], dtype=DTYPE)
        k_star = self.covariance(Xq, self.X)
        mean = k_star @ self.alpha
        v = torch.linalg.solve_triangular(self.chol, k_star.transpose(-1, -2), upper=False)
        var = (1.0 - (v * v).sum(-2)).clamp_min(1e-12)
        return mean, var

    def to_botorch_model(self):
        """``SingleTaskGP(train_Yvar=noise, ZeroMean, no outcome transform)`` with the same kernel."""
        from botorch.models import SingleTaskGP
        from gpytorch.kernels import MaternKernel, RBFKernel
        from gpytorch.means import ZeroMean

        import tune_risk._compat  # noqa: F401

        ard = self.theta.numel() if self.theta.numel() > 1 else None
        base = MaternKernel(nu=2.5, ard_num_dims=ard) if self.kernel == "matern52" else RBFKernel(ard_num_dims=ard)
        base = base.to(DTYPE)
        base.lengthscale = self.theta.reshape(1, -1) if ard else self.theta.reshape(1, 1)
        model = SingleTaskGP(
            self.X, self.y.unsqueeze(-1), train_Yvar=self.noise.unsqueeze(-1), covar_module=base,
            mean_module=ZeroMean(), outcome_transform=None,
        ).to(DTYPE)
        return model.eval()
