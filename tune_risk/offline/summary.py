"""Write a replay benchmark's ``summary.md``, ``summary.json`` and figures (ERAHBO Sec. 5, App. C; docs/algorithms.md §1.12).

:func:`write_summary` turns the replay's ``runs`` and ``rounds`` frames into the paper's reporting:
mean ranks with Wilcoxon tests against the best method (Table 1), evaluations to reach 75 / 50 / 25 %
of the initial design's regret (Tables 2 and 5), final normalised regret as IQM [95 % bootstrap CI],
evaluations and compute (cancelled replicates included), the replicate-count distribution, and the
figures ``regret_curves.png`` (Fig. 3, 8), ``ranks_over_time.png`` (Fig. 2, 5), ``k_histogram.png``
and ``k_vs_mv.png`` (Fig. 4), and rliable's aggregate IQM and performance profile
(``performance_profile.png``) under a stratified bootstrap.  The figures are :mod:`tune_risk.offline.figures`
(matplotlib's object API on the Agg canvas, so no pyplot state or display is touched; PNG and SVG, text kept as
text, for papers); this module writes the tables.
``summary.json`` holds every number of ``summary.md`` unrounded (NaN as ``null``), section by section, so a
paper's tables can be built from it.  One table, one method or one repetition is fine: the Wilcoxon test is
then reported as "—", and no confidence interval is printed or drawn from fewer than ``metrics.MIN_CI_REPEATS`` (5)
repeats (the summary says so instead): a percentile bootstrap of an IQM over 2-4 values is not a 95 % interval.

Example:
    >>> paths = write_summary(runs, rounds, "results/replay", test_seeds=20)   # doctest: +SKIP
    >>> [p.name for p in paths][:3]                                            # doctest: +SKIP
    ['summary.md', 'summary.json', 'regret_curves.png']
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tune_risk.offline import metrics
from tune_risk.offline.figures import plot_k, plot_profile, plot_ranks, plot_regret_curves
from tune_risk.offline.metrics import MIN_CI_REPEATS

DASH = "—"
LEVELS = (0.75, 0.5, 0.25)
STOP_REASONS = ("certified", "k_max", "budget", "failed")
CI_NOTE = (f"no CI below {MIN_CI_REPEATS} repeats: a percentile bootstrap of the IQM of fewer values is not a "
           "95 % interval")


@dataclass(frozen=True)
class Section:
    """One part of the summary: its markdown and the same numbers, unrounded, for ``summary.json``.

    Example:
        >>> Section("cost", "## Evaluations ...", [{"method": "erahbo", "evaluations": 12.0}]).key
        'cost'
    """

    key: str
    markdown: str
    data: Any


def _num(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits, or a dash for NaN."""
    return DASH if value is None or not np.isfinite(value) else f"{value:.{digits}g}"


def _mean_pm_se(mean: float, se: float, fmt: str = ".2f") -> str:
    """``mean ± se``, or ``mean`` alone when the standard error is undefined (one block or table)."""
    if not np.isfinite(mean):
        return DASH
    return f"{mean:{fmt}} ± {se:{fmt}}" if np.isfinite(se) else f"{mean:{fmt}}"


def _iqm_ci(record: dict[str, Any]) -> str:
    """``iqm [low, high]`` of a record, or ``iqm`` alone when it has no interval."""
    low, high = record["ci_low"], record["ci_high"]
    ci = "" if low is None or math.isnan(low) else f" [{_num(low)}, {_num(high)}]"
    return _num(record["iqm"]) + ci


def _ci(values: np.ndarray, n_boot: int) -> tuple[float, float]:
    """The 95 % bootstrap CI of the IQM of ``values``; NaNs below ``MIN_CI_REPEATS`` values."""
    if len(values) < MIN_CI_REPEATS:
        return math.nan, math.nan
    return metrics.bootstrap_ci(values, n_boot=n_boot)


def _markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _method_order(runs: pd.DataFrame) -> list[str]:
    """Methods in order of first appearance (the order the CLI was given them)."""
    return [str(m) for m in pd.unique(runs["method"])]


