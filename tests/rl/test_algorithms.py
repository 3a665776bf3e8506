"""rejax algorithms aligned with ARLBench: replay buffer, hyperparameters reach training, every algorithm runs."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from rl_tasks.algos import UniformReplayBuffer  # noqa: E402
from rl_tasks.training import prepare, seed_keys, static_and_traced_names  # noqa: E402


def _space(shape, dtype):
    class Box:  # the two attributes UniformReplayBuffer.empty reads
        pass

    box = Box()
    box.shape, box.dtype = shape, dtype
    return box


def test_uniform_buffer_wraps_at_its_traced_capacity() -> None:
    from rejax.buffers import Minibatch

    jnp = jax.numpy
    buf = UniformReplayBuffer.empty(8, 3, _space((1,), jnp.float32), _space((), jnp.int32))
    for start in (0, 2, 4):
        obs = jnp.arange(start, start + 2, dtype=jnp.float32)[:, None]
        batch = Minibatch(obs=obs, action=jnp.zeros(2, jnp.int32), reward=obs[:, 0], done=jnp.zeros(2, bool),
                          next_obs=obs)
        buf = buf.extend(batch)
    assert int(buf.count) == 3 and int(buf.index) == 0
    stored = sorted(np.asarray(buf.data.reward[:3]).tolist())
    assert stored == [3.0, 4.0, 5.0], "the oldest transitions were not overwritten within the capacity"
    assert np.all(np.asarray(buf.data.reward[3:]) == 0), "rows beyond the capacity were written"
    sample = buf.sample(64, jax.random.PRNGKey(0))
    assert set(np.asarray(sample.reward).tolist()) <= {3.0, 4.0, 5.0}


def test_traced_hyperparameters_share_a_program_and_change_results() -> None:
    a, traced_a = prepare("ppo", "CartPole-v1", {"learning_rate": 1e-3, "minibatch_size": 512}, 2048, 4)
    b, traced_b = prepare("ppo", "CartPole-v1", {"learning_rate": 3e-2, "minibatch_size": 512}, 2048, 4)
    c, _ = prepare("ppo", "CartPole-v1", {"minibatch_size": 128}, 2048, 4)
    assert a is b and a is not c
    keys = seed_keys([0, 1])
    returns_a = np.asarray(a.train_batch(traced_a, keys))
    returns_b = np.asarray(a.train_batch(traced_b, keys))
    assert np.all(np.isfinite(returns_a)) and not np.array_equal(returns_a, returns_b)
    np.testing.assert_array_equal(returns_a, np.asarray(a.train_batch(traced_a, keys)))


@pytest.mark.parametrize(
    ("algo", "env", "config", "steps"),
    [
        ("dqn", "CartPole-v1", {"learning_starts": 64, "buffer_size": 1024, "use_target_network": False}, 1024),
        ("sac", "Pendulum-v1", {"learning_starts": 64, "buffer_batch_size": 256}, 128),
        ("ppo", "MountainCarContinuous-v0", {}, 1024),
    ],
)
def test_every_algorithm_trains_and_evaluates(algo: str, env: str, config: dict, steps: int) -> None:
    program, traced = prepare(algo, env, config, steps, 2)
    returns = np.asarray(program.train_batch(traced, seed_keys([0, 1])))
    assert returns.shape == (2,) and np.all(np.isfinite(returns))
    static, traced_names = static_and_traced_names(algo, env)
    assert "learning_rate" in traced_names and "num_envs" in static


@pytest.mark.slow
def test_brax_fast_ppo_runs() -> None:
    pytest.importorskip("brax", reason="brax/fast needs the brax extra (pip install 'tune-risk[brax]')")
    program, traced = prepare("ppo", "brax/fast", {"minibatch_size": 128}, 64, 1)
    returns = np.asarray(program.train_batch(traced, seed_keys([0])))
    assert np.all(np.isfinite(returns)), returns
