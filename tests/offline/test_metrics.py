"""Benchmark metrics and the markdown/PNG summary on small hand-built replay frames (docs/algorithms.md §1.12)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import trim_mean, wilcoxon

from tune_risk.offline import metrics
from tune_risk.offline.summary import write_summary


def _runs(values: dict[tuple[str, str, int], list[float]], column: str = "normalised_regret") -> pd.DataFrame:
    """A ``runs`` frame from ``{(table, method, repeat): [value at n_eval = 1, 2, …]}`` (all columns equal)."""
    rows = []
    for (table, method, repeat), series in values.items():
        for n, v in enumerate(series, start=1):
            rows.append({"table": table, "method": method, "repeat": repeat, "n_eval": n, "config_row": n,
                         "regret": v, "normalised_regret": v, "cumulative_regret": v, "compute": n})
    return pd.DataFrame(rows)


def _synthetic(n_tables: int, methods: tuple[str, ...], n_repeats: int, budget: int = 12,
               seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay-shaped ``runs`` and ``rounds``: method i finds good configurations (i + 1) times slower."""
    rng = np.random.default_rng(seed)
    runs, rounds = [], []
    for t in range(n_tables):
        for i, method in enumerate(methods):
            for r in range(n_repeats):
                instant = rng.uniform(0.0, 1.0, budget) * (i + 1) / len(methods)
                best, cumulative = np.minimum.accumulate(instant), np.cumsum(instant)
                for n in range(budget):
                    runs.append({"table": f"t{t}", "method": method, "repeat": r, "n_eval": n + 1,
                                 "config_row": n, "regret": 2 * best[n], "normalised_regret": best[n],
                                 "cumulative_regret": cumulative[n], "compute": 1.25 * (n + 1)})
                for j in range(budget // 3):
                    rounds.append({"table": f"t{t}", "method": method, "repeat": r, "round": j,
                                   "config_row": j, "k": int(rng.integers(2, 21)),
                                   "stop_reason": ("certified", "k_max")[j % 2], "B_t": 0.0,
                                   "mv_true": float(rng.normal())})
    return pd.DataFrame(runs), pd.DataFrame(rounds)


# --- IQM and bootstrap ------------------------------------------------------------------------


def test_iqm_is_the_mean_of_the_middle_half():
    values = [5000, 0, 20, 1, 100, 2, 1000, 10]  # sorted: 0 1 2 10 20 100 1000 5000
    assert metrics.iqm(values) == pytest.approx((2 + 10 + 20 + 100) / 4)  # not the mean (766) or median (15)
    assert metrics.iqm(values + [np.nan]) == pytest.approx(33.0)
    assert np.isnan(metrics.iqm([np.nan]))
    matrix = np.array([values, np.arange(8.0)]).T
    np.testing.assert_allclose(metrics.iqm(matrix, axis=0), [33.0, 3.5])


def test_bootstrap_ci_is_seeded_percentile_bootstrap_containing_the_iqm():
    x = np.random.default_rng(1).lognormal(size=30)
    low, high = metrics.bootstrap_ci(x, n_boot=500, seed=3)
    assert (low, high) == metrics.bootstrap_ci(x, n_boot=500, seed=3)
    assert (low, high) != metrics.bootstrap_ci(x, n_boot=500, seed=4)
    assert low < metrics.iqm(x) < high
    index = np.random.default_rng(3).integers(0, x.size, size=(500, x.size))
    reference = np.quantile(trim_mean(x[index], 0.25, axis=1), [0.025, 0.975])
    np.testing.assert_allclose([low, high], reference)
    narrow = metrics.bootstrap_ci(x, n_boot=500, level=0.5, seed=3)
    assert low < narrow[0] < narrow[1] < high


def test_bootstrap_ci_accepts_statistics_without_axis_and_degenerate_input():
    x = np.arange(20.0)
    vectorised = metrics.bootstrap_ci(x, statistic=np.median, n_boot=300)
    assert vectorised == metrics.bootstrap_ci(x, statistic=lambda v: float(np.median(v)), n_boot=300)
    assert metrics.bootstrap_ci([4.0, 4.0, 4.0], n_boot=50) == (4.0, 4.0)
    assert all(np.isnan(metrics.bootstrap_ci([4.0, np.nan], n_boot=50)))  # one value: no interval
    with pytest.raises(ValueError, match="level"):
        metrics.bootstrap_ci(x, level=95)


def test_regret_curves_take_iqm_over_repeats_as_of_each_grid_point():
    values = {("t", "m", r): [1.0, v] for r, v in enumerate([0.0, 0.2, 0.4, 0.6, 10.0])}
    values[("t", "solo", 0)] = [1.0, 0.5, 0.25]
    curves = metrics.regret_curves(_runs(values), grid=[1, 2, 3], n_boot=200).set_index(["method", "n_eval"])
    assert curves.loc[("m", 1), "iqm"] == pytest.approx(1.0)
    assert curves.loc[("m", 2), "iqm"] == pytest.approx(0.4)  # middle three of 0 .2 .4 .6 10
    assert curves.loc[("m", 3), "iqm"] == pytest.approx(0.4)  # runs ended at n=2 keep their last value
    assert curves.loc[("m", 2), "ci_low"] <= 0.4 <= curves.loc[("m", 2), "ci_high"]
    assert curves.loc[("m", 2), "n_repeats"] == 5
    assert curves.loc[("solo", 3), "iqm"] == pytest.approx(0.25)
    assert curves.loc[["solo"], ["ci_low", "ci_high"]].isna().all().all()


# --- final values and ranks --------------------------------------------------------------------


def test_final_values_take_the_last_evaluation_of_each_run():
    runs = _runs({("t", "a", 0): [3.0, 2.0, 1.0], ("t", "b", 0): [5.0, 4.0]}).sample(frac=1.0, random_state=0)
    finals = metrics.final_values(runs).set_index("method")
    assert finals.loc["a", "regret"] == 1.0 and finals.loc["a", "n_eval"] == 3
    assert finals.loc["b", "regret"] == 4.0 and finals.loc["b", "compute"] == 2


def test_common_horizon_cuts_each_block_where_its_shortest_run_ends():
    # a stops after 3 evaluations (its table is exhausted); b keeps spending, more cheaply per evaluation
    runs = _runs({("t", "a", 0): [5.0, 10.0, 15.0], ("t", "b", 0): [1.0, 2.0, 3.0, 16.0, 30.0],
                  ("t", "a", 1): [1.0, 2.0, 3.0, 4.0], ("t", "b", 1): [7.0, 8.0, 9.0, 10.0]})
    cut = metrics.at_common_horizon(runs)
    finals = metrics.final_values(cut).set_index(["method", "repeat"])
    assert finals.loc[("b", 0), "n_eval"] == 3 and finals.loc[("b", 0), "cumulative_regret"] == 3.0
    assert finals.loc[("a", 0), "cumulative_regret"] == 15.0
    assert finals.loc[("b", 1), "n_eval"] == 4  # repeat 1's runs end together: nothing is cut
    uncut = metrics.wilcoxon_vs(runs, "a", "cumulative_regret").set_index("method").loc["b"]
    fair = metrics.wilcoxon_vs(cut, "a", "cumulative_regret").set_index("method").loc["b"]
    assert (uncut["wins"], uncut["losses"]) == (2, 0) and (fair["wins"], fair["losses"]) == (1, 1)


def test_mean_ranks_average_tied_ranks_over_table_repeat_blocks():
    runs = _runs({
        ("t1", "a", 0): [9.0, 1.0], ("t1", "b", 0): [0.0, 1.0], ("t1", "c", 0): [0.0, 2.0],  # a=b tie
        ("t2", "a", 0): [9.0, 0.0], ("t2", "b", 0): [0.0, 5.0], ("t2", "c", 0): [0.0, 3.0],
    }, column="regret")
    ranks = metrics.mean_ranks(runs, "regret").set_index("method")
    np.testing.assert_allclose(ranks.loc[["a", "b", "c"], "mean_rank"], [1.25, 2.25, 2.5])
    assert ranks.index[0] == "a"
    np.testing.assert_allclose(ranks.loc["a", "se_rank"], np.std([1.5, 1.0], ddof=1) / np.sqrt(2))
    over_time = metrics.ranks_over_time(runs, "regret", grid=[1, 2]).set_index(["n_eval", "method"])
    np.testing.assert_allclose(over_time.loc[1].loc[["a", "b", "c"], "mean_rank"], [3.0, 1.5, 1.5])
    np.testing.assert_allclose(over_time.loc[2].loc[["a", "b", "c"], "mean_rank"], [1.25, 2.25, 2.5])


def test_mean_ranks_skip_absent_methods_and_rank_nan_last():
    runs = _runs({
        ("t", "a", 0): [1.0], ("t", "b", 0): [np.nan], ("t", "c", 0): [2.0], ("t", "d", 0): [3.0],
        ("t", "a", 1): [5.0], ("t", "c", 1): [4.0], ("t", "d", 1): [np.nan],  # b absent from repeat 1
    })
    ranks = metrics.mean_ranks(runs, "regret").set_index("method")
    np.testing.assert_allclose(ranks.loc[["a", "b", "c", "d"], "mean_rank"], [1.5, 4.0, 1.5, 3.0])
    assert list(ranks.loc[["a", "b", "c", "d"], "n_blocks"]) == [2, 1, 2, 2]


# --- Wilcoxon against the best method ---------------------------------------------------------------


def test_wilcoxon_is_paired_by_table_and_repeat():
    base = {(t, r): 10.0 * (3 * t + r) for t in range(2) for r in range(5)}  # blocks differ widely
    values = {}
    for (t, r), b in base.items():
        values[(f"t{t}", "good", r)] = [b]
        values[(f"t{t}", "twin", r)] = [b]
        values[(f"t{t}", "bad", r)] = [b + 0.1 + 0.01 * r]
    runs = _runs(values).sample(frac=1.0, random_state=1)
    result = metrics.wilcoxon_vs_best(runs, "regret").set_index("method")
    assert result["best"].sum() == 1 and result.loc["good", "best"]
    assert np.isnan(result.loc["good", "p_value"])
    assert result.loc["twin", "p_value"] == 1.0  # every paired difference is zero
    good = np.array([base[k] for k in sorted(base)])
    expected = wilcoxon(good + 0.1 + 0.01 * np.tile(np.arange(5), 2), good).pvalue
    assert result.loc["bad", "p_value"] == pytest.approx(expected)
    assert result.loc["bad", "p_value"] < 0.01
    assert list(result.loc[["good", "twin", "bad"], "not_worse"]) == [True, True, False]



@pytest.mark.parametrize("alpha, minimum", [(0.05, 6), (0.01, 8), (0.5, 3)])
def test_wilcoxon_min_pairs_is_where_the_exact_test_can_first_reject(alpha, minimum):
    # All n differences of one sign is the most extreme outcome; scipy's exact p-value for it.
    def most_extreme(n: int) -> float:
        return wilcoxon(np.arange(1.0, n + 1), np.zeros(n), alternative="two-sided").pvalue
    assert metrics.wilcoxon_min_pairs(alpha) == minimum
    assert most_extreme(minimum) < alpha <= most_extreme(minimum - 1)


def test_wilcoxon_with_too_few_pairs_marks_nobody_but_the_best_not_worse():
    # 3 repeats: "bad" loses every pair, yet p >= 0.05 is all a Wilcoxon test can give with 3 pairs.
    values = {("t", m, r): [v + r] for r in range(3) for m, v in (("good", 0.0), ("bad", 1.0))}
    result = metrics.wilcoxon_vs_best(_runs(values), "regret").set_index("method")
    assert list(result.loc[["good", "bad"], "n_pairs"]) == [3, 3]
    assert np.isnan(result.loc["bad", "p_value"]) and not result.loc["bad", "not_worse"]
    more = {("t", m, r): [v + r] for r in range(8) for m, v in (("good", 0.0), ("bad", 1.0))}
    tested = metrics.wilcoxon_vs_best(_runs(more), "regret").set_index("method")
    assert tested.loc["bad", "p_value"] < 0.05 and not tested.loc["bad", "not_worse"]

def test_wilcoxon_vs_a_reference_counts_its_wins_and_tests_every_other_method():
    values = {}
    for r in range(8):
        values[("t", "ref", r)] = [float(r)]
        values[("t", "worse", r)] = [r + 1.0 + 0.1 * r]      # ref wins all 8 pairs
        values[("t", "better", r)] = [r - 1.0 if r < 7 else 7.0]  # ref loses 7, ties 1
    result = metrics.wilcoxon_vs(_runs(values), "ref", "regret").set_index("method")
    assert list(result.loc["worse", ["wins", "ties", "losses", "n_pairs"]]) == [8, 0, 0, 8]
    assert list(result.loc["better", ["wins", "ties", "losses"]]) == [0, 1, 7]
    assert list(result.loc[["worse", "better", "ref"], "favours"]) == ["ref", "better", ""]
    assert np.isnan(result.loc["ref", "p_value"])
    assert list(result.loc["ref", ["wins", "ties", "losses", "n_pairs"]]) == [0, 8, 0, 8]
    worse = np.arange(8) + 1.0 + 0.1 * np.arange(8)
    assert result.loc["worse", "p_value"] == pytest.approx(wilcoxon(worse, np.arange(8.0)).pvalue)
    assert result.loc["better", "p_value"] < 0.05
    with pytest.raises(ValueError, match="'nope' is not in runs"):
        metrics.wilcoxon_vs(_runs(values), "nope")


def test_wilcoxon_vs_names_the_side_the_signed_ranks_favour_not_the_one_with_more_wins():
    # The reference wins 5 pairs by a little (ranks 1-5, sum 15) and loses 3 by a lot (ranks 6-8, sum 21).
    diffs = [0.1, 0.2, 0.3, 0.4, 0.5, -5.0, -6.0, -7.0]  # other - ref
    values = {}
    for r, d in enumerate(diffs):
        values[("t", "ref", r)] = [10.0]
        values[("t", "other", r)] = [10.0 + d]
    row = metrics.wilcoxon_vs(_runs(values), "ref").set_index("method").loc["other"]
    assert (row["wins"], row["losses"]) == (5, 3) and row["favours"] == "other"


def test_wilcoxon_single_method_is_not_applicable():
    result = metrics.wilcoxon_vs_best(_runs({("t", "only", 0): [1.0, 0.5]}), "regret")
    assert list(result["method"]) == ["only"] and result["mean_rank"].iloc[0] == 1.0
    assert np.isnan(result["p_value"].iloc[0]) and np.isnan(result["se_rank"].iloc[0])


# --- thresholds -----------------------------------------------------------------------------


def test_threshold_table_finds_the_first_iqm_crossing():
    per_n = [[1, 1, 1, 1, 1],            # IQM 1
             [0, 0.7, 0.7, 1, 1],        # IQM 0.8 (median 0.7 and mean 0.68 would already cross 75 %)
             [0, 0.7, 0.7, 0.8, 1],      # IQM 0.733 -> 75 % first reached at n = 3
             [0, 0.25, 0.5, 0.75, 1],    # IQM 0.5 exactly -> 50 % at n = 4
             [0, 0.25, 0.5, 0.75, 1]]    # 25 % never reached
    values = {("t", "erahbo", r): [row[r] for row in per_n] for r in range(5)}
    values.update({("t", "stuck", r): [1.0] * 5 for r in range(5)})
    values.update({("t", "instant", r): [0.0] * 5 for r in range(5)})
    table = metrics.threshold_table(_runs(values).sample(frac=1.0, random_state=2)).set_index("method")
    assert list(table.columns) == ["table", "75%", "50%", "25%"]
    assert table.loc["erahbo", "75%"] == 3 and table.loc["erahbo", "50%"] == 4
    assert np.isnan(table.loc["erahbo", "25%"])
    assert table.loc[["stuck"], ["75%", "50%", "25%"]].isna().all().all()
    assert list(table.loc["instant", ["75%", "50%", "25%"]]) == [1, 1, 1]


def test_threshold_summary_averages_tables_every_method_reaches():
    thresholds = pd.DataFrame({"table": ["t1", "t1", "t2", "t2"], "method": ["a", "b", "a", "b"],
                               "75%": [2.0, 4.0, 6.0, np.nan]})
    summary = metrics.threshold_summary(thresholds).set_index("method")
    assert summary.loc["a", "mean"] == 2.0 and summary.loc["b", "mean"] == 4.0  # t2 dropped: b never got there
    assert (summary["n_tables"] == 1).all()


# --- replicate counts -----------------------------------------------------------------------


def test_k_statistics_count_k_and_scale_mv_per_table():
    rounds = pd.DataFrame({"table": ["t1", "t1", "t1", "t2", "t2"], "method": ["e", "e", "r", "e", "e"],
                           "repeat": 0, "round": [0, 1, 0, 0, 1], "k": [2, 2, 20, 5, np.nan],
                           "stop_reason": "certified", "mv_true": [1.0, 3.0, 2.0, -7.0, 0.0]})
    stats = metrics.k_statistics(rounds)
    hist = stats.histogram.set_index(["method", "k"])
    assert hist.loc[("e", 2), "count"] == 2 and hist.loc[("e", 5), "count"] == 1
    assert hist.loc[("e", 2), "fraction"] == pytest.approx(2 / 3)
    assert hist.loc[("r", 20), "count"] == 1 and len(hist) == 3
    np.testing.assert_allclose(stats.scatter["mv_scaled"], [0.0, 1.0, 0.5, 1.0])  # t2 has one valid round


# --- aggregate IQM and performance profile (rliable's, stratified bootstrap) --------------------


def _finals(per_table: dict[str, list[float]], method: str = "m") -> pd.DataFrame:
    """A one-evaluation ``runs`` frame whose final normalised regrets are ``per_table``'s values."""
    return _runs({(t, method, r): [v] for t, values in per_table.items() for r, v in enumerate(values)})


def test_aggregate_iqm_pools_every_run_and_resamples_within_tables_only():
    # Table a always ends at 0, table b always at 1: a stratified bootstrap keeps 5 of each in every
    # resample, so the pooled IQM (0.5) never moves; resampling across tables would move it.
    runs = _finals({"a": [0.0] * 5, "b": [1.0] * 5})
    row = metrics.aggregate_iqm(runs, n_boot=300).iloc[0]
    assert row["iqm"] == pytest.approx(trim_mean([0.0] * 5 + [1.0] * 5, 0.25)) == pytest.approx(0.5)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(0.5), pytest.approx(0.5))
    assert (row["n_tables"], row["n_runs"]) == (2, 10)
    noisy = _finals({"a": [0.0, 0.1, 0.2, 0.3, 0.9], "b": [0.4, 0.5, 0.6, 0.7, 0.8]})
    one, again = (metrics.aggregate_iqm(noisy, n_boot=300, seed=1).iloc[0] for _ in range(2))
    assert one["ci_low"] < one["iqm"] < one["ci_high"] and one.equals(again)  # seeded


