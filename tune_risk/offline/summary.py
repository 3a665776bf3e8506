"""Write a replay benchmark's ``summary.md`` and PNG figures (ERAHBO Sec. 5, App. C; docs/algorithms.md §1.12).

:func:`write_summary` turns the replay's ``runs`` and ``rounds`` frames into the paper's reporting:
mean ranks with Wilcoxon tests against the best method (Table 1), evaluations to reach 75 / 50 / 25 %
of the initial design's regret (Tables 2 and 5), final normalised regret as IQM [95 % bootstrap CI],
evaluations and compute (cancelled replicates included), the replicate-count distribution, and the
figures ``regret_curves.png`` (Fig. 3, 8), ``ranks_over_time.png`` (Fig. 2, 5), ``k_histogram.png``
and ``k_vs_mv.png`` (Fig. 4), and rliable's aggregate IQM and performance profile
(``performance_profile.png``) under a stratified bootstrap.  Figures are drawn with matplotlib's object API on the Agg canvas, so no
pyplot state or display is touched.  One table, one method or one repetition is fine: the CI and the
Wilcoxon test are then reported as "—".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tune_risk.offline import metrics

DASH = "—"
LEVELS = (0.75, 0.5, 0.25)
STOP_REASONS = ("certified", "k_max", "budget", "failed")
BAND_NOTE = {  # what the shaded bands of each figure are (printed on the figure)
    "regret": "line: IQM over repeats; band: 95 % percentile-bootstrap CI of the IQM",
    "ranks": "line: mean rank over (table, repeat); band: ± 1 standard error",
    "profile": "all (table, repeat) runs, tables weighted equally; band: 95 % stratified-bootstrap CI",
}


def _num(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, or a dash for NaN."""
    return DASH if value is None or not np.isfinite(value) else f"{value:.{digits}g}"


def _mean_pm_se(mean: float, se: float, fmt: str = ".2f") -> str:
    """``mean ± se``, or ``mean`` alone when the standard error is undefined (one block or table)."""
    if not np.isfinite(mean):
        return DASH
    return f"{mean:{fmt}} ± {se:{fmt}}" if np.isfinite(se) else f"{mean:{fmt}}"


def _markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _method_order(runs: pd.DataFrame) -> list[str]:
    """Methods in order of first appearance (the order the CLI was given them)."""
    return [str(m) for m in pd.unique(runs["method"])]


def _rank_section(runs: pd.DataFrame, order: list[str]) -> str:
    """Table 1: mean rank ± SE on final simple and cumulative regret, Wilcoxon p vs the best method."""
    tests = {col: metrics.wilcoxon_vs_best(runs, col).set_index("method")
             for col in ("regret", "cumulative_regret")}

    def cell(col: str, method: str) -> list[str]:
        row = tests[col].loc[method]
        text = _mean_pm_se(row["mean_rank"], row["se_rank"])
        return [f"**{text}**" if row["not_worse"] else text, _num(row["p_value"])]

    rows = [[m, *cell("regret", m), *cell("cumulative_regret", m)] for m in order]
    headers = ["method", "rank: final simple regret", "p (Wilcoxon vs best)",
               "rank: cumulative regret", "p (Wilcoxon vs best)"]
    minimum = metrics.wilcoxon_min_pairs(0.05)
    pairs = int(tests["regret"]["n_pairs"].max())
    caveat = (f" With {pairs} pair(s) no test is run: a two-sided Wilcoxon test needs at least {minimum} "
              "pairs to reach p < 0.05, so only the best method is bold." if pairs < minimum else
              f" (The test needs at least {minimum} pairs to reach p < 0.05; here {pairs}.)")
    return ("## Mean rank across (table, repeat) (Table 1)\n\nMean ± standard error of the rank "
            "(lower is better). Bold: best or not significantly worse than best (two-sided Wilcoxon "
            "signed-rank test, p ≥ 0.05, paired by table and repeat)." + caveat + "\n\n"
            + _markdown(headers, rows))


def degenerate_tables(runs: pd.DataFrame) -> list[str]:
    """Tables on which every method has regret 0 at every evaluation: the initial design already holds a
    best configuration (or every configuration has the same MV), so ranks and tests cannot separate methods."""
    flat = runs.groupby("table")["regret"].apply(lambda r: bool(np.all(r.to_numpy() == 0.0)))
    return [str(table) for table, is_flat in flat.items() if is_flat]


