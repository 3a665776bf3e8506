"""Deterministic continuous oracle over an experimental table (OSCBO App. E.3; docs/algorithms.md §4.9).

* Duplicate designs are averaged first (e.g. Concrete at several curing ages).
* Bounds are the column minima and maxima; a query is clipped to them and normalised to [0, 1].
* If the designs form a complete grid (the Cartesian product of the unique values per column equals
  the design set) the oracle interpolates multilinearly; otherwise it uses inverse-distance
  weighting over the ``k = 12`` nearest designs, ``w_i = (||x - x_i||_2 + 1e-12)^-2``.
* An exact hit returns the averaged value, and IDW is a convex combination, so ``f*`` is the
  maximum of the averaged table.
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import RegularGridInterpolator
from scipy.spatial import cKDTree


class TabularOracle:
    """``f(x)`` for native ``x`` from a table of designs (``n x d``) and values (``n``)."""

    def __init__(self, designs: np.ndarray, values: np.ndarray, k: int = 12, power: float = 2.0,
                 eps: float = 1e-12) -> None:
        designs, values = np.asarray(designs, dtype=np.float64), np.asarray(values, dtype=np.float64)
        keep = np.isfinite(values) & np.isfinite(designs).all(axis=1)
        unique, inverse = np.unique(designs[keep], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        sums = np.bincount(inverse, weights=values[keep], minlength=len(unique))
        self.designs = unique
        self.values = sums / np.bincount(inverse, minlength=len(unique))
        self.bounds = np.stack([unique.min(axis=0), unique.max(axis=0)])
        span = self.bounds[1] - self.bounds[0]
        self._span = np.where(span > 0, span, 1.0)
        self._unit = (unique - self.bounds[0]) / self._span
        self.k, self.power, self.eps = min(k, len(unique)), power, eps
        axes = [np.unique(unique[:, j]) for j in range(unique.shape[1])]
        self.is_grid = int(np.prod([len(a) for a in axes])) == len(unique) and all(len(a) > 1 for a in axes)
        self._grid = None
        if self.is_grid:
            index = tuple(np.searchsorted(axes[j], unique[:, j]) for j in range(unique.shape[1]))
            grid_values = np.empty([len(a) for a in axes])
            grid_values[index] = self.values
            self._grid = RegularGridInterpolator(axes, grid_values, method="linear")
        self._tree = cKDTree(self._unit)

    def __call__(self, x: np.ndarray) -> float:
        """Oracle value at the native point ``x`` (clipped to the bounds)."""
        x = np.clip(np.asarray(x, dtype=np.float64).reshape(-1), self.bounds[0], self.bounds[1])
        if self._grid is not None:
            return float(self._grid(x[None, :])[0])
        distances, index = self._tree.query((x - self.bounds[0]) / self._span, k=self.k)
        distances, index = np.atleast_1d(distances), np.atleast_1d(index)
        if distances[0] == 0.0:
            return float(self.values[index[0]])
        weights = (distances + self.eps) ** -self.power
        return float(weights @ self.values[index] / weights.sum())
