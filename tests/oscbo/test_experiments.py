"""The OSCBO benchmark script runs end to end at a tiny size and writes its table and figures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "oscbo_benchmark.py"


def load_script():
    """The benchmark script as a module (experiments/ is not a package)."""
    spec = importlib.util.spec_from_file_location("oscbo_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_script_tiny(tmp_path, capsys):
    module = load_script()
    args = ["--tasks", "hartmann3,material5", "--methods", "oscbo,a-gp-ucb", "--seeds", "2", "--steps", "2",
            "--n-init", "4", "--data-dir", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]
    module.main(args)
    out = tmp_path / "out"
    assert "skipping material5" in capsys.readouterr().out
    frame = pd.read_csv(out / "final_regret.csv")
    assert set(frame.method) == {"oscbo", "a-gp-ucb"} and set(frame.task) == {"hartmann3"}
    assert (frame.seeds == 2).all() and (frame.simple_mean >= 0).all()
    for name in ("summary.md", "mean_ranks.csv", "diagnostics.csv", "fig2_simple_regret.png", "figS1_cumulative_regret.png",
                 "figS3_diagnostics.png"):
        assert (out / name).is_file()
    lines = (out / "runs.jsonl").read_text().splitlines()
    diagnostics = pd.read_csv(out / "diagnostics.csv")
    assert sorted(diagnostics["round"].unique()) == [1, 2] and len(diagnostics) == 4
    runs = [json.loads(line) for line in lines if '"oscbo"' in line]
    last = diagnostics[(diagnostics.method == "oscbo") & (diagnostics["round"] == 2)].iloc[0]
    assert last.coverage == pytest.approx(np.median([r["rounds"][1]["coverage"] for r in runs]))
    assert last.theta == pytest.approx(np.median([np.mean(r["rounds"][1]["theta"]) for r in runs]))
    assert last.lambda_min == min(r["rounds"][1]["lambda"] for r in runs)
    assert diagnostics[diagnostics.method == "a-gp-ucb"].lambda_min.isna().all()  # no dual variable
    assert "θ / coverage / width at t=2" in (out / "summary.md").read_text()
    module.main(args)  # resumes: no run is repeated
    assert (out / "runs.jsonl").read_text().splitlines() == lines


def test_a_run_cut_off_mid_write_is_dropped_and_the_rest_kept(tmp_path, capsys):
    module = load_script()
    path = tmp_path / "runs.jsonl"
    path.write_text('{"task": "hartmann3", "seed": 0}\n{"task": "hartmann3", "se')
    runs = module.load_runs(path)
    assert runs == [{"task": "hartmann3", "seed": 0}]
    assert path.read_text() == '{"task": "hartmann3", "seed": 0}\n'  # the next append starts a fresh line
    assert "incomplete last line" in capsys.readouterr().out


def test_parallel_workers_give_the_same_runs(tmp_path):
    import subprocess
    import sys

    module = load_script()
    common = ["--tasks", "hartmann3", "--methods", "oscbo,a-gp-ucb", "--seeds", "2", "--steps", "2", "--n-init", "4"]
    module.main([*common, "--out", str(tmp_path / "serial")])
    subprocess.run([sys.executable, str(SCRIPT), *common, "--workers", "2", "--out", str(tmp_path / "parallel")],
                   check=True, capture_output=True, timeout=600)

    def runs(name: str) -> dict:
        rows = [json.loads(line) for line in (tmp_path / name / "runs.jsonl").read_text().splitlines()]
        return {(r["method"], r["seed"]): r["values"] for r in rows}

    serial, parallel = runs("serial"), runs("parallel")
    assert len(serial) == 4 and parallel == serial
