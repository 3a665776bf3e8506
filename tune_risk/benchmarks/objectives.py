"""Synthetic heteroscedastic objectives with known mean and variance (ERAHBO eqs. 1–5; RAHBO Sec. 5).

A replicate of configuration ``x ∈ [0, 1]^d`` returns ``y = f(x) + ρ(x) z`` with ``z ~ N(0, 1)``, so
``E y = f(x)``, ``Var y = ρ²(x)`` and the risk-averse objective is ``MV(x) = f(x) − α ρ²(x)``
(maximised).  These objectives are used by the tests and the demo; all take inputs on the unit cube
and map them to their native domains internally.

Registry (:data:`OBJECTIVES`; raw-unit scales, α = 1):

* ``"sine"`` (d = 1), RAHBO's 1-D example: on ``x = 2u ∈ [0, 2]``, ``f(x) = sin(2πx)`` and noise
  standard deviation ``ρ(x) = 0.1 + σ·sigmoid(30(x − 1))`` with ``σ = 1``.  Two maxima of equal
  mean 1 at ``u = 0.125`` (ρ² ≈ 0.01, MV ≈ 0.99) and ``u = 0.625`` (ρ² ≈ 1.21, MV ≈ −0.21).
* ``"branin"`` (d = 2), RAHBO's negated Branin on ``[−5, 10] × [0, 15]`` with
  ``ρ(x) = (σ·sigmoid(2(x₁ − 3.2)) + 0.2)(σ·sigmoid(2x₂) + 0.2)``, ``σ = 1``.  f ranges over
  about ``[−308, −0.398]``; its three maximisers A = (9.42, 2.475), B = (π, 2.275) and C = (−π, 12.275)
  have equal mean −0.398 and ρ² ≈ 2.05, 0.64 and 0.058, so MV prefers C.
* ``"hartmann3"`` / ``"hartmann6"``: the standard Hartmann mean (BoTorch's, negated: f* = 3.86278 and
  3.32237) with a variance bump on the global maximiser ``x*``,
  ``ρ²(x) = 0.01 + 1.0·exp(−‖x − x*‖² / (2·0.25²))``.  ``x*`` has MV ≈ 2.85 (H3) / 2.31 (H6), whereas
  the best MV, ≈ 3.62 near (0.72, 0.55, 0.86) for H3 and ≈ 3.19 at the second local maximum
  (0.405, 0.882, 0.847, 0.574, 0.139, 0.038) for H6, lies at a lower mean: the argmax of f is not
  the argmax of MV.

The RAHBO definitions follow ``Avidereta/risk-averse-hetero-bo`` (``rahbo/test_functions``), where the
function called ``get_noise_var`` returns the standard deviation that multiplies the normal draw.
In the RAHBO objectives the mean has tied maximisers; the risk-averse one is unique.

Noise is a common random number: replicate seed ``s`` always draws the same ``z_s`` (a counter-based
Philox stream keyed by ``s`` only), whatever ``x`` is, so every configuration evaluated with the same
seed sees the same standardised noise, as in RL with shared seeds.  Independent replicates come
from distinct seeds (e.g. a per-configuration seed permutation, docs/algorithms.md §1.11).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import expit
from scipy.stats import qmc

ArrayFn = Callable[[np.ndarray], np.ndarray]


def replicate_noise(seed: int) -> float:
    """Standard normal ``z_seed`` of replicate seed ``seed`` (Philox keyed by ``seed``; 0 ≤ seed < 2⁶⁴)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}.")
    return float(np.random.Generator(np.random.Philox(key=int(seed))).standard_normal())


