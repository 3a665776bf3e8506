"""Quick start: an ordinary Ray Tune script (``tune_quickstart_plain.py``: random search, one seed per
trial) and the same script made risk-aware (``tune_quickstart.py``). The README shows the diff between
the two; a test checks that it is exactly this diff and runs both.

The trainable trains ONE seed of a noisy objective (a stand-in for an RL run: the mean improves with
``lr`` near 3e-3, the spread across seeds grows with ``entropy``) and reports a return every
"epoch", the final one last.

    python experiments/examples/tune_quickstart_plain.py [--num-samples 60]
    python experiments/examples/tune_quickstart.py [--num-samples 60]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import ray
from ray import tune


def trainable(config: dict) -> None:
    """One training run (one seed): reports the running return each epoch, the final one last."""
    rng = np.random.default_rng(config.get("seed", 0))
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
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-samples", type=int, default=60)
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

    tuner = tune.Tuner(
        trainable,
        param_space=SPACE,
        tune_config=tune.TuneConfig(
            metric="return", mode="max", num_samples=args.num_samples, max_concurrent_trials=4,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(verbose=0),
    )
    results = tuner.fit()
    print("best configuration:", results.get_best_result().config)


if __name__ == "__main__":
    main()
