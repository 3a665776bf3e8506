"""Suggestion latency and Tune per-trial overhead of Ray Tune searchers on one synthetic noisy objective.

The worker behind ``experiments/benchmarks/bench_all.py``. It imports neither ``tune_risk`` nor JAX at module
level, so that it also runs in a separate virtual environment for peers whose pins clash with the
project's (HEBO needs ``numpy < 1.25``). Prints one JSON object.

**Objective.** Hartmann-6 on ``[0, 1]^6`` (maximised, ``f* = 3.32237``) plus heteroscedastic Gaussian
noise with standard deviation ``0.05 + 0.45 * x_0``: a return whose spread across seeds depends on
the configuration, like RL returns. The search space is six ``tune.uniform(0, 1)`` parameters, which
every peer supports (``BayesOptSearch`` takes only floats).

**Suggestion latency at n evaluated configurations.** Each searcher is given ``n`` observed
configurations the way its API allows (``points_to_evaluate`` + ``evaluated_rewards``, or
``BayesianOptimization.register``); ``RiskAwareSearch`` gets 2 seeds per configuration, the peers one.
One warm-up suggestion is discarded (it fits hyperparameters once), then ``repeats`` suggestions of
new configurations are timed, each followed by ``on_trial_complete``. For ``RiskAwareSearch`` only the
suggestions that open a round (condition both GPs, maximise ``UCB^MV``) are timed; the replicate
suggestions of a round are microseconds. ``HEBOSearch`` runs with ``max_concurrent=1`` so every
suggestion conditions on all data (with a batch of 8 it computes 8 at once and hands them out from a
cache).

**Tune per-trial overhead.** A trivial trainable (one report), ``reuse_actors=True``, 2 concurrent
trials, ``trials`` trials per searcher, one Ray instance per process; seconds per trial.

    python experiments/benchmarks/bench_searchers.py --searchers risk-aware-pool,optuna-gp --sizes 25 100 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable

import numpy as np

DIM = 6
POOL_ROWS = 512
METRIC = "return"
HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN_A = np.array([
    [10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14],
])
HARTMANN_P = 1e-4 * np.array([
    [1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381],
])
SEARCHERS = ("risk-aware-pool", "risk-aware-continuous", "optuna-gp", "hebo", "bayesopt", "repeater-random",
             "basic-variant")


def hartmann6(x: np.ndarray) -> float:
    """The Hartmann-6 function, sign flipped so that it is maximised (max 3.32237)."""
    inner = np.sum(HARTMANN_A * (np.asarray(x) - HARTMANN_P) ** 2, axis=1)
    return float(np.sum(HARTMANN_ALPHA * np.exp(-inner)))


def noisy_return(config: dict, seed: int) -> float:
    """One seed's return: Hartmann-6 plus noise of std ``0.05 + 0.45 x_0`` (heteroscedastic)."""
    x = np.array([config[f"x{i}"] for i in range(DIM)])
    return hartmann6(x) + (0.05 + 0.45 * x[0]) * float(np.random.default_rng(seed).standard_normal())


def space() -> dict:
    from ray import tune  # noqa: PLC0415

    return {f"x{i}": tune.uniform(0.0, 1.0) for i in range(DIM)}


def random_configs(n: int, seed: int) -> list[dict]:
    rows = np.random.default_rng(seed).random((n, DIM))
    return [{f"x{i}": float(v) for i, v in enumerate(row)} for row in rows]


def observed(n: int, seeds_per_config: int) -> tuple[list[dict], list]:
    """``n`` evaluated configurations with ``seeds_per_config`` returns each (one number when 1)."""
    configs = random_configs(n, seed=1)
    rewards = [[noisy_return(c, 1000 * i + s) for s in range(seeds_per_config)] for i, c in enumerate(configs)]
    return configs, [r if seeds_per_config > 1 else r[0] for r in rewards]


# --- searcher factories: (n evaluated configurations) -> a ready Searcher -------------------------------------


def risk_aware(pool: bool) -> Callable[[int], object]:
    def make(n: int):
        from tune_risk import RiskAwareSearch  # noqa: PLC0415

        points, rewards = observed(n, 2)
        return RiskAwareSearch(
            method="erahbo", points_to_evaluate=points or None,
            evaluated_rewards=rewards or None,
            candidates=random_configs(POOL_ROWS, seed=2) if pool else None, random_state_seed=0,
            max_active_configs=1,
        )
    return make


def optuna_gp(n: int):
    import optuna  # noqa: PLC0415
    from ray.tune.search.optuna import OptunaSearch  # noqa: PLC0415

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    points, rewards = observed(n, 1)
    return OptunaSearch(sampler=optuna.samplers.GPSampler(seed=0),
                        points_to_evaluate=points or None, evaluated_rewards=rewards or None)


def hebo(n: int, max_concurrent: int = 1):
    from ray.tune.search.hebo import HEBOSearch  # noqa: PLC0415

    points, rewards = observed(n, 1)
    return HEBOSearch(points_to_evaluate=points or None,
                      evaluated_rewards=rewards or None, random_state_seed=0, max_concurrent=max_concurrent)


