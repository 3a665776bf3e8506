"""A table replay on a 3-node local Ray cluster whose worker node is killed mid-run.

    python tests/reliability/node_loss_driver.py --table T.parquet --workdir DIR --max-failures 2

The cluster (``ray.cluster_utils.Cluster``) has a head without CPUs (the Tune driver runs there) and
two worker nodes with 1 CPU each, so the trials run on the workers. A Tune callback appends every
trial event (complete, error, recover) with the node the trial reported from to ``DIR/events.jsonl``;
a thread kills one worker node (``remove_node(allow_graceful=False)``: its raylet and every worker
process on it die) once ``--kill-after`` trials have completed and a trial is running on it. With
``FailureConfig(max_failures=N)`` Tune re-runs the trials that were on the dead node (N >= 1) or
reports them as errors (N = 0), which ``RiskAwareSearch`` counts as failed replicates. The final
state goes to ``DIR/final.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "0"
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune_driver import append_line, make_searcher, make_task, trial_line  # noqa: E402


def make_trainable(task, repeat: int, steps: int, step_seconds: float):
    """The table replay with ``steps`` intermediate reports (each tagged with the node) before the final one;
    the table column is ``seed_permutation(repeat, row)[seed]``, as in ``replay_trainable``."""
    returns, n_seeds = task.returns, task.n_seeds

    def trainable(config: dict) -> None:
        import os
        import time as _time

        import ray
        from ray import tune

        from tune_risk.offline.replay import seed_permutation

        row, seed_index = int(config["table_row"]), int(config["seed"])
        column = int(seed_permutation(repeat, row, n_seeds)[seed_index])
        value = float(returns[row, column])
        node, pid = ray.get_runtime_context().get_node_id(), os.getpid()
        for step in range(steps):
            _time.sleep(step_seconds)
            tune.report({"return": 0.5 * value, "node": node, "pid": pid, "step": step})
        tune.report({"return": value, "node": node, "step": steps, "table_seed": column})

    return trainable


def make_event_log(path: str, fields: tuple[str, ...] = ("node", "pid", "step")):
    """A Tune callback that appends every trial event (result, complete, error, recover) to ``path``, with the
    given fields of the trial's result (the reported one for results, the last one otherwise) and the time."""
    from ray import tune

    class EventLog(tune.Callback):
        def __init__(self, log_path: str) -> None:
            self.path = log_path

        def _append(self, trial, event: str, result: dict | None = None) -> None:
            result = result or trial.last_result or {}
            append_line(self.path, {**trial_line(trial, event), **{f: result.get(f) for f in fields},
                                    "time": time.time()})

        def on_trial_result(self, iteration, trials, trial, result, **info):
            self._append(trial, "result", result)

        def on_trial_complete(self, iteration, trials, trial, **info):
            self._append(trial, "complete")

        def on_trial_error(self, iteration, trials, trial, **info):
            self._append(trial, "error")

        def on_trial_recover(self, iteration, trials, trial, **info):
            self._append(trial, "recover")

    return EventLog(path)


def read_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def node_killer(cluster, workers, events: Path, kill_after: int, record: dict, stop: threading.Event) -> None:
    """Kill the worker node that runs a trial, once ``kill_after`` trials have completed: its raylet and
    the worker processes of the trials running there (as a machine failure would)."""
    by_id = {w.node_id: w for w in workers}
    while not stop.is_set():
        lines = read_events(events)
        completed = sum(line["event"] == "complete" for line in lines)
        if completed >= kill_after:
            running: dict[str, tuple] = {}  # trial -> (node, pid) of its latest intermediate result
            for line in lines:
                if line["event"] == "result" and line.get("step") is not None and line["step"] < 3:
                    running[line["trial_id"]] = (line["node"], line["pid"])
                elif line["event"] in ("complete", "error", "recover"):
                    running.pop(line["trial_id"], None)
            targets = [node for node, _ in running.values() if node in by_id]
            if targets:
                victim = by_id[targets[-1]]
                there = {t: pid for t, (node, pid) in running.items() if node == victim.node_id}
                cluster.remove_node(victim, allow_graceful=False)
                for pid in there.values():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                record.update(node_id=victim.node_id, completed_before=completed, at=time.time(),
                              running_there=sorted(there))
                return
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--max-failures", type=int, default=2)
    parser.add_argument("--kill-after", type=int, default=6)
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=0)
    args = parser.parse_args(argv)

    import ray
    from ray import tune
    from ray.cluster_utils import Cluster

    from tune_risk.tune.scheduler import ReplicateScheduler

    args.workdir.mkdir(parents=True, exist_ok=True)
    events = args.workdir / "events.jsonl"
    table, task = make_task(args.table)
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
    cluster_seconds = time.perf_counter() - started

    searcher, max_runs = make_searcher(table, task, args.budget, args.repeat)
    tuner = tune.Tuner(
        make_trainable(task, args.repeat, steps=3, step_seconds=0.3),
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), num_samples=max_runs,
                                    max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(args.workdir / "storage"), name="node_loss", verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=args.max_failures),
                                  callbacks=[make_event_log(str(events))]),
    )
    killed: dict = {}
    stop = threading.Event()
    killer = threading.Thread(target=node_killer, args=(cluster, workers, events, args.kill_after, killed, stop),
                              daemon=True)
    killer.start()
    fit_started = time.perf_counter()
    results = tuner.fit()
    fit_seconds = time.perf_counter() - fit_started
    stop.set()
    killer.join(timeout=30)

    trials = results._experiment_analysis.trials
    engine = searcher.engine
    state = {
        "killed": killed, "max_failures": args.max_failures, "budget": args.budget,
        "engine_state": engine.state_dict(), "counts": engine.counts(),
        "trial_to_run": dict(searcher._trial_to_run),
        "trials": [{"trial_id": t.trial_id, "status": t.status, "num_failures": t.run_metadata.num_failures}
                   for t in trials],
        "n_errors": len(results.errors), "results": json.loads(searcher.results().to_json(orient="records")),
        "cluster_seconds": cluster_seconds, "fit_seconds": fit_seconds,
    }
    (args.workdir / "final.json").write_text(json.dumps(state))
    ray.shutdown()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
