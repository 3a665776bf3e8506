"""The warm worker pool: same values as ``make_trainable``, training only on the pool's workers, failures
confined to one replicate, dead workers replaced (local Ray, 2 CPUs held by a 2-worker pool).

A driver SIGKILLed and restored on a new pool, and a node lost under the pool, are tested in
``tests/reliability`` (``test_pool_kill_restore.py``, ``test_node_loss.py``; ``make soak``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rl_tasks import get_space, make_pooled_trainable, make_trainable

# One program shape for every test (the persistent compilation cache then serves all workers).
STEPS, EVAL_EVERY, EPISODES, MINIBATCH = 4096, 2048, 8, 256
CONFIG = {"learning_rate": 3e-3, "minibatch_size": MINIBATCH}


@pytest.fixture(scope="module")
def pool(ray_cluster):
    from rl_tasks import WorkerPool

    with WorkerPool(2) as workers:
        workers.worker_pids()  # wait for the warm-up
        yield workers


def _fit(trainable, param_space, num_samples=1, callbacks=None, stop=None, **tune_kwargs):
    from ray import tune

    tuner = tune.Tuner(
        trainable, param_space=param_space,
        tune_config=tune.TuneConfig(metric="return", mode="max", num_samples=num_samples, reuse_actors=True,
                                    **tune_kwargs),
        run_config=tune.RunConfig(verbose=0, storage_path="/tmp/rl_tasks_tests_ray", callbacks=callbacks, stop=stop),
    )
    return tuner.fit()


def _recorder():
    """A Tune callback keeping each seed's reports ``(return, timesteps, final)`` (the tests write no result files)."""
    from ray import tune

    class Recorder(tune.Callback):
        def __init__(self) -> None:
            self.reports: dict[int, list[tuple[float, int, bool]]] = {}

        def on_trial_result(self, iteration, trials, trial, result):
            row = (float(result["return"]), int(result["timesteps"]), bool(result["final"]))
            self.reports.setdefault(int(trial.config["seed"]), []).append(row)

    return Recorder()


def _pinned_to_distinct_cores(pids: list[int]) -> bool:
    masks = [os.sched_getaffinity(pid) for pid in pids]
    return all(len(mask) == 1 for mask in masks) and len(set().union(*masks)) == len(pids)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs 2 cores to pin 2 workers")
def test_workers_are_pinned_to_cores_of_their_own(pool) -> None:
    """Each worker holds one core (cpus_per_worker=1), so XLA in it runs one compute thread, not one per core."""
    assert _pinned_to_distinct_cores(pool.worker_pids())


def test_thin_modules_do_not_import_jax() -> None:
    code = ("import sys, rl_tasks, rl_tasks.pool, rl_tasks.trainable, rl_tasks.seed_run\n"
            "assert not [m for m in sys.modules if m == 'jax' or m.startswith('jax.')]\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pooled_values_equal_make_trainable_and_do_not_depend_on_the_worker(pool, monkeypatch) -> None:
    from ray import tune

    recorder = _recorder()
    results = _fit(make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES),
                   {**CONFIG, "seed": tune.grid_search([0, 1])}, max_concurrent_trials=2, callbacks=[recorder])
    assert not results.errors, results.errors
    pooled = recorder.reports

    # make_trainable's own loop, in this process, with tune.report captured.
    reports: list[dict] = []
    monkeypatch.setattr(tune, "report", reports.append)
    make_trainable("ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES)({**CONFIG, "seed": 0})
    assert pooled[0] == [(r["return"], r["timesteps"], r["final"]) for r in reports]
    assert pooled[0] != pooled[1]

    # The same seed on two different workers at once: identical values.
    first, second = pool.lease(), pool.lease()
    try:
        pids = {lease.start("ppo", "CartPole-v1", CONFIG, 1, STEPS, EVAL_EVERY, EPISODES) for lease in (first, second)}
        runs = [[(c.value, c.timesteps, c.final) for c in (lease.advance(), lease.advance())] for lease in (first, second)]
    finally:
        first.release()
        second.release()
    assert len(pids) == 2 and runs[0] == runs[1] == pooled[1]


def test_pooled_search_trains_only_on_the_pool_and_keeps_its_trial_processes(pool) -> None:
    from tune_risk import ReplicateScheduler, RiskAwareSearch

    searcher = RiskAwareSearch(n_initial=2, k_min=2, k_max=4, random_state_seed=0, intensify=0, final_key="final")
    space = {**get_space("ppo", "CartPole-v1"), "minibatch_size": MINIBATCH}
    results = _fit(make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES), space,
                   num_samples=8, search_alg=searcher, scheduler=ReplicateScheduler(searcher), max_concurrent_trials=2)
    assert not results.errors, results.errors
    assert len(results) == 8 and all(r.metrics["final"] for r in results)
    trainers = {int(r.metrics["worker_pid"]) for r in results}
    trial_processes = {int(r.metrics["pid"]) for r in results}
    assert trainers <= set(pool.worker_pids()) and len(trainers) <= pool.size
    assert not trainers & trial_processes, "a thin trial trained in its own process"
    # Issue 18's bound on processes per run (W + 2). At this size (replicates of 0.1-0.3 s) Tune keeps its
    # processes even without final_key; the searcher-level test of final_key is in tests/tune, and the churn
    # it removes at 100k steps is measured by experiments/studies/live_hpo.py (trial actors: 8 -> 2 on PPO).
    assert len(trial_processes) <= pool.size + 2, trial_processes
    assert all(r.metrics["startup_s"] >= 0 for r in results)
    assert all(r.metrics["chunk_s"] > 0 for r in results)  # the worker's seconds on the chunk