def _warning_section(runs: pd.DataFrame) -> str | None:
    flat = degenerate_tables(runs)
    if not flat:
        return None
    return ("## Warning: tables that cannot separate methods\n\n" + ", ".join(f"`{t}`" for t in flat)
            + ": every method has regret 0 at every evaluation (a best configuration is in the shared initial "
            "design, or all configurations have the same mean-variance). Ranks, tests and thresholds on "
            "these tables are ties, not evidence.")


def _threshold_sections(runs: pd.DataFrame, order: list[str]) -> str:
    """Table 2 (mean over tables reached by every method) and Table 5 (first crossing per table)."""
    table = metrics.threshold_table(runs, LEVELS)
    labels = [c for c in table.columns if c not in ("table", "method")]
    summary = metrics.threshold_summary(table).set_index(["method", "level"])
    rows2 = [[m] + [f"{_mean_pm_se(summary.loc[(m, lv), 'mean'], summary.loc[(m, lv), 'se'], '.1f')} "
                    f"({int(summary.loc[(m, lv), 'n_tables'])})" for lv in labels] for m in order]
    first = table.set_index(["table", "method"])
    rows5 = [[t] + [" / ".join(DASH if math.isnan(v) else str(int(v)) for v in first.loc[(t, m), labels])
                    if (t, m) in first.index else DASH for m in order]
             for t in sorted(table["table"].unique())]
    return ("## Evaluations to reach a regret threshold (Table 2)\n\nMean ± standard error of the first "
            "evaluation at which the IQM of normalised regret is at most the threshold (% of the initial "
            "design's regret), over the tables where every method reaches it (count in brackets).\n\n"
            + _markdown(["method", *labels], rows2)
            + "\n\n## First evaluation below threshold per table (Table 5)\n\nCells: "
            + " / ".join(labels) + f"; {DASH} = not reached.\n\n" + _markdown(["table", *order], rows5))


HELDOUT_VIEWS = {"normalised_heldout_mv_regret": "mean-variance (MV = mean − variance, warped)",
                 "normalised_heldout_mean_regret": "mean alone (risk-neutral view)"}


def _heldout_section(runs: pd.DataFrame, rounds: pd.DataFrame, order: list[str], n_boot: int,
                     n_test: int) -> str | None:
    """The headline: the recommended configuration of every method scored on ``n_test`` held-out seeds (§1.15)."""
    if not n_test or "normalised_heldout_mv_regret" not in runs.columns:
        return None
    finals = metrics.final_values(runs)
    thin = finals.assign(thin=finals["recommended_seeds"] < n_test).groupby("method")["thin"].mean()
    parts = [f"## Recommended configuration on held-out seeds\n\nEvery method's final recommendation scored on "
             f"{n_test} seed columns that no method read while searching (its regret against the table's best "
             "configuration on those seeds, divided by the gap between the best and the median configuration: "
             "0 = the best, 1 = the median; lower is better). Cells: IQM [95 % bootstrap CI] over repeats "
             f"(no CI below {MIN_CI_REPEATS} repeats); **bold**: the best method of the row or not separable from it "
             "(paired two-sided Wilcoxon p ≥ 0.05 over the repeats). Budgets: every `*-rep<k>` peer and "
             "`tune-risk` spend `--budget` seed-runs in all; the paper's methods (erahbo, rahbo-k<k>, gp-ucb) "
             "also get their initial design on top, as in the paper (see `seed runs` below)."]
    for column, view in HELDOUT_VIEWS.items():
        parts.append(f"### On the {view}\n\n" + _heldout_table(finals, order, column, n_boot))
    seed_runs = finals.groupby("method")["seed_runs"].mean()
    snap = (rounds.groupby("method")["snap_distance"].mean() if "snap_distance" in rounds.columns
            else pd.Series(dtype=float))
    rows = [[m, _num(float(seed_runs.get(m, float("nan"))), 4), f"{100 * float(thin.get(m, 0.0)):.0f} %",
             _num(float(snap.get(m, float("nan"))), 2)] for m in order]
    parts.append("### Spending and evidence\n\n`seed runs`: mean seed-runs per replay, initial design and cancelled "
                 f"runs included; `thin`: share of runs whose recommendation rests on fewer than {n_test} seeds (the "
                 "test set's size; the fewer, the more a lucky draw can decide it); `snap`: mean distance (unit cube) "
                 "from a peer's suggestion to the table row it was replaced by: peers propose anywhere in the space, "
                 "and the table only has its rows (the engine's methods choose rows, distance 0).\n\n"
                 + _markdown(["method", "seed runs", "thin", "snap"], rows))
    return "\n\n".join(parts)