def test_aggregate_iqm_has_no_interval_when_a_table_has_a_single_run():
    row = metrics.aggregate_iqm(_finals({"a": [0.2, 0.4, 0.6], "b": [0.5]}), n_boot=100).iloc[0]
    assert row["iqm"] == pytest.approx(trim_mean([0.2, 0.4, 0.6, 0.5], 0.25))
    assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])


def test_performance_profile_weights_tables_equally_and_is_monotone():
    # a: 1 of 2 runs <= 0.25; b: 3 of 4 runs <= 0.25 -> F(0.25) = (1/2 + 3/4) / 2, not 4/6 (pooled runs)
    runs = _finals({"a": [0.1, 0.9], "b": [0.0, 0.2, 0.25, 0.6]})
    profile = metrics.performance_profile(runs, taus=[0.0, 0.25, 0.5, 1.0], n_boot=200)
    assert profile["fraction"].tolist() == pytest.approx([(0 + 1 / 4) / 2, (1 / 2 + 3 / 4) / 2,
                                                          (1 / 2 + 3 / 4) / 2, 1.0])
    assert (profile["ci_low"] <= profile["fraction"] + 1e-12).all()
    assert (profile["fraction"] <= profile["ci_high"] + 1e-12).all()
    default = metrics.performance_profile(_synthetic(2, ("x", "y"), 4)[0], n_boot=50)
    for _, curve in default.groupby("method"):
        assert np.all(np.diff(curve["fraction"]) >= 0) and curve["fraction"].iloc[-1] == 1.0
        assert curve["tau"].iloc[0] == 0.0 and curve["tau"].iloc[-1] >= 1.0


