"""Per-trial overhead of RiskAwareSearch inside Ray Tune, against Ray's own searchers.

Same trivial trainable (one report, no work), same space, ``reuse_actors=True``, 2 concurrent
trials, one Ray instance; each searcher runs ``--trials`` trials and the wall time per trial is
printed with its ratio to ``BasicVariantGenerator`` (random search, Tune's cheapest path).
``Repeater(OptunaSearch)`` is Ray's built-in way of evaluating each configuration on several seeds.

    python experiments/benchmarks/bench_tune.py [--trials 200]      # needs the `bench` extra (optuna)
"""

from __future__ import annotations

import argparse
import logging
import time

import ray
from ray import tune
from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter, Repeater

from tune_risk import ReplicateScheduler, RiskAwareSearch

ACTIVE = None  # default: ceil(W / k_min) configurations in flight
SPACE = {"x": tune.uniform(0.0, 1.0), "y": tune.loguniform(1e-3, 1.0), "c": tune.choice(["a", "b"])}


def trainable(config: dict) -> None:
    tune.report({"return": config["x"] - config["y"] + (0.5 if config["c"] == "a" else 0.0)})


def make_searchers(trials: int) -> dict:
    searchers = {
        "BasicVariantGenerator": lambda: (BasicVariantGenerator(max_concurrent=2), None),
        "RiskAwareSearch": _risk_aware,
    }
    try:
        from ray.tune.search.optuna import OptunaSearch

        searchers["Repeater(OptunaSearch, 2 seeds)"] = lambda: (
            ConcurrencyLimiter(Repeater(OptunaSearch(seed=0), repeat=2, set_index=False), max_concurrent=2), None)
    except ImportError:
        logging.warning("optuna is not installed (pip install -e '.[bench]'): skipping OptunaSearch")
    return searchers


def _risk_aware():
    searcher = RiskAwareSearch(random_state_seed=0, k_max=4, max_active_configs=ACTIVE)
    return ConcurrencyLimiter(searcher, max_concurrent=2), ReplicateScheduler(searcher)


def time_searcher(factory, trials: int) -> float:
    search_alg, scheduler = factory()
    tuner = tune.Tuner(
        trainable, param_space=SPACE,
        tune_config=tune.TuneConfig(search_alg=search_alg, scheduler=scheduler, metric="return", mode="max",
                                    num_samples=trials, reuse_actors=True),
        run_config=tune.RunConfig(verbose=0),
    )
    started = time.perf_counter()
    results = tuner.fit()
    elapsed = time.perf_counter() - started
    if len(results) != trials:
        logging.warning("%d of %d trials ran", len(results), trials)
    return elapsed / len(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    per_trial = {name: time_searcher(factory, args.trials) for name, factory in make_searchers(args.trials).items()}
    base = per_trial["BasicVariantGenerator"]
    print(f"\n{args.trials} trials each, reuse_actors=True, 2 concurrent trials, 2 CPUs\n")
    print("| searcher | seconds per trial | ratio to BasicVariantGenerator |")
    print("|---|---:|---:|")
    for name, seconds in per_trial.items():
        print(f"| {name} | {seconds:.3f} | {seconds / base:.2f}x |")


if __name__ == "__main__":
    main()
