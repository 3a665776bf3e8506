"""The two GPs of ERAHBO: hyperparameter fitting (BoTorch MAP) and exact conditioning with frozen
hyperparameters (docs/algorithms.md §1.4).

* ``G_var`` models the sample variances ``s2_c`` of the configurations (homoscedastic noise, §1.4.2).
* ``G_f`` models the sample means ``m_c`` with fixed heteroscedastic noise (ERAHBO eq. 19, §1.4.3)::

      Sigma_c = clip(UCB_var(x_c), eps, rho_bar^2) / k_c,   UCB_var = mu_var + kappa_acq * sigma_var

Hyperparameters are MAP-fitted by BoTorch (``SingleTaskGP`` with the Hvarfner dimension-scaled
lengthscale prior, ``fit_gpytorch_mll``) on the initial design and then frozen (A-7). Conditioning
on new data with frozen hyperparameters is the textbook exact GP posterior::

      mu(x)      = c + k(x, X) (K + diag(noise))^-1 (y - c)
      sigma^2(x) = k(x, x) - k(x, X) (K + diag(noise))^-1 k(X, x)

written here with one Cholesky factor instead of a BoTorch ``Model`` object. Why by hand: ERAHBO
re-conditions both GPs after *every* replicate (§1.8); building two ``SingleTaskGP`` objects costs
~6 ms against ~1 ms for the factorisation at n = 200, which decides whether a 1500-replicate replay
takes 5 or 30 seconds. ``to_botorch_model`` rebuilds the equivalent ``SingleTaskGP`` and the tests
assert both posteriors agree to 1e-10. Kernels are gpytorch's (``RBFKernel``, ``MaternKernel``);
all GP math is float64.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import asdict, dataclass

import torch

# isort: off
import tune_risk._compat  # noqa: F401  (must precede BoTorch: imports it without JAX)
# isort: on
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import Kernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from tune_risk.settings import EngineSettings

logger = logging.getLogger(__name__)

DTYPE = torch.float64
NOISE_FLOOR = 1e-6  # gpytorch's float64 floor for fixed noise; eq. 19's epsilon
_JITTERS = (0.0, 1e-10, 1e-8, 1e-6, 1e-4)
_MAX_SCALED_SQDIST = 1400.0  # exp(-700) ~ 1e-304 > float64's subnormal range (see kernel_matrix)


@dataclass(frozen=True)
class GPHyperparameters:
    """Frozen hyperparameters of one GP (plain floats, so ``state_dict`` is exact).

    Attributes:
        kernel: ``"rbf"`` or ``"matern52"``; no outputscale, so ``k(x, x) = 1``.
        lengthscale: one lengthscale per input dimension (ARD).
        constant: constant prior mean, in standardised units.
        noise: homoscedastic noise variance in standardised units, or ``None`` for a GP whose
            per-point noise is supplied at conditioning time (``G_f``, eq. 19).
        y_mean, y_std: output standardisation constants fitted with the hyperparameters.
    """

    kernel: str
    lengthscale: tuple[float, ...]
    constant: float
    noise: float | None
    y_mean: float
    y_std: float

    def make_kernel(self) -> Kernel:
        """The gpytorch kernel module with these lengthscales (dimension-scaled prior attached)."""
        d = len(self.lengthscale)
        kernel = get_covar_module_with_dim_scaled_prior(d, use_rbf_kernel=self.kernel == "rbf").to(DTYPE)
        kernel.lengthscale = torch.tensor([self.lengthscale], dtype=DTYPE)
        return kernel.requires_grad_(False)  # frozen: gradients flow only to query points

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, state: dict) -> GPHyperparameters:
        return cls(**{**state, "lengthscale": tuple(state["lengthscale"])})


def standardization_constants(y: Tensor) -> tuple[float, float]:
    """``(mean, std)`` as BoTorch's ``Standardize`` computes them (unbiased std; 1 if degenerate)."""
    mean = float(y.mean())
    std = float(y.std()) if y.numel() > 1 else 1.0
    return mean, (std if std > 1e-8 else 1.0)


