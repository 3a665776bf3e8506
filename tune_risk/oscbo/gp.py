"""The fixed-hyperparameter GP of OSCBO and its baselines (docs/algorithms.md §3.1, §4.1).

Matérn-5/2 (or RBF) kernel with outputscale 1 (``k(x, x) = 1``), zero prior mean and a fixed
observation noise (``sigma^2 = 0.01`` in *standardised* units, O-13) on inputs in the unit cube.
The lengthscale ``theta`` (isotropic: one entry; ARD: ``d`` entries) is the only free
hyperparameter. Posteriors use the explicit formulas (OSCBO eqs. 1-2)::

    mu(x)      = k(x, X) (K + diag(noise))^-1 y
    sigma^2(x) = 1 - k(x, X) (K + diag(noise))^-1 k(X, x)

with one Cholesky factor (``tune_risk.gp.exact``, shared with ERAHBO's GPs); ``to_botorch_model`` builds the equivalent ``SingleTaskGP`` and the tests
assert both agree (§5 item 19). Everything is float64 and differentiable in the query points and
in ``theta``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from tune_risk.gp.exact import DTYPE, ExactPosterior

NOISE = 0.01  # sigma^2 of OSCBO Table S1, in standardised output units
THETA_BOUNDS = (0.025, 10.0)  # Theta on normalised inputs (O-14)


def as_theta(theta: float | Sequence[float] | Tensor, dim_theta: int | None = None) -> Tensor:
    """A lengthscale as a 1-D float64 tensor (``dim_theta`` entries if given)."""
    value = torch.as_tensor(theta, dtype=DTYPE).reshape(-1)
    if dim_theta is not None and value.numel() == 1 and dim_theta > 1:
        value = value.expand(dim_theta).clone()
    return value


def noise_vector(noise: float | Tensor, n: int) -> Tensor:
    """Per-point noise variances (a scalar is broadcast)."""
    value = torch.as_tensor(noise, dtype=DTYPE)
    return value.expand(n).clone() if value.dim() == 0 else value.reshape(-1)


class FixedGP(ExactPosterior):
    r"""Zero-mean, unit-amplitude GP conditioned on ``(X, y)`` with fixed lengthscale and noise.

    Args:
        X: ``n x d`` inputs in the unit cube.
        y: ``n`` targets in standardised units.
        theta: lengthscale, isotropic (1 entry) or ARD (``d`` entries).
        noise: observation noise variance(s), a scalar or ``n`` values (heteroscedastic, §3.10).
        kernel: ``"matern52"`` (OSCBO) or ``"rbf"``.
    """

    def __init__(self, X: Tensor, y: Tensor, theta: float | Sequence[float] | Tensor, noise: float | Tensor = NOISE,
                 kernel: str = "matern52") -> None:
        if X.dim() != 2 or y.dim() != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(f"X must be n x d and y of length n, got X {tuple(X.shape)} and y {tuple(y.shape)}")
        self.y = y
        super().__init__(kernel, as_theta(theta), X, noise_vector(noise, X.shape[0]), y)  # prior mean 0

    @property
    def theta(self) -> Tensor:
        """The lengthscale ``theta`` (1 or ``d`` entries)."""
        return self.lengthscale

    def predict(self, Xq: Tensor) -> tuple[Tensor, Tensor]:
        """Latent posterior mean and *variance* at ``Xq`` (``m x d``), standardised units (the prior with no data)."""
        return self.latent(Xq)

    def to_botorch_model(self):
        """``SingleTaskGP(train_Yvar=noise, ZeroMean, no outcome transform)`` with the same kernel."""
        # isort: off
        import tune_risk.botorch_without_jax  # noqa: F401  (must precede BoTorch: imports it without JAX)
        # isort: on
        from botorch.models import SingleTaskGP
        from gpytorch.kernels import MaternKernel, RBFKernel
        from gpytorch.means import ZeroMean

        ard = self.theta.numel() if self.theta.numel() > 1 else None
        base = MaternKernel(nu=2.5, ard_num_dims=ard) if self.kernel == "matern52" else RBFKernel(ard_num_dims=ard)
        base = base.to(DTYPE)
        base.lengthscale = self.theta.reshape(1, -1) if ard else self.theta.reshape(1, 1)
        model = SingleTaskGP(
            self.X, self.y.unsqueeze(-1), train_Yvar=self.noise.unsqueeze(-1), covar_module=base,
            mean_module=ZeroMean(), outcome_transform=None,
        ).to(DTYPE)
        return model.eval()
