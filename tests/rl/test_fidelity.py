"""Regression tests of rl_tasks' fidelity to rejax/ARLBench: greedy actions, compiled-program cache, spaces."""

from __future__ import annotations

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from rl_tasks import generate  # noqa: E402
from rl_tasks.spaces import full_config, get_space, is_valid  # noqa: E402
from rl_tasks.training import greedy_act, prepare  # noqa: E402


def _trained_like_state(algo: str, env: str, config: dict, seed: int):
    """A freshly initialised training state whose actor output is pushed away from zero.

    Random initialisation gives pre-tanh means near 0, where ``tanh(m) ~ m`` and a wrong mapping could pass;
    scaling the output layer makes ``|m|`` of order 1, where ``tanh`` and ``clip`` disagree.
    """
    program, traced = prepare(algo, env, config, 256, 1)
    algo_obj = program.bind(traced)
    ts = algo_obj.init_state(jax.random.PRNGKey(seed))
    params = jax.tree_util.tree_map_with_path(
        lambda path, leaf: leaf * 8.0 if "action_mean" in jax.tree_util.keystr(path) else leaf,
        ts.actor_ts.params,
    )
    return algo_obj, ts.replace(actor_ts=ts.actor_ts.replace(params=params))


@pytest.mark.parametrize("env", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_sac_greedy_action_is_the_squashed_mode(env: str) -> None:
    algo, ts = _trained_like_state("sac", env, {"buffer_batch_size": 256}, seed=3)
    act = jax.jit(greedy_act(algo, ts))
    obs = jax.random.normal(jax.random.PRNGKey(1), (64, *algo.obs_space.shape))
    actions = np.asarray(jax.vmap(lambda o: act(o, jax.random.PRNGKey(0)))(obs)).reshape(64, -1)
    dist = algo.actor.apply(ts.actor_ts.params, obs, method="_action_dist")
    mean = np.asarray(dist.mean()).reshape(64, -1)
    low, high = np.asarray(algo.action_space.low), np.asarray(algo.action_space.high)
    loc, scale = (high + low) / 2, (high - low) / 2
    expected = loc + scale * np.tanh(mean)
    assert np.abs(mean).max() > 0.5, "the test needs pre-tanh means where tanh and clip differ"
    np.testing.assert_allclose(actions, expected, rtol=1e-5, atol=1e-6)


def test_continuous_ppo_greedy_action_is_the_clipped_mean() -> None:
    algo, ts = _trained_like_state("ppo", "Pendulum-v1", {}, seed=0)
    act = jax.jit(greedy_act(algo, ts))
    obs = jax.random.normal(jax.random.PRNGKey(2), (32, *algo.obs_space.shape))
    actions = np.asarray(jax.vmap(lambda o: act(o, jax.random.PRNGKey(0)))(obs)).reshape(32, -1)
    mean = np.asarray(algo.actor.apply(ts.actor_ts.params, obs, method="_action_dist").mean()).reshape(32, -1)
    expected = np.clip(mean, algo.action_space.low, algo.action_space.high)
    np.testing.assert_allclose(actions, expected, rtol=1e-6)


class _FakeProgram:
    """Stands in for a ``TaskProgram``: its batch function compiles to a tag naming the program."""

    def __init__(self, name: str) -> None:
        self.name = name
        outer = self

        class _Lowered:
            def compile(self):
                return f"compiled:{outer.name}"

        class _Fn:
            def lower(self, traced, keys):
                return _Lowered()

        self.train_batch = _Fn()


def test_executable_cache_never_returns_another_programs_executable(monkeypatch) -> None:
    monkeypatch.setattr(generate, "_EXECUTABLES", {})
    keys = np.zeros((4, 2), np.uint32)
    old, new = _FakeProgram("old"), _FakeProgram("new")
    assert generate._executable(old, {}, keys, 1) == "compiled:old"
    # What a reused id() does: the entry made for ``old`` now sits under ``new``'s id.
    (key, entry), = generate._EXECUTABLES.items()
    generate._EXECUTABLES.clear()
    generate._EXECUTABLES[(id(new), *key[1:])] = entry
    assert generate._executable(new, {}, keys, 1) == "compiled:new"


def test_numpy_scalars_from_third_party_searchers_are_valid() -> None:
    space = get_space("dqn", "CartPole-v1")
    assert is_valid(space["buffer_size"], np.int64(5000))
    assert is_valid(space["use_target_network"], np.bool_(False))
    assert is_valid(space["buffer_batch_size"], np.int32(128))
    assert is_valid(space["learning_rate"], np.float32(1e-3))
    assert not is_valid(space["buffer_size"], np.int64(10))
    config = full_config("dqn", "CartPole-v1", {"buffer_size": np.int64(5000), "use_target_network": np.bool_(True)})
    assert type(config["buffer_size"]) is int and type(config["use_target_network"]) is bool


def test_dqn_target_sync_count_matches_the_documented_rule() -> None:
    """rl_tasks syncs the target once per 32-step update block in which a multiple of I is crossed.

    The README states the counts at 100k steps (3030 at I = 33, ARLBench 2500); this pins the rule the
    README describes to rejax's ``maybe_update_target_params`` arithmetic on the blocks ArlDQN runs.
    """
    from rl_tasks.algos import ArlDQN

    block = 8 * 4  # CartPole's 8 environments x train_freq 4
    steps = np.arange(block, 100_000 + 1, block)

    def syncs(interval: int) -> int:
        dqn = ArlDQN.__new__(ArlDQN)  # only the arithmetic of maybe_update_target_params is used
        object.__setattr__(dqn, "target_update_freq", interval)
        object.__setattr__(dqn, "polyak", 0.0)  # tau = 1: a sync copies the online parameters
        synced = jax.vmap(lambda step: dqn.maybe_update_target_params(1.0, 0.0, step, step - block))(steps)
        return int(np.sum(np.asarray(synced) == 1.0))

    assert syncs(33) == 100_000 // 33 == 3030
    assert syncs(10) == len(steps) == 3125
    arlbench = 100_000 // (8 * math.ceil(33 / 8))
    assert arlbench == 2500


def test_readme_names_the_arlbench_commit_and_the_sac_and_dqn_deviations() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "rl_tasks" / "README.md").read_text()
    assert "668c0c48312bdee041e6376b93c85f39093952be" in text
    for needle in ("3030", "2500", "(−10, 2)", "vf_coef", "actor → critic → alpha", "learning_starts"):
        assert needle in text, needle
