"""Reproduce the ERAHBO paper's offline comparison on every table in ``datasets/``.

Runs ``tune-risk replay`` with the paper's four methods (ERAHBO, RAHBO k=2, RAHBO k=20, GP-UCB)
plus ERAHBO with the exponential beta_stop schedule, 20 repetitions, budget 1500, on every
``datasets/*.parquet`` table, and writes ``runs.csv``, ``rounds.csv``, ``summary.md`` and figures to
``--out``. ``--synthetic`` adds (or, when no real table exists yet, substitutes) three synthetic
heteroscedastic tables written from ``tune_risk.benchmarks.objectives`` (clearly named ``synthetic-*``).

    python experiments/erahbo_replay.py [--repeats 20] [--budget 1500] [--synthetic] [--out results/erahbo_replay]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.cli import main as tune_risk_main
from tune_risk.offline.table import OfflineTable

ROOT = Path(__file__).resolve().parents[1]
METHODS = "erahbo,rahbo-k2,rahbo-k20,gp-ucb,erahbo-exp"
SYNTHETIC = (("synthetic-hartmann3", "hartmann3", 512), ("synthetic-hartmann6", "hartmann6", 512),
             ("synthetic-branin", "branin", 512))


def synthetic_tables(directory: Path, seeds: int = 50) -> list[Path]:
    """Write the synthetic tables in the ARLBench long format (with metadata) and return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, objective, configs in SYNTHETIC:
        X, Y = make_pool_table(get_objective(objective), configs, seeds, seed=0)
        frame = pd.DataFrame({f"x{i}": X[:, i] for i in range(X.shape[1])})
        path = directory / f"{name}.parquet"
        OfflineTable.from_arrays(frame, Y, name=name).to_long(path)
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--synthetic", action="store_true", help="add the synthetic tables")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "erahbo_replay")
    args = parser.parse_args()
    tables = sorted((ROOT / "datasets").glob("*.parquet"))
    if args.synthetic or not tables:
        if not tables:
            print("no table in datasets/ yet: using the synthetic tables", file=sys.stderr)
        tables += synthetic_tables(args.out / "synthetic_tables")
    argv = ["replay", "--methods", args.methods, "--repeats", str(args.repeats), "--budget", str(args.budget),
            "--out", str(args.out)]
    for table in tables:
        argv += ["--table", str(table)]
    return tune_risk_main(argv)


if __name__ == "__main__":
    sys.exit(main())
