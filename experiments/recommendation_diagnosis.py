"""Why ERAHBO's recommendation can be poor at a large budget: the model behind ``argmax LCB^MV``, per repeat.

Replays ERAHBO (the paper's protocol, as ``experiments/erahbo_replay.py``) on one table and, for each repeat,
prints the recommended configuration and the best configuration evaluated, with what the final risk model
believes about them: ``k`` (replicates), the sample mean and variance of their warped returns, the posterior
``mu_f`` / ``sigma_f`` of G_f, ``mu_var`` of G_var, ``LCB^MV`` (eq. 24) and the configuration's rank by true MV
in the table (0 = best). A posterior ``mu_f`` above the warp's bound (the largest warped return) by more than
0.001 is marked ``!``: a mean no return can reach.

    python experiments/recommendation_diagnosis.py [--table datasets/ppo_cartpole.parquet] [--budget 1500]
        [--repeats 5] [--var-posterior gp|nonnegative]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from tune_risk.engine.core import Engine
from tune_risk.offline.replay import ReplayTask, replay_direct
from tune_risk.offline.table import OfflineTable
from tune_risk.settings import VAR_POSTERIORS

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = "| repeat | which | k | sample mean | sample var | mu_f | sigma_f | mu_var | LCB^MV | true-MV rank |"


def rows(task: ReplayTask, repeat: int, budget: int, var_posterior: str = "gp") -> list[str]:
    """The recommended and the best evaluated configuration of one ERAHBO replay, as table rows."""
    engine = replay_direct(task, "erahbo", repeat, budget, var_posterior=var_posterior).engine
    records = [r for r in engine.records if engine.has_data(r)]
    model = engine.risk_model()
    X = Engine.x_tensor(records)
    mu_f, sd_f, mu_var, _ = model.predict(X)
    lcb = model.lcb_mv(X, engine.settings.kappa_acq)
    rank = np.argsort(np.argsort(-task.true_mv))
    chosen = {"recommended": records.index(engine.recommend()),
              "best evaluated": max(range(len(records)), key=lambda i: task.true_mv[records[i].pool_index])}
    out = []
    for which, i in chosen.items():
        over = "!" if float(mu_f[i]) > task.warp.bound + 1e-3 else ""  # beyond rounding of the printed value
        out.append(f"| {repeat} | {which} | {int(model.data.k[i])} | {float(model.data.mean[i]):.3f} | "
                   f"{float(model.data.variance[i]):.4f} | {float(mu_f[i]):.3f}{over} | {float(sd_f[i]):.3f} | "
                   f"{float(mu_var[i]):.4f} | {float(lcb[i]):.3f} | {rank[records[i].pool_index]} |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=ROOT / "datasets" / "ppo_cartpole.parquet")
    parser.add_argument("--budget", type=int, default=1500, help="BO replicate budget (default 1500)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats 0 .. N-1 (default 5)")
    parser.add_argument("--var-posterior", choices=VAR_POSTERIORS, default="gp",
                        help="G_var's posterior mean as is (gp, the paper) or clamped at 0 (docs/algorithms.md A-20)")
    args = parser.parse_args()
    task = ReplayTask.from_table(OfflineTable.load(args.table))
    print(f"{task.name}: ERAHBO, budget {args.budget}, var_posterior={args.var_posterior}; warped returns lie in "
          f"±{task.warp.bound}\n")
    print(COLUMNS)
    print("|" + "---|" * (COLUMNS.count("|") - 1))
    for repeat in range(args.repeats):
        print("\n".join(rows(task, repeat, args.budget, args.var_posterior)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