# --- summary ------------------------------------------------------------------------------------


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ["regret_curves", "ranks_over_time", "k_histogram", "k_vs_mv", "performance_profile"]
FILES = ["summary.md", "summary.json", *(f"{name}.{kind}" for name in FIGURES for kind in ("png", "svg"))]


def _check_written(paths: list, out_dir) -> str:
    assert [p.name for p in paths] == FILES
    assert all(p.parent == out_dir for p in paths)
    for png in paths[2::2]:
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5000
    assert all(svg.read_text(encoding="utf-8").lstrip().startswith("<?xml") for svg in paths[3::2])
    return paths[0].read_text(encoding="utf-8")


def test_write_summary_for_several_tables_methods_and_repeats(tmp_path):
    runs, rounds = _synthetic(2, ("erahbo", "rahbo-k2", "gp-ucb"), 5)
    text = _check_written(write_summary(runs, rounds, tmp_path, title="Synthetic", n_boot=200), tmp_path)
    assert text.startswith("# Synthetic")
    for heading in ("Table 1", "Table 2", "Table 5", "IQM [95 % CI]", "compute", "Replicates per round",
                    "Aggregate over tables (IQM, stratified bootstrap)"):
        assert heading in text
    pooled = metrics.aggregate_iqm(runs, n_boot=200).set_index("method").loc["gp-ucb"]
    assert f"| gp-ucb | 2 | 10 | {pooled['iqm']:.3g} [{pooled['ci_low']:.3g}, {pooled['ci_high']:.3g}] |" in text
    rank_table = text.split("## Mean rank")[1].split("##")[0]
    erahbo_row = next(line for line in rank_table.splitlines() if line.startswith("| erahbo"))
    assert "**" in erahbo_row  # the best method is bold
    final = metrics.final_values(runs)
    final_iqm = metrics.iqm(final.query("table == 't0' and method == 'gp-ucb'")["normalised_regret"])
    assert f"{final_iqm:.3g} [" in text
    assert "| erahbo | 10 | 12 | 15 | 3 | 4 |" in text  # runs, evaluations, compute, cancelled, rounds
    assert "| certified | k_max |" in text


