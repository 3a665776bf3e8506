"""Incumbent intensification against the plain recommendation rule, on every shipped table.

For each ``datasets/*.parquet`` table, ERAHBO is replayed ``--repeats`` times at ``--budget`` with the
recommendation rule of the paper (argmax LCB^MV over evaluated configurations) and with
``intensify = N`` runs of the budget reserved for incumbent intensification (``EngineSettings.intensify``).
The measure is the regret of the *recommended* configuration at the end: ``MV* - MV(recommended)``
with the table's true MV (all 50 seeds, pooled warp, alpha = 1), normalised by ``MV* - median MV``.
Both arms use the same repeats (the same seed orders), so the comparison is paired (Wilcoxon signed-rank).

    python experiments/studies/intensification.py [--budget 300] [--repeats 10] [--intensify 30] [--k-init 20]

Prints a markdown table (one row per table and setting) and the overall paired comparison.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy import stats

from tune_risk.offline.metrics import mean_se
from tune_risk.offline.replay import ReplayTask, replay_direct
from tune_risk.offline.table import OfflineTable

ROOT = Path(__file__).resolve().parents[2]


def recommended_regret(task: ReplayTask, budget: int, repeat: int, intensify: int, k_init: int) -> float:
    """Normalised true-MV regret of ERAHBO's final recommendation in one replay."""
    result = replay_direct(task, "erahbo", repeat, budget, intensify=intensify, k_init=k_init)
    record = result.engine.recommend()
    mv = task.true_mv
    scale = float(mv.max() - np.median(mv)) or 1.0
    return float(mv.max() - mv[record.pool_index]) / scale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=300, help="BO replicate budget per replay (default 300)")
    parser.add_argument("--repeats", type=int, default=10, help="replays per table and setting (default 10)")
    parser.add_argument("--intensify", type=int, default=30, help="runs reserved for intensification (default 30)")
    parser.add_argument("--k-init", type=int, default=20, help="replicates per initial configuration (default 20)")
    parser.add_argument("--tables", nargs="*", type=Path, default=sorted((ROOT / "datasets").glob("*.parquet")))
    args = parser.parse_args()
    print(f"ERAHBO, budget {args.budget}, k_init {args.k_init}, {args.repeats} repeats; normalised regret of the "
          f"recommended configuration (mean ± s.e.; lower is better)\n")
    print(f"| table | plain (argmax LCB^MV) | intensify={args.intensify} | wins / ties / losses | Wilcoxon p |")
    print("|---|---:|---:|---:|---:|")
    all_plain, all_int = [], []
    for path in args.tables:
        task = ReplayTask.from_table(OfflineTable.load(path))
        plain = np.array([recommended_regret(task, args.budget, r, 0, args.k_init) for r in range(args.repeats)])
        inten = np.array([recommended_regret(task, args.budget, r, args.intensify, args.k_init)
                          for r in range(args.repeats)])
        all_plain.extend(plain)
        all_int.extend(inten)
        print(f"| {task.name} | {_mean_se(plain)} | {_mean_se(inten)} | {_wtl(inten, plain)} | {_wilcoxon(inten, plain)} |",
              flush=True)
    plain, inten = np.array(all_plain), np.array(all_int)
    print(f"| all | {_mean_se(plain)} | {_mean_se(inten)} | {_wtl(inten, plain)} | {_wilcoxon(inten, plain)} |")
    return 0


def _mean_se(values: np.ndarray) -> str:
    mean, se = mean_se(values)
    return f"{mean:.4f} ± {se:.4f}"


def _wtl(a: np.ndarray, b: np.ndarray) -> str:
    return f"{int((a < b).sum())} / {int((a == b).sum())} / {int((a > b).sum())}"


def _wilcoxon(a: np.ndarray, b: np.ndarray) -> str:
    if np.all(a == b):
        return "n/a (identical)"
    return f"{stats.wilcoxon(a, b).pvalue:.3g}"


if __name__ == "__main__":
    raise SystemExit(main())
