"""The Tune function trainable: runs under Tune (plain and with RiskAwareSearch), seeds matter, repeatable."""

from __future__ import annotations

import math
import os

import pytest

from rl_tasks import get_space, make_trainable

# One program shape for every test in this module (the persistent compilation cache then serves them all).
STEPS, EVAL_EVERY, EPISODES, MINIBATCH = 4096, 2048, 8, 256


def _fit(trainable, param_space, num_samples=1, callbacks=None, **tune_kwargs):
    from ray import tune

    tuner = tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune.TuneConfig(metric="return", mode="max", num_samples=num_samples, reuse_actors=True,
                                    **tune_kwargs),
        run_config=tune.RunConfig(verbose=0, storage_path="/tmp/rl_tasks_tests_ray", callbacks=callbacks),
    )
    return tuner.fit()


def test_ppo_cartpole_under_tune_seeds_differ_and_repeat(ray_cluster) -> None:
    from ray import tune

    trainable = make_trainable("ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES)
    config = {"learning_rate": 3e-3, "minibatch_size": MINIBATCH, "seed": tune.grid_search([0, 1, 0, 1])}
    results = _fit(trainable, config)
    assert not results.errors, results.errors
    assert len(results) == 4
    finals: dict[int, set[float]] = {}
    for result in results:
        metrics = result.metrics
        assert metrics["final"] and metrics["timesteps"] == STEPS and metrics["training_iteration"] == 2
        assert math.isfinite(metrics["return"])
        finals.setdefault(int(result.config["seed"]), set()).add(float(metrics["return"]))
    assert all(len(values) == 1 for values in finals.values()), f"same seed, different returns: {finals}"
    assert finals[0] != finals[1], "different seeds gave the same return"


def test_trainable_under_risk_aware_search(ray_cluster) -> None:
    searcher_mod = pytest.importorskip("tune_risk.tune.searcher")
    scheduler_mod = pytest.importorskip("tune_risk.tune.scheduler")
    searcher = searcher_mod.RiskAwareSearch(n_initial=2, k_min=2, k_max=4, random_state_seed=0)
    space = {**get_space("ppo", "CartPole-v1"), "minibatch_size": MINIBATCH}
    trainable = make_trainable("ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES)
    results = _fit(trainable, space, num_samples=4, search_alg=searcher,
                   scheduler=scheduler_mod.ReplicateScheduler(searcher))
    assert not results.errors, results.errors
    assert len(results) == 4
    seeds = sorted(int(r.config["seed"]) for r in results)
    assert len(set(seeds)) >= 2, f"replicates did not get distinct seeds: {seeds}"


def _affinity_recorder():
    """A Tune callback keeping the CPU affinity of each trial's training process, read at its first report."""
    from ray import tune

    class Affinities(tune.Callback):
        def __init__(self) -> None:
            self.masks: dict[int, set[int]] = {}

        def on_trial_result(self, iteration, trials, trial, result):
            self.masks.setdefault(int(result["worker_pid"]), os.sched_getaffinity(int(result["worker_pid"])))

    return Affinities()


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs 2 cores to pin 2 trials")
@pytest.mark.parametrize("pin_cpus", [True, False])
def test_trial_processes_are_pinned_to_cores_of_their_own(ray_cluster, pin_cpus: bool) -> None:
    """Two concurrent 1-CPU trials train on one core each (XLA then runs one compute thread in each, not one per
    core of the node); ``pin_cpus=False`` leaves them on every core."""
    from ray import tune

    recorder = _affinity_recorder()
    trainable = make_trainable("ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES, pin_cpus=pin_cpus)
    config = {"learning_rate": 3e-3, "minibatch_size": MINIBATCH, "seed": tune.grid_search([0, 1])}
    results = _fit(trainable, config, max_concurrent_trials=2, callbacks=[recorder])
    assert not results.errors, results.errors
    masks = list(recorder.masks.values())
    if pin_cpus:
        assert len(masks) == 2 and all(len(mask) == 1 for mask in masks) and masks[0] != masks[1], masks
    else:
        assert masks and all(mask == os.sched_getaffinity(0) for mask in masks), masks


def test_compilation_cache_dir_receives_the_compiled_programs(ray_cluster, tmp_path) -> None:
    cache = tmp_path / "jax_cache"
    trainable = make_trainable("ppo", "CartPole-v1", STEPS, EVAL_EVERY, EPISODES, compilation_cache_dir=str(cache))
    results = _fit(trainable, {"learning_rate": 3e-3, "minibatch_size": MINIBATCH, "seed": 0})
    assert not results.errors, results.errors
    assert cache.is_dir() and any(cache.iterdir()), "no compiled program was written to the cache directory"


def test_bad_arguments_fail_early() -> None:
    with pytest.raises(ValueError, match="positive"):
        make_trainable("ppo", "CartPole-v1", 0, 1, 1)
    with pytest.raises(ValueError, match="discrete"):
        make_trainable("sac", "CartPole-v1", 10, 1, 1)
    trainable = make_trainable("ppo", "CartPole-v1", 10, 1, 1, seed_key="replicate_seed")
    with pytest.raises(ValueError, match="replicate_seed"):
        trainable({"seed": 0})