def fit_hyperparameters(
    X: Tensor,
    y: Tensor,
    noise: Tensor | None,
    kernel: str = "rbf",
    init: GPHyperparameters | None = None,
) -> GPHyperparameters:
    """MAP-fit one GP with BoTorch's defaults (docs/algorithms.md §1.4.2, §1.4.4).

    Args:
        X: ``n x d`` inputs in the unit cube.
        y: ``n`` targets in raw units; standardised here with constants that are then frozen.
        noise: ``n`` fixed noise variances in raw units (``FixedNoiseGaussianLikelihood``), or
            ``None`` to learn a homoscedastic noise with the ``LogNormal(-4, 1)`` prior.
        kernel: ``"rbf"`` (BoTorch >= 0.12 default) or ``"matern52"``.
        init: warm start (``refit="every_round"``); only kernel, mean and likelihood values are
            copied, never outcome-transform buffers (§1.4.4 pitfall).
    """
    y_mean, y_std = standardization_constants(y)
    model = SingleTaskGP(
        X, ((y - y_mean) / y_std).unsqueeze(-1),
        train_Yvar=None if noise is None else (noise / y_std**2).clamp_min(NOISE_FLOOR).unsqueeze(-1),
        covar_module=get_covar_module_with_dim_scaled_prior(X.shape[-1], use_rbf_kernel=kernel == "rbf"),
        outcome_transform=None,
    ).to(DTYPE)
    if init is not None:
        model.covar_module.lengthscale = torch.tensor([init.lengthscale], dtype=DTYPE)
        model.mean_module.constant = init.constant
        if noise is None and init.noise is not None:
            model.likelihood.noise = init.noise
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    # fit_gpytorch_mll retries from random draws if L-BFGS fails: seed them, so fits are repeatable.
    with warnings.catch_warnings(), torch.random.fork_rng():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        try:
            fit_gpytorch_mll(mll)
        except Exception as error:  # keep the prior-mode values: a failed fit must not stop HPO
            logger.warning("GP hyperparameter fit failed (%s); keeping the initial values", error)
    return GPHyperparameters(
        kernel=kernel,
        lengthscale=tuple(float(v) for v in model.covar_module.lengthscale.detach().reshape(-1)),
        constant=float(model.mean_module.constant.detach()),
        noise=None if noise is not None else float(model.likelihood.noise.detach().reshape(-1)[0]),
        y_mean=y_mean,
        y_std=y_std,
    )


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


