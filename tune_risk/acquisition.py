"""The UCB^MV acquisition (ERAHBO eq. 11) over a finite pool or the continuous unit cube (§1.6).

BoTorch 0.18 has no mean-variance acquisition (its ``risk_measures`` are MC objectives for input
noise), so ``UpperConfidenceBoundMV`` is a custom ``AcquisitionFunction``, as in CODE-RAHBO::

    UCB^MV(x) = mu_f(x) + kappa sigma_f(x) - alpha (mu_var(x) - kappa sigma_var(x))

* Pool: exact argmax over the rows not yet evaluated (A-10), ties broken by the lowest row.
* Continuous: BoTorch ``optimize_acqf`` (q = 1) with a seeded RNG, so that runs are repeatable.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

# isort: off
import tune_risk._compat  # noqa: F401  (must precede BoTorch: imports it without JAX)
# isort: on
from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from tune_risk.exact_gp import DTYPE
from tune_risk.risk_model import RiskModel


class UpperConfidenceBoundMV(AcquisitionFunction):
    r"""Mean-variance upper confidence bound (ERAHBO eq. 9/11/23).

    .. math::
        \mathrm{UCB}^{MV}(x) = \mu_f(x) + \kappa\sigma_f(x) - \alpha(\mu_{var}(x) - \kappa\sigma_{var}(x))

    Args:
        risk_model: ``G_f`` and ``G_var`` conditioned on the evaluated configurations.
        kappa: confidence multiplier ``kappa_acq = sqrt(beta)``.
    """

    def __init__(self, risk_model: RiskModel, kappa: float) -> None:
        torch.nn.Module.__init__(self)  # the "model" is a pair of GPs, not one BoTorch Model
        self.risk_model = risk_model
        self.kappa = kappa

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """``b x 1 x d`` -> ``b`` acquisition values."""
        return self.risk_model.ucb_mv(X.squeeze(-2), self.kappa)


def argmax_pool(risk_model: RiskModel, pool: Tensor, available: np.ndarray, kappa: float) -> int:
    """Row index of the pool maximising ``UCB^MV`` among ``available`` rows (boolean mask)."""
    rows = np.flatnonzero(available)
    if rows.size == 0:
        raise ValueError("no unevaluated pool rows are left to propose")
    with torch.no_grad():
        values = risk_model.ucb_mv(pool[torch.from_numpy(rows)], kappa)
    return int(rows[int(torch.argmax(values))])


def maximize_continuous(
    risk_model: RiskModel, dim: int, kappa: float, seed: int, num_restarts: int, raw_samples: int
) -> np.ndarray:
    """``argmax_{x in [0,1]^d} UCB^MV(x)`` with ``optimize_acqf`` (CODE-RAHBO's settings by default)."""
    acquisition = UpperConfidenceBoundMV(risk_model, kappa)
    bounds = torch.stack([torch.zeros(dim, dtype=DTYPE), torch.ones(dim, dtype=DTYPE)])
    with torch.random.fork_rng(), warnings.catch_warnings():
        torch.manual_seed(seed)
        warnings.simplefilter("ignore")
        candidate, _ = optimize_acqf(
            acquisition, bounds=bounds, q=1, num_restarts=num_restarts, raw_samples=raw_samples
        )
    return candidate.detach().reshape(-1).clamp(0.0, 1.0).numpy()