def _rank_section(runs: pd.DataFrame, order: list[str]) -> Section:
    """Table 1: mean rank ± SE on final simple and cumulative regret, Wilcoxon p vs the best method."""
    tests = {col: metrics.wilcoxon_vs_best(runs, col).set_index("method")
             for col in ("regret", "cumulative_regret")}
    records = [{"method": m, "metric": col, "mean_rank": tests[col].loc[m, "mean_rank"],
                "se_rank": tests[col].loc[m, "se_rank"], "p_value": tests[col].loc[m, "p_value"],
                "not_worse": bool(tests[col].loc[m, "not_worse"])} for m in order for col in tests]

    def cell(record: dict[str, Any]) -> list[str]:
        text = _mean_pm_se(record["mean_rank"], record["se_rank"])
        return [f"**{text}**" if record["not_worse"] else text, _num(record["p_value"])]

    rows = [[m, *cell(records[2 * i]), *cell(records[2 * i + 1])] for i, m in enumerate(order)]
    headers = ["method", "rank: final simple regret", "p (Wilcoxon vs best)",
               "rank: cumulative regret", "p (Wilcoxon vs best)"]
    minimum = metrics.wilcoxon_min_pairs(0.05)
    pairs = int(tests["regret"]["n_pairs"].max())
    caveat = (f" With {pairs} pair(s) no test is run: a two-sided Wilcoxon test needs at least {minimum} "
              "pairs to reach p < 0.05, so only the best method is bold." if pairs < minimum else
              f" (The test needs at least {minimum} pairs to reach p < 0.05; here {pairs}.)")
    text = ("## Mean rank across (table, repeat) (Table 1)\n\nMean ± standard error of the rank "
            "(lower is better). Bold: best or not significantly worse than best (two-sided Wilcoxon "
            "signed-rank test, p ≥ 0.05, paired by table and repeat)." + caveat + "\n\n" + _markdown(headers, rows))
    return Section("ranks", text, {"pairs": pairs, "min_pairs_for_test": minimum, "rows": records})


def degenerate_tables(runs: pd.DataFrame) -> list[str]:
    """Tables on which every method has regret 0 at every evaluation: the initial design already holds a
    best configuration (or every configuration has the same MV), so ranks and tests cannot separate methods."""
    flat = runs.groupby("table")["regret"].apply(lambda r: bool(np.all(r.to_numpy() == 0.0)))
    return [str(table) for table, is_flat in flat.items() if is_flat]


def _warning_section(runs: pd.DataFrame) -> Section | None:
    flat = degenerate_tables(runs)
    if not flat:
        return None
    text = ("## Warning: tables that cannot separate methods\n\n" + ", ".join(f"`{t}`" for t in flat)
            + ": every method has regret 0 at every evaluation (a best configuration is in the shared initial "
            "design, or all configurations have the same mean-variance). Ranks, tests and thresholds on "
            "these tables are ties, not evidence.")
    return Section("degenerate_tables", text, flat)


def _threshold_sections(runs: pd.DataFrame, order: list[str]) -> Section:
    """Table 2 (mean over tables reached by every method) and Table 5 (first crossing per table)."""
    table = metrics.threshold_table(runs, LEVELS)
    labels = [c for c in table.columns if c not in ("table", "method")]
    summary = metrics.threshold_summary(table).set_index(["method", "level"])
    means = [{"method": m, "level": lv, "mean": summary.loc[(m, lv), "mean"], "se": summary.loc[(m, lv), "se"],
              "n_tables": int(summary.loc[(m, lv), "n_tables"])} for m in order for lv in labels]
    rows2 = [[m] + [f"{_mean_pm_se(r['mean'], r['se'], '.1f')} ({r['n_tables']})"
                    for r in means[i * len(labels):(i + 1) * len(labels)]] for i, m in enumerate(order)]
    first = table.set_index(["table", "method"])
    tables = sorted(table["table"].unique())
    crossings = [{"table": t, "method": m, "level": lv, "evaluation": first.loc[(t, m), lv]}
                 for t in tables for m in order if (t, m) in first.index for lv in labels]
    rows5 = [[t] + [" / ".join(DASH if math.isnan(v) else str(int(v)) for v in first.loc[(t, m), labels])
                    if (t, m) in first.index else DASH for m in order] for t in tables]
    text = ("## Evaluations to reach a regret threshold (Table 2)\n\nMean ± standard error of the first "
            "evaluation at which the IQM of normalised regret is at most the threshold (% of the initial "
            "design's regret), over the tables where every method reaches it (count in brackets).\n\n"
            + _markdown(["method", *labels], rows2)
            + "\n\n## First evaluation below threshold per table (Table 5)\n\nCells: "
            + " / ".join(labels) + f"; {DASH} = not reached.\n\n" + _markdown(["table", *order], rows5))
    return Section("thresholds", text, {"levels": labels, "mean_over_tables": means, "first_per_table": crossings})


