"""The six tables ship with the package (issue #40): by name in Python and on the command line, checksummed in the
dataset card, and inside the wheel, loadable from the wheel's own files with the clone off the import path."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tune_risk.datasets
from tune_risk.cli import build_parser, main
from tune_risk.offline.shipped import resolve_table

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "datasets"
NAMES = ("dqn_acrobot", "dqn_cartpole", "ppo_acrobot", "ppo_brax_fast", "ppo_cartpole", "sac_pendulum")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_six_tables_load_by_name():
    assert tune_risk.datasets.names() == NAMES == tuple(sorted(p.stem for p in DATASETS.glob("*.parquet")))
    table = tune_risk.datasets.load("ppo_cartpole")
    assert (table.name, table.n_configs, table.n_seeds) == ("ppo_cartpole", 512, 50)
    assert table.metadata["environment"] == "CartPole-v1"  # the sidecar <file>.json is read too
    assert sha256(tune_risk.datasets.path("ppo_cartpole")) == sha256(DATASETS / "ppo_cartpole.parquet")


def test_an_unknown_name_is_one_line_naming_the_valid_ones():
    with pytest.raises(ValueError) as error:
        tune_risk.datasets.load("ppo_cartpol")
    message = str(error.value)
    assert "\n" not in message and "did you mean 'ppo_cartpole'?" in message
    assert all(name in message for name in NAMES)


def test_replay_table_takes_a_name_or_a_path(tmp_path, capsys, monkeypatch):
    parse = build_parser().parse_args
    by_name = parse(["replay", "--table", "dqn_acrobot", "--table", "my/runs.csv", "--out", str(tmp_path)])
    assert by_name.table == [tune_risk.datasets.path("dqn_acrobot"), Path("my/runs.csv")]
    monkeypatch.chdir(tmp_path)
    Path("dqn_acrobot").write_text("a local file wins over the shipped name")
    assert resolve_table("dqn_acrobot") == Path("dqn_acrobot")
    with pytest.raises(SystemExit) as code:
        main(["replay", "--table", "dqn_acrobt", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code.value.code == 2 and err.count("\n") == 1, err
    assert "argument --table: unknown table 'dqn_acrobt' (did you mean 'dqn_acrobot'?)" in err and "sac_pendulum" in err


CARD_ROW = re.compile(r"^\| `(\w+)` \|.*\| `([0-9a-f]{64})` \| `([0-9a-f]{64})` \|$", re.MULTILINE)


def test_the_dataset_card_has_licence_version_citation_and_true_checksums():
    card = (DATASETS / "README.md").read_text(encoding="utf-8")
    for needed in ("## Licence", "Apache License 2.0", "**Version 1.0**", "## Intended use", "## Limits",
                   "## How the tables were generated", "## Citation", "@misc{"):
        assert needed in card, needed
    rows = {name: (parquet, meta) for name, parquet, meta in CARD_ROW.findall(card)}
    assert sorted(rows) == list(NAMES)
    for name, (parquet, meta) in rows.items():
        assert sha256(DATASETS / f"{name}.parquet") == parquet, f"{name}.parquet changed: update the card's checksum"
        assert sha256(DATASETS / f"{name}.parquet.json") == meta, f"{name}.parquet.json changed: update the card"


WHEEL_CHECK = """
import json, sys
import tune_risk, tune_risk.datasets
table = tune_risk.datasets.load("ppo_cartpole")
print(json.dumps({"file": tune_risk.__file__, "path": str(tune_risk.datasets.path("ppo_cartpole")),
                  "names": tune_risk.datasets.names(), "shape": [table.n_configs, table.n_seeds],
                  "sum": float(table.returns.sum()), "sys_path": sys.path}))
"""


def source_tree(into: Path) -> Path:
    """The files the wheel is built from (no venv, no datasets/_parts), the tables link kept as a link."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, into / name)
    skip = shutil.ignore_patterns("__pycache__", "_parts", "*.tmp", "*.claim", "*.egg-info")
    for folder in ("tune_risk", "rl_tasks", "datasets"):
        shutil.copytree(ROOT / folder, into / folder, symlinks=True, ignore=skip)
    return into


def test_the_wheel_ships_the_tables_and_loads_them_without_the_clone(tmp_path):
    src = source_tree(tmp_path / "src")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            str(src), "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("tune_risk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.removeprefix("tune_risk/offline/tables/") for n in names if "/tables/" in n)
    assert shipped == sorted(["README.md", *(f"{t}.parquet" for t in NAMES), *(f"{t}.parquet.json" for t in NAMES)])
    # the product only: the OSCBO paper's harness is lab code (experiments/studies/oscbo_harness), not in the wheel
    modules = {n.removesuffix(".py") for n in names if n.endswith(".py")}
    assert "tune_risk/benchmarks/objectives" in modules and "tune_risk/tune/searcher" in modules
    harness = {"loop", "surrogates", "store", "tasks", "tabular", "lunar", "unavailable"}
    assert not [m for m in modules if m.rsplit("/", 1)[-1] in harness or "oscbo_harness" in m or m.startswith("experiments")]
    unpacked, elsewhere = tmp_path / "unpacked", tmp_path / "elsewhere"
    zipfile.ZipFile(wheel).extractall(unpacked)
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(unpacked)}  # dependencies from this venv's site-packages
    proc = subprocess.run([sys.executable, "-c", WHEEL_CHECK], capture_output=True, text=True, timeout=300,
                          cwd=elsewhere, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(seen["file"]).is_relative_to(unpacked) and Path(seen["path"]).is_relative_to(unpacked)
    assert not any((elsewhere / entry).resolve() == ROOT for entry in seen["sys_path"])  # '' is the cwd
    assert tuple(seen["names"]) == NAMES and seen["shape"] == [512, 50]
    assert seen["sum"] == pytest.approx(float(np.sum(tune_risk.datasets.load("ppo_cartpole").returns)))
