"""Compiled training and greedy evaluation of one task, cached per process.

A *task program* is everything that depends only on the static part of a configuration: the algorithm,
the environment, the training budget, the number of evaluation episodes and the static rejax fields
(``rl_tasks.algos.rejax_settings``). Its jitted functions take the traced hyperparameters as arguments, so
trials of one Tune worker (``reuse_actors=True``) and configurations of one generator process compile once per
static shape.

Seeds: seed ``s`` trains from ``jax.random.PRNGKey(s)``, split into a training key and an evaluation key.
Evaluation follows ARLBench and the ERAHBO paper: the mean return of greedy (deterministic) actions over
``eval_episodes`` episodes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import chex
import jax
import numpy as np
from jax import numpy as jnp
from rejax.evaluate import evaluate
from rejax.networks import SquashedGaussianPolicy

from rl_tasks.algos import create_algorithm, rejax_settings, steps_per_iteration
from rl_tasks.envs import check_task
from rl_tasks.spaces import full_config


def _freeze(value: Any) -> Any:
    """A hashable version of nested dicts, lists and tuples."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def greedy_action(actor: Any, params: Any, obs: chex.Array, low: chex.Array, high: chex.Array) -> chex.Array:
    """The deterministic action of a policy network: its distribution's mode, mapped into the action space.

    * ``SquashedGaussianPolicy`` (SAC) samples ``u ~ N(m, s)`` and plays ``loc + scale * tanh(u)``; its
      greedy action is ``loc + scale * tanh(m)`` (ARLBench's deterministic SAC action). The check is on the
      module's class: ``bij`` and ``action_loc`` live on the module, but ``bij`` only after ``setup()``, so
      an attribute test on the unbound module is always False.
    * Categorical (discrete PPO): the most likely action.
    * Gaussian (continuous PPO): the mean, clipped to ``[low, high]`` as the environment clips it.
    """
    mode = actor.apply(params, obs, method="_action_dist").mode()
    if isinstance(actor, SquashedGaussianPolicy):
        return actor.action_loc + jnp.tanh(mode) * actor.action_scale
    if low is None:
        return mode
    return jnp.clip(mode, low, high)


def greedy_act(algo: Any, ts: Any) -> Callable[[chex.Array, chex.PRNGKey], chex.Array]:
    """The deterministic policy of a trained state: argmax Q, or the policy's greedy action."""

    def act(obs: chex.Array, rng: chex.PRNGKey) -> chex.Array:
        del rng
        if getattr(algo, "normalize_observations", False):
            obs = algo.normalize_obs(ts.obs_rms_state, obs)
        obs = jnp.expand_dims(obs, 0)
        if hasattr(ts, "q_ts"):
            action = jnp.argmax(algo.agent.apply(ts.q_ts.params, obs), axis=-1)
        elif algo.discrete:
            action = greedy_action(algo.actor, ts.actor_ts.params, obs, None, None)
        else:
            action = greedy_action(algo.actor, ts.actor_ts.params, obs, algo.action_space.low,
                                   algo.action_space.high)
        return jnp.squeeze(action)

    return act


def evaluate_greedy(algo: Any, ts: Any, rng: chex.PRNGKey, episodes: int) -> chex.Array:
    """Returns of ``episodes`` greedy evaluation episodes, shape ``(episodes,)``."""
    _, returns = evaluate(
        greedy_act(algo, ts), rng, algo.env, algo.env_params, episodes, algo.env_params.max_steps_in_episode
    )
    return returns


def train_iterations(algo: Any, ts: Any, n: int) -> Any:
    """Run ``n`` training iterations (``n`` is static)."""
    return jax.lax.fori_loop(0, n, lambda _, ts: algo.train_iteration(ts), ts)


