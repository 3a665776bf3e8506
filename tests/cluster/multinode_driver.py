"""RiskAwareSearch + ReplicateScheduler over live PPO on a real 3-node local Ray cluster.

    python tests/cluster/multinode_driver.py OUT_DIR

Head (no CPUs: the Tune driver and the searcher) + 2 worker nodes with 1 CPU each
(``ray.cluster_utils.Cluster``), so every trial runs on a worker node. The trainable is
``rl_tasks.make_trainable("ppo", "CartPole-v1", ...)`` with a tiny budget, wrapped to record the node
it ran on. The initial design opens with a strong incumbent given as ``evaluated_rewards`` (as a
user resuming from earlier runs would), so that weak live configurations are certified after
``k_min`` replicates while the rest of their wave (``launch_policy="all"``) is still pending or
running: those replicates must be cancelled. Afterwards a ``rl_tasks.WorkerPool`` is started to check
where its manager runs (the driver's node). Writes ``OUT_DIR/result.json``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")


def main(out: Path) -> None:
    import ray
    from ray import tune
    from ray.cluster_utils import Cluster

    import rl_tasks
    from tune_risk import ReplicateScheduler, RiskAwareSearch

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=cluster.address, logging_level=logging.ERROR, log_to_driver=False)
    ppo = rl_tasks.make_trainable("ppo", "CartPole-v1", total_timesteps=2048, eval_every=1024, eval_episodes=8)
    nodes_file = str(out / "nodes.txt")

    def trainable(config: dict) -> None:
        import ray as _ray

        with open(nodes_file, "a") as f:
            f.write(_ray.get_runtime_context().get_node_id() + "\n")
        ppo(config)

    space = dict(rl_tasks.get_space("ppo", "CartPole-v1"))
    space["minibatch_size"] = 128  # one compiled program per worker process
    incumbent = {name: (128 if name == "minibatch_size" else domain.sample()) for name, domain in space.items()}
    searcher = RiskAwareSearch(
        metric="return", mode="max", random_state_seed=0, n_initial=2, k_min=2, k_max=4, launch_policy="all",
        points_to_evaluate=[incumbent], evaluated_rewards=[[500.0, 499.0, 500.0, 498.0, 500.0, 499.5]],
    )
    tuner = tune.Tuner(
        trainable, param_space=space,
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), num_samples=14,
                                    max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(out / "ray_results"), verbose=0),
    )
    results = tuner.fit()
    table = searcher.results()
    # The warm pool's manager is a CPU-less actor, which Ray would place on any node (here: a worker node,
    # whose loss would end the pool); it must live on the driver's node.
    pool = rl_tasks.WorkerPool(1)
    here = ray.get_runtime_context().get_node_id()
    manager_node = pool.manager_node_id()
    pool.shutdown()
    result = {
        "trials": len(results),
        "errors": len(results.errors),
        "worker_nodes": sorted({n.node_id for n in workers}),
        "nodes_used": sorted(set(Path(nodes_file).read_text().split())),
        "counts": searcher.engine.counts(),
        "statuses": table.stop_reason.tolist(),
        "cancelled": int(table.cancelled.sum()),
        "pool_manager_on_driver_node": manager_node == here,
    }
    (out / "result.json").write_text(json.dumps(result))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