@pytest.mark.parametrize("with_rounds", [True, False])
def test_write_summary_single_table_method_repeat(tmp_path, with_rounds):
    runs, rounds = _synthetic(1, ("erahbo",), 1)
    if not with_rounds:
        rounds = rounds.iloc[:0]
    text = _check_written(write_summary(runs, rounds, tmp_path / "out", n_boot=100), tmp_path / "out")
    assert "| erahbo | **1.00** | — | **1.00** | — |" in text  # no SE, no Wilcoxon test
    final = metrics.final_values(runs)["normalised_regret"].iloc[0]
    assert f"| t0 | {final:.3g} |" in text  # no CI with one repeat
    assert ("No BO rounds" in text) != with_rounds



def test_write_summary_warns_about_a_table_that_cannot_separate_methods(tmp_path):
    runs, rounds = _synthetic(2, ("erahbo", "gp-ucb"), 3)
    flat = runs["table"] == "t1"
    runs.loc[flat, ["regret", "normalised_regret"]] = 0.0  # e.g. a constant table
    text = write_summary(runs, rounds, tmp_path, n_boot=50)[0].read_text(encoding="utf-8")
    assert "## Warning: tables that cannot separate methods\n\n`t1`:" in text
    assert "With 6 pair(s)" not in text and "needs at least 6 pairs" in text
    few = write_summary(*_synthetic(1, ("erahbo", "gp-ucb"), 3), tmp_path / "few", n_boot=50)[0].read_text()
    assert "Warning" not in few and "With 3 pair(s) no test is run" in few

