"""Vizier's default output warper, fitted on a sample and frozen (docs/algorithms.md §1.2; ERAHBO Sec. 5).

ERAHBO processes every individual replicate return with Vizier's ``create_default_warper()``
(HalfRank, then Log with offset ``c = 1.5``; the Infeasible step is a no-op once NaN returns
are filtered out, §1.11) and computes sample means, sample variances and the MV objective
``f − α ρ²`` (ERAHBO eqs. 1–5, α = 1) on the warped scale.  The warper maps its fitting sample
onto ``[−0.5, 0.5]``, so by Popoviciu's inequality the variance of any configuration's warped
returns within that sample is at most ``ρ̄² = 0.25`` (§1.2, A-5).

Two uses are supported:

* offline (the paper's pooled table): :func:`warp_values` applies the warper to its own
  fitting sample, e.g. the whole ``(n_configs, n_seeds)`` table of a task; every return is in
  the sample, so every warped return is in ``[−0.5, 0.5]``;
* online: :func:`fit_warp` fits on the returns observed so far and returns a :class:`FrozenWarp`,
  a monotone piecewise-linear interpolant through the fitted ``(raw, warped)`` pairs. Beyond the
  fitted range it extends linearly and clips at ``±bound`` (``bound ≥ 0.5``; ``ρ̄² = bound²``).
  A clip makes every return beyond it identical, so the engine re-fits the warp on all data at
  the start of a round once returns have left the fitted range, and never inside a round: every
  decision of a round uses one warp (``tune_risk.engine.snapshots``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

LOG_WARP_OFFSET = 1.5
"""Offset ``c`` of Vizier's ``LogWarperComponent`` (its default)."""

WARPED_MIN = -0.5
WARPED_MAX = 0.5


def _validate_returns(y: np.ndarray | Any, name: str = "y") -> np.ndarray:
    """Return ``y`` flattened to float64, raising ValueError if it is empty or non-finite."""
    arr = np.asarray(y, dtype=np.float64).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty: the output warper needs at least one finite return.")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name} contains {int(bad.sum())} non-finite value(s) (NaN or ±inf), e.g. "
            f"{arr[bad][0]!r}; filter NaN configurations before warping (docs/algorithms.md §1.11)."
        )
    return arr


def _rms(d: np.ndarray) -> float:
    """``sqrt(mean(d²))`` computed as ``m·sqrt(mean((d/m)²))``, ``m = max|d|``, so it cannot underflow."""
    scale = float(np.max(np.abs(d)))
    return 0.0 if scale == 0.0 else scale * float(np.sqrt(np.mean((d / scale) ** 2)))


def _half_rank(unique: np.ndarray, median: float) -> np.ndarray:
    r"""Vizier ``HalfRankComponent`` applied to the sorted unique labels ``U``.

    With ``i_med = searchsorted(U, med, 'left')``, ``den = i_med + ½·[U[i_med] = med]`` and
    ``σ_good = sqrt(mean_{u ∈ U, u ≥ med} (u − med)²)`` (all of ``U`` if that is 0),
    every ``u < med`` with dense rank ``r`` (1-based) becomes

    .. math:: u \leftarrow med + σ_{good}\, Φ^{-1}\big(0.5 (r − 0.5) / den\big),

    and values at or above the median are unchanged.
    """
    i_med = int(np.searchsorted(unique, median, side="left"))
    den = i_med + 0.5 * float(unique[i_med] == median)
    sigma_good = _rms(unique[unique >= median] - median)
    if not sigma_good > 0.0:
        sigma_good = _rms(unique - median)
    out = unique.copy()
    below = unique < median
    dense_rank = np.arange(1, unique.size + 1, dtype=np.float64)[below]
    out[below] = median + sigma_good * norm.ppf(0.5 * (dense_rank - 0.5) / den)
    return out


def _log_warp(h: np.ndarray, offset: float = LOG_WARP_OFFSET) -> np.ndarray:
    r"""Vizier ``LogWarperComponent``: ``0.5 − log1p((max − h)/(max − min)·(c − 1)) / log c``.

    Monotone, maps ``[min h, max h]`` onto ``[−0.5, 0.5]``.  The result is clipped to that
    interval, which only removes a rounding error of at most one ulp at the lower end.
    """
    h_max, h_min = float(h.max()), float(h.min())
    warped = 0.5 - np.log1p((h_max - h) / (h_max - h_min) * (offset - 1.0)) / np.log(offset)
    return np.clip(warped, WARPED_MIN, WARPED_MAX)


