"""What does fitting the output warp online cost ERAHBO? Online warp before and after the re-fit fix
against the pooled warp, on every shipped table and on synthetic ones.

In live use no table exists: the engine fits Vizier's warp on the returns of the initial design
(``k_init = k_min = 2`` replicates of 5 configurations: 10 returns, the searcher's default). Variants
(ERAHBO, everything else at the replay defaults):

* ``online-frozen``: the engine before the fix: the warp fitted on the initial design is kept for
  the whole run and extends linearly beyond that design's range up to a clip at ±1
  (``warp_refit="never"``, ``warp_bound=1.0``), so returns far above the design tie at the clip;
* ``online-refit``: the engine now: the same first fit, re-fitted on all data at the start of a
  round once returns have left its range (``warp_refit="outside_support"``, the default);
* ``pooled``: the warp fitted on the whole table (the paper's protocol, ``tune-risk replay``'s default).

Regret is always measured on the pooled warp (the table's ground-truth MV). Tables: every
``datasets/*.parquet`` and four synthetic 512 x 50 tables: Hartmann-3, Hartmann-6 and Branin from
``tune_risk.benchmarks.objectives`` and ``far-peaks``, two narrow peaks of equal mean far above a flat floor,
one with 10 times the noise of the other, which the initial design almost never hits.

Printed per table and variant (means over repeats): final normalised simple regret of the best
configuration evaluated and of the recommended one (``argmax LCB^MV``), the share of the pool whose
true MV beats the recommended configuration (median over repeats), and the warp re-fits per run.

    python experiments/studies/warp_comparison.py [--repeats 10] [--budget 200] [--out results/warp_comparison]

The defaults take about 8 minutes on one core and write ``runs.csv`` and ``summary.csv`` to ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from tune_risk.benchmarks.objectives import HeteroscedasticObjective, get_objective, make_pool_table
from tune_risk.offline.replay import ReplayTask, replay_direct, runs_rows
from tune_risk.offline.table import OfflineTable

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "online-frozen": {"warp": "online", "warp_refit": "never", "warp_bound": 1.0},
    "online-refit": {"warp": "online"},
    "pooled": {"warp": "pooled"},
}
PEAK_A, PEAK_B, WIDTH = np.array([0.3, 0.7]), np.array([0.7, 0.3]), 0.08


def _bump(x: np.ndarray, centre: np.ndarray) -> np.ndarray:
    return np.exp(-((x - centre) ** 2).sum(axis=1) / (2 * WIDTH**2))


FAR_PEAKS = HeteroscedasticObjective(
    "far-peaks", 2,
    mean_fn=lambda x: 10.0 * (_bump(x, PEAK_A) + _bump(x, PEAK_B)),
    noise_std_fn=lambda x: 0.1 + 3.0 * _bump(x, PEAK_A) + 0.3 * _bump(x, PEAK_B),
    description="two peaks of mean 10 over a floor of 0 (noise sd 0.1); noise sd 3.1 on one, 0.4 on the other",
)


def tasks() -> list[ReplayTask]:
    """The shipped tables, then the synthetic ones."""
    found = [ReplayTask.from_table(OfflineTable.load(path)) for path in sorted((ROOT / "datasets").glob("*.parquet"))]
    for name in ("hartmann3", "hartmann6", "branin"):
        X, Y = make_pool_table(get_objective(name), 512, 50, seed=0)
        found.append(ReplayTask(f"synthetic-{name}", X, Y))
    X, Y = make_pool_table(FAR_PEAKS, 512, 50, seed=0)
    found.append(ReplayTask("synthetic-far-peaks", X, Y))
    return found


def replay(task: ReplayTask, variant: str, repeat: int, budget: int, k_init: int) -> dict:
    """One ERAHBO replay; its final metrics."""
    result = replay_direct(task, "erahbo", repeat, budget, k_init=k_init, **VARIANTS[variant])
    last = runs_rows(result, task)[-1]
    recommended = result.engine.recommend()
    better = float((task.true_mv > task.true_mv[recommended.pool_index]).mean())
    return {"table": task.name, "variant": variant, "repeat": repeat, "n_eval": last["n_eval"],
            "normalised_regret": last["normalised_regret"],
            "normalised_recommended_regret": last["normalised_recommended_regret"],
            "pool_better_than_recommended": better, "warp_refits": len(result.engine.warps) - 1}


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    grouped = runs.groupby(["table", "variant"], sort=False)
    return pd.DataFrame({
        "regret": grouped.normalised_regret.mean(),
        "recommended_regret": grouped.normalised_recommended_regret.mean(),
        "pool_better_%": 100 * grouped.pool_better_than_recommended.median(),
        "refits": grouped.warp_refits.mean(),
    }).reset_index()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--budget", type=int, default=200, help="BO replicate evaluations (N_max)")
    parser.add_argument("--k-init", type=int, default=2, help="replicates per initial configuration")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "warp_comparison")
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",")]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; valid: {', '.join(VARIANTS)}")
    started, rows = time.perf_counter(), []
    for task in tasks():
        for variant in variants:
            rows += [replay(task, variant, repeat, args.budget, args.k_init) for repeat in range(args.repeats)]
        print(f"{task.name} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    runs = pd.DataFrame(rows)
    summary = summarise(runs)
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "runs.csv", index=False)
    summary.to_csv(args.out / "summary.csv", index=False)
    print(f"ERAHBO, budget {args.budget}, k_init {args.k_init}, {args.repeats} repeats; means over repeats "
          "(pool_better_%: median)\n")
    print(markdown(summary))
    return 0


def markdown(summary: pd.DataFrame) -> str:
    """The summary as a markdown table, one row per table, the variants side by side."""
    variants = list(dict.fromkeys(summary.variant))
    metrics = (("regret", "final regret"), ("recommended_regret", "recommended"), ("pool_better_%", "% pool better"))
    header = ["table"] + [f"{label}: {v}" for _, label in metrics for v in variants]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for table, group in summary.groupby("table", sort=False):
        by_variant = group.set_index("variant")
        cells = [f"{by_variant.loc[v, column]:.3g}" for column, _ in metrics for v in variants]
        lines.append("| " + " | ".join([str(table), *cells]) + " |")
    refits = summary.groupby("variant", sort=False).refits.mean()
    return "\n".join(lines) + "\n\nwarp re-fits per run: " + ", ".join(f"{v} {refits[v]:.1f}" for v in variants)


if __name__ == "__main__":
    sys.exit(main())
