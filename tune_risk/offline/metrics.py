"""Benchmark metrics for offline-table replays (ERAHBO Sec. 5 and App. C; docs/algorithms.md §1.12, A-15, A-17).

Inputs are the replay's long frames: ``runs`` (one row per table, method, repeat and evaluation index
``n_eval`` with ``regret``, ``normalised_regret``, ``cumulative_regret`` and ``compute``) and
``rounds`` (one row per BO round with ``k``, ``stop_reason`` and ``mv_true``).  The functions here are
pure: they aggregate over repetitions with the interquartile mean and a percentile bootstrap
(Fig. 3, 8–12), pool tables with rliable's aggregate IQM and performance profile under a stratified
bootstrap (Agarwal et al. 2021), rank methods per (table, repetition) and average the ranks (Table 1, Fig. 2, 5), test
every method against the best-ranked one with a Wilcoxon signed-rank test (Table 1), find the first
evaluation at which the IQM of normalised regret crosses a threshold (Tables 2 and 5), and count
replicates per round (Fig. 4).  A run that stops before the last grid point keeps its last value
("as of" the last recorded evaluation).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import DegenerateDataWarning, bootstrap, rankdata, trim_mean, wilcoxon

BLOCK = ["table", "repeat"]
"""A ranking block: methods are compared within one (table, repetition)."""

REGRET_COLUMNS = ("regret", "normalised_regret", "recommended_regret", "normalised_recommended_regret",
                  "cumulative_regret", "cumulative_regret_with_initial", "compute",
                  "recommended_row", "recommended_seeds", "seed_runs", "heldout_mv_regret",
                  "normalised_heldout_mv_regret", "heldout_mean_regret", "normalised_heldout_mean_regret")
"""The per-evaluation columns of ``runs`` that the metrics aggregate (the held-out ones with ``--test-seeds``)."""


def iqm(values: Sequence[float] | np.ndarray, axis: int | None = None) -> float | np.ndarray:
    r"""Interquartile mean: the mean of the middle 50 % of the values (rliable, Agarwal et al. 2021).

    .. math:: \mathrm{IQM}(x) = \frac{1}{n - 2g} \sum_{i=g+1}^{n-g} x_{(i)}, \qquad g = \lfloor n/4 \rfloor

    computed by ``scipy.stats.trim_mean(x, 0.25)``.  NaNs are ignored; no finite value gives NaN.
    With ``axis`` the IQM is taken along that axis of an array (used by :func:`bootstrap_ci`).
    """
    x = np.asarray(values, dtype=float)
    if axis is None:
        x = x[~np.isnan(x)]
        return float(trim_mean(x, 0.25)) if x.size else float("nan")
    if np.isnan(x).any():
        return np.apply_along_axis(iqm, axis, x)
    return trim_mean(x, 0.25, axis=axis)


def _percentile_bootstrap(samples: tuple[np.ndarray, ...], statistic: Callable, n_boot: int, level: float,
                          seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap bounds of ``statistic(*samples, axis=0)`` by ``scipy.stats.bootstrap``.

    Each sample is resampled on its own (rows with replacement), which is the stratified bootstrap when
    the samples are the strata; a sample's columns share their resampled rows (a paired bootstrap across
    evaluation counts).  A statistic without an ``axis`` keyword is evaluated resample by resample.
    """
    with warnings.catch_warnings():  # a constant or all-NaN resample is a valid (degenerate) outcome here
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DegenerateDataWarning)
        result = bootstrap(samples, statistic, n_resamples=n_boot, batch=max(1, 4_000_000 // max(1, samples[0].size)),
                           axis=0, confidence_level=level, method="percentile", rng=np.random.default_rng(seed))
    return np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)