def test_busy_seconds_count_the_preparation_and_training_of_replicates(pool) -> None:
    import time

    before = pool.busy_seconds()
    started = time.perf_counter()
    lease, _ = pool.start_replicate("ppo", "CartPole-v1", CONFIG, 0, STEPS, EVAL_EVERY, EPISODES)
    try:
        while not lease.advance().final:
            pass
    finally:
        lease.release()
    elapsed = time.perf_counter() - started
    idle_before = pool.busy_seconds()
    time.sleep(0.3)  # an idle worker adds nothing
    assert pool.busy_seconds() == idle_before
    # One replicate built and trained on one worker: counted, and within the caller's wall time (which adds
    # the leasing and the remote calls).
    assert 0 < idle_before - before <= elapsed


def test_stop_ends_a_replicate_at_its_next_chunk_and_frees_its_worker(pool) -> None:
    from ray import tune

    results = _fit(make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES),
                   {**CONFIG, "seed": tune.grid_search([0, 1, 2])}, max_concurrent_trials=1,
                   stop={"training_iteration": 1})
    assert not results.errors, results.errors
    assert all(r.metrics["training_iteration"] == 1 and not r.metrics["final"] for r in results)
    # Stopped trials released their leases in `finally` (or, if Tune ended a process first, the manager
    # reclaims them): the whole pool can be leased again.
    leases = [pool.lease() for _ in range(pool.size)]
    for lease in leases:
        lease.release()
    assert pool.leases_out() == 0


def test_the_lease_of_a_killed_trial_process_is_reclaimed(pool) -> None:
    import ray

    @ray.remote(num_cpus=0)
    class Lessee:
        def take(self, pool):
            self.lease = pool.lease()  # never released: the process is killed

    lessee = Lessee.remote()
    ray.get(lessee.take.remote(pool))
    assert pool.leases_out() == 1
    ray.kill(lessee)
    leases = [pool.lease() for _ in range(pool.size)]  # the last one waits for the reclaimed worker
    for lease in leases:
        lease.release()
    assert pool.leases_out() == 0


def test_a_failing_replicate_fails_alone_and_its_worker_stays(pool) -> None:
    from ray import tune

    before = sorted(pool.worker_pids())
    # learning_rate=10 is outside ARLBench's domain: the worker raises ValueError while starting that run.
    results = _fit(make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES),
                   {**CONFIG, "seed": 0, "learning_rate": tune.grid_search([10.0, 3e-3])}, max_concurrent_trials=1)
    assert len(results.errors) == 1 and "outside its domain" in str(results.errors[0])
    finished = [r for r in results if r.metrics and r.metrics.get("final")]
    assert len(finished) == 1
    assert sorted(pool.worker_pids()) == before, "a replicate's exception must not cost a worker"


