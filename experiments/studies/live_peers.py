"""Live head-to-head on Ray Tune at equal wall-clock budget: ERAHBO against what RL researchers run.

Every method tunes the same task (``--tasks``) through Ray Tune with the same ``time_budget_s`` (``--budget-s``,
else the task's default), the same search space and the same warm ``rl_tasks.WorkerPool`` of ``--workers``
workers (created per run and counted in its ``wall_s``; every pool starts from the same pre-warmed compilation
cache). Methods (``--methods``):

* ``erahbo``, ``rahbo-k20``: ``RiskAwareSearch`` + ``ReplicateScheduler`` (``live_hpo.searcher_for``); the
  recommendation is ``tune_risk.load_results(experiment).best_config``;
* ``asha``: ``ASHAScheduler`` over single-seed random-search trials (Optuna's ``RandomSampler``) that report
  every training chunk: ``time_attr="training_iteration"``, ``grace_period=1`` (one chunk, a fifth of training),
  ``reduction_factor=3``, ``max_t`` = the reports of a full run; recommendation: the best final return among
  the trials that trained the full run;
* ``pbt``: ``PopulationBasedTraining``, population 8 (random initial configurations from Tune's own random
  search, ``BasicVariantGenerator``, as Tune allows no ``Searcher`` with PBT), a perturbation after
  every chunk (every fifth of training; ``synch=True``: members wait for the population at each perturbation,
  as ``--workers`` is smaller than the population), checkpointing through the trainable (``make_pooled_trainable(...,
  checkpoint=True)``: the run's training state); the float hyperparameters are mutated (resampled from their
  domain or scaled by 0.8/1.2, clipped to the domain), the integer and categorical ones (static shapes among them) stay with the
  member's weights; recommendation: the best member's final hyperparameters, re-trained from scratch like
  every method's (PBT's schedule of hyperparameters is not reproduced), and the record keeps that member's own
  last return (``member_return``);
* ``pb2``: ``PB2`` with the same population, interval and float hyperparameters (bounds on a linear scale, as
  PB2 takes them); it needs ``GPy`` and ``scikit-learn``;
* ``tpe-rep3``: ``OptunaSearch`` (TPE) in ``ray.tune.search.Repeater(3)``; ``random-rep5``: Optuna's
  ``RandomSampler`` in ``Repeater(5)``; recommendation: the best mean final return over a complete group.

Ray's searchers pick no training seeds: ``SeededSearch`` gives each of their suggestions one (31-bit, from
the search seed and the suggestion's index). Every method runs with ``max_concurrent_trials=--workers`` except the
populations (PBT pauses members, which a ``ConcurrencyLimiter`` counts as live, so it would run them one
pair at a time): the cluster is started with ``--workers``
CPUs, of which the pool's workers hold all but the thin trials' share, so at most ``--workers`` trials train at
once whatever the method.

Scoring: each recommendation is re-trained on the same 20 fresh seeds (``live_hpo.FRESH_SEED_OFFSET + i``),
which no method trains during its search (checked per run); the summary reports, per task and method, over the
search seeds, the mean return, the MV on one warp fitted to all re-evaluations of the task
(``live_hpo.mv_on_one_warp``), the mean of the worst 10 % of the fresh seeds, each with a bootstrap CI over
the search seeds (``tune_risk.offline.metrics.bootstrap_ci``; none below 5 seeds), a paired Wilcoxon test of the MV against the best method's,
and one figure per task.

Resumable: one record per (task, method, search seed) is appended to ``--out`` (``peers.json``) as soon as
it finishes, and runs already there are skipped; runs go seed by seed (every task and method gets search
seed 0 first), so partial results stay balanced. ``--only-summary`` rebuilds ``peers.md`` and the figures from
``peers.json`` alone.

    python experiments/studies/live_peers.py [--tasks ppo_cartpole,dqn_cartpole,sac_pendulum] [--methods ...]
        [--search-seeds 5] [--budget-s 120] [--workers 1] [--out experiments/results/live_hpo/peers.json]
    python experiments/studies/live_peers.py --only-summary
    python experiments/studies/live_peers.py --quick
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ray.tune import Callback
from ray.tune.search import Searcher

sys.path.insert(0, str(Path(__file__).resolve().parent))
import live_hpo  # noqa: E402 - experiments/ is not a package

METHODS = ("erahbo", "rahbo-k20", "asha", "pbt", "pb2", "tpe-rep3", "random-rep5")
POPULATION = 8  # PBT and PB2
NUM_SAMPLES = 9_000  # "until the time budget": a multiple of every Repeater's k
EVAL_SEEDS = 20
FRESH_SEEDS = tuple(live_hpo.FRESH_SEED_OFFSET + i for i in range(EVAL_SEEDS))
TRIAL_INDEX = "__trial_index__"  # ray.tune.search.repeater.TRIAL_INDEX
META_KEYS = ("seed", TRIAL_INDEX)  # config keys that are not hyperparameters
RESULTS = Path(__file__).resolve().parents[2] / "experiments" / "results" / "live_hpo"


@dataclass(frozen=True)
class Task:
    """One live task: algorithm, environment, training steps per run, default wall budget, fixed settings."""

    algo: str
    env: str
    steps: int
    budget_s: float
    fixed: dict[str, Any] = field(default_factory=dict)


TASKS = {
    "ppo_cartpole": Task("ppo", "CartPole-v1", 100_000, 120.0),
    "dqn_cartpole": Task("dqn", "CartPole-v1", 100_000, 60.0),
    # live_hpo_results/sac_pendulum.md's fixed settings
    "sac_pendulum": Task("sac", "Pendulum-v1", 10_000, 220.0, {"hidden_size": 64, "target_update_interval": 1}),
}
QUICK = {"tasks": "ppo_cartpole", "methods": "erahbo,asha", "search_seeds": 1, "workers": 2, "budget_s": 45.0,
         "steps": 8192, "eval_episodes": 8, "out": "results/live_peers_quick/peers.json"}


def seed_for(search_seed: int, index: int) -> int:
    """The training seed of suggestion ``index`` of a run with ``search_seed`` (31-bit, as ``RiskAwareSearch``'s
    replicate seeds; never a fresh evaluation seed)."""
    for salt in range(100):
        seed = int(np.random.SeedSequence([search_seed, index, salt]).generate_state(1)[0] & 0x7FFFFFFF)
        if seed not in FRESH_SEEDS:
            return seed
    raise AssertionError("unreachable")


class SeededSearch(Searcher):
    """A Ray ``Searcher`` whose suggestions each carry a training seed of their own under ``seed``
    (``seed_for(search_seed, n)`` for the ``n``-th). Put it outside a ``Repeater``, so that the repeats of a
    configuration train different seeds."""

    def __init__(self, searcher: Searcher, search_seed: int) -> None:
        super().__init__(metric=searcher.metric, mode=searcher.mode)
        self.searcher, self.search_seed, self.suggested = searcher, search_seed, 0

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        done = self.searcher.set_search_properties(metric, mode, config, **spec)
        self._metric, self._mode = self.searcher.metric, self.searcher.mode
        return done

    def suggest(self, trial_id: str) -> dict | str | None:
        config = self.searcher.suggest(trial_id)
        if config is None or config == Searcher.FINISHED:
            return config
        config = {**config, "seed": seed_for(self.search_seed, self.suggested)}
        self.suggested += 1
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    def get_state(self) -> dict:
        """Tune saves a wrapper's own state (the base searcher apart, as for ``ConcurrencyLimiter``)."""
        return {"search_seed": self.search_seed, "suggested": self.suggested}

    def set_state(self, state: dict) -> None:
        self.search_seed, self.suggested = state["search_seed"], state["suggested"]