HELDOUT_VIEWS = {"normalised_heldout_mv_regret": "mean-variance (MV = mean − variance, warped)",
                 "normalised_heldout_mean_regret": "mean alone (risk-neutral view)"}


def _heldout_section(runs: pd.DataFrame, rounds: pd.DataFrame, order: list[str], n_boot: int,
                     n_test: int) -> Section | None:
    """The headline: the recommended configuration of every method scored on ``n_test`` held-out seeds (§1.15)."""
    if not n_test or "normalised_heldout_mv_regret" not in runs.columns:
        return None
    finals = metrics.final_values(runs)
    thin = finals.assign(thin=finals["recommended_seeds"] < n_test).groupby("method")["thin"].mean()
    parts = [f"## Recommended configuration on held-out seeds\n\nEvery method's final recommendation scored on "
             f"{n_test} seed columns that no method read while searching (its regret against the table's best "
             "configuration on those seeds, divided by the gap between the best and the median configuration: "
             "0 = the best, 1 = the median; lower is better). Cells: IQM [95 % bootstrap CI] over repeats "
             f"({CI_NOTE}); **bold**: the best method of the row or not separable from it "
             "(paired two-sided Wilcoxon p ≥ 0.05 over the repeats). Budgets: every `*-rep<k>` peer and "
             "`tune-risk` spend `--budget` seed-runs in all; the paper's methods (erahbo, rahbo-k<k>, gp-ucb) "
             "also get their initial design on top, as in the paper (see `seed runs` below)."]
    views = {}
    for column, view in HELDOUT_VIEWS.items():
        views[column] = _heldout_records(finals, order, column, n_boot)
        parts.append(f"### On the {view}\n\n" + _heldout_table(views[column], order))
    seed_runs = finals.groupby("method")["seed_runs"].mean()
    snap = (rounds.groupby("method")["snap_distance"].mean() if "snap_distance" in rounds.columns
            else pd.Series(dtype=float))
    spending = [{"method": m, "seed_runs": float(seed_runs.get(m, math.nan)), "thin": float(thin.get(m, 0.0)),
                 "snap": float(snap.get(m, math.nan))} for m in order]
    rows = [[r["method"], _num(r["seed_runs"], 4), f"{100 * r['thin']:.0f} %", _num(r["snap"], 2)] for r in spending]
    parts.append("### Spending and evidence\n\n`seed runs`: mean seed-runs per replay, initial design and cancelled "
                 f"runs included; `thin`: share of runs whose recommendation rests on fewer than {n_test} seeds (the "
                 "test set's size; the fewer, the more a lucky draw can decide it); `snap`: mean distance (unit cube) "
                 "from a peer's suggestion to the table row it was replaced by: peers propose anywhere in the space, "
                 "and the table only has its rows (the engine's methods choose rows, distance 0).\n\n"
                 + _markdown(["method", "seed runs", "thin", "snap"], rows))
    return Section("heldout", "\n\n".join(parts), {"test_seeds": n_test, **views, "spending": spending})