@dataclass(frozen=True)
class HeteroscedasticObjective:
    r"""A maximisation problem on ``[0, 1]^d`` with known mean ``f`` and noise variance ``ρ²``.

    .. math:: y(x, s) = f(x) + ρ(x)\, z_s,\qquad \mathrm{MV}(x) = f(x) − α ρ^2(x).

    Attributes:
        name: registry name.
        dim: input dimension ``d``.
        mean_fn: ``f`` on unit-cube points, ``(n, d) → (n,)``.
        noise_std_fn: ``ρ`` on unit-cube points, ``(n, d) → (n,)``, positive.
        description: one line on the definition and scales.
    """

    name: str
    dim: int
    mean_fn: ArrayFn
    noise_std_fn: ArrayFn
    description: str = ""

    def _points(self, x: np.ndarray) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}) for {self.name!r}, got {arr.shape}.")
        if not np.all(np.isfinite(arr)) or arr.min(initial=0.0) < 0.0 or arr.max(initial=0.0) > 1.0:
            raise ValueError(f"x must be finite and inside the unit cube [0, 1]^{self.dim}.")
        return arr

    def mean(self, x: np.ndarray) -> np.ndarray:
        """Mean return ``f(x)`` for points ``x`` of shape ``(n, d)``; shape ``(n,)``."""
        return self.mean_fn(self._points(x))

    def noise_std(self, x: np.ndarray) -> np.ndarray:
        """Noise standard deviation ``ρ(x)``, shape ``(n,)``."""
        return self.noise_std_fn(self._points(x))

    def variance(self, x: np.ndarray) -> np.ndarray:
        """Noise variance ``ρ²(x)``, shape ``(n,)``."""
        return self.noise_std(x) ** 2

    def mv(self, x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
        """Mean-variance objective ``f(x) − α ρ²(x)`` (ERAHBO eq. 2), shape ``(n,)``."""
        return self.mean(x) - alpha * self.variance(x)

    def sample(self, x: np.ndarray, seed: int) -> float:
        """One replicate return ``f(x) + ρ(x) z_seed`` at a single point ``x`` of shape ``(d,)``.

        Deterministic in ``seed``; the same seed gives the same ``z`` at every ``x``.
        """
        point = np.asarray(x, dtype=np.float64)
        if point.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},) for {self.name!r}, got {point.shape}.")
        row = point[None, :]
        return float(self.mean(row)[0] + self.noise_std(row)[0] * replicate_noise(seed))

    def sample_batch(self, x: np.ndarray, seeds: Sequence[int]) -> np.ndarray:
        """Returns for every point of ``x`` (``(n, d)``) and seed; shape ``(n, len(seeds))``.

        Entry ``[i, j]`` equals ``sample(x[i], seeds[j])``.
        """
        z = np.array([replicate_noise(s) for s in seeds], dtype=np.float64)
        return self.mean(x)[:, None] + self.noise_std(x)[:, None] * z[None, :]


# --- RAHBO 1-D sine ------------------------------------------------------------------------------


def make_sine(sigma: float = 1.0) -> HeteroscedasticObjective:
    """RAHBO's sine: ``f = sin(2πx)``, ``ρ = 0.1 + σ·sigmoid(30(x − 1))`` on ``x = 2u ∈ [0, 2]``."""

    def mean_fn(u: np.ndarray) -> np.ndarray:
        return np.sin(2.0 * np.pi * (2.0 * u[:, 0]))

    def std_fn(u: np.ndarray) -> np.ndarray:
        return 0.1 + sigma * expit(30.0 * (2.0 * u[:, 0] - 1.0))

    return HeteroscedasticObjective(
        "sine", 1, mean_fn, std_fn,
        f"RAHBO sine, sigma={sigma}: maxima of mean 1 at u=0.125 (rho^2 ~ 0.01) and u=0.625 "
        f"(rho^2 ~ {(0.1 + sigma) ** 2:.2f}).",
    )


# --- RAHBO 2-D negated Branin --------------------------------------------------------------------

BRANIN_LOWER = np.array([-5.0, 0.0])
BRANIN_WIDTH = np.array([15.0, 15.0])
BRANIN_MAXIMISERS = np.array([[9.42478, 2.475], [np.pi, 2.275], [-np.pi, 12.275]])
"""Native-domain maximisers A (noisiest), B, C (least noisy) of the negated Branin function."""


def _neg_branin(x: np.ndarray) -> np.ndarray:
    """``−[(x₂ − b x₁² + c x₁ − r)² + 10(1 − t) cos x₁ + 10]``, native domain ``[−5, 10] × [0, 15]``."""
    b, c, r, t = 5.1 / (4.0 * np.pi**2), 5.0 / np.pi, 6.0, 1.0 / (8.0 * np.pi)
    x1, x2 = x[:, 0], x[:, 1]
    return -((x2 - b * x1**2 + c * x1 - r) ** 2 + 10.0 * (1.0 - t) * np.cos(x1) + 10.0)


def make_branin(sigma: float = 1.0) -> HeteroscedasticObjective:
    """RAHBO's negated Branin with ``ρ = (σ·sigmoid(2(x₁ − 3.2)) + 0.2)(σ·sigmoid(2x₂) + 0.2)``."""

    def mean_fn(u: np.ndarray) -> np.ndarray:
        return _neg_branin(BRANIN_LOWER + BRANIN_WIDTH * u)

    def std_fn(u: np.ndarray) -> np.ndarray:
        x = BRANIN_LOWER + BRANIN_WIDTH * u
        return (sigma * expit(2.0 * (x[:, 0] - 3.2)) + 0.2) * (sigma * expit(2.0 * x[:, 1]) + 0.2)

    return HeteroscedasticObjective(
        "branin", 2, mean_fn, std_fn,
        f"RAHBO negated Branin, sigma={sigma}: three maximisers of mean -0.398; MV prefers (-pi, 12.275).",
    )


