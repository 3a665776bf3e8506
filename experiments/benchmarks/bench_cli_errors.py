"""Latency of ``tune-risk replay`` calls that must fail at once (issue #19): median of several runs.

Each bad call runs as a fresh process (``python -m tune_risk.cli replay ...``), as a user types it;
the time includes the interpreter start. Usage::

    python experiments/benchmarks/bench_cli_errors.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "datasets" / "ppo_cartpole.parquet"


def table_with_25_seeds(folder: Path) -> Path:
    """The shipped PPO table cut to 25 seeds: too few for rahbo-k30."""
    path = folder / "ppo_cartpole_25.parquet"
    pd.read_parquet(TABLE).query("seed < 25").to_parquet(path, index=False)
    return path


def cases(folder: Path) -> dict[str, list[str]]:
    out = ["--out", str(folder / "out")]
    table = ["--table", str(TABLE)]
    return {
        "unknown method": ["replay", *table, "--methods", "bohb", *out],
        "empty / duplicate entries": ["replay", *table, "--methods", "erahbo,,erahbo", *out],
        "bad engine flag (--alpha -1)": ["replay", *table, "--alpha", "-1", *out],
        "missing table file": ["replay", "--table", str(folder / "nope.parquet"), *out],
        "rahbo-k30 on a 25-seed table": ["replay", "--table", str(table_with_25_seeds(folder)),
                                         "--methods", "rahbo-k30", "--test-seeds", "0", *out],
        "bare tune-risk": [],
    }


def time_call(argv: list[str]) -> tuple[float, int, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tune_risk.cli", *argv], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    return time.perf_counter() - start, done.returncode, done.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="runs per call (the median is reported)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for name, argv in cases(Path(tmp)).items():
            results = [time_call(argv) for _ in range(args.runs)]
            seconds = [r[0] for r in results]
            rows.append({"bad call": name, "exit code": results[0][1], "median s": statistics.median(seconds),
                         "max s": max(seconds), "message": results[0][2][:70]})
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    start = [time_interpreter() for _ in range(args.runs)]
    print(f"(python -c pass: median {statistics.median(start):.3f} s; the interpreter start is included above)")


def time_interpreter() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=False)
    return time.perf_counter() - start

if __name__ == "__main__":
    main()