def _bootstrap_columns(matrix: np.ndarray, statistic: Callable, n_boot: int, level: float,
                       seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap bounds of ``statistic`` over the rows (repetitions) of every column.

    The same resampled rows are used for every column; identical columns are computed once.
    """
    n, m = matrix.shape
    if n < 2 or m == 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    unique, inverse = np.unique(matrix, axis=1, return_inverse=True)
    low, high = _percentile_bootstrap((unique,), statistic, n_boot, level, seed)
    return np.broadcast_to(low, unique.shape[1:])[inverse.ravel()], np.broadcast_to(high, unique.shape[1:])[inverse.ravel()]


def bootstrap_ci(values: Sequence[float] | np.ndarray, statistic: Callable = iqm, n_boot: int = 2000,
                 level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    r"""Percentile bootstrap confidence interval of ``statistic`` over ``values``.

    Draw ``n_boot`` resamples of size ``n`` with replacement (``numpy.random.default_rng(seed)``, so
    the interval is deterministic), evaluate the statistic on each and return the
    :math:`(1-\text{level})/2` and :math:`(1+\text{level})/2` quantiles.  NaN values are dropped first;
    fewer than two values give ``(nan, nan)`` (no interval).  ``statistic`` may take an ``axis``
    keyword (vectorised) or a 1-D array.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer, got {n_boot!r}")
    x = np.asarray(values, dtype=float).ravel()
    x = x[~np.isnan(x)]
    low, high = _bootstrap_columns(x[:, None], statistic, n_boot, level, seed)
    return float(low[0]), float(high[0])


MIN_CI_REPEATS = 5
"""Fewest repeats for a bootstrap CI in a report: with fewer, percentile intervals of an IQM are not meaningful."""


def fewest_repeats(finals: pd.DataFrame) -> pd.Series:
    """Per method, the fewest repeats it has on any table of ``final_values`` (a stratified CI needs enough in
    every table)."""
    return finals.groupby(["method", "table"]).size().groupby("method").min()


def _check_columns(frame: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(frame.columns)}")


def default_grid(runs: pd.DataFrame, n_points: int | None = None) -> np.ndarray:
    """Every evaluation count in ``runs``, or ``n_points`` of them evenly spaced from 1 to the maximum."""
    n_evals = np.unique(runs["n_eval"].to_numpy(dtype=int))
    if n_points is None or n_evals.size <= n_points:
        return n_evals
    return np.unique(np.round(np.linspace(n_evals[0], n_evals[-1], n_points)).astype(int))


def aligned(runs: pd.DataFrame, column: str, grid: Sequence[int] | np.ndarray | None = None
            ) -> tuple[pd.MultiIndex, np.ndarray]:
    """``column`` on a common evaluation grid: (columns ``(table, repeat, method)``, array ``[grid, col]``).

    The value at grid point ``n`` is the one at the last recorded ``n_eval <= n`` of that run (NaN
    before its first evaluation).
    """
    _check_columns(runs, ["table", "method", "repeat", "n_eval", column], "runs")
    grid = default_grid(runs) if grid is None else np.asarray(grid, dtype=int)
    keys = ["table", "repeat", "method"]
    unique = runs.drop_duplicates(keys + ["n_eval"], keep="last")
    wide = unique.pivot(index="n_eval", columns=keys, values=column)
    wide = wide.reindex(wide.index.union(pd.Index(grid))).ffill().loc[grid]
    return wide.columns, wide.to_numpy(dtype=float)


def regret_curves(runs: pd.DataFrame, column: str = "normalised_regret",
                  grid: Sequence[int] | np.ndarray | None = None, n_boot: int = 2000, level: float = 0.95,
                  seed: int = 0) -> pd.DataFrame:
    """IQM over repetitions of ``column`` per (table, method, n_eval), with a bootstrap CI (Fig. 3, 8).

    Returns columns ``table, method, n_eval, iqm, ci_low, ci_high, n_repeats``; the CI is NaN with a
    single repetition.
    """
    grid = default_grid(runs) if grid is None else np.asarray(grid, dtype=int)
    columns, values = aligned(runs, column, grid)
    frames = []
    for (table, method), positions in _group_positions(columns, ["table", "method"]).items():
        matrix = values[:, positions].T  # repetitions x grid
        low, high = _bootstrap_columns(matrix, iqm, n_boot, level, seed)
        frames.append(pd.DataFrame({
            "table": table, "method": method, "n_eval": grid, "iqm": iqm(matrix, axis=0),
            "ci_low": low, "ci_high": high, "n_repeats": np.sum(~np.isnan(matrix), axis=0)}))
    return pd.concat(frames, ignore_index=True)


def _group_positions(columns: pd.MultiIndex, levels: list[str]) -> dict[tuple, np.ndarray]:
    """Positions of the columns that share each combination of ``levels``, in sorted order."""
    keys = pd.MultiIndex.from_arrays([columns.get_level_values(lv) for lv in levels])
    return {key: np.flatnonzero(keys == key) for key in sorted(set(keys))}


def final_values(runs: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation of every (table, method, repeat): final simple regret ``regret``,
    ``normalised_regret``, the recommended configuration's (``recommended_regret``,
    ``normalised_recommended_regret``), ``cumulative_regret`` (eq. 6, sample count; ``_with_initial``:
    initial design included), ``compute`` (replicate runs including cancelled ones) and ``n_eval``
    (evaluations used), for the columns ``runs`` has."""
    _check_columns(runs, ["table", "method", "repeat", "n_eval"], "runs")
    last = runs.sort_values("n_eval").groupby(["table", "method", "repeat"], sort=True).tail(1)
    keep = ["table", "method", "repeat", "n_eval"] + [c for c in REGRET_COLUMNS if c in runs.columns]
    return last[keep].sort_values(["table", "method", "repeat"]).reset_index(drop=True)


def at_common_horizon(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with each (table, repeat) block cut at its common horizon ``H = min_method max n_eval``.

    A method that has evaluated every configuration of a table stops early, and its cumulative regret
    ``sum_{n <= N} r_inst(n)`` stops growing; cut at ``H``, every method's final values are "as of" the
    same evaluation count, so cumulative regret compares equal spending.
    """
    _check_columns(runs, ["table", "method", "repeat", "n_eval"], "runs")
    ends = runs.groupby(["table", "repeat", "method"])["n_eval"].transform("max")
    horizon = ends.groupby([runs["table"], runs["repeat"]]).transform("min")
    return runs[runs["n_eval"] <= horizon]


def _strata(runs: pd.DataFrame, column: str) -> dict[str, list[np.ndarray]]:
    """Per method, the final values of ``column`` of its runs on each table (one array per table, NaN dropped)."""
    finals = final_values(runs)
    _check_columns(finals, [column], "runs")
    strata: dict[str, list[np.ndarray]] = {}
    for (method, _), group in finals.groupby(["method", "table"], sort=True):
        values = group[column].to_numpy(dtype=float)
        strata.setdefault(str(method), []).append(values[~np.isnan(values)])
    return strata


def _stratified_ci(strata: list[np.ndarray], statistic: Callable, n_boot: int, level: float,
                   seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``statistic`` on the strata and its stratified percentile-bootstrap bounds: runs are resampled within
    each table, never across (rliable's CIs, Agarwal et al. 2021, Sec. 4); NaN bounds when a table has fewer
    than two runs (nothing to resample)."""
    point = np.asarray(statistic(*strata, axis=-1))
    if not strata or min(len(s) for s in strata) < 2:
        return point, np.full(point.shape, np.nan), np.full(point.shape, np.nan)
    return (point, *_percentile_bootstrap(tuple(strata), statistic, n_boot, level, seed))


def _pooled_iqm(*strata: np.ndarray, axis: int = -1) -> np.ndarray:
    """IQM of every run of every table pooled (rliable's ``aggregate_iqm``); resamples stacked in front."""
    return trim_mean(np.concatenate(strata, axis=axis), 0.25, axis=axis)


def aggregate_iqm(runs: pd.DataFrame, column: str = "normalised_regret", n_boot: int = 2000,
                  level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    r"""IQM over all of a method's runs on all tables of the final ``column``, with a stratified CI.

    .. math:: \mathrm{IQM}\big(\{x_{t,r}\}_{t \le T,\, r \le R_t}\big)

    pooling every (table ``t``, repeat ``r``) run, as rliable's aggregate IQM does for normalised scores
    (``normalised_regret`` is comparable across tables: 1 = the initial design's regret, 0 = the best
    configuration's).  The CI is the stratified percentile bootstrap (:func:`_stratified_ci`).  Returns
    ``method, iqm, ci_low, ci_high, n_tables, n_runs`` in the order methods first appear.
    """
    strata = _strata(runs, column)
    rows = []
    for method in pd.unique(runs["method"]).astype(str):
        point, low, high = _stratified_ci(strata[method], _pooled_iqm, n_boot, level, seed)
        rows.append({"method": method, "iqm": float(point), "ci_low": float(low),
                     "ci_high": float(high), "n_tables": len(strata[method]),
                     "n_runs": sum(len(s) for s in strata[method])})
    return pd.DataFrame(rows, columns=["method", "iqm", "ci_low", "ci_high", "n_tables", "n_runs"])


def performance_profile(runs: pd.DataFrame, column: str = "normalised_regret",
                        taus: Sequence[float] | np.ndarray | None = None, n_boot: int = 2000,
                        level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    r"""Performance profile (rliable's run-score distribution) of the final ``column``, lower is better.

    .. math:: F_m(\tau) = \frac1T \sum_{t=1}^{T} \frac{1}{R_t} \sum_{r=1}^{R_t} \mathbb 1[x_{t,r} \le \tau]

    the fraction of method ``m``'s runs that end at most ``\tau`` from the best, each table weighted
    equally (higher is better at every ``\tau``).  ``taus`` defaults to 101 points from 0 to the largest
    final value (at least 1, the initial design's regret).  Bands: stratified percentile bootstrap.
    Returns ``method, tau, fraction, ci_low, ci_high``.
    """
    strata = _strata(runs, column)
    if taus is None:
        top = max([1.0] + [float(np.max(s)) for parts in strata.values() for s in parts if s.size])
        taus = np.linspace(0.0, top, 101)
    taus = np.asarray(taus, dtype=float)

    def fraction(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        # [tau, ...resamples]: the share of each table's runs at or below tau, averaged over tables
        return np.mean([np.mean(np.expand_dims(s, 0) <= taus.reshape(-1, *[1] * s.ndim), axis=axis)
                        for s in samples], axis=0)

    frames = []
    for method in pd.unique(runs["method"]).astype(str):
        point, low, high = _stratified_ci(strata[method], fraction, n_boot, level, seed)
        frames.append(pd.DataFrame({"method": method, "tau": taus, "fraction": point,
                                    "ci_low": low, "ci_high": high}))
    return pd.concat(frames, ignore_index=True)


def block_ranks(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Ranks along axis 1 (1 = lowest, ties averaged, ``scipy.stats.rankdata``): each row is a block
    (e.g. a table and repetition, or a task), each column a method; NaN values rank last, methods
    absent from a block (``present`` False) get NaN and leave the others' ranks alone."""
    filled = np.where(np.isnan(values), np.finfo(float).max, values)
    filled = np.where(present, filled, np.inf)  # absent: after every present method, rank discarded
    ranks = rankdata(filled, method="average", axis=1)
    return np.where(present, ranks, np.nan)


def mean_se(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and standard error along ``axis``, ignoring NaNs; the s.e. is NaN for ``n < 2``.

    .. math:: \bar x = \frac1n \sum_i x_i, \qquad \mathrm{se} = \frac{s}{\sqrt n},\quad
              s^2 = \frac{1}{n-1} \sum_i (x_i - \bar x)^2

    with ``n`` the number of non-NaN values (``numpy.nanstd(ddof=1) / sqrt(n)``, to the last bit).
    """
    n = np.sum(~np.isnan(values), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(values, axis=axis) / n
        sq = np.nansum((values - np.expand_dims(mean, axis)) ** 2, axis=axis)
        se = np.where(n > 1, np.sqrt(sq / np.maximum(n - 1, 1)) / np.sqrt(np.maximum(n, 1)), np.nan)
    return mean, se


def _rank_array(runs: pd.DataFrame, column: str, grid: np.ndarray) -> tuple[list, np.ndarray]:
    """The sorted method names and the ranks as an array ``[block, method, grid]``."""
    columns, values = aligned(runs, column, grid)
    methods = sorted(columns.get_level_values("method").unique())
    blocks = columns.droplevel("method").unique().sort_values()
    full = pd.MultiIndex.from_tuples([(*b, m) for b in blocks for m in methods], names=columns.names)
    shape = (len(blocks), len(methods), len(grid))
    cube = pd.DataFrame(values.T, index=columns).reindex(full).to_numpy().reshape(shape)
    present = full.isin(columns).reshape(shape[:2])[:, :, None]
    return methods, block_ranks(cube, present)


def mean_ranks(runs: pd.DataFrame, column: str = "regret") -> pd.DataFrame:
    """Mean rank of every method on the final value of ``column`` (Table 1; docs/algorithms.md §1.12).

    Methods are ranked within each (table, repeat) block, lower value = better (rank 1), ties get the
    average rank (``scipy.stats.rankdata``), a NaN final value ranks last, and a method absent from a
    block is left out of it.  Returns ``method, mean_rank, se_rank, n_blocks``, sorted by mean rank.
    """
    finals = final_values(runs).assign(n_eval=1)
    methods, ranks = _rank_array(finals, column, np.array([1]))
    mean, se = mean_se(ranks[:, :, 0], axis=0)
    n = np.sum(~np.isnan(ranks[:, :, 0]), axis=0)
    out = pd.DataFrame({"method": methods, "mean_rank": mean, "se_rank": se, "n_blocks": n})
    return out.sort_values(["mean_rank", "method"], kind="stable").reset_index(drop=True)


def ranks_over_time(runs: pd.DataFrame, column: str = "regret",
                    grid: Sequence[int] | np.ndarray | None = None) -> pd.DataFrame:
    """Mean rank ± standard error of each method at every grid evaluation count (Fig. 2, 5, 14).

    Ranking as in :func:`mean_ranks`, on the value "as of" each ``n_eval``.  Returns
    ``n_eval, method, mean_rank, se_rank``.
    """
    grid = default_grid(runs) if grid is None else np.asarray(grid, dtype=int)
    methods, ranks = _rank_array(runs, column, grid)
    mean, se = mean_se(ranks, axis=0)  # method x grid
    return pd.DataFrame({
        "n_eval": np.tile(grid, len(methods)), "method": np.repeat(methods, len(grid)),
        "mean_rank": mean.ravel(), "se_rank": se.ravel()})


def paired_p_value(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value; 1.0 when every difference is zero, NaN without pairs."""
    ok = ~(np.isnan(x) | np.isnan(y))
    d = x[ok] - y[ok]
    if d.size == 0:
        return float("nan")
    if not np.any(d != 0):
        return 1.0
    return float(wilcoxon(x[ok], y[ok], alternative="two-sided").pvalue)


def wilcoxon_min_pairs(alpha: float = 0.05) -> int:
    """Fewest pairs with which a two-sided exact Wilcoxon signed-rank test can reach ``p < alpha``.

    With ``n`` pairs the most extreme outcome (every difference of one sign) has ``p = 2 / 2**n``, so
    below this count no difference, however large, can be significant (6 pairs at ``alpha = 0.05``).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got alpha={alpha!r}")
    return math.floor(1.0 - math.log2(alpha)) + 1  # the smallest n with 2 ** (1 - n) < alpha


def wilcoxon_vs(runs: pd.DataFrame, reference: str, column: str = "regret", alpha: float = 0.05) -> pd.DataFrame:
    """Every method against ``reference``: its mean rank, and a paired two-sided Wilcoxon signed-rank test of
    its final ``column`` against ``reference``'s over the (table, repeat) pairs where both ran.

    Returns ``method, mean_rank, se_rank, n_blocks`` (as :func:`mean_ranks`), ``n_pairs``, ``p_value``
    (``scipy.stats.wilcoxon``; NaN for ``reference`` itself, without common pairs, and with fewer than
    ``wilcoxon_min_pairs(alpha)`` pairs, where the test cannot reach significance; 1.0 when every paired
    difference is zero), ``wins, ties, losses``: the pairs where ``reference``'s value is lower, equal,
    higher (lower is better), and ``favours``: the side the signed ranks lean to (the two-sided test says
    whether they differ, not which is lower): ``reference`` when the rank sum of the pairs it wins, with ranks of
    ``|difference|`` over the non-zero differences as in the test, exceeds that of the pairs it loses, ``method``
    in the opposite case, ``""`` on a tie.
    """
    ranks = mean_ranks(runs, column)
    finals = final_values(runs).pivot(index=BLOCK, columns="method", values=column)
    if reference not in finals.columns:
        raise ValueError(f"wilcoxon_vs: reference method {reference!r} is not in runs (have {sorted(finals.columns)})")
    minimum = wilcoxon_min_pairs(alpha)
    rows = []
    for method in ranks["method"]:
        both = finals[list(dict.fromkeys([method, reference]))].dropna()
        ref, other = both[reference].to_numpy(), both[method].to_numpy()
        untestable = method == reference or len(both) < minimum
        rows.append({"n_pairs": len(both), "p_value": float("nan") if untestable else paired_p_value(other, ref),
                     "wins": int(np.sum(ref < other)), "ties": int(np.sum(ref == other)),
                     "losses": int(np.sum(ref > other)), "favours": _favoured(ref, other, reference, method)})
    return pd.concat([ranks, pd.DataFrame(rows, index=ranks.index)], axis=1)


def _favoured(ref: np.ndarray, other: np.ndarray, reference: str, method: str) -> str:
    """The side whose signed-rank sum is larger (its values lower), or ``""`` when the sums are equal."""
    d = other - ref
    d = d[d != 0]
    ranks = rankdata(np.abs(d))
    lower_ref, lower_other = ranks[d > 0].sum(), ranks[d < 0].sum()
    return reference if lower_ref > lower_other else method if lower_other > lower_ref else ""


def wilcoxon_vs_best(runs: pd.DataFrame, column: str = "regret", alpha: float = 0.05) -> pd.DataFrame:
    """Mean rank of every method and a Wilcoxon signed-rank test against the best-ranked method (Table 1).

    :func:`wilcoxon_vs` with the best mean rank as the reference, plus ``best`` and ``not_worse``: the paper's
    bold entries, the best method and every method tested with ``p_value >= alpha`` (an untestable method is
    not called "not worse").
    """
    best = mean_ranks(runs, column)["method"].iloc[0]
    out = wilcoxon_vs(runs, best, column, alpha).drop(columns=["wins", "ties", "losses", "favours"])
    out = out.assign(best=out["method"] == best)
    return out.assign(not_worse=out["best"] | (out["p_value"] >= alpha))


def _format_level(level: float) -> str:
    return f"{100 * level:g}%"


def threshold_table(runs: pd.DataFrame, levels: Sequence[float] = (0.75, 0.5, 0.25)) -> pd.DataFrame:
    """First ``n_eval`` at which the IQM over repetitions of normalised regret is ``<= level`` (Tables 2, 5).

    One row per (table, method); one column per level named like ``"75%"``; NaN where the IQM never
    reaches the level within the recorded evaluations (the paper's "—").
    """
    grid = default_grid(runs)
    columns, values = aligned(runs, "normalised_regret", grid)
    rows = []
    for (table, method), positions in _group_positions(columns, ["table", "method"]).items():
        curve = np.asarray(iqm(values[:, positions], axis=1), dtype=float)
        row: dict[str, object] = {"table": table, "method": method}
        for level in levels:
            hits = np.flatnonzero(curve <= level)
            row[_format_level(level)] = float(grid[hits[0]]) if hits.size else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def threshold_summary(thresholds: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per method and level, mean ± standard error of the evaluations needed over the tables
    where **every** method reaches the level (``n_tables`` counts them)."""
    rows = []
    for level in [c for c in thresholds.columns if c not in ("table", "method")]:
        wide = thresholds.pivot(index="table", columns="method", values=level)
        reached = wide.dropna(axis=0, how="any")
        for method in wide.columns:
            mean, se = mean_se(reached[method].to_numpy(dtype=float), axis=0)
            rows.append({"method": method, "level": level, "mean": float(mean), "se": float(se),
                         "n_tables": len(reached)})
    return pd.DataFrame(rows, columns=["method", "level", "mean", "se", "n_tables"])


@dataclass(frozen=True)
class KStatistics:
    """Replicates per BO round (Fig. 4): ``histogram`` (``method, k, count, fraction``) and
    ``scatter`` (one row per round with ``k``, ``mv_true`` and ``mv_scaled``)."""

    histogram: pd.DataFrame
    scatter: pd.DataFrame


def k_statistics(rounds: pd.DataFrame) -> KStatistics:
    """Histogram of replicate counts ``k`` per method and the rows of a k-versus-true-MV scatter (Fig. 4).

    ``mv_scaled`` maps ``mv_true`` to [0, 1] by the min and max over every round of the same table (all
    methods), so that tables with different return scales share one axis; a table whose rounds all
    have the same MV gets 1.  Rounds without a ``k`` are left out.
    """
    _check_columns(rounds, ["table", "method", "repeat", "k", "mv_true"], "rounds")
    valid = rounds.dropna(subset=["k"]).astype({"k": int})
    counts = valid.groupby(["method", "k"]).size().rename("count").reset_index()
    totals = counts.groupby("method")["count"].transform("sum")
    histogram = counts.assign(fraction=counts["count"] / totals)
    by_table = valid.groupby("table")["mv_true"]
    low, high = by_table.transform("min"), by_table.transform("max")
    span = (high - low).to_numpy()
    scaled = np.where(span > 0, (valid["mv_true"] - low).to_numpy() / np.where(span > 0, span, 1.0), 1.0)
    keep = [c for c in ("table", "method", "repeat", "round", "config_row", "k", "stop_reason", "mv_true")
            if c in valid.columns]
    scatter = valid[keep].assign(mv_scaled=scaled).reset_index(drop=True)
    return KStatistics(histogram.reset_index(drop=True), scatter)