MIN_CI_REPEATS = 5
"""Fewest repeats for a bootstrap CI: with fewer, percentile intervals of an IQM are not meaningful."""


def _heldout_table(finals: pd.DataFrame, order: list[str], column: str, n_boot: int) -> str:
    """Per table and pooled: IQM [CI] of ``column`` per method, bold where not separable from the row's best."""
    rows = []
    for table in [*sorted(finals["table"].unique()), None]:
        block = finals if table is None else finals[finals["table"] == table]
        wide = block.pivot_table(index=["table", "repeat"], columns="method", values=column)
        present = [m for m in order if m in wide.columns]
        iqms = {m: float(metrics.iqm(wide[m].dropna().to_numpy())) for m in present}
        best = min(iqms, key=iqms.get) if iqms else None
        row = ["**all tables**" if table is None else str(table)]
        for method in order:
            if method not in iqms:
                row.append(DASH)
                continue
            values = wide[method].dropna().to_numpy()
            low, high = (metrics.bootstrap_ci(values, n_boot=n_boot) if len(values) >= MIN_CI_REPEATS
                         else (math.nan, math.nan))
            text = _num(iqms[method]) + ("" if math.isnan(low) else f" [{_num(low)}, {_num(high)}]")
            both = wide[[method, best]].dropna()
            separable = method != best and len(both) >= metrics.wilcoxon_min_pairs(0.05) and \
                metrics.paired_p_value(both[method].to_numpy(), both[best].to_numpy()) < 0.05
            row.append(text if separable or (method != best and len(both) < metrics.wilcoxon_min_pairs(0.05))
                       else f"**{text}**")
        rows.append(row)
    return _markdown(["table", *order], rows)


def _final_regret_section(runs: pd.DataFrame, order: list[str], n_boot: int) -> str:
    """Final normalised regret of the best evaluated and (if logged) of the recommended
    configuration, IQM [95 % bootstrap CI] over repeats, per table × method."""
    finals = metrics.final_values(runs)
    text = ("## Final normalised regret (IQM [95 % CI])\n\nIQM over repeats of the final simple MV regret "
            "divided by the initial design's regret; percentile bootstrap CI (none with one repeat).\n\n"
            + _final_table(finals, order, "normalised_regret", n_boot))
    if "normalised_recommended_regret" in finals.columns:
        text += ("\n\n## Final normalised regret of the recommended configuration (IQM [95 % CI])\n\n"
                 "The configuration with the highest LCB^MV after the last round (CODE-RAHBO's rule).\n\n"
                 + _final_table(finals, order, "normalised_recommended_regret", n_boot))
    return text


def _final_table(finals: pd.DataFrame, order: list[str], column: str, n_boot: int) -> str:
    rows = []
    for table in sorted(finals["table"].unique()):
        row = [str(table)]
        for method in order:
            values = finals.loc[(finals["table"] == table) & (finals["method"] == method), column]
            low, high = metrics.bootstrap_ci(values.to_numpy(), n_boot=n_boot)
            ci = "" if math.isnan(low) else f" [{_num(low)}, {_num(high)}]"
            row.append(DASH if values.empty else _num(metrics.iqm(values.to_numpy())) + ci)
        rows.append(row)
    return _markdown(["table", *order], rows)


def _aggregate_section(runs: pd.DataFrame, n_boot: int) -> str:
    """Aggregate over tables: IQM of final normalised regret pooled over (table, repeat), stratified CI."""
    columns = [c for c in ("normalised_regret", "normalised_recommended_regret") if c in runs.columns]
    frames = {c: metrics.aggregate_iqm(runs, c, n_boot=n_boot).set_index("method") for c in columns}
    first = frames[columns[0]]

    def cell(frame: pd.DataFrame, method: str) -> str:
        row = frame.loc[method]
        ci = "" if math.isnan(row["ci_low"]) else f" [{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
        return _num(row["iqm"]) + ci

    headers = ["method", "tables", "runs", *[f"IQM {c.replace('_', ' ')} [95 % CI]" for c in columns]]
    rows = [[m, str(int(first.loc[m, "n_tables"])), str(int(first.loc[m, "n_runs"])),
             *[cell(frames[c], m) for c in columns]] for m in first.index]
    return ("## Aggregate over tables (IQM, stratified bootstrap)\n\nIQM of the final normalised regret over every "
            "(table, repeat) run pooled (lower is better; 1 = the initial design's regret), with a 95 % "
            "stratified percentile-bootstrap CI (repeats resampled within each table; none when a table has one "
            "repeat), as rliable reports aggregate scores. `performance_profile.png` shows the whole "
            "distribution: the fraction of runs ending at or below each normalised regret.\n\n"
            + _markdown(headers, rows))


