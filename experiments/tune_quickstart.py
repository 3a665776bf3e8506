"""An ordinary Ray Tune script made risk-aware by a three-line change (see the README's diff).

The trainable trains ONE seed of a noisy objective (a stand-in for an RL run: the mean improves with
``lr`` near 3e-3, the spread across seeds grows with ``entropy``) and reports a return every
"epoch". ``RiskAwareSearch`` + ``ReplicateScheduler`` then spend seeds where they matter and stop
replicates of configurations that cannot beat the incumbent.

    python experiments/tune_quickstart.py [--num-samples 60] [--plain]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import ray
from ray import tune

from tune_risk import ReplicateScheduler, RiskAwareSearch


def trainable(config: dict) -> None:
    """One training run (one seed): reports the running return each epoch, the final one last."""
    rng = np.random.default_rng(config["seed"])
    mean = 200.0 - 40.0 * math.log10(config["lr"] / 3e-3) ** 2 + (20.0 if config["optimizer"] == "adam" else 0.0)
    spread = 5.0 + 150.0 * config["entropy"]
    final = mean + spread * rng.standard_normal()
    for epoch in range(1, 6):
        time.sleep(0.01)
        tune.report({"return": final * epoch / 5, "epoch": epoch})


SPACE = {
    "lr": tune.loguniform(1e-4, 1e-1),
    "entropy": tune.uniform(0.0, 0.5),
    "optimizer": tune.choice(["adam", "sgd"]),
    "seed": 0,  # replaced per replicate by RiskAwareSearch
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-samples", type=int, default=60)
    parser.add_argument("--plain", action="store_true", help="run the original (random search) script")
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    searcher = RiskAwareSearch(random_state_seed=0)                      # + risk-aware line 1
    tuner = tune.Tuner(
        trainable,
        param_space=SPACE,
        tune_config=tune.TuneConfig(
            metric="return", mode="max", num_samples=args.num_samples, max_concurrent_trials=4,
            search_alg=None if args.plain else searcher,                 # + risk-aware line 2
            scheduler=None if args.plain else ReplicateScheduler(searcher),  # + risk-aware line 3
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(verbose=0),
    )
    results = tuner.fit()
    if args.plain:
        print(results.get_best_result().config)
        return
    columns = ["config_id", "status", "k", "completed", "cancelled", "mean", "variance", "mv", "lcb_mv",
               "config/lr", "config/entropy", "config/optimizer"]
    print(searcher.results()[columns].to_string(float_format=lambda v: f"{v:.4g}"))
    print("\nbest configuration (highest LCB^MV):", searcher.best_config)
    print("replicate runs:", {k: v for k, v in searcher.engine.counts().items() if k.startswith("runs")})


if __name__ == "__main__":
    main()