@dataclass
class Setup:
    """What one method gives Tune, and how its recommendation is read back."""

    search_alg: Any
    scheduler: Any = None
    num_samples: int = NUM_SAMPLES
    concurrency_limited: bool = True  # max_concurrent_trials=workers (not for populations)
    checkpoint: bool = False  # the trainable checkpoints its run state (PBT, PB2)
    repeat: int = 1  # Repeater's k: the recommendation is the best complete group
    risk_aware: bool = False  # recommendation from tune_risk.load_results
    extra_space: dict = field(default_factory=dict)  # added to the param_space (PBT: the members' seeds)


def float_domains(space: dict) -> dict[str, Any]:
    """The continuous (float) hyperparameters of a space: what PBT mutates; the rest stays with the weights."""
    from ray.tune.search import sample  # noqa: PLC0415

    return {name: domain for name, domain in space.items() if isinstance(domain, sample.Float)}


def clip_to_domains(domains: dict[str, Any], config: dict) -> dict:
    """``config`` with each of ``domains``' values clipped to its bounds: PBT's explore step scales a value by
    0.8 or 1.2 without looking at its domain, PB2's proposals are float32 (0.1 comes back as 0.10000000149), and
    the trainable refuses values outside the domain."""
    return {**config, **{n: min(max(config[n], d.lower), d.upper) for n, d in domains.items() if n in config}}