def bayesopt(n: int):
    from ray.tune.search.bayesopt import BayesOptSearch  # noqa: PLC0415

    searcher = BayesOptSearch(random_state=0, verbose=0, skip_duplicate=False, patience=10**9)
    points, rewards = observed(n, 1)
    if points:  # the optimizer that `register` fills exists once the space is set (Tune sets it otherwise)
        searcher.set_search_properties(METRIC, "max", space())
    for point, reward in zip(points, rewards, strict=True):  # the public bayes_opt API; Ray has no rewards arg
        searcher.optimizer.register(params=point, target=reward)
    return searcher


def repeater_random(n: int):
    """Random search repeated on 2 seeds (``BasicVariantGenerator`` is a SearchAlgorithm: Repeater cannot wrap it)."""
    import optuna  # noqa: PLC0415
    from ray.tune.search import Repeater  # noqa: PLC0415
    from ray.tune.search.optuna import OptunaSearch  # noqa: PLC0415

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return Repeater(OptunaSearch(sampler=optuna.samplers.RandomSampler(seed=0)), repeat=2, set_index=False)


FACTORIES: dict[str, Callable[[int], object]] = {
    "risk-aware-pool": risk_aware(pool=True), "risk-aware-continuous": risk_aware(pool=False),
    "optuna-gp": optuna_gp, "hebo": hebo, "bayesopt": bayesopt, "repeater-random": repeater_random,
}


# --- measurements --------------------------------------------------------------------------------------------


def suggestion_latency(name: str, n: int, repeats: int) -> list[float]:
    """Milliseconds per suggestion of a new configuration with ``n`` configurations evaluated."""
    searcher = FACTORIES[name](n)
    searcher.set_search_properties(METRIC, "max", space())  # what Tune does with `param_space`
    latencies: list[float] = []
    calls = 0
    while len(latencies) < repeats + 1:
        rounds_before = _rounds(searcher)
        started = time.perf_counter()
        config = searcher.suggest(f"t{calls}")
        elapsed = time.perf_counter() - started
        if config is None:
            raise RuntimeError(f"{name} suggested nothing with no trial running (call {calls})")
        if rounds_before is None or _rounds(searcher) > rounds_before:
            latencies.append(elapsed * 1e3)
        searcher.on_trial_complete(f"t{calls}", {METRIC: noisy_return(config, int(config.get("seed", calls)))})
        calls += 1
    return latencies[1:]  # the first one fits hyperparameters once: a warm-up


def _rounds(searcher) -> int | None:
    """Rounds opened so far by a RiskAwareSearch engine (None for other searchers)."""
    engine = getattr(searcher, "engine", None) if hasattr(searcher, "results") else None
    return None if engine is None else engine.rounds


def tune_overhead(name: str, trials: int) -> float:
    """Seconds per trial of a trivial trainable run by ``tune.Tuner`` with this searcher."""
    from ray import tune  # noqa: PLC0415
    from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter  # noqa: PLC0415

    def trainable(config: dict) -> None:
        tune.report({METRIC: noisy_return(config, int(config.get("seed", 0)))})

    scheduler = None
    if name == "basic-variant":
        search_alg = BasicVariantGenerator(max_concurrent=2)
    elif name.startswith("risk-aware"):
        searcher = FACTORIES[name](0)
        from tune_risk import ReplicateScheduler  # noqa: PLC0415

        search_alg, scheduler = ConcurrencyLimiter(searcher, max_concurrent=2), ReplicateScheduler(searcher)
    elif name == "hebo":
        search_alg = hebo(0, max_concurrent=2)  # its own batch mechanism (a ConcurrencyLimiter is rejected)
    else:
        search_alg = ConcurrencyLimiter(FACTORIES[name](0), max_concurrent=2)
    tuner = tune.Tuner(
        trainable, param_space=space(),
        tune_config=tune.TuneConfig(search_alg=search_alg, scheduler=scheduler, metric=METRIC, mode="max",
                                    num_samples=trials, reuse_actors=True),
        run_config=tune.RunConfig(verbose=0, name=f"bench-{name}"),
    )
    started = time.perf_counter()
    results = tuner.fit()
    return (time.perf_counter() - started) / max(1, len(results))


def versions() -> dict[str, str]:
    found = {}
    for module in ("ray", "numpy", "torch", "optuna", "hebo", "bayes_opt", "botorch"):
        try:
            found[module] = __import__(module).__version__
        except (ImportError, AttributeError):
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--searchers", default=",".join(SEARCHERS))
    parser.add_argument("--sizes", type=int, nargs="*", default=[25, 100, 200, 500])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--tune-trials", type=int, default=0, help="0: skip the Tune overhead measurement")
    args = parser.parse_args()
    names = [s.strip() for s in args.searchers.split(",") if s.strip()]
    unknown = sorted(set(names) - set(SEARCHERS))
    if unknown:
        parser.error(f"unknown searchers {unknown}; choose from {', '.join(SEARCHERS)}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch  # noqa: PLC0415 - every peer here uses torch or numpy BLAS: one thread each, like our engine

    torch.set_num_threads(1)
    out: dict = {"versions": versions(), "latency_ms": {}, "tune_seconds_per_trial": {}}
    for name in names:
        if name in FACTORIES:
            out["latency_ms"][name] = {str(n): suggestion_latency(name, n, args.repeats) for n in args.sizes}
    if args.tune_trials:
        import ray  # noqa: PLC0415

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        for name in names:
            out["tune_seconds_per_trial"][name] = tune_overhead(name, args.tune_trials)
        ray.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