def _cost_section(runs: pd.DataFrame, rounds: pd.DataFrame, order: list[str]) -> str:
    """Evaluations, compute (cancelled replicates included) and rounds per method, averaged over runs."""
    finals = metrics.final_values(runs)
    n_rounds = rounds.groupby(["method", "table", "repeat"]).size() if len(rounds) else pd.Series(dtype=float)
    rows = []
    for method in order:
        f = finals[finals["method"] == method]
        evaluations = f["n_eval"].mean()
        compute = f["compute"].mean() if "compute" in f.columns else float("nan")
        per_run = n_rounds.loc[method] if method in n_rounds.index.get_level_values(0) else pd.Series([0])
        rows.append([method, str(len(f)), _num(evaluations, 5), _num(compute, 5),
                     _num(compute - evaluations, 4), _num(float(per_run.mean()), 4)])
    headers = ["method", "runs", "evaluations", "compute", "cancelled (compute − evaluations)", "BO rounds"]
    return ("## Evaluations and compute per run\n\nMeans over (table, repeat). Compute counts every "
            "replicate run launched, cancelled ones included.\n\n" + _markdown(headers, rows))


def _k_section(rounds: pd.DataFrame, order: list[str]) -> str:
    """Replicates per round: stop reasons and the histogram of k (Fig. 4, left)."""
    if rounds.empty:
        return "## Replicates per round\n\nNo BO rounds were recorded."
    stats = metrics.k_statistics(rounds)
    reasons = rounds.groupby(["method", "stop_reason"]).size() if "stop_reason" in rounds else pd.Series()
    ks = sorted(stats.histogram["k"].unique())
    hist = stats.histogram.set_index(["method", "k"])["count"]
    rows_stop, rows_k = [], []
    for method in order:
        k = stats.scatter.loc[stats.scatter["method"] == method, "k"]
        rows_stop.append([method, str(len(k)), _num(k.mean(), 3), _num(k.median(), 3)]
                         + [str(int(reasons.get((method, r), 0))) for r in STOP_REASONS])
        rows_k.append([method] + [str(int(hist.get((method, v), 0))) for v in ks])
    return ("## Replicates per round (Fig. 4)\n\nRounds over all tables and repeats, and how each ended.\n\n"
            + _markdown(["method", "rounds", "mean k", "median k", *STOP_REASONS], rows_stop)
            + "\n\nNumber of rounds with k replicates:\n\n"
            + _markdown(["method", *[f"k={v}" for v in ks]], rows_k))


def _figure(n_panels: int, ncols: int = 3, size: tuple[float, float] = (4.2, 3.2)) -> tuple[Figure, list]:
    """A figure with ``n_panels`` axes on an Agg canvas (unused grid cells hidden)."""
    ncols = max(1, min(ncols, n_panels))
    nrows = math.ceil(max(n_panels, 1) / ncols)
    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel())
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:max(n_panels, 1)]