def optuna_search(kind: str, seed: int) -> Any:
    """Ray's ``OptunaSearch`` with Optuna's TPE (``kind="tpe"``) or random sampler, seeded."""
    import optuna  # noqa: PLC0415
    from ray.tune.search.optuna import OptunaSearch  # noqa: PLC0415

    sampler = optuna.samplers.TPESampler(seed=seed) if kind == "tpe" else optuna.samplers.RandomSampler(seed=seed)
    return OptunaSearch(metric="return", mode="max", sampler=sampler)


def method_setup(method: str, space: dict, seed: int, reports: int) -> Setup:
    """The searcher and scheduler of ``method`` for search seed ``seed``; ``reports``: reports of a full run."""
    from ray import tune  # noqa: PLC0415
    from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining  # noqa: PLC0415
    from ray.tune.search import BasicVariantGenerator, Repeater  # noqa: PLC0415

    from tune_risk import ReplicateScheduler  # noqa: PLC0415

    if method in ("erahbo", "rahbo-k20"):
        searcher = live_hpo.searcher_for(method, seed)
        return Setup(searcher, ReplicateScheduler(searcher), risk_aware=True)
    if method == "asha":
        return Setup(SeededSearch(optuna_search("random", seed), seed),
                     ASHAScheduler(time_attr="training_iteration", grace_period=1, reduction_factor=3, max_t=reports))
    if method in ("pbt", "pb2"):
        floats = float_domains(space)
        random.seed(seed)  # PBT's and PB2's explore steps draw from Python's and numpy's global generators
        np.random.seed(seed)
        if method == "pbt":
            scheduler = PopulationBasedTraining(time_attr="training_iteration", perturbation_interval=1, synch=True,
                                                hyperparam_mutations=floats,
                                                custom_explore_fn=functools.partial(clip_to_domains, floats))
        else:
            from ray.tune.schedulers.pb2 import PB2  # noqa: PLC0415

            scheduler = PB2(time_attr="training_iteration", perturbation_interval=1, synch=True,
                            hyperparam_bounds={n: [d.lower, d.upper] for n, d in floats.items()},
                            custom_explore_fn=functools.partial(clip_to_domains, floats))
        # Tune allows no Searcher with PBT: its own random search, a grid over the members' seeds.
        members = {"seed": tune.grid_search([seed_for(seed, i) for i in range(POPULATION)])}
        return Setup(BasicVariantGenerator(random_state=seed), scheduler, num_samples=1, concurrency_limited=False,
                     checkpoint=True, extra_space=members)
    if method in ("tpe-rep3", "random-rep5"):
        k = 3 if method == "tpe-rep3" else 5
        inner = optuna_search("tpe" if method == "tpe-rep3" else "random", seed)
        return Setup(SeededSearch(Repeater(inner, repeat=k), seed), repeat=k)
    raise ValueError(f"--methods: unknown method {method!r}; valid: {', '.join(METHODS)}")


def tune_config(setup: Setup, budget_s: float, workers: int) -> Any:
    """The ``TuneConfig`` of a run: every method the same ``time_budget_s`` and metric."""
    from ray import tune  # noqa: PLC0415

    return tune.TuneConfig(search_alg=setup.search_alg, scheduler=setup.scheduler, metric="return", mode="max",
                           num_samples=setup.num_samples, time_budget_s=budget_s, reuse_actors=True,
                           max_concurrent_trials=workers if setup.concurrency_limited else None)


def report_schedule(algo: str, env: str, steps: int, eval_every: int, eval_episodes: int) -> tuple[int, int]:
    """``(reports of a full run, environment steps per regular chunk)``: in a Ray task, so the driver never
    imports JAX (the chunking uses fixed settings only, the same for every configuration of a space)."""
    from rl_tasks.seed_run import chunk_lengths  # noqa: PLC0415
    from rl_tasks.spaces import default_config  # noqa: PLC0415
    from rl_tasks.training import prepare  # noqa: PLC0415

    program, _ = prepare(algo, env, default_config(algo, env), steps, eval_episodes)
    chunk = chunk_lengths(program.iteration_steps, program.n_iterations, eval_every)[0]
    return math.ceil(program.n_iterations / chunk), chunk * program.iteration_steps


def hyperparameters(config: dict) -> dict:
    """A trial's config without the seed and the Repeater's index."""
    return {k: v for k, v in config.items() if k not in META_KEYS}


