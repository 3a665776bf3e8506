"""The figures of a replay summary (ERAHBO Fig. 2-5, 8; rliable's performance profile), drawn for ``write_summary``.

``plot_regret_curves`` (``regret_curves.png``), ``plot_ranks`` (``ranks_over_time.png``), ``plot_k``
(``k_histogram.png``, ``k_vs_mv.png``) and ``plot_profile`` (``performance_profile.png``) each draw one
figure with matplotlib's object API on the Agg canvas (no pyplot state, no display) and save it as PNG and
as SVG (text kept as text, no date: the same run gives the same bytes). Every figure says on it what its
bands are; none is drawn from fewer than ``metrics.MIN_CI_REPEATS`` repeats. The tables and
``write_summary`` itself are :mod:`tune_risk.offline.summary`.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tune_risk.offline import metrics
from tune_risk.offline.metrics import MIN_CI_REPEATS

BAND_NOTE = {  # what the shaded bands of each figure are (printed on the figure)
    "regret": "line: IQM over repeats; band: 95 % percentile-bootstrap CI of the IQM",
    "ranks": "line: mean rank over (table, repeat); band: ± 1 standard error",
    "profile": "all (table, repeat) runs, tables weighted equally; band: 95 % stratified-bootstrap CI",
}
NO_BAND = f"; no band below {MIN_CI_REPEATS} repeats (a CI needs ≥ {MIN_CI_REPEATS})"


def _figure(n_panels: int, ncols: int = 3, size: tuple[float, float] = (4.2, 3.2)) -> tuple[Figure, list]:
    """A figure with ``n_panels`` axes on an Agg canvas (unused grid cells hidden; constrained layout keeps
    labels, titles and the suptitle apart)."""
    ncols = max(1, min(ncols, n_panels))
    nrows = math.ceil(max(n_panels, 1) / ncols)
    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel())
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:max(n_panels, 1)]


def _suptitle(fig: Figure, text: str) -> None:
    """The figure's note: one line, or one line per ``;``-part when that would be wider than the figure."""
    fits = len(text) <= fig.get_figwidth() * 14  # characters of a small font per inch, with a margin
    fig.suptitle(text if fits else text.replace("; ", "\n"), fontsize="small")


def _save(fig: Figure, png: Path) -> list[Path]:
    """Save ``fig`` as ``png`` and beside it as SVG (text as text, no date: the same run gives the same bytes)."""
    svg = png.with_suffix(".svg")
    fig.savefig(png, dpi=120)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tune-risk"}):
        fig.savefig(svg, format="svg", metadata={"Date": None})
    return [png, svg]