def _colours(order: list[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {m: cmap(i % 10) for i, m in enumerate(order)}


def _plot_regret_curves(curves: pd.DataFrame, order: list[str], path: Path) -> None:
    """Fig. 3 / 8: IQM normalised regret vs evaluations with 95 % CI bands, one panel per table."""
    tables = sorted(curves["table"].unique())
    fig, axes = _figure(len(tables))
    colours = _colours(order)
    for ax, table in zip(axes, tables, strict=False):
        for method in order:
            c = curves[(curves["table"] == table) & (curves["method"] == method)]
            ax.plot(c["n_eval"], c["iqm"], color=colours[method], label=method, drawstyle="steps-post")
            ax.fill_between(c["n_eval"], c["ci_low"], c["ci_high"], color=colours[method], alpha=0.2, step="post")
        ax.set(title=str(table), xlabel="evaluations", ylabel="normalised MV regret, IQM (lower is better)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].legend(fontsize="small")
    fig.suptitle(BAND_NOTE["regret"], fontsize="small")
    fig.savefig(path, dpi=120)


PROFILE_PANELS = {"normalised_regret": "best configuration evaluated",
                  "normalised_recommended_regret": "recommended configuration (argmax LCB^MV)"}


def _plot_profile(runs: pd.DataFrame, order: list[str], n_boot: int, path: Path) -> None:
    """Performance profiles (rliable): fraction of runs with final normalised regret <= tau, one panel for the
    best configuration evaluated and, if logged, one for the recommended one; stratified CI bands."""
    columns = [c for c in PROFILE_PANELS if c in runs.columns]
    fig, axes = _figure(len(columns), ncols=2, size=(5.6, 3.8))
    colours = _colours(order)
    for ax, column in zip(axes, columns, strict=True):
        profile = metrics.performance_profile(runs, column, n_boot=n_boot)
        for method in order:
            p = profile[profile["method"] == method]
            ax.plot(p["tau"], p["fraction"], color=colours[method], label=method, drawstyle="steps-post")
            ax.fill_between(p["tau"], p["ci_low"], p["ci_high"], color=colours[method], alpha=0.2, step="post")
        ax.set(title=PROFILE_PANELS[column], xlabel="final normalised MV regret τ (1 = initial design's regret)",
               ylabel="fraction of runs with regret ≤ τ (higher is better)", ylim=(-0.02, 1.02))
    axes[0].legend(fontsize="small")
    fig.suptitle(BAND_NOTE["profile"], fontsize="small")
    fig.savefig(path, dpi=120)


def _plot_ranks(runs: pd.DataFrame, grid: np.ndarray, order: list[str], path: Path) -> None:
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
    fig.suptitle(BAND_NOTE["ranks"], fontsize="small")
    fig.savefig(path, dpi=120)


def _plot_k(stats: metrics.KStatistics, order: list[str], hist_path: Path, scatter_path: Path) -> None:
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
        ax_s.set(title=method, xlabel="true MV, scaled to [0, 1] per table (higher is better)", ylabel="replicates k")
        for axis in (ax_h.xaxis, ax_h.yaxis, ax_s.yaxis):  # k and round counts are integers
            axis.set_major_locator(MaxNLocator(integer=True))
    fig_h.savefig(hist_path, dpi=120)
    fig_s.savefig(scatter_path, dpi=120)


def write_summary(runs: pd.DataFrame, rounds: pd.DataFrame, out_dir: str | Path,
                  title: str = "Offline replay benchmark", grid_points: int = 200, n_boot: int = 2000,
                  test_seeds: int = 0) -> list[Path]:
    """Write ``summary.md`` and the five PNG figures into ``out_dir``; return the written paths.

    ``runs`` and ``rounds`` are the replay's frames (``runs.csv`` / ``rounds.csv``).  Curves and rank
    trajectories are drawn on at most ``grid_points`` evaluation counts; thresholds use every count.
    ``n_boot`` sets the bootstrap resamples of every CI (seeded, so the output is deterministic).
    ``test_seeds``: the held-out seeds of the replay (``--test-seeds``); when > 0 the summary opens with the
    recommended configurations scored on them.
    """
    if runs.empty:
        raise ValueError("runs is empty: nothing to summarise")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    order = _method_order(runs)
    if rounds.empty:
        rounds = pd.DataFrame(columns=["table", "method", "repeat", "round", "k", "stop_reason", "mv_true"])
    grid = metrics.default_grid(runs, grid_points)
    finals = metrics.final_values(runs)
    header = (f"# {title}\n\n{runs['table'].nunique()} table(s), {len(order)} method(s) "
              f"({', '.join(order)}), {finals.groupby(['table', 'method']).size().max()} repeat(s), "
              f"up to {int(finals['n_eval'].max())} evaluations. Metrics: docs/algorithms.md §1.12.")
    sections = [header, *filter(None, [_warning_section(runs), _heldout_section(runs, rounds, order, n_boot, test_seeds)]),
                _rank_section(runs, order), _aggregate_section(runs, n_boot),
                _threshold_sections(runs, order),
                _final_regret_section(runs, order, n_boot), _cost_section(runs, rounds, order),
                _k_section(rounds, order)]
    paths = [out / name for name in ("summary.md", "regret_curves.png", "ranks_over_time.png",
                                     "k_histogram.png", "k_vs_mv.png", "performance_profile.png")]
    paths[0].write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    curves = metrics.regret_curves(runs, "normalised_regret", grid, n_boot=n_boot)
    _plot_regret_curves(curves, order, paths[1])
    _plot_ranks(runs, grid, order, paths[2])
    _plot_k(metrics.k_statistics(rounds), order, paths[3], paths[4])
    _plot_profile(runs, order, n_boot, paths[5])
    return paths