def test_a_worker_that_dies_while_free_costs_no_replicate(pool) -> None:
    import ray
    from ray import tune

    first = pool.workers()[0]  # no lease is out: the front of the free list, which the next lease takes
    killed = ray.get(first.warm.remote())
    started = pool.workers_started()
    ray.kill(first)
    results = _fit(make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES),
                   {**CONFIG, "seed": tune.grid_search([0])}, max_concurrent_trials=1)
    # The dead worker is replaced (when Ray reports its death, or when the trial finds it dead before its
    # replicate started there) and the trial trains on a live one instead of failing.
    assert not results.errors, results.errors
    assert results[0].metrics["final"] and int(results[0].metrics["worker_pid"]) != killed
    assert pool.workers_started() == started + 1
    pids = pool.worker_pids()  # waits for the replacement's warm-up
    assert len(pids) == pool.size and killed not in pids
    if len(os.sched_getaffinity(0)) >= 2:
        assert _pinned_to_distinct_cores(pids)  # the replacement took the dead worker's core


def test_a_trainable_on_a_pool_that_is_gone_says_how_to_restore(pool) -> None:
    import pickle

    from rl_tasks import WorkerPool

    # What a restored experiment unpickles: the old driver's pool, whose manager no longer exists.
    state = pickle.loads(pickle.dumps(pool)).__getstate__()
    stale = object.__new__(WorkerPool)
    stale.__dict__.update({**state, "_name": state["_name"] + "_gone"})
    with pytest.raises(RuntimeError, match=r"is not running .* trainable=make_pooled_trainable\(<a new WorkerPool>"):
        stale.lease()


def test_a_worker_killed_mid_chunk_in_a_search_is_a_failed_replicate_and_is_replaced(pool) -> None:
    """A worker killed while it trains a replicate of a RiskAwareSearch run: that trial fails with the pool's
    message and RiskAwareSearch's failure policy (``max_failures_per_config``: the failed replicate is retried
    with a fresh seed) accounts for it; every other trial completes, the search spends its budget, and the
    pool replaces the worker, which trains later replicates. (Tune's ``FailureConfig(max_failures=N)`` re-runs
    such a trial instead: ``test_node_loss.py``.)"""
    import ray
    from ray import tune

    from tune_risk import ReplicateScheduler, RiskAwareSearch
    from tune_risk.engine.records import RunStatus

    handles = {ray.get(worker.warm.remote()): worker for worker in pool.workers()}
    started = pool.workers_started()
    killed: list[tuple[str, int]] = []

    class KillOnFirstResult(tune.Callback):
        def on_trial_result(self, iteration, trials, trial, result):
            if not killed and not result["final"]:  # the trial trains its next chunk at once: killed mid-chunk
                killed.append((trial.trial_id, int(result["worker_pid"])))
                ray.kill(handles[killed[0][1]])

    searcher = RiskAwareSearch(n_initial=2, k_min=2, k_max=4, random_state_seed=0, intensify=0)
    space = {**get_space("ppo", "CartPole-v1"), "minibatch_size": MINIBATCH}
    num_samples = 8
    results = _fit(make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES), space,
                   num_samples=num_samples, search_alg=searcher, scheduler=ReplicateScheduler(searcher),
                   max_concurrent_trials=2, callbacks=[KillOnFirstResult()])
    assert killed, "no intermediate result came"
    killed_trial, killed_pid = killed[0]

    # Tune: exactly the killed trial errored, with the pool's message.
    assert len(results.errors) == 1 and "pool worker died" in str(results.errors[0])
    status = {t.trial_id: t.status for t in results._experiment_analysis.trials}
    assert [t for t, s in status.items() if s == "ERROR"] == [killed_trial]

    # The searcher: one failed replicate, every run accounted for once, the search finished its budget.
    engine = searcher.engine
    counts = engine.counts()
    assert counts["runs_launched"] == len(results) == num_samples and counts["runs_in_flight"] == 0
    assert counts["runs_completed"] + counts["runs_cancelled"] + counts["runs_failed"] == num_samples
    assert counts["runs_failed"] == 1
    failed_run = engine.runs[searcher._trial_to_run[killed_trial]]
    assert failed_run.status is RunStatus.FAILED
    record = engine.records[failed_run.config_id]
    assert record.failures == 1 and searcher.results().failed.sum() == 1
    if record.n_incorporated >= 1 and record.status != "failed":  # the slot was retried with a fresh seed
        seeds = [engine.runs[s.run_id].seed_index for s in record.slots[: record.n_incorporated]]
        assert failed_run.seed_index not in seeds
    for trial_id, run_id in searcher._trial_to_run.items():  # the others completed, or were cancelled
        assert trial_id == killed_trial or engine.runs[run_id].status is not RunStatus.FAILED, trial_id
    assert counts["runs_censored"] == 0
    finished = [r for r in results if r.metrics and r.metrics.get("final")]

    # The pool: the dead worker was replaced once, and nothing trained on it after the kill.
    trainers = {int(r.metrics["worker_pid"]) for r in finished}
    assert killed_pid not in trainers and pool.workers_started() == started + 1
    assert trainers - set(handles), "no replicate ran on the replacement worker"
    assert killed_pid not in pool.worker_pids() and pool.leases_out() == 0