def finals(results: Iterable[Any]) -> list[tuple[dict, float]]:
    """``(hyperparameters, final return)`` of every trial that trained its full run."""
    return [(hyperparameters(r.config), float(r.metrics["return"])) for r in results
            if r.metrics and r.metrics.get("final")]


def best_group(pairs: Sequence[tuple[dict, float]], k: int) -> dict | None:
    """The configuration with the best mean final return among those with ``k`` full runs (a Repeater's
    complete groups); ``None`` if no group is complete."""
    groups: dict[str, list] = {}
    for config, value in pairs:
        groups.setdefault(live_hpo.config_key(config), [config, []])[1].append(value)
    complete = [(np.mean(values), config) for config, values in groups.values() if len(values) >= k]
    return max(complete, key=lambda pair: pair[0])[1] if complete else None


def recommendation(setup: Setup, results: Sequence[Any], experiment: str) -> tuple[dict, dict]:
    """The configuration a method deploys (from the trials that reported, or for ``RiskAwareSearch`` from its
    experiment folder), and extra record fields (PBT: the best member's own last return)."""
    if setup.risk_aware:
        from tune_risk import load_results  # noqa: PLC0415

        return hyperparameters(load_results(experiment).best_config), {}
    if setup.checkpoint:  # the best member by its last return, with the hyperparameters it ended with
        members = [r for r in results if r.metrics and "return" in r.metrics and r.error is None]
        best = max(members, key=lambda r: float(r.metrics["return"]))
        return hyperparameters(best.config), {"member_return": float(best.metrics["return"]),
                                              "member_finished": bool(best.metrics.get("final")),
                                              "perturbations": int(setup.scheduler._num_perturbations)}
    config = best_group(finals(results), setup.repeat)
    if config is None:
        raise RuntimeError(f"no configuration completed {setup.repeat} full run(s) within the budget; raise --budget-s")
    return config, {}


