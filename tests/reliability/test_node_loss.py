"""Node loss: a worker node of a 3-node local Ray cluster is killed while it runs a trial.

The cluster needs its own Ray (the test session's is already initialised), so each run is a
subprocess (``node_loss_driver.py``: head without CPUs + 2 workers with 1 CPU each). A run takes
~50 s here, so these tests are part of the soak (``make soak``, ``RELIABILITY_SOAK=1``).

* ``FailureConfig(max_failures=2)``: Tune re-runs the trials that were on the dead node (same trial
  id, same config and seed); nothing is failed and the decisions equal an uninterrupted replay's.
* ``max_failures=0``: those trials end in ERROR; ``RiskAwareSearch`` counts each as a failed
  replicate (visible in ``results()``), the engine retries the slot with a fresh seed, the run completes.
* The warm worker pool (``pool_node_loss_driver.py``: live PPO on ``rl_tasks.make_pooled_trainable``, a
  2-worker ``rl_tasks.WorkerPool`` on two 1-CPU nodes, a spare 2-CPU node): the node of a worker that is
  training a replicate dies; the pool replaces the worker on the remaining nodes, Tune re-runs the hit
  trials, and the decisions equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import os

import pool_driver
import pytest
from pool_driver import BUDGET, REPEAT, WORKERS
from reliability_support import decisions, reference_engine, run_node_loss, write_table

from tune_risk.engine.core import Engine
from tune_risk.engine.records import RunStatus

pytestmark = pytest.mark.skipif(os.environ.get("RELIABILITY_SOAK") != "1",
                                reason="soak test: make soak (RELIABILITY_SOAK=1)")


def lost_trials(final: dict) -> set[str]:
    """Trials the node loss hit: running there when it died (killed with it), or placed there after."""
    hit = {e["trial_id"] for e in final["events"] if e["event"] in ("recover", "error")}
    assert set(final["killed"]["running_there"]) <= hit, "a trial on the dead node was neither re-run nor failed"
    return hit


def load(final: dict) -> tuple[Engine, dict, dict]:
    engine = Engine.from_state_dict(final["engine_state"])
    trials = {t["trial_id"]: t for t in final["trials"]}
    return engine, trials, {t: int(r) for t, r in final["trial_to_run"].items()}


def test_soak_node_killed_trials_are_rerun(tmp_path):
    table = write_table(tmp_path / "h3.parquet")
    final = run_node_loss(tmp_path / "rerun", table, max_failures=2)
    engine, trials, trial_to_run = load(final)
    lost = lost_trials(final)
    assert final["killed"]["node_id"] and lost, "no trial was running on the killed node"
    for trial_id in lost:  # Tune re-ran it (same trial id, config and seed) and it completed
        assert trials[trial_id]["num_failures"] >= 1 and trials[trial_id]["status"] == "TERMINATED"
        assert engine.runs[trial_to_run[trial_id]].status is not RunStatus.FAILED
    counts = engine.counts()
    assert final["n_errors"] == 0 and counts["runs_failed"] == 0 and counts["runs_in_flight"] == 0
    assert set(trials) == set(trial_to_run) and len(trials) == counts["runs_launched"]
    reference = reference_engine(table, workers=2, budget=final["budget"])
    assert decisions(engine) == decisions(reference)
    assert [r.incorporated_values() for r in engine.records] == [r.incorporated_values() for r in reference.records]
    print("\nnode loss (max_failures=2):", json.dumps({"rerun": len(lost), "trials": len(trials),
                                                       "seconds": round(final["seconds"], 1)}))


def test_soak_node_killed_trials_are_failed_replicates(tmp_path):
    table = write_table(tmp_path / "h3.parquet")
    final = run_node_loss(tmp_path / "failed", table, max_failures=0)
    engine, trials, trial_to_run = load(final)
    lost = lost_trials(final)
    assert lost, "no trial was running on the killed node"
    for trial_id in lost:
        assert trials[trial_id]["status"] == "ERROR"
        assert engine.runs[trial_to_run[trial_id]].status in (RunStatus.FAILED, RunStatus.CANCELLED)
    counts = engine.counts()
    failed = [t for t, r in trial_to_run.items() if engine.runs[r].status is RunStatus.FAILED]
    assert set(failed) <= set(lost) and final["n_errors"] == len(lost)
    assert sum(row["failed"] for row in final["results"]) == counts["runs_failed"] == len(failed)
    assert counts["runs_in_flight"] == 0 and engine.finished
    # The failed slot was retried with a fresh seed: every configuration still reached k_min.
    for record in engine.records:
        if record.failures and record.status != "failed":
            seeds = [engine.runs[s.run_id].seed_index for s in record.slots[: record.n_incorporated]]
            assert max(seeds) >= record.n_incorporated  # a seed index was skipped: the failed run's
    print("\nnode loss (max_failures=0):", json.dumps({"failed": len(failed), "trials": len(trials),
                                                       "seconds": round(final["seconds"], 1)}))


def test_soak_pool_node_lost_mid_replicate_workers_replaced(tmp_path):
    pytest.importorskip("jax")
    pool_driver.share_jax_cache()
    candidates = pool_driver.write_candidates(tmp_path / "candidates.json")
    # The uninterrupted run first: it also compiles the program into the cache the pool's workers load.
    reference = pool_driver.reference_engine(json.loads(candidates.read_text()), BUDGET, REPEAT, WORKERS)
    final = run_node_loss(tmp_path / "pool", candidates, max_failures=2, kill_after=4, budget=BUDGET,
                          timeout=900, driver="pool_node_loss_driver.py")
    killed, dead = final["killed"], final["killed"].get("node_id")
    assert dead and killed["worker_pids"], "no node holding a pool worker was killed"
    assert final["manager_node"] == final["driver_node"] != dead  # the pool's manager lives with its driver

    # The search: the hit trials were re-run by Tune and completed; nothing failed, nothing counted twice.
    engine, trials, trial_to_run = load(final)
    assert final["n_errors"] == 0, final["errors"]
    counts = engine.counts()
    assert counts["runs_failed"] == 0 and counts["runs_in_flight"] == 0 and engine.finished
    assert set(trials) == set(trial_to_run) and len(trials) == counts["runs_launched"]
    rerun = [t for t, trial in trials.items() if trial["num_failures"] >= 1]
    assert killed["training_trial"] in rerun and all(trials[t]["status"] == "TERMINATED" for t in rerun)
    assert decisions(engine) == decisions(reference)
    assert [r.incorporated_values() for r in engine.records] == [r.incorporated_values() for r in reference.records]

    # The pool: the dead node's workers were replaced on the remaining nodes, which trained after the loss.
    workers = {int(pid): node for pid, node in final["final_workers"].items()}
    assert len(workers) == WORKERS and dead not in workers.values()
    assert final["workers_started"] >= WORKERS + len(killed["worker_pids"])
    after = {e["worker_pid"] for e in final["events"] if e["event"] == "complete" and e["time"] > killed["at"]}
    assert after - {int(pid) for pid in final["initial_workers"]}, "no replicate trained on a replacement"
    print("\npool node loss:", json.dumps({"rerun": len(rerun), "trials": len(trials),
                                          "workers_started": final["workers_started"],
                                          "seconds": round(final["seconds"], 1)}))