def test_prefetched_replicates_report_the_leased_values_and_free_their_workers(pool) -> None:
    from ray import tune

    from rl_tasks import PoolPrefetch

    trainable = make_pooled_trainable(pool, "ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES)
    leased = _recorder()
    _fit(trainable, {**CONFIG, "seed": tune.grid_search([0, 1, 2])}, max_concurrent_trials=2, callbacks=[leased])
    prefetched, prefetch = _recorder(), PoolPrefetch(trainable)
    results = _fit(trainable, {**CONFIG, "seed": tune.grid_search([0, 1, 2])}, max_concurrent_trials=2,
                   callbacks=[prefetched, prefetch])
    assert not results.errors, results.errors
    assert prefetch.prefetched >= 1  # pending trials were given free workers before their processes ran
    assert prefetched.reports == leased.reports  # bit for bit, whichever path trained a replicate
    assert pool.leases_out() == 0
    leases = [pool.lease() for _ in range(pool.size)]  # every worker came back
    for lease in leases:
        lease.release()


def test_a_detached_prefetch_stops_and_gives_its_worker_back(pool) -> None:
    assert pool.prefetch("t-detached", "ppo", "CartPole-v1", CONFIG, 0, STEPS, EVAL_EVERY, EPISODES)
    pool.detach("t-detached")  # as for a trial stopped while pending
    assert pool.claim("t-detached") is None  # nothing left to relay: such a trial would lease a worker
    leases = [pool.lease() for _ in range(pool.size)]  # the worker is back after at most its current chunk
    for lease in leases:
        lease.release()


def test_a_prefetched_replicate_is_claimed_once(pool) -> None:
    assert pool.prefetch("t-once", "ppo", "CartPole-v1", CONFIG, 1, STEPS, EVAL_EVERY, EPISODES)
    try:
        assert pool.claim("t-once") in pool.worker_pids()
        chunks = [pool.next_chunk("t-once", i) for i in range(STEPS // EVAL_EVERY)]
        assert [c.timesteps for c in chunks] == [EVAL_EVERY, STEPS] and chunks[-1].final
        assert pool.claim("t-once") is None  # a re-run of the trial trains afresh through a lease
    finally:
        pool.detach("t-once")


def test_prefetch_refuses_a_trainable_that_is_not_pooled() -> None:
    from rl_tasks import PoolPrefetch

    with pytest.raises(TypeError, match="make_pooled_trainable"):
        PoolPrefetch(make_trainable("ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES))


def test_a_worker_killed_under_a_prefetched_replicate_fails_it_and_is_replaced(pool) -> None:
    import ray

    from rl_tasks.pool_actors import PoolWorkerLost

    first = pool.workers()[0]  # no lease is out: the front of the free list, which the prefetch takes
    killed = ray.get(first.warm.remote())
    started = pool.workers_started()
    assert pool.prefetch("t-killed", "ppo", "CartPole-v1", CONFIG, 0, STEPS, EVAL_EVERY, EPISODES)
    ray.kill(first)  # while it builds or trains the replicate
    try:
        with pytest.raises(PoolWorkerLost, match="pool worker died"):
            pool.claim("t-killed")
            pool.next_chunk("t-killed", 0)
            pool.next_chunk("t-killed", 1)
    finally:
        pool.detach("t-killed")
    assert pool.workers_started() == started + 1
    pids = pool.worker_pids()
    assert len(pids) == pool.size and killed not in pids
