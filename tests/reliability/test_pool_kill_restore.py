"""Driver SIGKILLed during a live search on the warm worker pool, then restored on a new pool.

``pool_driver.py`` runs ``RiskAwareSearch`` + ``ReplicateScheduler`` over
``rl_tasks.make_pooled_trainable`` (PPO CartPole, two chunks of 2,048 steps per replicate) on a 2-worker
``rl_tasks.WorkerPool``. The harness of ``test_kill_restore.py`` (``reliability_support.kill_chain``)
SIGKILLs the driver once replicates have completed, some of them in Tune's snapshot (outside a snapshot
copy; every process of its Ray instance, the pool's workers included, is killed with it) and restores the
run in a new driver with a new pool (``tune_risk.restore_tuner(path,
trainable=make_pooled_trainable(new_pool, ...))``). Checked (``check_chain``): every replicate completed before the kill is in the final state with the same value,
none is run twice in the final state nor counted twice, Tune's trials are the searcher's runs, and the
decisions and values equal an uninterrupted run's: the same searcher driven without Tune, each replicate
trained in this process by ``rl_tasks.seed_run.SeedRun`` (bit-identical to a pool worker's). Also: every
replicate the restored driver finished trained on the new pool's workers, none of which died.

The uninterrupted run goes first: it compiles the task's program into the persistent compilation cache
that the drivers' workers then load (``$JAX_COMPILATION_CACHE_DIR``, shared with ``tests/rl``). Two drivers
with their own Ray and pool take 3-4.5 min on 2 busy CPUs, so this is part of the soak (``make soak``,
``RELIABILITY_SOAK=1``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pool_driver
import pytest
from pool_driver import BUDGET, REPEAT, WORKERS
from reliability_support import check_chain, kill_chain

POOL_DRIVER = Path(pool_driver.__file__)
CHECKPOINT_S = "2"  # TUNE_GLOBAL_CHECKPOINT_S, as test_kill_restore.py
pytestmark = pytest.mark.skipif(os.environ.get("RELIABILITY_SOAK") != "1",
                                reason="soak test: make soak (RELIABILITY_SOAK=1)")


def test_soak_pool_sigkill_then_restore_on_a_new_pool_keeps_every_replicate(tmp_path):
    pytest.importorskip("jax")
    pool_driver.share_jax_cache()
    candidates = pool_driver.write_candidates(tmp_path / "candidates.json")
    reference = pool_driver.reference_engine(json.loads(candidates.read_text()), BUDGET, REPEAT, WORKERS)

    # Killed once 4 replicates completed and Tune's snapshot holds 3 finished trials (warm workers finish
    # a replicate in well under a snapshot period), so that the restore keeps some and re-runs others.
    chain = kill_chain(tmp_path / "chain", candidates, kill_points=[4], budget=BUDGET, workers=WORKERS,
                       checkpoint_period=CHECKPOINT_S, timeout=600, driver=POOL_DRIVER, snapshot_holds=3)
    assert len(chain.kills) == 1, [r.__dict__ for r in chain.runs]
    figures = check_chain(chain, candidates, reference=reference)
    assert figures["lost"] == 0 and figures["completed_before_kills"] >= 4
    assert figures["kept_across_restore"] >= 3  # completed before the snapshot: kept, never run again

    final = chain.final
    assert final["mode"] == "restore" and len(final["pool_pids"]) == WORKERS
    assert final["trainers"], "the restored driver finished no replicate"
    assert set(final["trainers"]) <= set(final["pool_pids"]), "a replicate trained outside the new pool"
    assert final["workers_started"] == WORKERS  # no worker of the new pool died
    print("\npool kill chain:", json.dumps({**figures, "seconds": [round(r.seconds, 1) for r in chain.runs]}))