def _fit_knots(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique raw returns and their warped values (HalfRank then Log, §1.2).

    The warper is a function of the value only (ties share the dense rank), so computing it on
    the unique values and indexing back reproduces Vizier exactly, ties included.  A sample with a
    single unique value is mapped to 0.0, as Vizier's ``OutputWarperPipeline`` does.
    """
    unique = np.unique(y)
    if unique.size == 1:
        return unique, np.zeros(1)
    half_ranked = _half_rank(unique, float(np.median(y)))
    if not half_ranked[-1] > half_ranked[0]:
        # Only when σ_good·Φ⁻¹(·) is below the resolution of the median (values within a few ulps of
        # each other): HalfRank would collapse the sample and Vizier would return NaN.  Skip it.
        half_ranked = unique
    with np.errstate(over="ignore", invalid="ignore"):
        warped = _log_warp(half_ranked)
    if not np.all(np.isfinite(warped)):
        raise ValueError("y spans a range too large to warp in float64 (|y| near 1e308); rescale it.")
    return unique, warped


def warp_values(y: np.ndarray) -> np.ndarray:
    """Apply Vizier's default warper to its own fitting sample (pooled offline use, §1.2).

    Args:
        y: finite raw returns of any shape; all entries are pooled (e.g. a whole
            ``(n_configs, n_seeds)`` table of one task).

    Returns:
        Warped returns with the shape of ``y``, in ``[−0.5, 0.5]``; all zeros if every entry is
        equal.

    Raises:
        ValueError: if ``y`` is empty or contains NaN or ±inf.
    """
    shape = np.shape(y)
    flat = _validate_returns(y)
    unique, warped = _fit_knots(flat)
    return warped[np.searchsorted(unique, flat)].reshape(shape)


@dataclass(frozen=True, eq=False)
class FrozenWarp:
    r"""A fitted warper stored as a monotone piecewise-linear map (§1.2, online use).

    ``raw_knots`` are the sorted unique returns of the fitting sample and ``warped_knots`` their
    warped values (increasing from −0.5 to 0.5; strictly, unless rounding merges returns a few
    ulps apart).  For a new return ``y``

    .. math:: \tilde y = \mathrm{clip}\big(L(y), −0.5, 0.5\big),

    where ``L`` interpolates linearly between knots; with ``bound = 0.5`` every return below (above)
    the fitted range maps to −0.5 (0.5), since the end knots are warped to exactly ∓0.5; with a
    wider ``bound``, ``L`` extends beyond the ends with the secant slope of the outer half of the
    knots (:meth:`_extrapolate`) until it reaches ``±bound``.  At the knots the map reproduces
    :func:`warp_values` exactly.  Degenerate fit (a single unique value): every input maps to 0.0.
    """

    raw_knots: np.ndarray
    warped_knots: np.ndarray
    bound: float = WARPED_MAX

    def __post_init__(self) -> None:
        raw = np.array(self.raw_knots, dtype=np.float64).ravel()  # own copies, made read-only below
        warped = np.array(self.warped_knots, dtype=np.float64).ravel()
        if raw.size == 0 or raw.size != warped.size:
            raise ValueError(
                f"raw_knots and warped_knots must be non-empty and of equal length, got "
                f"{raw.size} and {warped.size}."
            )
        if not (np.all(np.isfinite(raw)) and np.all(np.isfinite(warped))):
            raise ValueError("raw_knots and warped_knots must be finite.")
        if np.any(np.diff(raw) <= 0) or np.any(np.diff(warped) < 0):
            raise ValueError("raw_knots must be strictly increasing and warped_knots non-decreasing.")
        if warped.min() < WARPED_MIN or warped.max() > WARPED_MAX:
            raise ValueError(f"warped_knots must lie in [{WARPED_MIN}, {WARPED_MAX}].")
        if not (isinstance(self.bound, int | float) and self.bound >= WARPED_MAX):
            raise ValueError(f"bound must be a number >= {WARPED_MAX}, got bound={self.bound!r}")
        object.__setattr__(self, "bound", float(self.bound))
        raw.setflags(write=False)
        warped.setflags(write=False)
        object.__setattr__(self, "raw_knots", raw)
        object.__setattr__(self, "warped_knots", warped)

    @property
    def is_degenerate(self) -> bool:
        """True when the fitting sample had a single unique value (everything maps to 0.0)."""
        return self.raw_knots.size == 1

    def __call__(self, y: np.ndarray | float) -> np.ndarray:
        """Warp raw returns ``y`` (any shape) with the frozen map; returns an array of that shape.

        Raises:
            ValueError: if ``y`` contains NaN (±inf map to ±0.5).
        """
        arr = np.asarray(y, dtype=np.float64)
        if np.isnan(arr).any():
            raise ValueError("y contains NaN; the frozen warp is defined for numbers only.")
        xk, wk = self.raw_knots, self.warped_knots
        if self.is_degenerate:
            return np.full(arr.shape, float(wk[0]))
        out = np.interp(arr, xk, wk)
        # np.interp can overshoot the next knot's value by an ulp just below that knot; keeping each value
        # within its segment's knot values makes the map monotone to the last bit.
        segment = np.clip(np.searchsorted(xk, arr, side="right") - 1, 0, xk.size - 2)
        out = np.clip(out, wk[segment], wk[segment + 1])
        below, above = arr < xk[0], arr > xk[-1]
        if below.any() or above.any():
            out = np.where(below, self._extrapolate(arr, 0, 1), out)
            out = np.where(above, self._extrapolate(arr, -1, -2), out)
        return np.clip(out, -self.bound, self.bound)

    @property
    def variance_bound(self) -> float:
        """Popoviciu's bound ``rho_bar^2 = bound^2`` on the variance of warped returns (A-5)."""
        return self.bound**2

    def _extrapolate(self, arr: np.ndarray, end: int, inner: int) -> np.ndarray:
        """Continue linearly beyond the end knot (slope >= 0; ±inf safe).

        With ``bound = 0.5`` the clip makes this constant. With a wider ``bound`` (online use) the
        slope is the secant over the outer half of the knots (median knot to end knot): robust to a
        flat last segment, so that returns better than every initial-design return still rank.
        """
        xk, wk = self.raw_knots, self.warped_knots
        if self.bound > WARPED_MAX:
            inner = xk.size // 2
            if inner == end % xk.size:  # two knots: the median knot is the end knot; use the other one
                inner = 0 if end else xk.size - 1
        run = xk[end] - xk[inner]
        slope = (wk[end] - wk[inner]) / run if run != 0.0 else 0.0
        if not slope > 0.0:
            return np.full(arr.shape, wk[end])
        with np.errstate(over="ignore", invalid="ignore"):
            return wk[end] + slope * (arr - xk[end])

    def state_dict(self) -> dict[str, list[float]]:
        """Plain-Python state (lists of floats) for checkpoints; exact round trip."""
        return {"raw_knots": self.raw_knots.tolist(), "warped_knots": self.warped_knots.tolist(), "bound": self.bound}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> FrozenWarp:
        """Rebuild a warp from :meth:`state_dict` output."""
        missing = {"raw_knots", "warped_knots"} - set(state)
        if missing:
            raise ValueError(f"state is missing key(s) {sorted(missing)}; expected 'raw_knots', 'warped_knots'.")
        return cls(np.asarray(state["raw_knots"]), np.asarray(state["warped_knots"]), state.get("bound", WARPED_MAX))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrozenWarp):
            return NotImplemented
        return self.bound == other.bound and np.array_equal(self.raw_knots, other.raw_knots) and np.array_equal(
            self.warped_knots, other.warped_knots
        )

    def __hash__(self) -> int:
        return hash((self.raw_knots.tobytes(), self.warped_knots.tobytes(), self.bound))

    def __repr__(self) -> str:
        lo, hi = self.raw_knots[0], self.raw_knots[-1]
        return f"FrozenWarp(n_knots={self.raw_knots.size}, raw_range=[{lo:.6g}, {hi:.6g}])"


def fit_warp(y: np.ndarray, bound: float = WARPED_MAX) -> FrozenWarp:
    """Fit Vizier's default warper on finite raw returns and freeze it (§1.2, online use).

    Args:
        y: finite raw returns, normally 1-D (entries of an array of any shape are pooled).
        bound: outputs are clipped to ``[-bound, bound]`` (``bound >= 0.5``). 0.5 (the fitted
            range) suits a pooled table that contains every return; online, a wider bound keeps
            returns beyond the fitted range ordered until the engine re-fits the warp.

    Returns:
        The frozen warp; ``fit_warp(y)(y) == warp_values(y)`` exactly.

    Raises:
        ValueError: if ``y`` is empty or contains NaN or ±inf.
    """
    unique, warped = _fit_knots(_validate_returns(y))
    return FrozenWarp(unique, warped, bound)
