"""A live RL search on a warm worker pool, as a driver process that the reliability tests SIGKILL.

    python tests/reliability/pool_driver.py fresh   --table C.json --storage DIR --log L.jsonl --out O.json
    python tests/reliability/pool_driver.py restore --table C.json --storage DIR --log L.jsonl --out O.json

The counterpart of ``tune_driver.py`` (same command line, log and final state, so that
``reliability_support.run_driver`` drives both) for the pool path: ``RiskAwareSearch`` (the candidate
configurations of ``--table``, a JSON list written by ``write_candidates``) + ``ReplicateScheduler`` over
``rl_tasks.make_pooled_trainable`` on an ``rl_tasks.WorkerPool`` of ``--workers`` workers, PPO on
CartPole-v1 with a tiny budget (``TASK``, the shape ``tests/rl/test_pool.py`` uses, so one compiled program
serves every worker through the persistent compilation cache of ``$JAX_COMPILATION_CACHE_DIR``). ``restore``
continues the run in a new driver: a new local Ray, a **new pool**, and ``tune_risk.restore_tuner(DIR/NAME,
trainable=make_pooled_trainable(new_pool, ...))`` (``--restore-with ray``: ``tune.Tuner.restore``).
``--trial-sleep`` and ``--tear-control`` are accepted for the harness's command line; the first is unused,
the second is not supported here.

The final state (``tune_driver.final_state``) also records the pool: its workers' pids, how many it started,
and the training process of every finished trial of this driver (``trainers``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Imported by the tests too (its searcher and reference run): nothing here changes the test process's
# environment; main() does, as tune_driver.py does at import.

ALGO, ENV = "ppo", "CartPole-v1"
BUDGET, WORKERS, REPEAT = 14, 2, 0  # the tests' run: 14 replicate runs on 2 pool workers, searcher seed 0
TASK = {"total_timesteps": 4096, "eval_every": 2048, "eval_episodes": 8}  # two chunks per replicate
MINIBATCH = 256  # the only static hyperparameter of PPO's program: fixed, so one program for every trial
ROW_KEY = "table_row"  # the candidate's index (the completion log's "row")
SETTINGS = {"method": "erahbo", "k_min": 2, "k_max": 4, "n_initial": 3, "k_init": 2, "intensify": 0}


def share_jax_cache() -> None:
    """For a test process, as ``tests/rl/conftest.py`` (``setdefault``: one cache for the whole session): one
    host device and a persistent compilation cache that the test process and every driver's pool workers
    (they inherit the environment) share, so the program compiles once."""
    import tempfile

    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="rl_tasks_jax_cache_"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


def search_space() -> dict:
    import rl_tasks

    return {**rl_tasks.get_space(ALGO, ENV), "minibatch_size": MINIBATCH}


def write_candidates(path: Path, n: int = 16, seed: int = 0) -> Path:
    """``n`` PPO configurations drawn from the space (fixed ``minibatch_size``), each with its row index."""
    import numpy as np

    from rl_tasks.spaces import config_from_unit

    space = {name: domain for name, domain in search_space().items() if name != "minibatch_size"}
    rng = np.random.default_rng(seed)
    configs = [{**config_from_unit(space, rng.random(len(space))), "minibatch_size": MINIBATCH, ROW_KEY: row}
               for row in range(n)]
    path.write_text(json.dumps(configs))
    return path


def make_searcher(candidates: list[dict], budget: int, repeat: int):
    """The searcher (decision-equivalent mode, ``max_active_configs=1``) and Tune's ``num_samples`` cap (the
    searcher's FINISHED ends the run)."""
    from tune_risk import RiskAwareSearch

    searcher = RiskAwareSearch(
        search_space(), metric="return", mode="max", random_state_seed=repeat, common_random_numbers=True,
        candidates=candidates, budget=budget, max_active_configs=1, final_key="final", **SETTINGS,
    )
    return searcher, 3 * budget


