"""Live risk-aware HPO of real RL training: ERAHBO vs RAHBO(k=20) at the same replicate budget.

Each method tunes ``--algo`` on ``--env`` through Ray Tune (one trial = one seed) with ``--budget``
replicate runs; then each method's recommended configuration is re-trained on ``--eval-seeds`` fresh
seeds to estimate its true mean-variance (MV on one warp fitted to all re-evaluation returns, so the
methods are comparable). Printed per method: configurations tried, completed and cancelled replicates,
environment steps trained (cancelled replicates count the steps they ran), JAX programs compiled,
worker seconds inside trials (and up to each trial's first report, where programs are built), the
median per-replicate start-up (trial start to its first training chunk: imports, tracing, compiling
or loading programs, waiting for a pool worker; the ``startup_s`` metric), the training processes
started (distinct PIDs of the processes that trained: Tune's trial actors, or the pool's workers) and, in
brackets, Tune's trial actors (with ``--pool`` thin processes that neither import JAX nor train), the
worker seconds spent per replicate (building, training and evaluating it),
the share of the ``workers x wall`` seconds spent so ("workers busy": with ``--pool`` the pool's own
account, ``WorkerPool.busy_seconds``; else trial spans), wall time, and the re-evaluated MV of the
recommended configuration; then the ratios of compute, the wall-time ratio split into the ratio of worker
seconds spent on replicates and the ratio of wall time per such second (idle workers and overheads), and
the seconds per replicate of the configurations both methods trained (equal work: a difference is the
run's conditions, e.g. CPU contention, not the configurations' cost). Every
configuration a method recommended during its search (tracked after each finished replicate) is
re-evaluated as well, giving the wall time and environment steps after which the method's recommendation
first reaches the reference method's (the last method's) final MV, as a fraction of the reference's wall
time and steps. ``--search-seeds N`` repeats every method with searcher seeds ``seed .. seed+N-1``; the
table shows means over them (medians for start-up). A method may have its own budget:
``--methods erahbo@30,rahbo-k20``.

``--pool`` trains on a warm ``rl_tasks.WorkerPool`` (one per method, ``--workers`` workers, created
before the method's Tune run and counted in its wall time) through thin trials, instead of in Tune's
trial processes. ``--prewarm`` compiles every static shape of the space once, before the methods, as
``tune-risk prewarm`` does on a cluster (``README``: compile once per node); each method starts from a copy
of that cache and the pre-warm's time is printed apart. ``--fixed NAME=VALUE`` sets a hyperparameter the
space keeps fixed (as ``tune-risk generate --fixed``). ``--quick`` is a small run (PPO on CartPole-v1, 4096 steps, budget 44, one program
shape: ``minibatch_size`` fixed at 256) whose last line is ``startup_median_s=.. worker_starts=..
workers=.. wall_ratio=..``: ERAHBO's (the first method's) median start-up and processes started, and
its wall time over RAHBO(k=20)'s (the last method's).

    python experiments/studies/live_hpo.py --algo ppo --env CartPole-v1 --budget 60 --methods erahbo,rahbo-k20 \\
        [--steps 100000] [--workers 2] [--address auto] [--gpus-per-trial 0.25] [--pool] [--prewarm] \\
        [--fixed hidden_size=64]
    python experiments/studies/live_hpo.py --quick [--pool]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import ray
from ray import tune

import rl_tasks
from rl_tasks.cli import fixed_pair
from rl_tasks.spaces import check_fixed_override
from tune_risk import ReplicateScheduler, RiskAwareSearch
from tune_risk.risk.warping import warp_values

FRESH_SEED_OFFSET = 1_000_000  # re-evaluation seeds never used during the search
# --quick: about 5 minutes on 2 cores (ERAHBO against RAHBO(k=20) at the same small budget: RAHBO's design of
# 2 x 20 runs plus the 10% reserved for intensification).
QUICK = {"algo": "ppo", "env": "CartPole-v1", "budget": 44, "steps": 4096, "eval_episodes": 8, "eval_seeds": 4,
         "methods": "erahbo,rahbo-k20", "workers": 2}


def parse_method(method: str, default_budget: int) -> tuple[str, int]:
    """``"erahbo@30"`` -> ``("erahbo", 30)``: a method may run at its own replicate budget."""
    name, _, budget = method.strip().partition("@")
    if budget and not (budget.isdigit() and int(budget) > 0):
        raise ValueError(f"method {method!r}: the budget after '@' must be a positive integer")
    return name, int(budget) if budget else default_budget


def searcher_for(method: str, seed: int) -> RiskAwareSearch:
    # ERAHBO keeps the searcher's default design (5 configurations x k_min = 2 seeds: 10 runs); RAHBO(k)
    # spends k runs per configuration, so its design is 2 configurations (40 runs at k = 20, as in the paper).
    if method == "erahbo":
        return RiskAwareSearch(method="erahbo", k_min=2, k_max=20, random_state_seed=seed, final_key="final")
    if method.startswith("rahbo-k"):
        k = int(method.removeprefix("rahbo-k"))
        return RiskAwareSearch(method="rahbo", k_max=k, n_initial=2, random_state_seed=seed, final_key="final")
    raise ValueError(f"unknown method {method!r}; use erahbo or rahbo-k<k>")


class RecommendationTrace(tune.Callback):
    """Driver side: after every finished replicate, the searcher's recommendation (argmax LCB^MV), with the
    wall seconds since the method started and the environment steps trained so far (cancelled replicates'
    steps included). Only changes of the recommendation are kept."""

    def __init__(self, searcher: RiskAwareSearch, started: float) -> None:
        self.searcher, self.started = searcher, started
        self.steps: dict[str, int] = {}
        self.trace: list[tuple[float, int, dict]] = []
        self.spans: dict[str, list[float]] = {}  # trial id -> [start, end] in seconds since the method started

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self.spans[trial.trial_id] = [time.perf_counter() - self.started, float("nan")]

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        self.steps[trial.trial_id] = int(result.get("timesteps", 0) or 0)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._end(trial)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._end(trial)
        config = self.searcher.best_config
        if config is not None and (not self.trace or self.trace[-1][2] != config):
            self.trace.append((time.perf_counter() - self.started, sum(self.steps.values()), config))

    def _end(self, trial) -> None:
        if trial.trial_id in self.spans:
            self.spans[trial.trial_id][1] = time.perf_counter() - self.started


def tune_method(method: str, space: dict, args: argparse.Namespace, seed: int) -> dict:
    name, budget = parse_method(method, args.budget)
    started = time.perf_counter()  # a pool's creation counts: it is part of the method's cost
    trainable, cache, pool = make_method_trainable(args, method)
    searcher = searcher_for(name, seed)
    trace = RecommendationTrace(searcher, started)
    results = tune.Tuner(
        trainable, param_space=space,
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), metric="return",
                                    mode="max", num_samples=budget, max_concurrent_trials=args.workers,
                                    reuse_actors=True),
        run_config=tune.RunConfig(verbose=0, name=f"live-{method.replace('@', '-b')}-s{seed}",
                                  callbacks=[trace, *([rl_tasks.PoolPrefetch(trainable)] if pool else [])]),
    ).fit()
    wall = time.perf_counter() - started
    trainers, actors = process_ids(results)
    if pool:  # the pool's own account: a prefetched replicate trains before its trial's span starts
        trainers |= set(pool.worker_pids())
        busy = pool.busy_seconds() / (args.workers * wall)
        pool.shutdown()
    else:
        busy = busy_fraction(trace.spans.values(), args.workers, wall)
    startups = [float(r.metrics["startup_s"]) for r in results if r.metrics and "startup_s" in r.metrics]
    steps = sum(int(r.metrics.get("timesteps", 0) or 0) for r in results if r.metrics)
    reported = [r.metrics_dataframe for r in results if r.metrics_dataframe is not None and len(r.metrics_dataframe)]
    if searcher.best_config is None:
        raise SystemExit(f"{method}: no configuration completed within budget {budget}; raise --budget")
    counts = searcher.engine.counts()
    replicate_s: dict[str, list[float]] = {}  # configuration -> chunk seconds of each completed replicate
    for r in results:
        frame = r.metrics_dataframe
        if r.metrics and r.metrics.get("final") and frame is not None and "chunk_s" in frame:
            config = {k: v for k, v in r.config.items() if k != "seed"}
            replicate_s.setdefault(config_key(config), []).append(float(frame["chunk_s"].sum()))
    return {"method": method, "seed": seed, "budget": budget, "best": searcher.best_config, "trace": trace.trace,
            "wall": wall, "steps": steps, "busy": busy,
            "completed": counts["runs_completed"], "cancelled": counts["runs_cancelled"], "failed": counts["runs_failed"],
            "configs": len(searcher.engine.records), "replicate_s": replicate_s,
            "programs": None if cache is None else count_programs(cache) - args.prewarmed_programs,
            "startup_median": float(np.median(startups)) if startups else float("nan"), "startup_total": sum(startups),
            "processes": len(trainers), "actors": len(actors),
            # Worker time inside trials, and the part of it up to each trial's first report (which
            # includes tracing the JAX programs and compiling them or loading them from the cache).
            "trial_s": sum(float(df["time_total_s"].iloc[-1]) for df in reported),
            "first_report_s": sum(float(df["time_this_iter_s"].iloc[0]) for df in reported)}


def busy_fraction(spans, workers: int, wall: float) -> float:
    """Share of the ``workers x wall`` worker-seconds during which a trial was running (driver-side
    ``on_trial_start`` to its end): what synchronisation points and trial start-ups leave idle."""
    return sum(end - start for start, end in spans if np.isfinite(end)) / (workers * wall)


def process_ids(results) -> tuple[set[int], set[int]]:
    """Processes a Tune run used: the training processes (``worker_pid``: the trial's own, or a pool worker)
    and Tune's trial actors (``pid``; with a pool, thin processes that neither import JAX nor train)."""
    trainers: set[int] = set()
    actors: set[int] = set()
    for result in results:
        frame = result.metrics_dataframe
        for column, pids in (("worker_pid", trainers), ("pid", actors)):
            if frame is not None and column in frame:
                pids.update(int(p) for p in frame[column].dropna())
    return trainers, actors


def count_programs(cache: str | None) -> int | None:
    """Programs XLA compiled during a method's search: the entries of its fresh persistent cache. Each
    new static shape (e.g. a ``minibatch_size`` not seen before) is one training, one evaluation program."""
    return None if cache is None else sum(1 for _ in Path(cache).iterdir())


def trial_budgets(args: argparse.Namespace) -> dict[str, int]:
    """The live trainable's budgets (a pre-warmed cache must be compiled for the same ones)."""
    return {"total_timesteps": args.steps, "eval_every": max(1, args.steps // 5), "eval_episodes": args.eval_episodes}


def prewarm_cache(space: dict, args: argparse.Namespace) -> tuple[str, float, int]:
    """Compile every static shape of ``space`` once, before any method runs, as a cluster would
    (``tune-risk prewarm``): the cache directory, the seconds it took and the programs it holds. It runs as
    one Ray task (one core), so the driver never imports JAX."""
    from rl_tasks.prewarm import prewarm  # noqa: PLC0415 - loads JAX only inside the task

    cache = tempfile.mkdtemp(prefix="live_hpo_prewarm_jax_")
    started = time.perf_counter()
    ray.get(ray.remote(num_cpus=1)(prewarm).remote(args.algo, args.env, compilation_cache_dir=cache, space=space,
                                                   **trial_budgets(args)))
    return cache, time.perf_counter() - started, count_programs(cache)


def make_method_trainable(args: argparse.Namespace, method: str,
                          checkpoint: bool = False) -> tuple[Callable, str | None, object | None]:
    """The trainable, its cache directory and its pool (``--pool``; else ``None``): a fresh JAX compilation
    cache per method (unless ``--no-compilation-cache``), so a method's workers share its compiled programs
    and no method inherits another's; likewise a fresh pool per method. ``checkpoint``: a pooled trainable
    that checkpoints its run state after every chunk (PBT's exploit restores it; needs ``--pool``)."""
    cache = None if args.no_compilation_cache else tempfile.mkdtemp(prefix=f"live_hpo_{method}_jax_")
    if cache is not None and args.prewarmed:  # every method starts from the same pre-warmed programs
        shutil.copytree(args.prewarmed, cache, dirs_exist_ok=True)
    budgets = trial_budgets(args)
    if args.pool:  # GPU fractions go to the pool's workers; thin trials hold no resources worth naming
        pool = rl_tasks.WorkerPool(args.workers, gpus_per_worker=args.gpus_per_trial, compilation_cache_dir=cache)
        return rl_tasks.make_pooled_trainable(pool, args.algo, args.env, **budgets, checkpoint=checkpoint), cache, pool
    if checkpoint:
        raise ValueError("a checkpointing trainable (PBT) trains on the pool: pass --pool")
    trainable = rl_tasks.make_trainable(args.algo, args.env, **budgets, compilation_cache_dir=cache)
    if args.gpus_per_trial > 0:  # e.g. 0.25: four JAX trials share a GPU (set XLA_PYTHON_CLIENT_PREALLOCATE=false)
        trainable = tune.with_resources(trainable, {"cpu": 1, "gpu": args.gpus_per_trial})
    return trainable, cache, None


def reevaluate(configs: list[dict], trainable, args: argparse.Namespace) -> list[np.ndarray]:
    """Final returns of every configuration on the same fresh seeds (``FRESH_SEED_OFFSET + i``, in that order),
    all in one Tune run (a grid over configuration index x seed; each hyperparameter is looked up from the index)."""
    names = sorted(set().union(*configs))
    space = {"config_index": tune.grid_search(list(range(len(configs)))),
             "seed": tune.grid_search([FRESH_SEED_OFFSET + i for i in range(args.eval_seeds)]),
             **{n: tune.sample_from(lambda spec, n=n: configs[spec.config.config_index][n]) for n in names}}
    results = tune.Tuner(
        trainable, param_space=space,
        tune_config=tune.TuneConfig(metric="return", mode="max", max_concurrent_trials=args.workers, reuse_actors=True),
        run_config=tune.RunConfig(verbose=0, name="live-reevaluation"),
    ).fit()
    returns = np.full((len(configs), args.eval_seeds), np.nan)  # in seed order, whatever order the trials ended
    for result in results:
        returns[int(result.config["config_index"]), int(result.config["seed"]) - FRESH_SEED_OFFSET] = float(
            result.metrics["return"])
    return list(returns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--budget", type=int, default=60, help="replicate runs per method (Tune num_samples)")
    parser.add_argument("--methods", default="erahbo,rahbo-k20",
                        help="comma-separated; 'erahbo@30' runs a method at its own budget; ratios are to the last")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--eval-seeds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="the first search seed")
    parser.add_argument("--search-seeds", type=int, default=1,
                        help="search seeds per method (seed, seed+1, ...); the table averages over them")
    parser.add_argument("--address", default=None, help="Ray address ('auto' on a cluster); default: local")
    parser.add_argument("--gpus-per-trial", type=float, default=0.0,
                        help="GPU fraction per trial (0: CPU trials); Ray hides GPUs from trials that request none")
    parser.add_argument("--no-compilation-cache", action="store_true",
                        help="every worker compiles every program itself (no persistent JAX cache)")
    parser.add_argument("--pool", action="store_true",
                        help="train on a warm rl_tasks.WorkerPool (thin trials) instead of in Tune's trial processes")
    parser.add_argument("--prewarm", action="store_true",
                        help="compile every static shape of the space once before the methods (as `tune-risk prewarm` "
                             "on a cluster); each method starts from that cache, its time is printed apart")
    parser.add_argument("--fixed", action="append", default=[], metavar="NAME=VALUE", type=fixed_pair,
                        help="set a hyperparameter the space keeps fixed, e.g. --fixed hidden_size=64 (repeatable)")
    parser.add_argument("--quick", action="store_true",
                        help=f"a small run: defaults {QUICK} (flags given override them), minibatch_size fixed at 256")
    if parser.parse_known_args()[0].quick:
        parser.set_defaults(**QUICK)  # defaults only: e.g. `--quick --steps 50000` still takes effect
    args = parser.parse_args()
    ray.init(address=args.address, logging_level=logging.ERROR, log_to_driver=False)
    space = {**rl_tasks.get_space(args.algo, args.env), **dict(args.fixed)}  # Tune constants override
    if args.quick:
        space["minibatch_size"] = 256  # one program shape: start-up, not compiling new shapes, is measured
    if args.prewarm and args.no_compilation_cache:
        parser.error("--prewarm needs the compilation cache (drop --no-compilation-cache)")
    for name, value in args.fixed:
        try:
            check_fixed_override(args.algo, name, value)
        except ValueError as err:
            parser.error(f"--fixed {name}={value}: {err}")
    args.prewarmed, args.prewarm_s, args.prewarmed_programs = (prewarm_cache(space, args) if args.prewarm
                                                               else (None, 0.0, 0))
    seeds = [args.seed + i for i in range(args.search_seeds)]
    methods = [m.strip() for m in args.methods.split(",")]
    rows = [tune_method(m, space, args, seed) for seed in seeds for m in methods]
    mv = reevaluated_mv(rows, args)
    report(rows, mv, methods, seeds, args)


def config_key(config: dict) -> str:
    return repr(sorted(config.items()))


def reevaluated_mv(rows: list[dict], args: argparse.Namespace) -> dict[str, tuple[float, float, float]]:
    """Every configuration a method recommended at some point (its final one included) re-trained on the same
    ``--eval-seeds`` fresh seeds: ``{config key: (mean return, std, MV)}``, the MV on one warp fitted to all
    re-evaluation returns, so that configurations and methods are comparable."""
    configs = {config_key(c): c for row in rows for c in [row["best"], *(entry[2] for entry in row["trace"])]}
    evaluator, _, pool = make_method_trainable(args, "reevaluation")
    returns = dict(zip(configs, reevaluate(list(configs.values()), evaluator, args), strict=True))
    if pool:
        pool.shutdown()
    keys = list(returns)
    return dict(zip(keys, mv_on_one_warp([returns[k] for k in keys]), strict=True))


def mv_on_one_warp(returns: list[np.ndarray]) -> list[tuple[float, float, float]]:
    """``(mean return, std, MV)`` of each array of returns, the MV (mean - variance, ``alpha = 1``) on one warp
    fitted to all of them together, so that the arrays (configurations, methods) are comparable."""
    warped = np.split(warp_values(np.concatenate(returns)), np.cumsum([len(r) for r in returns])[:-1])
    return [(float(r.mean()), float(r.std(ddof=1)), float(w.mean() - w.var(ddof=1)))
            for r, w in zip(returns, warped, strict=True)]


def time_to_reach(row: dict, target: float, mv: dict) -> tuple[float, float]:
    """Wall seconds and environment steps after which ``row``'s recommendation first has a re-evaluated MV of at
    least ``target`` (``inf`` if never)."""
    for wall, steps, config in row["trace"]:
        if mv[config_key(config)][2] >= target:
            return wall, steps
    final = mv[config_key(row["best"])][2]
    return (row["wall"], row["steps"]) if final >= target else (float("inf"), float("inf"))


def shared_configurations(method: str, reference: str, runs: list[dict], references: list[dict]) -> str:
    """The same configurations trained by both methods (same search seed): their mean seconds per completed
    replicate in each run (``chunk_s`` summed). Equal work, so a difference is the run's conditions (e.g. CPU
    contention with the driver's and Tune's processes), not the configurations' cost."""
    mine, theirs = [], []
    for run, ref in zip(runs, references, strict=True):
        for key in run["replicate_s"].keys() & ref["replicate_s"].keys():
            mine.append(np.mean(run["replicate_s"][key]))
            theirs.append(np.mean(ref["replicate_s"][key]))
    if not mine:
        return f"no configuration trained by both {method} and {reference}"
    return (f"{len(mine)} configurations trained by both {method} and {reference} (same search seed): "
            f"{np.mean(mine):.2f} s vs {np.mean(theirs):.2f} s of training and evaluation per replicate")


def report(rows: list[dict], mv: dict, methods: list[str], seeds: list[int], args: argparse.Namespace) -> None:
    """Per method, over the search seeds: the run's costs, the recommendation's re-evaluated quality, and the
    wall time and steps at which it first reaches the reference method's (the last one's) final MV."""
    print(f"\n{args.algo} on {args.env}, {args.steps} steps per replicate, default budget {args.budget} replicates, "
          f"{args.workers} workers{' (warm pool)' if args.pool else ''}, search seeds {seeds}; recommended "
          f"configurations re-trained on {args.eval_seeds} fresh seeds (means over search seeds)"
          + (f"; fixed: {', '.join(f'{n}={v}' for n, v in args.fixed)}" if args.fixed else "")
          + (f"; pre-warmed once before the methods: {args.prewarmed_programs} programs in {args.prewarm_s:.0f} s"
             if args.prewarmed else "") + "\n")
    print("| method | budget | configurations | completed | cancelled | env steps trained | compiled programs "
          "| trial s (to first report) | start-up s: median (total) | training processes (trial actors) "
          "| worker s per replicate | workers busy | wall (s) | mean return | std "
          "| MV (warped) | reaches reference MV: wall, steps (fraction of the reference's; runs reaching) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    by = {(row["method"], row["seed"]): row for row in rows}
    reference = methods[-1]
    summary = {}
    for method in methods:
        runs = [by[(method, s)] for s in seeds]
        quality = np.array([mv[config_key(r["best"])] for r in runs])
        fractions = []
        for r in runs:
            ref = by[(reference, r["seed"])]
            wall, steps = time_to_reach(r, mv[config_key(ref["best"])][2], mv)
            fractions.append((wall / ref["wall"], steps / ref["steps"]))
        reached = [f for f in fractions if np.isfinite(f[0])]
        reach = (f"{np.mean([f[0] for f in reached]):.2f}, {np.mean([f[1] for f in reached]):.2f} ({len(reached)}/"
                 f"{len(runs)})" if reached else f"never (0/{len(runs)})")
        mean = {k: float(np.mean([r[k] for r in runs])) for k in ("configs", "completed", "cancelled", "steps",
                                                                  "trial_s", "first_report_s", "startup_total",
                                                                  "processes", "actors", "busy", "wall")}
        # Worker-seconds spent on replicates (building, training, evaluating them).
        work = float(np.mean([r["busy"] * args.workers * r["wall"] for r in runs]))
        replicates = mean["completed"] + mean["cancelled"]
        startup = float(np.median([r["startup_median"] for r in runs]))
        programs = "n/a" if runs[0]["programs"] is None else f"{np.mean([r['programs'] for r in runs]):.0f}"
        print(f"| {method} | {runs[0]['budget']} | {mean['configs']:.0f} | {mean['completed']:.0f} | "
              f"{mean['cancelled']:.1f} | {mean['steps']:,.0f} | {programs} | {mean['trial_s']:.0f} "
              f"({mean['first_report_s']:.0f}) | {startup:.2f} ({mean['startup_total']:.0f}) | {mean['processes']:.1f} "
              f"({mean['actors']:.1f}) | {work / max(replicates, 1):.2f} | {mean['busy']:.0%} | {mean['wall']:.0f} | {quality[:, 0].mean():.1f} | {quality[:, 1].mean():.1f} | {quality[:, 2].mean():.4f} "
              f"| {reach} |")
        summary[method] = {"wall": mean["wall"], "steps": mean["steps"], "startup": startup,
                           "processes": mean["processes"], "work": work}
    ref = summary[reference]
    for method in methods[:-1]:
        work = summary[method]["work"] / ref["work"]
        wall = summary[method]["wall"] / ref["wall"]
        print(f"\ncompute ratio {method} / {reference}: {summary[method]['steps'] / ref['steps']:.2f} "
              f"(environment steps), {wall:.2f} (wall time) = {work:.2f} (worker seconds on replicates) x "
              f"{wall / work:.2f} (wall per worker second: idle workers, overheads)")
        print(shared_configurations(method, reference, [by[(method, s)] for s in seeds],
                                    [by[(reference, s)] for s in seeds]))
    first = summary[methods[0]]
    print(f"startup_median_s={first['startup']:.2f} worker_starts={first['processes']:.0f} workers={args.workers} "
          f"wall_ratio={first['wall'] / ref['wall']:.2f}")


if __name__ == "__main__":
    main()