def chunk_steps_of(timesteps: int, chunk_steps: int) -> int:
    """Environment steps of the chunk whose report says ``timesteps``: a regular chunk, or the run's shorter
    last one (``T - chunk_steps * floor((T - 1) / chunk_steps)``)."""
    return int(timesteps - chunk_steps * ((timesteps - 1) // chunk_steps))


class StepCounter(Callback):
    """Driver side: the environment steps of every chunk any trial reported (a chunk cut by the budget before
    its report is not counted). Counted as results arrive, because a trial's own table does not keep every
    report: PBT's exploit and pause/restore cycles leave chunks out of ``Result.metrics_dataframe``."""

    def __init__(self, chunk_steps: int) -> None:
        self.chunk_steps, self.total = chunk_steps, 0

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        if result.get("timesteps"):
            self.total += chunk_steps_of(int(result["timesteps"]), self.chunk_steps)


def reported(results: Iterable[Any]) -> list[Any]:
    """The trials that reported at least once (a ``ResultGrid`` also holds trials the budget ended before they
    started, with no config or metrics)."""
    return [r for r in results if r.config and r.metrics]


def check_fresh_seeds_unused(results: Iterable[Any]) -> None:
    """Raise if a search trained (or started) any of the fresh evaluation seeds."""
    used = {int(r.config["seed"]) for r in results if r.config and "seed" in r.config}
    if used & set(FRESH_SEEDS):
        raise RuntimeError(f"a search trained fresh evaluation seeds {sorted(used & set(FRESH_SEEDS))}")


def seeds_per_config(pairs: Sequence[tuple[dict, float]]) -> list[int]:
    """Full runs per configuration, most first (RAHBO(k=20) completes a configuration at 20)."""
    counts: dict[str, int] = {}
    for config, _ in pairs:
        counts[live_hpo.config_key(config)] = counts.get(live_hpo.config_key(config), 0) + 1
    return sorted(counts.values(), reverse=True)


def search(task_name: str, method: str, seed: int, targs: argparse.Namespace) -> dict:
    """One method's search on one task for one search seed, and its recommendation's fresh-seed returns."""
    from ray import tune  # noqa: PLC0415

    import rl_tasks  # noqa: PLC0415

    setup = method_setup(method, targs.space, seed, targs.reports)
    storage = tempfile.mkdtemp(prefix="live_peers_")
    started = time.perf_counter()  # the pool's creation counts, as in live_hpo.py
    trainable, cache, pool = live_hpo.make_method_trainable(targs, method, checkpoint=setup.checkpoint)
    try:
        pool.worker_pids()  # workers up (holding their CPUs) before Tune places trials: no trial starves them
        steps = StepCounter(targs.chunk_steps)
        callbacks = [steps] if setup.checkpoint else [steps, rl_tasks.PoolPrefetch(trainable)]
        results = tune.Tuner(
            trainable, param_space={**targs.space, **setup.extra_space}, tune_config=tune_config(setup, targs.budget_s, targs.workers),
            run_config=tune.RunConfig(
                verbose=0, name=f"{task_name}-{method}-s{seed}", storage_path=storage, callbacks=callbacks,
                stop={"final": True} if setup.checkpoint else None,  # PBT never exploits into a finished run
                checkpoint_config=tune.CheckpointConfig(num_to_keep=2) if setup.checkpoint else None),
        ).fit()
        wall = time.perf_counter() - started
        check_fresh_seeds_unused(results)
        errors = len(results.errors)
        experiment, results = results.experiment_path, reported(results)
        config, extra = recommendation(setup, results, experiment)
        record = {"task": task_name, "method": method, "search_seed": seed, "wall_s": wall,
                  "env_steps": steps.total, "trials": len(results), "config": config,
                  "budget_s": targs.budget_s, "workers": targs.workers, "errors": errors,
                  "seeds_per_config": seeds_per_config(finals(results)), **extra}
    finally:
        pool.shutdown()
        shutil.rmtree(storage, ignore_errors=True)
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    record["fresh_returns"] = fresh_returns(config, targs)
    return record


def fresh_returns(config: dict, targs: argparse.Namespace) -> list[float]:
    """``config`` re-trained on the fresh seeds (``FRESH_SEEDS``, in order) on a pool of its own."""
    evaluator, cache, pool = live_hpo.make_method_trainable(targs, "reevaluation")
    try:
        returns = live_hpo.reevaluate([config], evaluator, targs)[0]
    finally:
        pool.shutdown()
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    return [float(r) for r in returns]


def load_records(path: Path) -> list[dict]:
    """The records written so far (none if the file does not exist)."""
    return json.loads(path.read_text()) if path.exists() else []


def append_record(path: Path, record: dict) -> None:
    """Add one record to ``path`` (written whole to a temporary file, then renamed: never half a file)."""
    records = [*load_records(path), record]
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(records, indent=1) + "\n")
    os.replace(temporary, path)


def plan(tasks: Sequence[str], methods: Sequence[str], seeds: Sequence[int],
         records: Iterable[dict]) -> list[tuple[str, str, int]]:
    """The (task, method, search seed) runs still to do, seed by seed (every task and method gets seed 0
    before any gets seed 1), skipping those with a record."""
    done = {(r["task"], r["method"], r["search_seed"]) for r in records}
    return [(t, m, s) for s in seeds for t in tasks for m in methods if (t, m, s) not in done]


def pb2_unavailable() -> str | None:
    """Why PB2 cannot run here (``None``: it can): its GPy and scikit-learn dependencies."""
    try:
        import GPy  # noqa: F401, PLC0415
        import sklearn  # noqa: F401, PLC0415
    except ImportError as err:
        return f"pb2 needs GPy and scikit-learn (`pip install GPy scikit-learn`): {err}"
    return None


# ----------------------------------------------------------------------------------------------- summary


def worst_share(returns: np.ndarray, share: float = 0.1) -> float:
    """Mean of the worst ``share`` of the returns (at least one)."""
    return float(np.sort(returns)[:max(1, math.ceil(share * len(returns)))].mean())


def task_scores(records: Sequence[dict]) -> list[dict]:
    """Per record of one task: fresh-seed mean return, MV on the one warp fitted to all of the task's fresh
    returns, and the mean of the worst 10 % of its seeds."""
    returns = [np.asarray(r["fresh_returns"], dtype=float) for r in records]
    scores = live_hpo.mv_on_one_warp(returns)
    return [{"method": r["method"], "search_seed": r["search_seed"], "mean": mean, "mv": mv,
             "worst10": worst_share(x)} for r, x, (mean, _, mv) in zip(records, returns, scores, strict=True)]


def bootstrap_ci(values: Sequence[float]) -> tuple[float, float]:
    """95 % percentile-bootstrap CI of the mean over search seeds (``metrics.bootstrap_ci``); ``nan`` (no interval)
    below ``MIN_CI_REPEATS`` seeds, as in the replay's summary: a percentile bootstrap of 2-4 values is not a 95 %
    interval."""
    from tune_risk.offline.metrics import MIN_CI_REPEATS  # noqa: PLC0415
    from tune_risk.offline.metrics import bootstrap_ci as percentile_ci  # noqa: PLC0415

    if len(values) < MIN_CI_REPEATS:
        return math.nan, math.nan
    return percentile_ci(np.asarray(values, dtype=float), statistic=np.mean, n_boot=4999, seed=0)


def paired_p(mine: dict[int, float], best: dict[int, float]) -> float:
    """Two-sided paired Wilcoxon p over the search seeds both have (1 if all equal, ``nan`` below 2 pairs)."""
    from tune_risk.offline.metrics import paired_p_value  # noqa: PLC0415

    seeds = sorted(mine.keys() & best.keys())
    if len(seeds) < 2:
        return math.nan
    return paired_p_value(np.array([mine[s] for s in seeds]), np.array([best[s] for s in seeds]))


def overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool | None:
    """Whether two CIs overlap (``None`` if either is undefined)."""
    if any(math.isnan(v) for v in (*a, *b)):
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def method_rows(records: Sequence[dict], methods: Sequence[str]) -> list[dict]:
    """One row per method of one task: costs, scores with CIs, and the comparison with the best MV."""
    scores = task_scores(records)
    rows = []
    for method in methods:
        mine = [r for r in records if r["method"] == method]
        if not mine:
            continue
        own = [s for s in scores if s["method"] == method]
        row = {"method": method, "seeds": len(mine), "per_seed_mv": {s["search_seed"]: s["mv"] for s in own},
               **{k: float(np.mean([r[k] for r in mine])) for k in ("wall_s", "env_steps", "trials", "budget_s")}}
        for key in ("mean", "mv", "worst10"):
            values = [s[key] for s in own]
            row[key], row[f"{key}_ci"] = float(np.mean(values)), bootstrap_ci(values)
        rows.append(row)
    best = max(rows, key=lambda row: row["mv"])
    for row in rows:
        row["best"] = row is best
        row["p"] = math.nan if row is best else paired_p(row["per_seed_mv"], best["per_seed_mv"])
        row["overlap"] = overlaps(row["mv_ci"], best["mv_ci"])
    return rows


def cell(value: float, ci: tuple[float, float], digits: int) -> str:
    """``value [lo, hi]`` (no CI below 2 search seeds)."""
    text = f"{value:.{digits}f}"
    return text if math.isnan(ci[0]) else f"{text} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def table(rows: Sequence[dict]) -> list[str]:
    """The markdown table of one task."""
    lines = ["| method | search seeds | wall s | env steps | trials | mean return [95 % CI] | MV (one warp) [CI] "
             "| worst 10 % seeds [CI] | Wilcoxon p (MV vs best) | MV CI overlaps best |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        p = "best" if r["best"] else ("n/a" if math.isnan(r["p"]) else f"{r['p']:.3f}")
        overlap = "—" if r["best"] else {None: "n/a", True: "yes", False: "no"}[r["overlap"]]
        lines.append(f"| {r['method']} | {r['seeds']} | {r['wall_s']:.0f} | {r['env_steps']:,.0f} | {r['trials']:.1f} "
                     f"| {cell(r['mean'], r['mean_ci'], 1)} | {cell(r['mv'], r['mv_ci'], 4)} "
                     f"| {cell(r['worst10'], r['worst10_ci'], 1)} | {p} | {overlap} |")
    return lines


def verdict(rows: Sequence[dict], method: str = "erahbo") -> str:
    """Where ``method`` stands on a task: best, not separable from the best, or behind it (by how much)."""
    mine = next((r for r in rows if r["method"] == method), None)
    if mine is None:
        return f"{method}: no record yet"
    best = next(r for r in rows if r["best"])
    by_return = max(rows, key=lambda r: r["mean"])
    lo, hi = by_return["mean_ci"]
    within = "n/a" if math.isnan(lo) else ("yes" if lo <= mine["mean"] <= hi else "no")
    where = (f"mean return {mine['mean']:.1f}, the best" if by_return is mine else
             f"mean return {mine['mean']:.1f} within the CI of the best mean return ({by_return['method']}): {within}")
    if mine["best"]:
        return f"{method}: best MV; {where}"
    separable = (not math.isnan(mine["p"]) and mine["p"] < 0.05) or mine["overlap"] is False
    state = "behind" if separable else "not separable from"
    return (f"{method}: {state} the best MV ({best['method']}, {best['mv']:.4f}) by {best['mv'] - mine['mv']:.4f} "
            f"(Wilcoxon p={mine['p']:.3f}, CI overlap: {mine['overlap']}); {where}")


def notes(task_records: Sequence[dict]) -> list[str]:
    """Per-task facts beside the table: PBT members' own returns, RAHBO's completed configurations."""
    lines = []
    for method in ("pbt", "pb2"):
        own = [r for r in task_records if r["method"] == method and "member_return" in r]
        if own:
            lines.append(f"- {method}: the best member's own last return (PBT's schedule, not reproduced by the "
                         f"re-training from scratch): mean {np.mean([r['member_return'] for r in own]):.1f} over "
                         f"{len(own)} search seeds, against its recommendation's fresh-seed mean "
                         f"{np.mean([np.mean(r['fresh_returns']) for r in own]):.1f}; exploits per run "
                         f"{', '.join(str(r.get('perturbations', '?')) for r in own)}; its population of "
                         f"{POPULATION} members trains {POPULATION} full runs in all and stops, budget left or not (wall "
                         f"{np.mean([r['wall_s'] for r in own]):.0f} s of {np.mean([r['budget_s'] for r in own]):g})")
    rahbo = [r for r in task_records if r["method"] == "rahbo-k20"]
    if rahbo:
        done = [sum(1 for n in r.get("seeds_per_config", []) if n >= 20) for r in rahbo]
        lines.append(f"- rahbo-k20 completed (20 seeds) {', '.join(map(str, done))} configurations per search seed "
                     "within the budget")
    failed = [f"{r['method']} seed {r['search_seed']}: {r['errors']}" for r in task_records if r.get("errors")]
    if failed:
        lines.append(f"- trials that failed: {'; '.join(failed)}")
    return lines


def figure(task: str, rows: Sequence[dict], path: Path) -> None:
    """Fresh-seed MV per method: one point per search seed, the mean with its bootstrap CI."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(1.2 * len(rows) + 2.5, 3.6))
    for i, row in enumerate(rows):
        values = list(row["per_seed_mv"].values())
        ax.scatter(i + np.linspace(-0.12, 0.12, len(values)), values, s=18, alpha=0.7, color="tab:blue")
        lo, hi = row["mv_ci"]
        error = None if math.isnan(lo) else [[row["mv"] - lo], [hi - row["mv"]]]
        ax.errorbar(i + 0.3, row["mv"], yerr=error, fmt="s", color="black", capsize=3)
    ax.set_xticks(range(len(rows)), [r["method"] for r in rows], rotation=20)
    ax.set_ylabel("fresh-seed MV\n(one warp per task)")
    ax.set_title(f"{task}: 20 fresh seeds per recommendation\n(points: search seeds; squares: mean, 95 % CI)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it (the repository root), else as is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def write_summary(records: Sequence[dict], out: Path) -> Path:
    """``peers.md`` beside ``out`` (and one ``peers_<task>.png`` per task), from the records alone."""
    page = out.with_suffix(".md")
    lines = ["# Live head-to-head at equal wall-clock budget (`experiments/studies/live_peers.py`)", "",
             f"Rebuilt from `{out.name}` by `python experiments/studies/live_peers.py --only-summary --out {shown(out)}`. "
             f"Each recommendation is re-trained on the same {EVAL_SEEDS} fresh seeds "
             f"({FRESH_SEEDS[0]}..{FRESH_SEEDS[-1]}), which no search trained; MV = mean - variance of the returns "
             "warped by one warp fitted to all fresh returns of the task; CIs: 95 % percentile bootstrap over "
             "search seeds, none with fewer than 5 (a bootstrap of 2-4 values is not a 95 % interval); Wilcoxon: paired over the search seeds both methods have (two-sided; with n pairs its "
             "smallest possible p is 2/2^n, e.g. 0.0625 at n = 5, so at 5 search seeds no difference reaches "
             "p < 0.05 on the test alone). Wall budgets are equal, compute is not quite: the machine is shared, so "
             "the environment steps column says how much each method trained in its budget. Shared draws: with "
             "one search seed, tpe-rep3's first 10 configurations are random-rep5's first 10 (Optuna's TPE starts "
             "with its own RandomSampler(seed)), asha samples the same stream one seed each, and pbt and pb2 start "
             "from one initial population, so a recommendation can coincide (same config, same fresh returns).", ""]
    reason = pb2_unavailable()
    if reason and not any(r["method"] == "pb2" for r in records):
        lines += [f"pb2: not run — {reason}.", ""]
    for task in [t for t in TASKS if any(r["task"] == t for r in records)]:
        task_records = [r for r in records if r["task"] == task]
        rows = method_rows(task_records, METHODS)
        budget = sorted({r["budget_s"] for r in task_records})
        workers = sorted({r["workers"] for r in task_records})
        spec = TASKS[task]
        lines += [f"## {task}: {spec.algo} on {spec.env}, time_budget_s {', '.join(f'{b:g}' for b in budget)} per "
                  f"run, {', '.join(map(str, workers))} warm pool worker(s)", "", *table(rows), "",
                  f"- {verdict(rows)}", *notes(task_records), "", f"![{task}]({out.stem}_{task}.png)", ""]
        figure(task, rows, page.parent / f"{out.stem}_{task}.png")
    page.write_text("\n".join(lines))
    return page


# -------------------------------------------------------------------------------------------------- runs


def parse_names(text: str, valid: Sequence[str], flag: str) -> list[str]:
    """Comma-separated names, each one of ``valid`` (else ``ValueError`` naming the flag and the valid names)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        raise ValueError(f"{flag}: unknown {', '.join(map(repr, unknown)) or 'empty list'}; valid: {', '.join(valid)}")
    return names


def task_args(name: str, args: argparse.Namespace) -> argparse.Namespace:
    """What ``live_hpo``'s helpers read, for one task: budgets, pool, the pre-warmed cache, the report schedule."""
    import ray  # noqa: PLC0415

    import rl_tasks  # noqa: PLC0415

    task = TASKS[name]
    steps = args.steps or task.steps
    targs = argparse.Namespace(algo=task.algo, env=task.env, steps=steps, eval_episodes=args.eval_episodes,
                               eval_seeds=EVAL_SEEDS, workers=args.workers, pool=True, no_compilation_cache=False,
                               gpus_per_trial=0.0, prewarmed=None, prewarmed_programs=0,
                               budget_s=args.budget_s or task.budget_s)
    targs.space = {**rl_tasks.get_space(task.algo, task.env), **task.fixed}
    budgets = live_hpo.trial_budgets(targs)
    targs.reports, targs.chunk_steps = ray.get(ray.remote(num_cpus=1)(report_schedule).remote(
        task.algo, task.env, steps, budgets["eval_every"], budgets["eval_episodes"]))
    targs.prewarmed, targs.prewarm_s, targs.prewarmed_programs = live_hpo.prewarm_cache(targs.space, targs)
    return targs


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; an unknown task or method is one line naming the flag and the valid names."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, of: {', '.join(TASKS)}")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of: {', '.join(METHODS)}")
    parser.add_argument("--search-seeds", type=int, default=5, help="search seeds 0 .. N-1 per task and method")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="time_budget_s of every run (default: the task's: "
                             + ", ".join(f"{n} {t.budget_s:g}" for n, t in TASKS.items()) + ")")
    parser.add_argument("--steps", type=int, default=None, help="training steps per run (default: the task's)")
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="warm pool workers (and Ray CPUs) of every run")
    parser.add_argument("--out", type=Path, default=RESULTS / "peers.json", help="records; peers.md beside it")
    parser.add_argument("--only-summary", action="store_true", help="rebuild the summary from --out and stop")
    parser.add_argument("--quick", action="store_true", help=f"a small end-to-end run: defaults {QUICK}")
    if parser.parse_known_args(argv)[0].quick:
        parser.set_defaults(**QUICK)
    args = parser.parse_args(argv)
    try:
        args.tasks = parse_names(args.tasks, tuple(TASKS), "--tasks")
        args.methods = parse_names(args.methods, METHODS, "--methods")
    except ValueError as err:
        parser.error(str(err))
    args.out = Path(args.out)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.only_summary:
        print(write_summary(load_records(args.out), args.out))
        return
    import ray  # noqa: PLC0415

    methods = list(args.methods)
    if "pb2" in methods and (reason := pb2_unavailable()):
        print(f"skipping {reason}")
        methods.remove("pb2")
    todo = plan(args.tasks, methods, range(args.search_seeds), load_records(args.out))
    print(f"{len(todo)} runs to do, writing {args.out}", flush=True)
    ray.init(address="local", num_cpus=args.workers, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    prepared: dict[str, argparse.Namespace] = {}
    for task, method, seed in todo:
        if task not in prepared:
            prepared[task] = task_args(task, args)
        started = time.perf_counter()
        record = search(task, method, seed, prepared[task])
        append_record(args.out, record)
        write_summary(load_records(args.out), args.out)
        print(f"{task} {method} seed {seed}: wall {record['wall_s']:.0f} s, {record['trials']} trials, "
              f"{record['env_steps']:,} steps, fresh mean {np.mean(record['fresh_returns']):.1f} "
              f"({time.perf_counter() - started:.0f} s with re-training)", flush=True)


if __name__ == "__main__":
    main()