# --- Hartmann with a variance bump on its global maximiser ---------------------------------------

HARTMANN_DIMS = (3, 6)
"""Dimensions of the Hartmann functions with a known global maximiser."""


def hartmann_function(dim: int):
    """BoTorch's negated (maximised) ``dim``-D Hartmann test function in float64, standard constants.

    BoTorch stores the constants in float32, so values differ from a float64 evaluation of the
    textbook constants by up to ~1e-7 (relative ~4e-8): the price of one maintained definition, shared
    with the OSCBO benchmark tasks (``experiments/studies/oscbo_harness/tasks.py``).
    """
    if dim not in HARTMANN_DIMS:
        raise ValueError(f"dim must be one of {list(HARTMANN_DIMS)}, got {dim!r}.")
    # isort: off
    import tune_risk.botorch_without_jax  # noqa: F401  (must precede BoTorch: imports it without JAX)
    # isort: on
    from botorch.test_functions import Hartmann

    return Hartmann(dim=dim, negate=True).to(torch.float64)


def hartmann_maximiser(dim: int) -> np.ndarray:
    """Global maximiser ``x*`` of the ``dim``-D Hartmann mean (standard constants, dim ∈ {3, 6})."""
    return hartmann_function(dim).optimizers[0].numpy().copy()


def make_hartmann(
    dim: int, amplitude: float = 1.0, lengthscale: float = 0.25, floor: float = 0.01
) -> HeteroscedasticObjective:
    r"""Hartmann mean ``f(x) = Σᵢ αᵢ exp(−Σⱼ Aᵢⱼ (xⱼ − Pᵢⱼ)²)`` (BoTorch's) with a variance bump at ``x*``.

    .. math:: ρ^2(x) = \text{floor} + \text{amplitude}\cdot\exp\big(−‖x − x^*‖^2 / (2\,\text{lengthscale}^2)\big).
    """
    function = hartmann_function(dim)
    x_star = hartmann_maximiser(dim)

    def mean_fn(u: np.ndarray) -> np.ndarray:
        return function(torch.as_tensor(u, dtype=torch.float64)).numpy()

    def std_fn(u: np.ndarray) -> np.ndarray:
        dist2 = np.sum((u - x_star) ** 2, axis=1)
        return np.sqrt(floor + amplitude * np.exp(-dist2 / (2.0 * lengthscale**2)))

    return HeteroscedasticObjective(
        f"hartmann{dim}", dim, mean_fn, std_fn,
        f"Hartmann-{dim} mean with rho^2 = {floor} + {amplitude}*exp(-|x-x*|^2/(2*{lengthscale}^2)).",
    )


# --- registry and offline tables -----------------------------------------------------------------

_FACTORIES: dict[str, Callable[[], HeteroscedasticObjective]] = {
    "sine": make_sine,
    "branin": make_branin,
    "hartmann3": lambda: make_hartmann(3),
    "hartmann6": lambda: make_hartmann(6),
}
OBJECTIVES: tuple[str, ...] = tuple(_FACTORIES)
"""Names accepted by :func:`get_objective`."""


def get_objective(name: str) -> HeteroscedasticObjective:
    """The registered objective ``name`` with its default scales (see the module docstring)."""
    if name not in _FACTORIES:
        raise ValueError(f"unknown objective {name!r}; valid names are {OBJECTIVES}.")
    return _FACTORIES[name]()


def make_pool_table(
    objective: HeteroscedasticObjective, n_configs: int, n_seeds: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """An offline table like ARLBench's: scrambled-Sobol configurations × replicate seeds.

    Args:
        objective: the objective to tabulate.
        n_configs: number of configurations (a power of two keeps the Sobol design balanced).
        n_seeds: number of replicates per configuration; column ``j`` is replicate seed ``j``.
        seed: seed of the Sobol scrambling (``scipy.stats.qmc.Sobol``).

    Returns:
        ``(X, Y)``: unit-cube points of shape ``(n_configs, d)`` and returns of shape
        ``(n_configs, n_seeds)`` with ``Y[i, j] == objective.sample(X[i], j)``.
    """
    for arg, value in (("n_configs", n_configs), ("n_seeds", n_seeds)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"{arg} must be a positive integer, got {value!r}.")
    sobol = qmc.Sobol(d=objective.dim, scramble=True, rng=np.random.default_rng(seed))
    with warnings.catch_warnings():  # non-power-of-two sizes are allowed (documented above)
        warnings.filterwarnings("ignore", message=".*balance properties of Sobol.*")
        x = np.clip(sobol.random(int(n_configs)), 0.0, 1.0)
    return x, objective.sample_batch(x, range(int(n_seeds)))