class ConditionedGP:
    r"""Exact posterior of a GP with frozen hyperparameters, conditioned on ``(X, y, noise)``.

    With standardised targets ``ỹ = (y - y_mean)/y_std``, ``K + diag(noise) = L L^T`` and
    ``a = (K + diag(noise))^{-1} (ỹ - c)``, predictions at ``X*`` (``m x d``) are
    ``mu = c + K_* a`` and ``sigma^2 = 1 - ||L^{-1} K_*^T||^2`` (``k(x, x) = 1``), mapped back to
    raw units. ``standardization="per_build"`` recomputes ``(y_mean, y_std)`` from ``y`` as
    BoTorch's ``Standardize`` would; ``"frozen"`` keeps the fitted constants (§1.4.4).
    """

    def __init__(
        self,
        hp: GPHyperparameters,
        X: Tensor,
        y: Tensor,
        noise: Tensor | None = None,
        standardization: str = "frozen",
    ) -> None:
        self.hp = hp
        self.lengthscale = torch.tensor(hp.lengthscale, dtype=DTYPE)
        self.X = X
        self.y_mean, self.y_std = (
            standardization_constants(y) if standardization == "per_build" else (hp.y_mean, hp.y_std)
        )
        if noise is None:
            self.noise = torch.full_like(y, hp.noise)
        else:
            self.noise = (noise / self.y_std**2).clamp_min(NOISE_FLOOR)
        with torch.no_grad():
            gram = self.covariance(X, X) + torch.diag(self.noise)
        self.chol = _cholesky(gram)
        self.targets = (y - self.y_mean) / self.y_std  # standardised units
        residual = (self.targets - hp.constant).unsqueeze(-1)
        self.alpha = torch.cholesky_solve(residual, self.chol).squeeze(-1)

    def covariance(self, X1: Tensor, X2: Tensor) -> Tensor:
        """Prior covariance ``k(X1, X2)`` (unit amplitude)."""
        return kernel_matrix(self.hp.kernel, self.lengthscale, X1, X2)

    def predict(self, Xq: Tensor) -> tuple[Tensor, Tensor]:
        """Latent posterior mean and standard deviation at ``Xq`` (``m x d``), raw units."""
        k_star = self.covariance(Xq, self.X)
        mean = self.hp.constant + k_star @ self.alpha
        v = torch.linalg.solve_triangular(self.chol, k_star.transpose(-1, -2), upper=False)
        var = (1.0 - (v * v).sum(-2)).clamp_min(1e-12)
        return mean * self.y_std + self.y_mean, var.sqrt() * self.y_std

    def to_botorch_model(self) -> SingleTaskGP:
        """The equivalent BoTorch ``SingleTaskGP`` (for checks and interoperability)."""
        model = SingleTaskGP(
            self.X, self.targets.unsqueeze(-1), train_Yvar=self.noise.unsqueeze(-1),
            covar_module=self.hp.make_kernel(), outcome_transform=None,
        ).to(DTYPE)
        model.mean_module.constant = torch.tensor(self.hp.constant, dtype=DTYPE)  # a float goes via float32
        model.outcome_transform = _fixed_standardize(self.y_mean, self.y_std)
        return model.eval()


def _fixed_standardize(mean: float, std: float) -> Standardize:
    transform = Standardize(m=1).to(DTYPE)
    transform.means = torch.tensor([[mean]], dtype=DTYPE)
    transform.stdvs = torch.tensor([[std]], dtype=DTYPE)
    transform._stdvs_sq = transform.stdvs.pow(2)
    transform._is_trained = torch.tensor(True)
    return transform.eval()


def _cholesky(matrix: Tensor) -> Tensor:
    """Cholesky factor, adding jitter only if the factorisation fails."""
    eye = torch.eye(matrix.shape[-1], dtype=matrix.dtype)
    for jitter in _JITTERS:
        chol, info = torch.linalg.cholesky_ex(matrix + jitter * eye)
        if int(info) == 0:
            return chol
    raise RuntimeError(f"GP covariance is not positive definite even with jitter {_JITTERS[-1]}")


def variance_gp_noise(k: Tensor, settings: EngineSettings, rho_bar_sq: float) -> Tensor | None:
    """Noise of ``G_var`` in raw units (A-6): learned (``None``), the uniform bound
    ``R^2 = 2 rho_bar^4 / (k_min - 1)`` or the k-aware ``2 rho_bar^4 / (k_c - 1)`` (App. A, Ass. 2)."""
    if settings.var_noise == "learned":
        return None
    k_eff = torch.full_like(k, settings.k_min) if settings.var_noise == "theory" else k
    return 2.0 * rho_bar_sq**2 / (k_eff - 1.0)


def mean_gp_noise(ucb_var: Tensor, s2: Tensor, k: Tensor, settings: EngineSettings, rho_bar_sq: float) -> Tensor:
    """Fixed noise ``Sigma_c`` of ``G_f`` (A-4): ERAHBO eq. 19, the plug-in ``s2/k`` or RAHBO's code ``s2``."""
    if settings.mean_noise == "eq19":
        return ucb_var.clamp(NOISE_FLOOR, rho_bar_sq) / k  # ERAHBO eq. 19
    if settings.mean_noise == "plugin":
        return s2.clamp_min(NOISE_FLOOR) / k
    return s2.clamp_min(NOISE_FLOOR)
