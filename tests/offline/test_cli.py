"""``tune-risk replay`` end to end on a long-format table written by someone else (no metadata)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.cli import main

RUNS_COLUMNS = ["table", "method", "repeat", "n_eval", "config_row", "regret", "normalised_regret",
                "recommended_regret", "normalised_recommended_regret", "cumulative_regret",
                "cumulative_regret_with_initial", "compute"]
ROUNDS_COLUMNS = ["table", "method", "repeat", "round", "config_row", "k", "stop_reason", "B_t", "mv_true",
                  "snap_distance"]


@pytest.fixture(scope="module")
def arlbench_csv(tmp_path_factory):
    """An ARLBench-style long table: config_id, seed, performance, hp_config.<name> (plain pandas)."""
    X, Y = make_pool_table(get_objective("hartmann3"), 48, 24, seed=1)
    rows = [
        {"config_id": c, "seed": s, "performance": Y[c, s], "hp_config.lr": 10 ** (-4 + 3 * X[c, 0]),
         "hp_config.gamma": 0.9 + 0.1 * X[c, 1], "hp_config.layers": int(1 + round(3 * X[c, 2]))}
        for c in range(len(X)) for s in range(Y.shape[1])
    ]
    path = tmp_path_factory.mktemp("tables") / "someone_else.csv"
    pd.DataFrame(rows).sample(frac=1.0, random_state=0).to_csv(path, index=False)  # any row order
    return path


def test_replay_writes_runs_rounds_and_summary(arlbench_csv, tmp_path):
    out = tmp_path / "out"
    code = main(["replay", "--table", str(arlbench_csv), "--methods", "erahbo,rahbo-k2,gp-ucb",
                 "--repeats", "2", "--budget", "60", "--test-seeds", "0", "--out", str(out)])
    assert code == 0
    runs, rounds = pd.read_csv(out / "runs.csv"), pd.read_csv(out / "rounds.csv")
    assert list(runs.columns) == RUNS_COLUMNS and list(rounds.columns) == ROUNDS_COLUMNS
    assert set(runs.method) == {"erahbo", "rahbo-k2", "gp-ucb"} and set(runs.repeat) == {0, 1}
    assert runs.groupby(["method", "repeat"]).n_eval.max().le(60).all()
    assert set(rounds.stop_reason) <= {"certified", "k_max", "budget"}
    for name in ("summary.md", "regret_curves.png", "ranks_over_time.png", "k_histogram.png", "k_vs_mv.png",
                 "performance_profile.png"):
        assert (out / name).stat().st_size > 0
    assert "erahbo" in (out / "summary.md").read_text()
    assert "regret of the recommended configuration" in (out / "summary.md").read_text()


def test_replay_with_online_warp_and_k_init(arlbench_csv, tmp_path):
    """``--warp online --k-init 2``: the live-use warp fitted on a 2-replicate initial design."""
    base = ["replay", "--table", str(arlbench_csv), "--methods", "erahbo", "--repeats", "1", "--budget", "40",
            "--test-seeds", "0"]
    assert main([*base, "--out", str(tmp_path / "pooled"), "--k-init", "2"]) == 0
    assert main([*base, "--out", str(tmp_path / "online"), "--k-init", "2", "--warp", "online"]) == 0
    pooled, online = (pd.read_csv(tmp_path / d / "rounds.csv") for d in ("pooled", "online"))
    assert not pooled.equals(online)  # the methods see different returns
    assert pd.read_csv(tmp_path / "online" / "runs.csv").n_eval.max() <= 40


def test_replay_via_tune_matches_direct(ray_session, arlbench_csv, tmp_path):
    args = ["--table", str(arlbench_csv), "--methods", "erahbo", "--repeats", "1", "--budget", "30",
            "--test-seeds", "0"]
    assert main(["replay", *args, "--out", str(tmp_path / "direct")]) == 0
    assert main(["replay", *args, "--out", str(tmp_path / "tune"), "--via", "tune"]) == 0
    direct, tuned = (pd.read_csv(tmp_path / d / "rounds.csv") for d in ("direct", "tune"))
    pd.testing.assert_frame_equal(direct, tuned)
    runs_direct, runs_tune = (pd.read_csv(tmp_path / d / "runs.csv") for d in ("direct", "tune"))
    np.testing.assert_array_equal(runs_direct.regret, runs_tune.regret)


@pytest.mark.parametrize("args, message", [
    (["--methods", "bohb"], "unknown method 'bohb'"),
    (["--budget", "1"], "budget=1"),
    (["--methods", "rahbo-k30"], "24 seeds, fewer than k_max=30"),
    (["--k-init", "1"], "k_init must be >= 2"),
])
def test_bad_replay_arguments_give_one_clear_line(arlbench_csv, tmp_path, capsys, args, message):
    code = main(["replay", "--table", str(arlbench_csv), "--repeats", "1", "--test-seeds", "0", "--out", str(tmp_path),
                 *args])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_table_file(tmp_path, capsys):
    assert main(["replay", "--table", str(tmp_path / "nope.parquet"), "--out", str(tmp_path)]) == 2
    assert "nope.parquet" in capsys.readouterr().err
