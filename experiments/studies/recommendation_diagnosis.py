"""Why a recommendation can be poor: the model behind it, per repeat (issue: the configuration a user deploys).

Replays ``--method`` (``erahbo``: the paper's settings; ``tune-risk``: ``RiskAwareSearch``'s defaults) on one
table and, for each repeat, prints a line on the model (the warp: how many returns it was fitted on and their
range; G_var: the share of evaluated configurations whose posterior variance ``mu_var`` is below 0, and its
smallest value) and, for the recommended and the best evaluated configuration, what the final risk model
believes about them: ``k`` (seeds), the sample mean and variance of their warped returns, the posterior
``mu_f`` / ``sigma_f`` of G_f, ``mu_var`` of G_var, ``LCB^MV`` (eq. 24), the configuration's place in
``LCB^MV`` order among the evaluated ones (0 = the recommendation under the paper's rule), its rank by true MV
in the table (0 = best) and, with ``--test-seeds N``, its normalised MV regret on the N held-out seeds (0 = the
best configuration, 1 = the median one). A posterior ``mu_f`` above the warp's bound (the largest warped
return) by more than 0.001 is marked ``!``: a mean no return can reach.

    python experiments/studies/recommendation_diagnosis.py [--table datasets/ppo_cartpole.parquet] [--budget 1500]
        [--repeats 5] [--method erahbo|tune-risk] [--warp pooled|online] [--test-seeds 0]
        [--var-posterior gp|nonnegative] [--recommend lcb|posterior]

The issue's cases at budget 300, as ``tune-risk replay --methods tune-risk --warp online --test-seeds 20``::

    python experiments/studies/recommendation_diagnosis.py --table datasets/dqn_acrobot.parquet --budget 300 \\
        --method tune-risk --warp online --test-seeds 20 --repeats 10
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from tune_risk.engine.core import Engine
from tune_risk.offline.replay import ReplayTask, heldout_columns, replay_direct
from tune_risk.offline.table import OfflineTable
from tune_risk.settings import RECOMMEND_RULES, VAR_POSTERIORS

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ("| repeat | which | k | sample mean | sample var | mu_f | sigma_f | mu_var | LCB^MV | LCB order "
           "| true-MV rank | held-out MV regret |")


def model_line(engine: Engine, mu_var: torch.Tensor) -> str:
    """The warp the final model uses and the sign of G_var's posterior over the evaluated configurations."""
    warp = engine.warp
    fitted = "the table's pooled warp" if not engine.online_warp else (
        f"online warp (fit {len(engine.warps)}) with {warp.raw_knots.size} distinct returns in "
        f"[{warp.raw_knots.min():.4g}, {warp.raw_knots.max():.4g}], bound {warp.bound:g}")
    negative = float((mu_var < 0).double().mean())
    return f"{fitted}; mu_var < 0 at {negative:.0%} of configurations (min {float(mu_var.min()):.4f})"


def rows(task: ReplayTask, repeat: int, budget: int, args: argparse.Namespace) -> tuple[str, list[str]]:
    """The model line and the recommended / best evaluated configuration of one replay, as table rows."""
    engine = replay_direct(task, args.method, repeat, budget, warp=args.warp, var_posterior=args.var_posterior,
                           recommend=args.recommend).engine
    records = [r for r in engine.records if engine.has_data(r)]
    model = engine.risk_model()
    X = Engine.x_tensor(records)
    mu_f, sd_f, mu_var, _ = model.predict(X)
    lcb = model.lcb_mv(X, engine.settings.kappa_acq)
    lcb_order = np.argsort(np.argsort(-lcb.numpy()))
    rank = np.argsort(np.argsort(-task.true_mv))
    bound = engine.warp.bound if engine.warp is not None else task.warp.bound
    chosen = {"recommended": records.index(engine.recommend()),
              "best evaluated": max(range(len(records)), key=lambda i: task.true_mv[records[i].pool_index])}
    out = []
    for which, i in chosen.items():
        row = records[i].pool_index
        over = "!" if float(mu_f[i]) > bound + 1e-3 else ""  # beyond rounding of the printed value
        held = (f"{heldout_columns(task, row, 0, 0.0)['normalised_heldout_mv_regret']:.3f}"
                if task.test_seeds else "-")
        out.append(f"| {repeat} | {which} | {int(model.data.k[i])} | {float(model.data.mean[i]):.3f} | "
                   f"{float(model.data.variance[i]):.4f} | {float(mu_f[i]):.3f}{over} | {float(sd_f[i]):.3f} | "
                   f"{float(mu_var[i]):.4f} | {float(lcb[i]):.3f} | {lcb_order[i]} | {rank[row]} | {held} |")
    return model_line(engine, mu_var), out


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; ``parse([])`` gives the defaults (as the tests use them)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=ROOT / "datasets" / "ppo_cartpole.parquet")
    parser.add_argument("--budget", type=int, default=1500, help="BO replicate budget (default 1500)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats 0 .. N-1 (default 5)")
    parser.add_argument("--method", choices=("erahbo", "tune-risk"), default="erahbo")
    parser.add_argument("--warp", choices=("pooled", "online"), default="pooled")
    parser.add_argument("--test-seeds", type=int, default=0, help="held-out seed columns (default 0)")
    parser.add_argument("--var-posterior", choices=VAR_POSTERIORS, default="gp",
                        help="G_var's posterior mean as is (gp, the paper) or clamped at 0 (docs/algorithms.md A-20)")
    parser.add_argument("--recommend", choices=RECOMMEND_RULES, default="lcb", help="the rule (A-21)")
    return parser.parse_args(argv)


def main() -> int:
    args = parse()
    task = ReplayTask.from_table(OfflineTable.load(args.table), test_seeds=args.test_seeds)
    print(f"{task.name}: {args.method}, budget {args.budget}, warp {args.warp}, var_posterior={args.var_posterior}, "
          f"recommend={args.recommend}, {args.test_seeds} held-out seeds\n")
    models, lines = [], []
    for repeat in range(args.repeats):
        model, out = rows(task, repeat, args.budget, args)
        models.append(f"- repeat {repeat}: {model}")
        lines += out
        print(models[-1], flush=True)
    print("\n" + COLUMNS + "\n|" + "---|" * (COLUMNS.count("|") - 1) + "\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