def _heldout_records(finals: pd.DataFrame, order: list[str], column: str, n_boot: int) -> list[dict[str, Any]]:
    """Per table and pooled (``table`` None): IQM, CI and whether each method is bold (not separable from the best)."""
    records = []
    minimum = metrics.wilcoxon_min_pairs(0.05)
    for table in [*sorted(finals["table"].unique()), None]:
        block = finals if table is None else finals[finals["table"] == table]
        wide = block.pivot_table(index=["table", "repeat"], columns="method", values=column)
        present = [m for m in order if m in wide.columns]
        iqms = {m: float(metrics.iqm(wide[m].dropna().to_numpy())) for m in present}
        best = min(iqms, key=iqms.get) if iqms else None
        for method in present:
            values = wide[method].dropna().to_numpy()
            low, high = _ci(values, n_boot)
            both = wide[[method, best]].dropna()
            separable = method != best and len(both) >= minimum and \
                metrics.paired_p_value(both[method].to_numpy(), both[best].to_numpy()) < 0.05
            bold = not separable and (method == best or len(both) >= minimum)
            records.append({"table": table, "method": method, "iqm": iqms[method], "ci_low": low, "ci_high": high,
                            "n_repeats": len(values), "bold": bold})
    return records


def _heldout_table(records: list[dict[str, Any]], order: list[str]) -> str:
    """The markdown of :func:`_heldout_records`: a row per table, then the pooled row."""
    rows = []
    for table in dict.fromkeys(r["table"] for r in records):
        cells = {r["method"]: r for r in records if r["table"] == table}
        row = ["**all tables**" if table is None else str(table)]
        for method in order:
            record = cells.get(method)
            text = DASH if record is None else _iqm_ci(record)
            row.append(f"**{text}**" if record is not None and record["bold"] else text)
        rows.append(row)
    return _markdown(["table", *order], rows)


def _final_regret_section(runs: pd.DataFrame, order: list[str], n_boot: int) -> Section:
    """Final normalised regret of the best evaluated and (if logged) of the recommended
    configuration, IQM [95 % bootstrap CI] over repeats, per table × method."""
    finals = metrics.final_values(runs)
    data = {"normalised_regret": _final_records(finals, order, "normalised_regret", n_boot)}
    text = ("## Final normalised regret (IQM [95 % CI])\n\nIQM over repeats of the final simple MV regret "
            f"divided by the initial design's regret; percentile bootstrap CI ({CI_NOTE}).\n\n"
            + _final_table(data["normalised_regret"], order))
    if "normalised_recommended_regret" in finals.columns:
        data["normalised_recommended_regret"] = _final_records(finals, order, "normalised_recommended_regret", n_boot)
        text += ("\n\n## Final normalised regret of the recommended configuration (IQM [95 % CI])\n\n"
                 "The configuration with the highest LCB^MV after the last round (CODE-RAHBO's rule).\n\n"
                 + _final_table(data["normalised_recommended_regret"], order))
    return Section("final_regret", text, data)


def _final_records(finals: pd.DataFrame, order: list[str], column: str, n_boot: int) -> list[dict[str, Any]]:
    records = []
    for table in sorted(finals["table"].unique()):
        for method in order:
            values = finals.loc[(finals["table"] == table) & (finals["method"] == method), column].to_numpy()
            if len(values):
                low, high = _ci(values, n_boot)
                records.append({"table": table, "method": method, "iqm": float(metrics.iqm(values)),
                                "ci_low": low, "ci_high": high, "n_repeats": len(values)})
    return records


def _final_table(records: list[dict[str, Any]], order: list[str]) -> str:
    cells = {(r["table"], r["method"]): _iqm_ci(r) for r in records}
    tables = list(dict.fromkeys(r["table"] for r in records))
    return _markdown(["table", *order], [[str(t)] + [cells.get((t, m), DASH) for m in order] for t in tables])


def _aggregate_section(runs: pd.DataFrame, n_boot: int) -> Section:
    """Aggregate over tables: IQM of final normalised regret pooled over (table, repeat), stratified CI."""
    columns = [c for c in ("normalised_regret", "normalised_recommended_regret") if c in runs.columns]
    fewest = metrics.fewest_repeats(metrics.final_values(runs))
    records = []
    for column in columns:
        for row in metrics.aggregate_iqm(runs, column, n_boot=n_boot).to_dict("records"):
            if fewest[row["method"]] < MIN_CI_REPEATS:
                row["ci_low"] = row["ci_high"] = math.nan
            records.append({**row, "column": column, "n_tables": int(row["n_tables"]), "n_runs": int(row["n_runs"])})
    methods = list(dict.fromkeys(r["method"] for r in records))
    cell = {(r["method"], r["column"]): r for r in records}
    headers = ["method", "tables", "runs", *[f"IQM {c.replace('_', ' ')} [95 % CI]" for c in columns]]
    rows = [[m, str(cell[(m, columns[0])]["n_tables"]), str(cell[(m, columns[0])]["n_runs"]),
             *[_iqm_ci(cell[(m, c)]) for c in columns]] for m in methods]
    text = ("## Aggregate over tables (IQM, stratified bootstrap)\n\nIQM of the final normalised regret over every "
            "(table, repeat) run pooled (lower is better; 1 = the initial design's regret), with a 95 % "
            "stratified percentile-bootstrap CI (repeats resampled within each table; none when a table has fewer "
            f"than {MIN_CI_REPEATS} repeats), as rliable reports aggregate scores. `performance_profile.png` shows "
            "the whole distribution: the fraction of runs ending at or below each normalised regret.\n\n"
            + _markdown(headers, rows))
    return Section("aggregate", text, records)


