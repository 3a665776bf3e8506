"""The OSCBO benchmark script runs end to end at a tiny size, resumes from its run store, keeps runs of
other OSCBO settings as sensitivity rows, and writes its table and figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oscbo_harness.store import RunStore, run_key

from tests.scripts import EXPERIMENTS, load_script

SCRIPT = EXPERIMENTS / "studies" / "oscbo_benchmark.py"


def test_benchmark_script_tiny(tmp_path, capsys):
    module = load_script("oscbo_benchmark")
    args = ["--tasks", "hartmann3,material5", "--methods", "oscbo,a-gp-ucb", "--seeds", "2", "--steps", "2",
            "--n-init", "4", "--data-dir", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]
    module.main(args)
    out = tmp_path / "out"
    assert "skipping material5" in capsys.readouterr().out
    frame = pd.read_csv(out / "final_regret.csv")
    assert set(frame.method) == {"oscbo", "a-gp-ucb"} and set(frame.task) == {"hartmann3"}
    assert (frame.seeds == 2).all() and (frame.simple_mean >= 0).all()
    for name in ("summary.md", "mean_ranks.csv", "diagnostics.csv", "fig2_simple_regret.png", "figS1_cumulative_regret.png",
                 "figS3_diagnostics.png", "runs.parquet"):
        assert (out / name).is_file()
    assert not (out / "runs.journal.jsonl").exists()  # compacted at the end of the command
    stored = (out / "runs.parquet").read_bytes()
    runs = RunStore(out).load()
    assert len(runs) == 4
    diagnostics = pd.read_csv(out / "diagnostics.csv")
    assert sorted(diagnostics["round"].unique()) == [1, 2] and len(diagnostics) == 4
    oscbo = [r for r in runs if r["method"] == "oscbo"]
    assert all(r["settings"] == {"lambda_init": 2 / np.log(101), "omega": 0.001, "form": "prefix"} for r in oscbo)
    last = diagnostics[(diagnostics.method == "oscbo") & (diagnostics["round"] == 2)].iloc[0]
    assert last.coverage == pytest.approx(np.median([r["rounds"][1]["coverage"] for r in oscbo]))
    assert last.theta == pytest.approx(np.median([np.mean(r["rounds"][1]["theta"]) for r in oscbo]))
    assert last.lambda_min == min(r["rounds"][1]["lambda"] for r in oscbo)
    assert diagnostics[diagnostics.method == "a-gp-ucb"].lambda_min.isna().all()  # no dual variable
    assert "θ / coverage / width at t=2" in (out / "summary.md").read_text()
    module.main(args)  # resumes: no run is repeated, the store is untouched
    assert (out / "runs.parquet").read_bytes() == stored


def test_other_oscbo_settings_are_kept_as_sensitivity_rows(tmp_path):
    module = load_script("oscbo_benchmark")
    common = ["--tasks", "hartmann3", "--methods", "oscbo,gp-ucb-mll", "--seeds", "2", "--steps", "2", "--n-init", "4",
              "--out", str(tmp_path)]
    module.main([*common, "--lambda-init", "1", "--omega", "0.1"])
    module.main(common)  # the default settings: runs OSCBO again, keeps the MLL runs
    runs = RunStore(tmp_path).load()
    assert len(runs) == 6 and len({run_key(r) for r in runs}) == 6
    assert sorted(r["settings"].get("lambda_init", 0) for r in runs if r["method"] == "oscbo") == pytest.approx(
        [2 / np.log(101)] * 2 + [1.0] * 2)
    frame = pd.read_csv(tmp_path / "final_regret.csv")
    assert list(frame.method) == ["oscbo", "gp-ucb-mll", "oscbo (λ₁=1, ω=0.1)"]
    assert set(pd.read_csv(tmp_path / "mean_ranks.csv").method) == {"oscbo", "gp-ucb-mll"}  # variants not ranked
    summary = (tmp_path / "summary.md").read_text()
    assert "|\n\n**Against the paper's findings**" in summary  # a paragraph, not a row of the table above
    assert "* *oscbo: final simple regret within one s.e." in summary
    assert "* *oscbo (λ₁=1, ω=0.1): final simple regret within one s.e." in summary
    module.main([*common, "--summary-only", "--form", "literal"])  # nothing runs: 2 OSCBO runs reported missing
    assert len(RunStore(tmp_path).load()) == 6


def test_invalid_oscbo_options_are_refused(capsys):
    module = load_script("oscbo_benchmark")
    for flag, value in (("--lambda-init", "0"), ("--omega", "-0.1"), ("--lambda-init", "nan")):
        with pytest.raises(SystemExit):
            module.parse_args([flag, value])
        assert f"{flag} must be a finite number > 0" in capsys.readouterr().err


def test_parallel_workers_give_the_same_runs(tmp_path):
    import subprocess
    import sys

    module = load_script("oscbo_benchmark")
    common = ["--tasks", "hartmann3", "--methods", "oscbo,a-gp-ucb", "--seeds", "2", "--steps", "2", "--n-init", "4"]
    module.main([*common, "--out", str(tmp_path / "serial")])
    subprocess.run([sys.executable, str(SCRIPT), *common, "--workers", "2", "--out", str(tmp_path / "parallel")],
                   check=True, capture_output=True, timeout=600)

    def runs(name: str) -> dict:
        return {(r["method"], r["seed"]): r["values"] for r in RunStore(tmp_path / name).load()}

    serial, parallel = runs("serial"), runs("parallel")
    assert len(serial) == 4 and parallel == serial


def test_summary_states_ocbo_multiplier_and_the_targets():
    module = load_script("oscbo_benchmark")
    ranks = pd.DataFrame({"method": ["ocbo", "oscbo", "oscbo-l1", "gp-ucb-mll"], "rank_simple": [4.0, 1.0, 2.0, 3.0],
                          "rank_simple_se": 0.0, "rank_cumulative": [1.0, 4.0, 2.0, 3.0], "rank_cumulative_se": 0.0})
    data = {("levy5", "ocbo"): {"kappa": np.array([[0.2, 0.3], [0.3, 0.4]])},
            ("hartmann3", "ocbo"): {"kappa": np.array([[0.6, 0.7]])}}
    text = "\n".join(module.rank_section(ranks, data))
    assert "its median κ is 0.30–0.65 across tasks, against √β = 1.41" in text and "That is why" in text
    assert "That is why" not in "\n".join(module.rank_section(ranks.assign(rank_cumulative=[2.0, 4.0, 1.0, 3.0]), data))
    frame = pd.DataFrame({"task": ["levy5", "levy5"], "method": ["oscbo", "gp-ucb-mll"], "simple_mean": [0.5, 0.3],
                          "simple_se": [0.3, 0.4]})
    assert "Holds, met on 1 of 1: levy5 0.5 ± 0.3 against 0.3 ± 0.4 (+0.4 s.e.)" in module.regret_target(frame, "oscbo")
    assert "Fails, met on 0 of 1" in module.regret_target(frame.assign(simple_se=[0.1, 0.1]), "oscbo")
    diagnostics = pd.DataFrame({"task": "levy5", "method": ["oscbo", "gp-ucb-mll"] * 2, "round": [50, 50, 100, 100],
                                "theta": [0.72, 0.70, 0.5, 0.7]})
    line = module.lengthscale_target(diagnostics, "oscbo")
    assert line.endswith("Fails: t = 50: 0.72 against 0.7 (+3%); t = 100: 0.5 against 0.7 (-29%).")
    pattern = module.p_pattern(ranks, diagnostics)
    assert "Holds: cumulative 2.00 against 4.00, simple 2.00 against 1.00" in pattern


def test_erahbo_replay_compares_cumulative_regret_also_at_the_common_horizon():
    module = load_script("erahbo_replay")
    rows = []
    for repeat in range(6):  # ERAHBO keeps evaluating; the other method exhausts the table after 2 evaluations
        for method, instant in (("erahbo", [0.1, 0.1, 5.0, 5.0]), ("rahbo-k2", [1.0, 1.0])):
            for n, cumulative in enumerate(np.cumsum(instant), start=1):
                rows.append({"table": "t", "method": method, "repeat": repeat, "n_eval": n, "regret": 0.0,
                             "cumulative_regret": cumulative})
    lines = {line.split(" | ")[2]: line for line in module.erahbo_against_each(pd.DataFrame(rows)).splitlines()
             if line.startswith("| all | rahbo-k2")}
    assert "| 0 / 0 / 6 |" in lines["cumulative regret"]  # 10.2 against 2.0: the full runs favour the early stop
    assert "| 6 / 0 / 0 |" in lines["cumulative regret at the common horizon"]  # 0.2 against 2.0 after 2 each


def test_erahbo_replay_spending_counts_configurations_overall_and_by_the_common_horizon():
    module = load_script("erahbo_replay")
    rows = []
    for repeat in range(2):  # ERAHBO: 4 evaluations on 3 configurations; RAHBO(k=2) exhausts a 1-row pool at 2
        for method, configs in (("erahbo", [7, 8, 9, 9]), ("rahbo-k2", [7, 7])):
            for n, config in enumerate(configs, start=1):
                rows.append({"table": "t", "method": method, "repeat": repeat, "n_eval": n, "config_row": config})
    lines = module.spending(pd.DataFrame(rows)).splitlines()
    assert "| t | erahbo | 4 | 3 | 2 | 2 |" in lines
    assert "| t | rahbo-k2 | 2 | 1 | 2 | 1 |" in lines


def test_recommendation_diagnosis_shows_the_argmax_of_lcb_and_the_best_configuration_evaluated():
    from tune_risk.benchmarks.objectives import get_objective, make_pool_table
    from tune_risk.offline.replay import ReplayTask

    module = load_script("recommendation_diagnosis")
    X, Y = make_pool_table(get_objective("branin"), 32, 20, seed=0)
    task = ReplayTask("branin", X, Y)
    model, lines = module.rows(task, repeat=0, budget=24, args=module.parse([]))
    assert "mu_var < 0 at" in model
    recommended, best = (line.strip("| ").split(" | ") for line in lines)
    assert recommended[1] == "recommended" and best[1] == "best evaluated"
    assert recommended[-1] == best[-1] == "-"  # no held-out seeds in this task
    assert int(best[-2]) <= int(recommended[-2])  # true-MV rank: the best evaluated is at least as good
    assert int(recommended[2]) >= 2 and float(recommended[8]) >= float(best[8])  # argmax of LCB^MV


def test_erahbo_replay_passes_engine_flags_to_every_tables_replay(tmp_path, monkeypatch):
    import argparse
    from pathlib import Path

    module = load_script("erahbo_replay")
    calls: list[list[str]] = []
    monkeypatch.setattr(module, "tune_risk_main", lambda argv: calls.append(argv) or 0)
    args = argparse.Namespace(methods="erahbo", repeats=2, budget=30, out=tmp_path,
                              engine_flags=["--var-posterior", "nonnegative"])
    outs = module.replay_each([Path("a.parquet"), Path("b.parquet")], args)
    assert outs == [tmp_path / "tables" / "a", tmp_path / "tables" / "b"]
    assert [argv[-2:] for argv in calls] == [["--var-posterior", "nonnegative"]] * 2
