"""A live RL search on a warm worker pool over a 4-node local Ray cluster; a node holding a pool worker dies.

    python tests/reliability/pool_node_loss_driver.py --table C.json --workdir DIR --max-failures 2

The pool counterpart of ``node_loss_driver.py`` (same command line, so ``reliability_support.run_node_loss``
runs both). The cluster (``ray.cluster_utils.Cluster``) has a head without CPUs (the Tune driver and,
since it is pinned to the driver's node, the pool's manager) and two worker nodes with 1 CPU each, where the
2-worker ``rl_tasks.WorkerPool`` places its workers; a spare node with 2 CPUs joins once they are up, so
that the pool can replace lost workers (thin trials go anywhere: they need 0.01 CPU). The search is
``pool_driver.py``'s (``RiskAwareSearch`` over PPO candidates + ``ReplicateScheduler``, ``--table`` the
candidates' JSON) with ``FailureConfig(max_failures=N)``.

Once ``--kill-after`` trials have completed, a thread kills a worker node while its pool worker trains a
replicate (an intermediate result of that worker is some running trial's latest): every process on it
(the raylet's children: the pool worker, thin trials placed there) is SIGKILLed and the node removed
(``remove_node(allow_graceful=False)``), as a machine failure would. The victim is the node where Ray
put the pool's manager if that is a worker node (a CPU-less actor may land on any node: the pool must
survive the loss of every node but the driver's), else any node with a training worker. The final state
(``DIR/final.json``) holds the searcher's, Tune's and the pool's: its workers' pids and nodes after the
run, the manager's node, the workers started.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pool_driver import driver_environment, make_searcher, make_trainable  # noqa: E402

driver_environment()

from node_loss_driver import make_event_log, read_events  # noqa: E402


def node_of(actor) -> str:
    """The node an actor runs on (``__ray_call__`` runs the function in the actor's process)."""
    import ray

    return ray.get(actor.__ray_call__.remote(lambda _self: ray.get_runtime_context().get_node_id()), timeout=120)


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (from ``/proc``): on a ``Cluster`` node, the raylet's workers."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as file:
                    stat = file.read()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def node_killer(cluster, nodes, worker_nodes: dict[int, str], manager_node: str, events: Path, kill_after: int,
                record: dict, stop: threading.Event) -> None:
    """Kill a worker node while its pool worker trains a replicate, once ``kill_after`` trials completed."""
    by_id = {n.node_id: n for n in nodes}
    preferred = manager_node if manager_node in by_id else None
    while not stop.is_set():
        lines = read_events(events)
        if sum(line["event"] == "complete" for line in lines) >= kill_after:
            training: dict[str, int] = {}  # trial -> worker pid of its latest result, while it is mid-replicate
            for line in lines:
                if line["event"] == "result" and not line["final"]:
                    training[line["trial_id"]] = line["worker_pid"]
                elif line["event"] in ("result", "complete", "error", "recover"):
                    training.pop(line["trial_id"], None)
            busy = {worker_nodes[pid]: (trial, pid) for trial, pid in training.items() if pid in worker_nodes}
            victim_id = preferred if preferred in busy else (None if preferred else next(iter(busy), None))
            if victim_id is not None:
                victim = by_id[victim_id]
                raylet = victim.all_processes["raylet"][0].process.pid
                processes = descendants(raylet)
                for pid in processes:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                cluster.remove_node(victim, allow_graceful=False)
                record.update(node_id=victim_id, manager_node=manager_node, at=time.time(),
                              completed_before=sum(line["event"] == "complete" for line in lines),
                              training_trial=busy[victim_id][0], worker_pids=sorted(
                                  pid for pid, node in worker_nodes.items() if node == victim_id),
                              processes_killed=len(processes))
                return
        time.sleep(0.02)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", type=Path, required=True, help="candidate configurations (pool_driver)")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--max-failures", type=int, default=2)
    parser.add_argument("--kill-after", type=int, default=4)
    parser.add_argument("--budget", type=int, default=14)
    parser.add_argument("--repeat", type=int, default=0)
    args = parser.parse_args(argv)

    import ray
    from ray import tune
    from ray.cluster_utils import Cluster

    import rl_tasks
    from tune_risk import ReplicateScheduler

    args.workdir.mkdir(parents=True, exist_ok=True)
    events = args.workdir / "events.jsonl"
    candidates = json.loads(args.table.read_text())
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
    driver_node = ray.get_runtime_context().get_node_id()
    pool = rl_tasks.WorkerPool(2)
    worker_nodes = {pid: node_of(worker) for pid, worker in
                    zip(pool.worker_pids(), pool.workers(), strict=True)}  # both free: same order
    manager_node = pool.manager_node_id()
    nodes.append(cluster.add_node(num_cpus=2))  # the spare capacity that replacements need
    cluster.wait_for_nodes()
    cluster_seconds = time.perf_counter() - started

    searcher, max_runs = make_searcher(candidates, args.budget, args.repeat)
    tuner = tune.Tuner(
        make_trainable(pool),
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), num_samples=max_runs,
                                    max_concurrent_trials=pool.size, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(args.workdir / "storage"), name="pool_node_loss", verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=args.max_failures),
                                  callbacks=[make_event_log(str(events), ("worker_pid", "final"))]),
    )
    killed: dict = {}
    stop = threading.Event()
    killer = threading.Thread(target=node_killer, daemon=True, args=(
        cluster, nodes[:2], worker_nodes, manager_node, events, args.kill_after, killed, stop))
    killer.start()
    fit_started = time.perf_counter()
    results = tuner.fit()
    fit_seconds = time.perf_counter() - fit_started
    stop.set()
    killer.join(timeout=30)

    pids = pool.worker_pids()
    trials = results._experiment_analysis.trials
    engine = searcher.engine
    state = {
        "killed": killed, "max_failures": args.max_failures, "budget": args.budget, "driver_node": driver_node,
        "initial_workers": {str(pid): node for pid, node in worker_nodes.items()},
        "manager_node": pool.manager_node_id(), "workers_started": pool.workers_started(),
        "final_workers": {str(pid): node_of(worker) for pid, worker in zip(pids, pool.workers(), strict=True)},
        "engine_state": engine.state_dict(), "counts": engine.counts(),
        "trial_to_run": dict(searcher._trial_to_run),
        "trials": [{"trial_id": t.trial_id, "status": t.status, "num_failures": t.run_metadata.num_failures}
                   for t in trials],
        "n_errors": len(results.errors), "errors": [str(e)[:500] for e in results.errors],
        "results": json.loads(searcher.results().to_json(orient="records")),
        "cluster_seconds": cluster_seconds, "fit_seconds": fit_seconds,
    }
    (args.workdir / "final.json").write_text(json.dumps(state))
    pool.shutdown()
    ray.shutdown()
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