def _cost_section(runs: pd.DataFrame, rounds: pd.DataFrame, order: list[str]) -> Section:
    """Evaluations, compute (cancelled replicates included) and rounds per method, averaged over runs."""
    finals = metrics.final_values(runs)
    n_rounds = rounds.groupby(["method", "table", "repeat"]).size() if len(rounds) else pd.Series(dtype=float)
    records = []
    for method in order:
        f = finals[finals["method"] == method]
        compute = float(f["compute"].mean()) if "compute" in f.columns else math.nan
        per_run = n_rounds.loc[method] if method in n_rounds.index.get_level_values(0) else pd.Series([0])
        records.append({"method": method, "runs": len(f), "evaluations": float(f["n_eval"].mean()),
                        "compute": compute, "cancelled": compute - float(f["n_eval"].mean()),
                        "bo_rounds": float(per_run.mean())})
    rows = [[r["method"], str(r["runs"]), _num(r["evaluations"], 5), _num(r["compute"], 5), _num(r["cancelled"], 4),
             _num(r["bo_rounds"], 4)] for r in records]
    headers = ["method", "runs", "evaluations", "compute", "cancelled (compute − evaluations)", "BO rounds"]
    text = ("## Evaluations and compute per run\n\nMeans over (table, repeat). Compute counts every "
            "replicate run launched, cancelled ones included.\n\n" + _markdown(headers, rows))
    return Section("cost", text, records)


def _k_section(rounds: pd.DataFrame, order: list[str]) -> Section:
    """Replicates per round: stop reasons and the histogram of k (Fig. 4, left)."""
    if rounds.empty:
        return Section("replicates", "## Replicates per round\n\nNo BO rounds were recorded.",
                       {"rows": [], "histogram": []})
    stats = metrics.k_statistics(rounds)
    reasons = rounds.groupby(["method", "stop_reason"]).size() if "stop_reason" in rounds else pd.Series()
    ks = [int(v) for v in sorted(stats.histogram["k"].unique())]
    hist = stats.histogram.set_index(["method", "k"])["count"]
    records, histogram = [], []
    for method in order:
        k = stats.scatter.loc[stats.scatter["method"] == method, "k"]
        records.append({"method": method, "rounds": len(k), "mean_k": float(k.mean()), "median_k": float(k.median()),
                        **{r: int(reasons.get((method, r), 0)) for r in STOP_REASONS}})
        histogram += [{"method": method, "k": v, "rounds": int(hist.get((method, v), 0))} for v in ks]
    rows_stop = [[r["method"], str(r["rounds"]), _num(r["mean_k"], 3), _num(r["median_k"], 3),
                  *[str(r[reason]) for reason in STOP_REASONS]] for r in records]
    rows_k = [[m] + [str(h["rounds"]) for h in histogram if h["method"] == m] for m in order]
    text = ("## Replicates per round (Fig. 4)\n\nRounds over all tables and repeats, and how each ended.\n\n"
            + _markdown(["method", "rounds", "mean k", "median k", *STOP_REASONS], rows_stop)
            + "\n\nNumber of rounds with k replicates:\n\n"
            + _markdown(["method", *[f"k={v}" for v in ks]], rows_k))
    return Section("replicates", text, {"rows": records, "histogram": histogram})


