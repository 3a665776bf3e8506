"""Which rule should pick the configuration a user deploys? Rules scored on held-out seeds, per table.

Replays ``tune-risk`` (``RiskAwareSearch``'s defaults, ``--warp online``, 20 held-out seeds) on every shipped
table and, from each replay's final engine, lets every rule of ``RULES`` pick a configuration; each pick is
scored on the held-out seeds (normalised MV regret: 0 = the table's best configuration, 1 = its median). The
rules read the same final state, so differences come from the rule alone (the search is identical).

Rules (``k``: seeds the configuration got; MV on the engine's own warp):

* ``lcb``: ``argmax LCB^MV`` over every configuration with data (CODE-RAHBO's reporting rule, today's);
* ``lcb-k>=K``: the same among the configurations with at least ``K`` seeds (all of them if none has);
* ``post-k>=K``: the posterior MV ``mu_f - alpha max(mu_var, 0)`` among them;
* ``sample-k>=K``: the sample MV (warped mean minus variance) among them;
* ``own-k>=K``: a lower bound of MV from the configuration's own seeds alone, no GP
  (``sample_mv_lower_bound``, the engine's ``recommend="evidence"``), among them: immune to a G_f whose long lengthscales shrink every configuration to one value;
* ``most-seeds``: ``argmax LCB^MV`` among the configurations with the most seeds.

It also prints, per table, the share of picks that rest on 2 seeds, and the median ``k`` of the ``lcb`` pick.

    taskset -c 0 python experiments/studies/recommendation_rules.py [--budget 300] [--repeats 10] [--var-posterior gp] [--out FILE.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from tune_risk.engine.core import Engine
from tune_risk.engine.records import sample_mv_lower_bound
from tune_risk.offline.replay import ReplayTask, replay_direct
from tune_risk.offline.table import OfflineTable

ROOT = Path(__file__).resolve().parents[2]
THRESHOLDS = (5, 10, 20)


def picks(engine: Engine) -> dict[str, int]:
    """Pool row picked by each rule from the final engine."""
    records = [r for r in engine.records if engine.has_data(r)]
    model = engine.risk_model()
    X = Engine.x_tensor(records)
    mu_f, _, mu_var, _ = model.predict(X)
    lcb = model.lcb_mv(X, engine.settings.kappa_acq).detach().numpy()
    post = (mu_f - engine.settings.alpha * mu_var.clamp_min(0.0)).detach().numpy()
    warp = engine.warp
    alpha = engine.settings.alpha
    sample = np.array([_sample_mv(r.incorporated_values(), warp, alpha) for r in records])
    own = np.array([_own_lcb(r.incorporated_values(), warp, alpha) for r in records])
    k = np.array([r.n_incorporated for r in records])
    out = {"lcb": records[int(np.argmax(lcb))].pool_index}
    for threshold in THRESHOLDS:
        mask = k >= threshold if (k >= threshold).any() else np.ones_like(k, dtype=bool)
        for name, score in (("lcb", lcb), ("post", post), ("sample", sample), ("own", own)):
            out[f"{name}-k>={threshold}"] = records[int(np.argmax(np.where(mask, score, -np.inf)))].pool_index
    most = k == k.max()
    out["most-seeds"] = records[int(np.argmax(np.where(most, lcb, -np.inf)))].pool_index
    out["k_of_lcb"] = int(k[int(np.argmax(lcb))])
    return out


def _warped(values: list[float], warp) -> np.ndarray:
    return np.asarray(warp(np.asarray(values, dtype=float)) if warp is not None else values, dtype=float)


def _sample_mv(values: list[float], warp, alpha: float) -> float:
    y = _warped(values, warp)
    return float(y.mean() - alpha * y.var(ddof=1))


def _own_lcb(values: list[float], warp, alpha: float) -> float:
    return sample_mv_lower_bound(_warped(values, warp), alpha)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--var-posterior", default="gp", choices=("gp", "nonnegative"))
    parser.add_argument("--tables", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=None, help="also write each repeat's regret per rule (CSV)")
    args = parser.parse_args()
    rows: list[dict] = []
    tables = sorted((ROOT / "datasets").glob("*.parquet"))
    if args.tables:
        tables = [t for t in tables if t.stem in args.tables]
    totals: dict[str, list[float]] = {}
    print(f"tune-risk, budget {args.budget}, {args.repeats} repeats, var_posterior={args.var_posterior}, "
          "--warp online, 20 held-out seeds: mean normalised held-out MV regret of each rule's pick\n")
    header = None
    for path in tables:
        task = ReplayTask.from_table(OfflineTable.load(path), test_seeds=20)
        scale = task.heldout_mv.max() - np.median(task.heldout_mv)
        scores: dict[str, list[float]] = {}
        ks = []
        for repeat in range(args.repeats):
            engine = replay_direct(task, "tune-risk", repeat, args.budget, warp="online",
                                   var_posterior=args.var_posterior).engine
            chosen = picks(engine)
            ks.append(chosen.pop("k_of_lcb"))
            for rule, row in chosen.items():
                regret = (task.heldout_mv.max() - task.heldout_mv[row]) / scale
                scores.setdefault(rule, []).append(regret)
                rows.append({"table": path.stem, "repeat": repeat, "rule": rule, "row": row, "regret": regret})
        if header is None:
            header = list(scores)
            print("| table | " + " | ".join(header) + " | median k of lcb pick | lcb picks on 2 seeds |")
            print("|---|" + "---:|" * (len(header) + 2))
        for rule, values in scores.items():
            totals.setdefault(rule, []).extend(values)
        print(f"| {path.stem} | " + " | ".join(f"{np.mean(scores[r]):.3f}" for r in header)
              + f" | {np.median(ks):.0f} | {np.mean(np.array(ks) == 2) * 100:.0f} % |", flush=True)
    print("| **mean** | " + " | ".join(f"**{np.mean(totals[r]):.3f}**" for r in header) + " | | |")
    if args.out is not None:
        pd.DataFrame(rows).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
