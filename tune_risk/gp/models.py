"""GPs with frozen hyperparameters: MAP fitting with BoTorch and exact conditioning (docs/algorithms.md §1.4).

ERAHBO's two GPs are built from these pieces (``tune_risk.risk.model`` adds what is ERAHBO's: which
targets, and eq. 19's per-point noise):

* ``G_var`` models the sample variances ``s2_c`` of the configurations (homoscedastic noise, §1.4.2).
* ``G_f`` models the sample means ``m_c`` with fixed heteroscedastic noise (ERAHBO eq. 19, §1.4.3).

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
import warnings
from dataclasses import asdict, dataclass

import torch

# isort: off
import tune_risk.botorch_without_jax  # noqa: F401  (must precede BoTorch: imports it without JAX)
# isort: on
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import Kernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from tune_risk.gp.exact import DTYPE, ExactPosterior, standardization_constants

logger = logging.getLogger(__name__)

NOISE_FLOOR = 1e-6  # gpytorch's float64 floor for fixed noise; eq. 19's epsilon


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


class ConditionedGP(ExactPosterior):
    r"""Exact posterior of a GP with frozen hyperparameters, conditioned on ``(X, y, noise)``.

    With standardised targets ``ỹ = (y - y_mean)/y_std``, ``K + diag(noise) = L L^T`` and
    ``a = (K + diag(noise))^{-1} (ỹ - c)``, predictions at ``X*`` (``m x d``) are
    ``mu = c + K_* a`` and ``sigma^2 = 1 - ||L^{-1} K_*^T||^2`` (``k(x, x) = 1``; ``ExactPosterior``),
    mapped back to raw units. ``standardization="per_build"`` recomputes ``(y_mean, y_std)`` from ``y``
    as BoTorch's ``Standardize`` would; ``"frozen"`` keeps the fitted constants (§1.4.4).
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
        self.y_mean, self.y_std = (
            standardization_constants(y) if standardization == "per_build" else (hp.y_mean, hp.y_std)
        )
        # noise in standardised units: G_var's learned one, or G_f's per-point Sigma_c (eq. 19)
        noise = torch.full_like(y, hp.noise) if noise is None else (noise / self.y_std**2).clamp_min(NOISE_FLOOR)
        self.targets = (y - self.y_mean) / self.y_std  # standardised units
        super().__init__(hp.kernel, torch.tensor(hp.lengthscale, dtype=DTYPE), X, noise, self.targets - hp.constant)

    def predict(self, Xq: Tensor) -> tuple[Tensor, Tensor]:
        """Latent posterior mean and standard deviation at ``Xq`` (``m x d``), raw units."""
        mean, var = self.latent(Xq)
        return (self.hp.constant + mean) * self.y_std + self.y_mean, var.sqrt() * self.y_std

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