@dataclass(frozen=True)
class TaskProgram:
    """Jitted functions of one (algorithm, environment, budget, static hyperparameters) combination.

    Attributes:
        algo: algorithm name.
        env: environment name.
        total_timesteps: requested budget; training runs ``n_iterations * iteration_steps`` steps (rounded up).
        eval_episodes: greedy evaluation episodes per evaluation.
        iteration_steps: environment steps per training iteration.
        n_iterations: iterations of a full run.
        template: the rejax algorithm with the static fields; traced fields are substituted per call.
    """

    algo: str
    env: str
    total_timesteps: int
    eval_episodes: int
    iteration_steps: int
    n_iterations: int
    template: Any

    def bind(self, traced: Mapping[str, chex.Array]) -> Any:
        """The algorithm with the traced hyperparameters substituted."""
        return self.template.replace(**traced)

    @staticmethod
    def _state(algo: Any, leaves: list[chex.Array]) -> Any:
        """Rebuild a training state from its leaves inside a trace.

        Training states are carried between jitted calls as leaves only: their static parts (optax
        optimisers) close over the traced hyperparameters, so the structure is re-derived from the bound
        algorithm of the current trace: ``init_state`` is traced again and its unused computation is
        removed by XLA (``eval_shape`` would not do: its optimisers would hold tracers of its own trace).
        """
        structure = jax.tree.structure(algo.init_state(jax.random.PRNGKey(0)))
        return jax.tree.unflatten(structure, leaves)

    @functools.cached_property
    def init(self) -> Callable[[Mapping[str, chex.Array], chex.PRNGKey], list[chex.Array]]:
        """``init(traced, key) -> state leaves`` (key = the seed's training key)."""
        return jax.jit(lambda traced, key: jax.tree.leaves(self.bind(traced).init_state(key)))

    @functools.cached_property
    def advance(self) -> Callable[..., list[chex.Array]]:
        """``advance(traced, leaves, n) -> leaves`` after ``n`` (static) training iterations."""

        def advance(traced: Mapping[str, chex.Array], leaves: list[chex.Array], n: int) -> list[chex.Array]:
            algo = self.bind(traced)
            return jax.tree.leaves(train_iterations(algo, self._state(algo, leaves), n))

        return jax.jit(advance, static_argnums=2)

    @functools.cached_property
    def evaluate(self) -> Callable[[Mapping[str, chex.Array], list[chex.Array], chex.PRNGKey], chex.Array]:
        """``evaluate(traced, leaves, key) -> returns (eval_episodes,)``."""

        def evaluate(traced: Mapping[str, chex.Array], leaves: list[chex.Array], key: chex.PRNGKey) -> chex.Array:
            algo = self.bind(traced)
            return evaluate_greedy(algo, self._state(algo, leaves), key, self.eval_episodes)

        return jax.jit(evaluate)

    def run_seed(self, traced: Mapping[str, chex.Array], key: chex.PRNGKey) -> chex.Array:
        """Train one seed for the full budget and return its mean greedy evaluation return (traceable)."""
        key_train, key_eval = jax.random.split(key)
        algo = self.bind(traced)
        ts = train_iterations(algo, algo.init_state(key_train), self.n_iterations)
        return evaluate_greedy(algo, ts, key_eval, self.eval_episodes).mean()

    @functools.cached_property
    def train_batch(self) -> Callable[[Mapping[str, chex.Array], chex.Array], chex.Array]:
        """``train_batch(traced, keys[seeds]) -> mean returns[seeds]``: all seeds in one vmapped call."""
        return jax.jit(jax.vmap(self.run_seed, in_axes=(None, 0)))

    @functools.cached_property
    def train_batch_pmap(self) -> Callable[[Mapping[str, chex.Array], chex.Array], chex.Array]:
        """``f(traced, keys[devices, seeds/devices]) -> returns[devices, seeds/devices]`` (pmap of vmap)."""
        return jax.pmap(jax.vmap(self.run_seed, in_axes=(None, 0)), in_axes=(None, 0))


@functools.lru_cache(maxsize=64)
def _program(algo: str, env: str, static_key: tuple, total_timesteps: int, eval_episodes: int) -> TaskProgram:
    spec = check_task(algo, env)
    static = dict(static_key)
    template = create_algorithm(algo, spec, static, total_timesteps)
    iteration_steps = steps_per_iteration(algo, static)
    return TaskProgram(
        algo=algo,
        env=spec.name,
        total_timesteps=total_timesteps,
        eval_episodes=eval_episodes,
        iteration_steps=iteration_steps,
        n_iterations=max(1, math.ceil(total_timesteps / iteration_steps)),
        template=template,
    )


def prepare(
    algo: str, env: str, config: Mapping[str, Any], total_timesteps: int, eval_episodes: int
) -> tuple[TaskProgram, dict[str, chex.Array]]:
    """The cached program for a configuration's static part and its traced hyperparameters as arrays.

    Args:
        algo: ``ppo``, ``dqn`` or ``sac``.
        env: environment name or alias.
        config: tuned hyperparameters in ARLBench's names (missing ones take defaults; extra keys ignored).
        total_timesteps: training budget in environment steps.
        eval_episodes: greedy evaluation episodes.
    """
    if total_timesteps <= 0 or eval_episodes <= 0:
        raise ValueError(f"total_timesteps={total_timesteps} and eval_episodes={eval_episodes} must be positive")
    spec = check_task(algo, env)
    static, traced = rejax_settings(algo, spec, full_config(algo, spec.name, config), total_timesteps)
    program = _program(algo, spec.name, _freeze(static), int(total_timesteps), int(eval_episodes))
    return program, {name: jnp.asarray(value) for name, value in traced.items()}


def use_compilation_cache(directory: str) -> None:
    """Point JAX's persistent compilation cache at ``directory`` and cache every program (however small).

    XLA's own GPU caches are switched off: JAX 0.10 writes the path of its autotuning cache (a folder of
    ``directory``) into the compile options, which are part of every program's cache key, so a cache copied
    or mounted at another path was never hit (measured: every program compiled again from a copy of a
    pre-warmed directory). Without them the keys do not depend on where the cache lies; a hit loads the
    compiled program, so nothing is autotuned again.
    """
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def static_and_traced_names(algo: str, env: str) -> tuple[list[str], list[str]]:
    """Names of the rejax fields that are compiled in (static) and passed as arrays (traced) for a task."""
    spec = check_task(algo, env)
    static, traced = rejax_settings(algo, spec, full_config(algo, spec.name, {}), spec.arlbench_timesteps)
    return sorted(static), sorted(traced)


def seed_keys(seeds: list[int] | np.ndarray) -> chex.Array:
    """PRNG keys of the given integer seeds, stacked (``jax.random.PRNGKey(s)`` for each)."""
    return jnp.stack([jax.random.PRNGKey(int(s)) for s in seeds])