def _colours(order: list[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {m: cmap(i % 10) for i, m in enumerate(order)}


def plot_regret_curves(curves: pd.DataFrame, order: list[str], path: Path) -> list[Path]:
    """Fig. 3 / 8: IQM normalised regret vs evaluations with 95 % CI bands (where the repeats allow one),
    one panel per table."""
    tables = sorted(curves["table"].unique())
    fig, axes = _figure(len(tables))
    colours = _colours(order)
    for ax, table in zip(axes, tables, strict=False):
        for method in order:
            c = curves[(curves["table"] == table) & (curves["method"] == method)]
            enough = c["n_repeats"] >= MIN_CI_REPEATS
            ax.plot(c["n_eval"], c["iqm"], color=colours[method], label=method, drawstyle="steps-post")
            ax.fill_between(c["n_eval"], c["ci_low"].where(enough), c["ci_high"].where(enough),
                            color=colours[method], alpha=0.2, step="post")
        ax.set(title=str(table), xlabel="evaluations", ylabel="normalised MV regret, IQM\n(lower is better)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].legend(fontsize="small")
    few = bool((curves["n_repeats"] < MIN_CI_REPEATS).any())
    _suptitle(fig, BAND_NOTE["regret"] + (NO_BAND if few else ""))
    return _save(fig, path)


PROFILE_PANELS = {"normalised_regret": "best configuration evaluated",
                  "normalised_recommended_regret": "recommended configuration (argmax LCB^MV)"}


def plot_profile(runs: pd.DataFrame, order: list[str], n_boot: int, path: Path) -> list[Path]:
    """Performance profiles (rliable): fraction of runs with final normalised regret <= tau, one panel for the
    best configuration evaluated and, if logged, one for the recommended one; stratified CI bands."""
    columns = [c for c in PROFILE_PANELS if c in runs.columns]
    fig, axes = _figure(len(columns), ncols=2, size=(5.6, 3.8))
    colours = _colours(order)
    fewest = metrics.fewest_repeats(metrics.final_values(runs))
    for ax, column in zip(axes, columns, strict=True):
        profile = metrics.performance_profile(runs, column, n_boot=n_boot)
        for method in order:
            p = profile[profile["method"] == method]
            ax.plot(p["tau"], p["fraction"], color=colours[method], label=method, drawstyle="steps-post")
            if fewest[method] >= MIN_CI_REPEATS:
                ax.fill_between(p["tau"], p["ci_low"], p["ci_high"], color=colours[method], alpha=0.2, step="post")
        ax.set(title=PROFILE_PANELS[column], xlabel="final normalised MV regret τ\n(1 = initial design's regret)",
               ylabel="fraction of runs with regret ≤ τ\n(higher is better)", ylim=(-0.02, 1.02))
    axes[0].legend(fontsize="small")
    few = bool((fewest < MIN_CI_REPEATS).any())
    _suptitle(fig, BAND_NOTE["profile"] + (NO_BAND if few else ""))
    return _save(fig, path)


def plot_ranks(runs: pd.DataFrame, grid: np.ndarray, order: list[str], path: Path) -> list[Path]:
    """Fig. 2 / 5: mean rank ± SE over evaluations, for simple and cumulative regret."""
    fig, axes = _figure(2)
    colours = _colours(order)
    for ax, (col, name) in zip(axes, [("regret", "simple MV regret"), ("cumulative_regret", "cumulative regret")],
                               strict=True):
        ranks = metrics.ranks_over_time(runs, col, grid)
        for method in order:
            r = ranks[ranks["method"] == method]
            se = r["se_rank"].fillna(0.0)
            ax.plot(r["n_eval"], r["mean_rank"], color=colours[method], label=method)
            ax.fill_between(r["n_eval"], r["mean_rank"] - se, r["mean_rank"] + se, color=colours[method], alpha=0.2)
        ax.set(title=f"rank on {name}", xlabel="evaluations", ylabel="mean rank (lower is better)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].legend(fontsize="small")
    _suptitle(fig, BAND_NOTE["ranks"])
    return _save(fig, path)


def plot_k(stats: metrics.KStatistics, order: list[str], hist_path: Path, scatter_path: Path) -> list[Path]:
    """Fig. 4: histogram of k per method (left) and k against the scaled true MV (right)."""
    colours = _colours(order)
    fig_h, axes_h = _figure(len(order))
    fig_s, axes_s = _figure(len(order))
    for ax_h, ax_s, method in zip(axes_h, axes_s, order, strict=True):
        h = stats.histogram[stats.histogram["method"] == method]
        s = stats.scatter[stats.scatter["method"] == method]
        ax_h.bar(h["k"], h["count"], color=colours[method])
        ax_s.scatter(s["mv_scaled"], s["k"], s=8, alpha=0.4, color=colours[method])
        if s.empty:
            for ax in (ax_h, ax_s):
                ax.text(0.5, 0.5, "no BO rounds", ha="center", va="center", transform=ax.transAxes)
        ax_h.set(title=method, xlabel="replicates k", ylabel="rounds")
        ax_s.set(title=method, xlabel="true MV, scaled to [0, 1] per table\n(higher is better)", ylabel="replicates k")
        for axis in (ax_h.xaxis, ax_h.yaxis, ax_s.yaxis):  # k and round counts are integers
            axis.set_major_locator(MaxNLocator(integer=True))
    return [*_save(fig_h, hist_path), *_save(fig_s, scatter_path)]