def reference_engine(candidates: list[dict], budget: int, repeat: int, workers: int):
    """The uninterrupted run: ``make_searcher``'s searcher driven to completion without Tune
    (``reliability_support.drive_searcher``), each replicate trained in this process by
    ``rl_tasks.seed_run.SeedRun`` (bit-identical to a pool worker's); its engine. Imports JAX."""
    from reliability_support import drive_searcher

    from rl_tasks.seed_run import SeedRun

    searcher, _ = make_searcher(candidates, budget, repeat)

    def evaluate(config: dict) -> float:
        run = SeedRun(ALGO, ENV, config, int(config["seed"]), TASK["total_timesteps"], TASK["eval_every"],
                      TASK["eval_episodes"])
        while not run.finished:
            chunk = run.advance()
        return chunk.value

    drive_searcher(searcher, evaluate, workers)
    return searcher.engine


def make_trainable(pool):
    import rl_tasks

    return rl_tasks.make_pooled_trainable(pool, ALGO, ENV, **TASK)


def make_trainer_log(path: str):
    """A Tune callback appending ``{driver, trial_id, worker_pid}`` for every trial that finished its replicate:
    which process trained it, under which driver (pickled into the experiment, so restores keep it)."""
    from ray import tune
    from tune_driver import append_line

    class TrainerLog(tune.Callback):
        def __init__(self, log_path: str) -> None:
            self.path = log_path

        def on_trial_complete(self, iteration, trials, trial, **info):
            result = trial.last_result or {}
            if result.get("final"):
                append_line(self.path, {"driver": os.getpid(), "trial_id": trial.trial_id,
                                        "worker_pid": int(result["worker_pid"])})

    return TrainerLog(path)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("fresh", "restore"))
    parser.add_argument("--table", type=Path, required=True, help="candidate configurations (write_candidates)")
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=int, default=BUDGET, help="replicate runs (budget_unit='runs')")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="the searcher's random_state_seed")
    parser.add_argument("--workers", type=int, default=WORKERS, help="pool workers = max_concurrent_trials")
    parser.add_argument("--trial-sleep", type=float, default=0.0, help="unused")
    parser.add_argument("--tear-control", type=Path, default=None, help="not supported")
    parser.add_argument("--restore-with", choices=("tune_risk", "ray"), default="tune_risk")
    args = parser.parse_args(argv)
    if args.tear_control is not None:
        parser.error("--tear-control is not supported by the pool driver")
    return args


def driver_environment() -> None:
    """The environment of a driver process (``tune_driver.py``'s, and one JAX device)."""
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "0"  # result.json: the ResultGrid lists every trial
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")


def main(argv: list[str]) -> int:
    driver_environment()
    args = parse(argv)
    import ray
    from ray import tune
    from tune_driver import NAME, final_state, make_log_callback, phase, restore

    import rl_tasks
    from tune_risk import ReplicateScheduler

    candidates = json.loads(args.table.read_text())
    ray.init(address="local", num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
             configure_logging=False, logging_level=logging.WARNING)
    phase("ray.init")
    started = time.perf_counter()
    pool = rl_tasks.WorkerPool(args.workers)  # a new pool in every driver: the old one died with its driver
    trainable = make_trainable(pool)
    if args.mode == "fresh":
        searcher, max_runs = make_searcher(candidates, args.budget, args.repeat)
        tuner = tune.Tuner(
            trainable,
            tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher),
                                        num_samples=max_runs, max_concurrent_trials=pool.size, reuse_actors=True),
            run_config=tune.RunConfig(storage_path=str(args.storage), name=NAME, verbose=0,
                                      callbacks=[make_log_callback(str(args.log)),
                                                 make_trainer_log(f"{args.log}.trainers")]),
        )
    else:  # restore_tuner (or tune.Tuner.restore) with a trainable on the new pool
        tuner = restore(args, trainable)
    phase("tuner ready")
    results = tuner.fit()
    phase("fit")
    state = final_state(tuner, results)
    trainers = Path(f"{args.log}.trainers")
    lines = [json.loads(line) for line in (trainers.read_text().splitlines() if trainers.exists() else [])
             if line.endswith("}")]  # a torn last line (a killed driver's) is ignored
    state["trainers"] = sorted({line["worker_pid"] for line in lines if line["driver"] == os.getpid()})
    state["pool_pids"], state["workers_started"] = pool.worker_pids(), pool.workers_started()
    state["mode"], state["seconds"] = args.mode, time.perf_counter() - started
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(args.out)
    pool.shutdown()
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
