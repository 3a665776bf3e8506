"""Initial design: scrambled Sobol points, snapped to the nearest unused pool row (docs/algorithms.md §1.11, A-9).

The same seed gives the same design for every method (common initial design across methods,
new design per repetition). Points are a prefix of one scrambled Sobol sequence, so asking for
more points later (a replacement for a failed configuration) extends the design deterministically.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import qmc


def sobol_points(dim: int, n: int, seed: int) -> np.ndarray:
    """The first ``n`` points of the scrambled Sobol sequence of ``dim`` dimensions seeded with ``seed``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns when n is not a power of two
        return qmc.Sobol(d=dim, scramble=True, seed=seed).random(n)


def snap_to_pool(point: np.ndarray, pool: np.ndarray, used: np.ndarray) -> int:
    """Index of the pool row nearest (Euclidean, unit cube) to ``point`` among rows not ``used``."""
    distances = np.linalg.norm(pool - point, axis=1)
    distances[used] = np.inf
    if not np.isfinite(distances).any():
        raise ValueError("every pool row is already used; the pool is too small for the initial design")
    return int(np.argmin(distances))


def design_rows(pool: np.ndarray, n: int, seed: int) -> list[int]:
    """Pool rows of an ``n``-point initial design with ``seed``: each Sobol point snapped to the nearest
    row not yet taken, in order (what the engine's initial design picks when no configuration fails).

    Example:
        >>> design_rows(np.array([[0.1], [0.5], [0.9]]), 2, seed=0)
        [2, 0]
    """
    used = np.zeros(len(pool), dtype=bool)
    rows = []
    for point in sobol_points(pool.shape[1], n, seed):
        rows.append(snap_to_pool(point, pool, used))
        used[rows[-1]] = True
    return rows


def check_pool(pool: np.ndarray) -> np.ndarray:
    """Validate a candidate pool (``n x d`` in the unit cube, no duplicate rows); return it as float64."""
    pool = np.array(pool, dtype=np.float64)  # an own, writable copy (torch shares its memory)
    if pool.ndim != 2 or pool.shape[0] == 0 or pool.shape[1] == 0:
        raise ValueError(f"pool must be a non-empty 2-D array (configurations x dims), got shape {pool.shape}")
    if not np.isfinite(pool).all():
        raise ValueError("pool contains NaN or infinite coordinates")
    if pool.min() < 0.0 or pool.max() > 1.0:
        raise ValueError(f"pool coordinates must lie in the unit cube [0, 1], got range [{pool.min()}, {pool.max()}]")
    _, first, counts = np.unique(pool, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        duplicate = int(np.sort(first[counts > 1])[0])
        raise ValueError(f"pool has duplicate rows (row {duplicate} appears {int(counts.max())} times)")
    return pool
