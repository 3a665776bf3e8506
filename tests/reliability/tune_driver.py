"""A Ray Tune replay of an offline table, as a driver process that the reliability tests SIGKILL.

    python tests/reliability/tune_driver.py fresh   --table T.parquet --storage DIR --log L.jsonl --out O.json
    python tests/reliability/tune_driver.py restore --table T.parquet --storage DIR --log L.jsonl --out O.json

``fresh`` starts the run (``RiskAwareSearch`` with the table's rows as ``candidates`` +
``ReplicateScheduler``, the trainable reading the table, ``storage_path=DIR``); ``restore`` continues
it with ``tune_risk.tune.restore.restore_tuner(DIR/NAME, trainable=...)`` (``--restore-with ray``: plain
``tune.Tuner.restore``) and appends its repair report to ``--log``'s ``.repairs`` file. With
``--tear-control C`` Tune's storage filesystem is ``tear_fs``'s, which the test arms through ``C`` to
stop a snapshot copy half-way (a kill inside the copy window). Every finished trial (complete or error) is
appended by a Tune callback to ``--log`` as one JSON line *after* the searcher has seen it, so a
line in the log is a replicate the driver had completed when it was killed. When ``fit()`` returns,
the searcher's final state is written to ``--out`` (JSON).

Each driver starts its own local Ray (``ray.init(address="local", num_cpus=..., include_dashboard=False)``):
the test runs it in a new process session so that the whole group can be killed afterwards.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "0"  # result.json: the ResultGrid lists every trial
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

STARTED = time.monotonic()
NAME = "replay"
METHOD = "erahbo"
OVERRIDES = {"k_max": 6, "k_init": 2, "n_initial": 3, "intensify": 2}  # a small run: ~30 trials; intensification
# on (RiskAwareSearch's default; its reserve must survive a restore too), given as runs to both paths


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("fresh", "restore"))
    parser.add_argument("--table", type=Path, required=True)
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=int, default=20, help="incorporated BO replicates (samples)")
    parser.add_argument("--repeat", type=int, default=0, help="replay repetition (its seed)")
    parser.add_argument("--workers", type=int, default=2, help="trials at once (max_concurrent_trials)")
    parser.add_argument("--trial-sleep", type=float, default=0.0, help="seconds each trial sleeps")
    parser.add_argument("--tear-control", type=Path, default=None, help="control directory of tear_fs")
    parser.add_argument("--restore-with", choices=("tune_risk", "ray"), default="tune_risk",
                        help="restore_tuner (repairs a torn snapshot) or plain tune.Tuner.restore")
    return parser.parse_args(argv)


def make_task(table_path: Path):
    from tune_risk.offline.replay import ReplayTask
    from tune_risk.offline.table import OfflineTable

    table = OfflineTable.load(table_path)
    return table, ReplayTask.from_table(table)


def make_trainable(task, repeat: int, sleep: float):
    """The replay trainable: the return of table row ``config["table_row"]`` for the replicate's seed, as
    ``tune_risk.offline.replay.replay_trainable`` reports it, but defined here so that Ray pickles it by
    value and its workers import neither tune_risk nor torch (they would take ~8 s more to start)."""
    from tune_risk.offline.replay import ROW_KEY, seed_permutation

    columns = np.stack([seed_permutation(repeat, row, task.n_seeds) for row in range(task.returns.shape[0])])
    values = np.take_along_axis(task.returns, columns, axis=1)  # values[row, seed index]

    def trainable(config: dict) -> None:
        import time as _time

        from ray import tune

        if sleep:
            _time.sleep(sleep)
        row, seed_index = int(config[ROW_KEY]), int(config["seed"])
        tune.report({"return": float(values[row, seed_index]), "table_seed": int(columns[row, seed_index])})

    return trainable


def trial_line(trial, event: str) -> dict:
    """The fields of every log line: the event, the trial, its replicate (table row, seed) and its last return."""
    result = trial.last_result or {}
    return {"event": event, "trial_id": trial.trial_id, "row": trial.config.get("table_row"),
            "seed": trial.config.get("seed"), "value": result.get("return")}


def append_line(path: str, line: dict) -> None:
    """Append ``line`` as one JSON line and flush, so a SIGKILL right after leaves it on disk."""
    with open(path, "a") as file:
        file.write(json.dumps(line) + "\n")
        file.flush()


def make_log_callback(log_path: str):
    """A Tune callback appending one JSON line per finished trial (pickled into the experiment)."""
    from ray import tune

    class CompletionLog(tune.Callback):
        def __init__(self, path: str) -> None:
            self.path = path

        def _append(self, trial, event: str) -> None:
            append_line(self.path, {**trial_line(trial, event), "pid": os.getpid()})

        def on_trial_start(self, iteration, trials, trial, **info):
            staging = Path(f"{self.path}.staging")  # where this driver stages its experiment state
            if not staging.exists():
                staging.write_text(trial.storage.experiment_driver_staging_path)

        def on_trial_complete(self, iteration, trials, trial, **info):
            self._append(trial, "complete")

        def on_trial_error(self, iteration, trials, trial, **info):
            self._append(trial, "error")

    return CompletionLog(log_path)


def make_searcher(table, task, budget: int, repeat: int):
    """``RiskAwareSearch`` over the table's rows (``candidates``) with the replay's ERAHBO settings, and the
    ``num_samples`` to give Tune (a cap well above what the budget uses: the searcher's FINISHED ends the run)."""
    from tune_risk.offline.replay import ROW_KEY, check_budget, method_settings
    from tune_risk.tune.searcher import RiskAwareSearch

    settings = method_settings(METHOD, budget, seed=repeat, **OVERRIDES)
    check_budget(task, settings)
    candidates = [{**table.config(row), ROW_KEY: row} for row in range(table.n_configs)]
    searcher = RiskAwareSearch(
        table.space, metric="return", mode="max", method=METHOD, k_min=settings.k_min, k_max=settings.k_max,
        n_initial=settings.n_initial, random_state_seed=repeat, k_init=settings.replicates_initial,
        common_random_numbers=True, candidates=candidates, budget=budget, warp=task.warp,
        budget_unit="samples", max_active_configs=1, intensify=settings.intensify,
    )
    return searcher, settings.n_initial * settings.replicates_initial + 4 * budget


def storage_filesystem(args: argparse.Namespace):
    """``tear_fs``'s filesystem when the test wants to tear copies, else Tune's default (``None``)."""
    if args.tear_control is None:
        return None
    from tear_fs import tearing_filesystem

    return tearing_filesystem(args.tear_control, args.storage / NAME)


def restore(args: argparse.Namespace, trainable):
    """Continue the run: ``restore_tuner`` (its repair report appended to the log's ``.repairs`` file)
    or, with ``--restore-with ray``, plain ``tune.Tuner.restore``."""
    from ray import tune

    path, fs = str(args.storage / NAME), storage_filesystem(args)
    if args.restore_with == "ray":
        return tune.Tuner.restore(path, trainable=trainable, storage_filesystem=fs)
    from tune_risk.tune.restore import repair_experiment, restore_tuner

    report = repair_experiment(path, fs)  # restore_tuner repeats it: a no-op on a consistent snapshot
    append_line(f"{args.log}.repairs", {**report.to_dict(), "pid": os.getpid()})
    return restore_tuner(path, trainable=trainable, storage_filesystem=fs)


def build_tuner(args: argparse.Namespace, task, table):
    from ray import tune

    from tune_risk.tune.scheduler import ReplicateScheduler

    searcher, max_runs = make_searcher(table, task, args.budget, args.repeat)
    return tune.Tuner(
        make_trainable(task, args.repeat, args.trial_sleep),
        tune_config=tune.TuneConfig(
            search_alg=searcher, scheduler=ReplicateScheduler(searcher), num_samples=max_runs,
            max_concurrent_trials=args.workers, reuse_actors=True,
        ),
        run_config=tune.RunConfig(storage_path=str(args.storage), name=NAME, verbose=0,
                                  storage_filesystem=storage_filesystem(args),
                                  callbacks=[make_log_callback(str(args.log))]),
    )


def final_state(tuner, results) -> dict:
    """Everything the test checks: the searcher's engine, trial ids, results() and Tune's trials."""
    search_alg = tuner._local_tuner._tune_config.search_alg
    searcher = getattr(search_alg, "searcher", search_alg)  # unwrap the ConcurrencyLimiter
    engine = searcher.engine
    table = searcher.results()
    return {
        "engine_state": engine.state_dict(),
        "counts": engine.counts(),
        "trial_to_run": dict(searcher._trial_to_run),
        "results": json.loads(table.to_json(orient="records")),
        "tune_trials": sorted(r.metrics.get("trial_id") for r in results if r.metrics),
        "n_results": len(results),
        "n_errors": len(results.errors),
        "best_config": searcher.best_config,
    }


def phase(name: str) -> None:
    """Print how long the driver has run (the console file shows where a slow driver spends its time)."""
    print(f"[tune_driver] {name} after {time.monotonic() - STARTED:.1f} s", flush=True)


def main(argv: list[str]) -> int:
    args = parse(argv)
    import ray

    table, task = make_task(args.table)
    phase("imports")
    ray.init(address="local", num_cpus=max(2, args.workers), include_dashboard=False, log_to_driver=False,
             configure_logging=False, logging_level=logging.WARNING)
    phase("ray.init")
    started = time.perf_counter()
    if args.mode == "fresh":
        tuner = build_tuner(args, task, table)
    else:
        tuner = restore(args, make_trainable(task, args.repeat, args.trial_sleep))
    phase("tuner ready")
    results = tuner.fit()
    phase("fit")
    state = final_state(tuner, results)
    state["mode"], state["seconds"] = args.mode, time.perf_counter() - started
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(args.out)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