def test_write_summary_rejects_empty_runs(tmp_path):
    runs, rounds = _synthetic(1, ("erahbo",), 1)
    with pytest.raises(ValueError, match="runs is empty"):
        write_summary(runs.iloc[:0], rounds, tmp_path)


def test_figures_explain_their_bands_directions_and_integer_axes(tmp_path, monkeypatch):
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    saved = {}
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: (saved.__setitem__(Path(path).name, fig),
                                                                   original(fig, path, **kw)))
    write_summary(*_synthetic(1, ("erahbo", "gp-ucb"), 3), tmp_path, n_boot=50)
    curves, ranks = saved["regret_curves.png"], saved["ranks_over_time.png"]
    assert "95 % percentile-bootstrap CI" in curves.get_suptitle() and "standard error" in ranks.get_suptitle()
    assert "lower is better" in curves.axes[0].get_ylabel()
    assert "higher is better" in saved["k_vs_mv.png"].axes[0].get_xlabel()
    profile = saved["performance_profile.png"]
    assert "stratified-bootstrap CI" in profile.get_suptitle() and "higher is better" in profile.axes[0].get_ylabel()
    k_axis = saved["k_histogram.png"].axes[0].xaxis.get_major_locator()
    assert isinstance(k_axis, MaxNLocator) and k_axis._integer
