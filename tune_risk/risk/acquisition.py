"""The UCB^MV acquisition (ERAHBO eq. 11) over a finite pool or the continuous unit cube (§1.6).

BoTorch 0.18 has no mean-variance acquisition (its ``risk_measures`` are MC objectives for input
noise), so ``UCB^MV`` is a custom ``AcquisitionFunction`` (``PointwiseAcquisition``), as in CODE-RAHBO::

    UCB^MV(x) = mu_f(x) + kappa sigma_f(x) - alpha (mu_var(x) - kappa sigma_var(x))

* Pool: exact argmax over the rows not yet evaluated (A-10), ties broken by the lowest row.
* Continuous: BoTorch ``optimize_acqf`` (q = 1) with a seeded RNG, so that runs are repeatable
  (``maximize_on_unit_cube``, also the OSCBO loop's ``mu + kappa sigma``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch

# isort: off
import tune_risk.botorch_without_jax  # noqa: F401  (must precede BoTorch: imports it without JAX)
# isort: on
from botorch.acquisition import AcquisitionFunction
from botorch.optim import optimize_acqf
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from tune_risk.gp.exact import DTYPE
from tune_risk.risk.model import RiskModel


class PointwiseAcquisition(AcquisitionFunction):
    """A q = 1 acquisition for ``optimize_acqf`` from a function ``values``: ``n x d`` points -> ``n`` values.

    No BoTorch ``Model`` stands behind it (ERAHBO's is a pair of GPs, the OSCBO loop's a ``Surrogate``).
    """

    def __init__(self, values: Callable[[Tensor], Tensor]) -> None:
        torch.nn.Module.__init__(self)  # AcquisitionFunction.__init__ would want a Model
        self.values = values

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """``b x 1 x d`` -> ``b`` acquisition values."""
        return self.values(X.squeeze(-2))


def maximize_on_unit_cube(values: Callable[[Tensor], Tensor], dim: int, seed: int, num_restarts: int,
                          raw_samples: int) -> np.ndarray:
    """``argmax_{x in [0,1]^d} values(x)`` with BoTorch's ``optimize_acqf`` (q = 1), seeded so that runs repeat."""
    bounds = torch.stack([torch.zeros(dim, dtype=DTYPE), torch.ones(dim, dtype=DTYPE)])
    with torch.random.fork_rng(), warnings.catch_warnings():
        torch.manual_seed(seed)
        warnings.simplefilter("ignore")
        candidate, _ = optimize_acqf(
            PointwiseAcquisition(values), bounds=bounds, q=1, num_restarts=num_restarts, raw_samples=raw_samples
        )
    return candidate.detach().reshape(-1).clamp(0.0, 1.0).numpy()


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
    r"""``argmax_{x in [0,1]^d} UCB^MV(x)`` (eq. 11) with ``optimize_acqf`` (CODE-RAHBO's settings by default).

    .. math::
        \mathrm{UCB}^{MV}(x) = \mu_f(x) + \kappa\sigma_f(x) - \alpha(\mu_{var}(x) - \kappa\sigma_{var}(x))
    """
    return maximize_on_unit_cube(lambda X: risk_model.ucb_mv(X, kappa), dim, seed, num_restarts, raw_samples)