def _jsonable(value: Any) -> Any:
    """``value`` with NaN/inf as ``None`` and numpy scalars as Python numbers (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _header(title: str, runs: pd.DataFrame, order: list[str], test_seeds: int, n_boot: int) -> Section:
    """The title line: tables, methods, repeats, evaluations, and why there is no interval if there is none."""
    finals = metrics.final_values(runs)
    repeats, fewest = int(finals.groupby(["table", "method"]).size().max()), int(metrics.fewest_repeats(finals).min())
    text = (f"# {title}\n\n{runs['table'].nunique()} table(s), {len(order)} method(s) "
            f"({', '.join(order)}), {repeats} repeat(s), "
            f"up to {int(finals['n_eval'].max())} evaluations. Metrics: docs/algorithms.md §1.12.")
    if fewest < MIN_CI_REPEATS:
        text += (f" No confidence interval is printed or drawn where a table has fewer than {MIN_CI_REPEATS} repeats "
                 f"(here as few as {fewest}): a 95 % bootstrap CI needs ≥ {MIN_CI_REPEATS} repeats.")
    data = {"title": title, "tables": sorted(str(t) for t in runs["table"].unique()), "methods": order,
            "repeats": repeats, "fewest_repeats": fewest, "max_evaluations": int(finals["n_eval"].max()),
            "test_seeds": test_seeds, "min_ci_repeats": MIN_CI_REPEATS, "ci_level": 0.95, "n_boot": n_boot}
    return Section("run", text, data)


def write_summary(runs: pd.DataFrame, rounds: pd.DataFrame, out_dir: str | Path,
                  title: str = "Offline replay benchmark", grid_points: int = 200, n_boot: int = 2000,
                  test_seeds: int = 0) -> list[Path]:
    """Write ``summary.md``, ``summary.json`` and the five figures (PNG and SVG) into ``out_dir``; return the paths.

    ``runs`` and ``rounds`` are the replay's frames (``runs.csv`` / ``rounds.csv``).  Curves and rank
    trajectories are drawn on at most ``grid_points`` evaluation counts; thresholds use every count.
    ``n_boot`` sets the bootstrap resamples of every CI (seeded, so the output is deterministic).
    ``test_seeds``: the held-out seeds of the replay (``--test-seeds``); when > 0 the summary opens with the
    recommended configurations scored on them.  ``summary.json`` maps each section's key (``run``, ``heldout``,
    ``ranks``, ``aggregate``, ``thresholds``, ``final_regret``, ``cost``, ``replicates``) to its numbers.

    Example:
        >>> paths = write_summary(runs, rounds, "results/replay", n_boot=200)   # doctest: +SKIP
        >>> json.loads(paths[1].read_text())["run"]["repeats"]                   # doctest: +SKIP
        20
    """
    if runs.empty:
        raise ValueError("runs is empty: nothing to summarise")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    order = _method_order(runs)
    if rounds.empty:
        rounds = pd.DataFrame(columns=["table", "method", "repeat", "round", "k", "stop_reason", "mv_true"])
    grid = metrics.default_grid(runs, grid_points)
    sections = [_header(title, runs, order, test_seeds, n_boot),
                *filter(None, [_warning_section(runs), _heldout_section(runs, rounds, order, n_boot, test_seeds)]),
                _rank_section(runs, order), _aggregate_section(runs, n_boot), _threshold_sections(runs, order),
                _final_regret_section(runs, order, n_boot), _cost_section(runs, rounds, order), _k_section(rounds, order)]
    md, js = out / "summary.md", out / "summary.json"
    md.write_text("\n\n".join(s.markdown for s in sections) + "\n", encoding="utf-8")
    js.write_text(json.dumps(_jsonable({s.key: s.data for s in sections}), indent=1, allow_nan=False) + "\n",
                  encoding="utf-8")
    curves = metrics.regret_curves(runs, "normalised_regret", grid, n_boot=n_boot)
    return [md, js, *plot_regret_curves(curves, order, out / "regret_curves.png"),
            *plot_ranks(runs, grid, order, out / "ranks_over_time.png"),
            *plot_k(metrics.k_statistics(rounds), order, out / "k_histogram.png", out / "k_vs_mv.png"),
            *plot_profile(runs, order, n_boot, out / "performance_profile.png")]
