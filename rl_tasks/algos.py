"""rejax's PPO, DQN and SAC, aligned with ARLBench, and the mapping from ARLBench's hyperparameter names.

rejax (Liesen et al.) implements the three algorithms as flax ``PyTreeNode`` dataclasses: fields marked
``pytree_node=True`` are array leaves (they can be traced, so one compiled program serves every value), the
others are static (a new value means a new program). The subclasses below add what ARLBench tunes and rejax
lacks, PureJaxRL-style:

* PPO: separate value-clipping range ``vf_clip_eps``, optional advantage normalisation, gradient clipping by
  global norm (rejax clips element-wise) and Adam ``eps=1e-5`` (ARLBench's).
* DQN: ``train_freq`` environment steps between updates, ``use_target_network``, and traced
  ``learning_starts`` / ``target_update_interval``.
* DQN and SAC: a uniform replay buffer whose capacity (``buffer_size``) is traced and that samples with
  replacement in O(batch); rejax's buffer samples without replacement through a weighted choice that costs
  O(buffer size) per update, the main cost of off-policy training on CPU.
* SAC: ``use_target_network``, ``reward_scale``, traced ``learning_starts`` / ``target_update_interval``.

``rejax_settings`` turns a full ARLBench-named configuration into the static and traced rejax fields.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import chex
import jax
import optax
from flax import struct
from flax.training.train_state import TrainState
from jax import numpy as jnp
from rejax import DQN, PPO, SAC
from rejax.algos.algorithm import register_init
from rejax.buffers import Minibatch

from rl_tasks.envs import EnvSpec


class UniformReplayBuffer(struct.PyTreeNode):
    """Circular replay buffer with a traced capacity and uniform sampling with replacement.

    ``data`` holds ``allocation`` rows (static); only the first ``capacity`` rows (traced, at most
    ``allocation``) are used, so different ``buffer_size`` values share one compiled program.
    """

    data: Minibatch
    index: chex.Array
    count: chex.Array
    capacity: chex.Array

    @classmethod
    def empty(cls, allocation: int, capacity: chex.Array, obs_space: Any, action_space: Any) -> UniformReplayBuffer:
        """An empty buffer of ``allocation`` rows of which ``capacity`` are used."""
        data = Minibatch(
            obs=jnp.zeros((allocation, *obs_space.shape), obs_space.dtype),
            action=jnp.zeros((allocation, *action_space.shape), action_space.dtype),
            reward=jnp.zeros(allocation),
            done=jnp.zeros(allocation, bool),
            next_obs=jnp.zeros((allocation, *obs_space.shape), obs_space.dtype),
        )
        capacity = jnp.clip(jnp.asarray(capacity, jnp.int32), 1, allocation)
        return cls(data=data, index=jnp.int32(0), count=jnp.int32(0), capacity=capacity)

    def extend(self, batch: Minibatch) -> UniformReplayBuffer:
        """Append a batch of transitions (leading axis), overwriting the oldest when full."""
        n = batch.reward.shape[0]
        rows = (self.index + jnp.arange(n)) % self.capacity
        data = jax.tree.map(lambda arr, b: arr.at[rows].set(b), self.data, batch)
        return self.replace(
            data=data, index=(self.index + n) % self.capacity, count=jnp.minimum(self.count + n, self.capacity)
        )

    def sample(self, num: int, rng: chex.PRNGKey) -> Minibatch:
        """``num`` transitions drawn uniformly with replacement from the stored ones."""
        rows = jax.random.randint(rng, (num,), 0, jnp.maximum(self.count, 1))
        return jax.tree.map(lambda arr: arr[rows], self.data)


def _global_norm_adam(learning_rate: chex.Scalar, max_grad_norm: chex.Scalar, eps: float) -> optax.GradientTransformation:
    """Adam after clipping the gradient by its global norm (ARLBench/PureJaxRL)."""
    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate, eps=eps))


class ArlPPO(PPO):
    """rejax PPO with ARLBench's ``vf_clip_eps``, ``normalize_advantage``, global-norm clipping, Adam eps."""

    vf_clip_eps: chex.Scalar = struct.field(pytree_node=True, default=0.2)
    normalize_advantage: chex.Scalar = struct.field(pytree_node=True, default=True)
    adam_eps: float = struct.field(pytree_node=False, default=1e-5)

    @register_init
    def initialize_network_params(self, rng: chex.PRNGKey) -> dict[str, TrainState]:
        """Actor and critic parameters, each with its own clipped Adam optimiser."""
        rng_actor, rng_critic = jax.random.split(rng)
        obs_ph = jnp.empty([1, *self.env.observation_space(self.env_params).shape])
        actor_params = self.actor.init(rng_actor, obs_ph, rng_actor)
        critic_params = self.critic.init(rng_critic, obs_ph)
        tx = _global_norm_adam(self.learning_rate, self.max_grad_norm, self.adam_eps)
        return {
            "actor_ts": TrainState.create(apply_fn=(), params=actor_params, tx=tx),
            "critic_ts": TrainState.create(apply_fn=(), params=critic_params, tx=tx),
        }

    def update_actor(self, ts: Any, batch: Any) -> Any:
        """Clipped surrogate policy loss with optional advantage normalisation, minus entropy bonus."""

        def actor_loss_fn(params: Any) -> chex.Array:
            log_prob, entropy = self.actor.apply(
                params, batch.trajectories.obs, batch.trajectories.action, method="log_prob_entropy"
            )
            advantages = batch.advantages
            normalized = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            advantages = jnp.where(self.normalize_advantage, normalized, advantages)
            ratio = jnp.exp(log_prob - batch.trajectories.log_prob)
            clipped_ratio = jnp.clip(ratio, 1 - self.clip_eps, 1 + self.clip_eps)
            pi_loss = -jnp.minimum(ratio * advantages, clipped_ratio * advantages).mean()
            return pi_loss - self.ent_coef * entropy.mean()

        grads = jax.grad(actor_loss_fn)(ts.actor_ts.params)
        return ts.replace(actor_ts=ts.actor_ts.apply_gradients(grads=grads))

    def update_critic(self, ts: Any, batch: Any) -> Any:
        """Value loss clipped around the rollout values with ``vf_clip_eps``, scaled by ``vf_coef``."""

        def critic_loss_fn(params: Any) -> chex.Array:
            value = self.critic.apply(params, batch.trajectories.obs)
            old_value = batch.trajectories.value
            value_clipped = old_value + (value - old_value).clip(-self.vf_clip_eps, self.vf_clip_eps)
            losses = jnp.maximum(jnp.square(value - batch.targets), jnp.square(value_clipped - batch.targets))
            return self.vf_coef * 0.5 * losses.mean()

        grads = jax.grad(critic_loss_fn)(ts.critic_ts.params)
        return ts.replace(critic_ts=ts.critic_ts.apply_gradients(grads=grads))


def _select_tree(flag: chex.Array, on_true: Any, on_false: Any) -> Any:
    """Leaf-wise ``where(flag, on_true, on_false)`` over two pytrees of equal structure."""
    return jax.tree.map(lambda a, b: jnp.where(flag, a, b), on_true, on_false)


class ArlDQN(DQN):
    """rejax DQN with ARLBench's ``train_freq``, ``use_target_network`` and a traced-capacity buffer.

    One iteration takes ``train_freq`` vectorised environment steps, then (once ``fill_buffer`` =
    ``learning_starts`` steps are collected) ``num_epochs`` = ``gradient_steps`` updates.
    """

    train_freq: int = struct.field(pytree_node=False, default=4)
    buffer_allocation: int = struct.field(pytree_node=False, default=131_072)
    buffer_capacity: chex.Scalar = struct.field(pytree_node=True, default=131_072)
    fill_buffer: chex.Scalar = struct.field(pytree_node=True, default=128)
    target_update_freq: chex.Scalar = struct.field(pytree_node=True, default=10)
    use_target_network: chex.Scalar = struct.field(pytree_node=True, default=True)

    @register_init
    def initialize_replay_buffer(self, rng: chex.PRNGKey) -> dict[str, UniformReplayBuffer]:
        """An empty uniform replay buffer."""
        buf = UniformReplayBuffer.empty(self.buffer_allocation, self.buffer_capacity, self.obs_space, self.action_space)
        return {"replay_buffer": buf}

    def train_iteration(self, ts: Any) -> Any:
        """``train_freq`` environment steps, then ``num_epochs`` updates and a target-network check."""
        start_training = ts.global_step > self.fill_buffer
        old_global_step = ts.global_step

        def collect(ts: Any, _: None) -> tuple[Any, None]:
            epsilon = self.epsilon_schedule(ts.global_step)
            ts, batch = self.collect_transitions(ts, epsilon, uniform=jnp.logical_not(start_training))
            return ts.replace(replay_buffer=ts.replay_buffer.extend(batch)), None

        ts, _ = jax.lax.scan(collect, ts, None, self.train_freq)

        def update_iteration(_: int, ts: Any) -> Any:
            rng, rng_sample = jax.random.split(ts.rng)
            minibatch = ts.replay_buffer.sample(self.batch_size, rng_sample)
            if self.normalize_observations:
                minibatch = minibatch._replace(
                    obs=self.normalize_obs(ts.obs_rms_state, minibatch.obs),
                    next_obs=self.normalize_obs(ts.obs_rms_state, minibatch.next_obs),
                )
            return self.update(ts.replace(rng=rng), minibatch)

        ts = jax.lax.cond(
            start_training, lambda ts: jax.lax.fori_loop(0, self.num_epochs, update_iteration, ts), lambda ts: ts, ts
        )
        target = self.maybe_update_target_params(ts.q_ts.params, ts.q_target_params, ts.global_step, old_global_step)
        return ts.replace(q_target_params=target)

    def update(self, ts: Any, mb: Minibatch) -> Any:
        """One TD update; without a target network the online parameters give the bootstrap target."""
        ts = ts.replace(q_target_params=_select_tree(self.use_target_network, ts.q_target_params, ts.q_ts.params))
        return super().update(ts, mb)


class ArlSAC(SAC):
    """rejax SAC with ARLBench's ``use_target_network``, ``reward_scale`` and a traced-capacity buffer."""

    buffer_allocation: int = struct.field(pytree_node=False, default=131_072)
    buffer_capacity: chex.Scalar = struct.field(pytree_node=True, default=131_072)
    fill_buffer: chex.Scalar = struct.field(pytree_node=True, default=128)
    target_update_freq: chex.Scalar = struct.field(pytree_node=True, default=1000)
    use_target_network: chex.Scalar = struct.field(pytree_node=True, default=True)
    reward_scale: chex.Scalar = struct.field(pytree_node=True, default=1.0)

    @register_init
    def initialize_replay_buffer(self, rng: chex.PRNGKey) -> dict[str, UniformReplayBuffer]:
        """An empty uniform replay buffer."""
        buf = UniformReplayBuffer.empty(self.buffer_allocation, self.buffer_capacity, self.obs_space, self.action_space)
        return {"replay_buffer": buf}

    def update(self, ts: Any, mb: Minibatch) -> Any:
        """Actor, critic and temperature updates on reward-scaled transitions."""
        mb = mb._replace(reward=mb.reward * self.reward_scale)
        target = _select_tree(self.use_target_network, ts.critic_target_params, ts.critic_ts.params)
        return super().update(ts.replace(critic_target_params=target), mb)


ALGORITHM_CLASSES = {"ppo": ArlPPO, "dqn": ArlDQN, "sac": ArlSAC}


def steps_per_iteration(algo: str, static: Mapping[str, Any]) -> int:
    """Environment steps one ``train_iteration`` takes."""
    if algo == "ppo":
        return static["num_envs"] * static["num_steps"]
    if algo == "dqn":
        return static["num_envs"] * static["train_freq"]
    return static["num_envs"]


def _buffer_allocation(total_timesteps: int, chunk: int) -> int:
    """Rows to allocate: enough for every transition of the run (a larger buffer never fills)."""
    return int(math.ceil(total_timesteps / chunk) * chunk)


def rejax_settings(
    algo: str, spec: EnvSpec, config: Mapping[str, Any], total_timesteps: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a full ARLBench-named configuration into static and traced rejax fields.

    Args:
        algo: ``ppo``, ``dqn`` or ``sac``.
        spec: the environment.
        config: fixed values, defaults and tuned values (``rl_tasks.spaces.full_config``).
        total_timesteps: training budget in environment steps.

    Returns:
        ``(static, traced)``: static fields (hashable values; they select the compiled program) and traced
        fields (Python scalars; one compiled program serves all their values).
    """
    activation = config["activation"]
    hidden = (config["hidden_size"], config["hidden_size"])
    if algo == "ppo":
        rollout = spec.num_envs * config["n_steps"]
        static = {
            "num_envs": spec.num_envs,
            "num_steps": config["n_steps"],
            "num_epochs": config["update_epochs"],
            "num_minibatches": max(1, rollout // config["minibatch_size"]),
            "normalize_observations": bool(config["normalize_observations"]),
            "agent_kwargs": (("activation", activation), ("hidden_layer_sizes", hidden)),
        }
        traced = {
            name: float(config[name])
            for name in ("learning_rate", "gamma", "gae_lambda", "clip_eps", "vf_clip_eps", "ent_coef", "vf_coef",
                         "max_grad_norm")
        }
        traced["normalize_advantage"] = bool(config["normalize_advantage"])
    elif algo == "dqn":
        chunk = spec.num_envs * config["train_freq"]
        static = {
            "num_envs": spec.num_envs,
            "train_freq": config["train_freq"],
            "num_epochs": config["gradient_steps"],
            "batch_size": config["buffer_batch_size"],
            "exploration_fraction": float(config["exploration_fraction"]),
            "buffer_allocation": _buffer_allocation(total_timesteps, chunk),
            "normalize_observations": bool(config["normalize_observations"]),
            "agent_kwargs": (("activation", activation),),
        }
        traced = {
            "learning_rate": float(config["learning_rate"]),
            "gamma": float(config["gamma"]),
            "eps_start": float(config["initial_epsilon"]),
            "eps_end": float(config["target_epsilon"]),
            "buffer_capacity": int(min(config["buffer_size"], static["buffer_allocation"])),
            "fill_buffer": int(config["learning_starts"]),
            "use_target_network": bool(config["use_target_network"]),
            "target_update_freq": int(config["target_update_interval"]),
            "polyak": 1.0 - float(config["tau"]),
            "ddqn": False,
        }
    else:
        if config["train_freq"] != 1 or not config["alpha_auto"]:
            raise ValueError("sac supports train_freq=1 and alpha_auto=True only (rejax's SAC loop)")
        static = {
            "num_envs": spec.num_envs,
            "num_epochs": config["gradient_steps"],
            "batch_size": config["buffer_batch_size"],
            "buffer_allocation": _buffer_allocation(total_timesteps, spec.num_envs),
            "normalize_observations": bool(config["normalize_observations"]),
            "hidden_layer_sizes": hidden,
            "agent_kwargs": (("activation", activation),),
        }
        traced = {
            "learning_rate": float(config["learning_rate"]),
            "gamma": float(config["gamma"]),
            "buffer_capacity": int(min(config["buffer_size"], static["buffer_allocation"])),
            "fill_buffer": int(config["learning_starts"]),
            "use_target_network": bool(config["use_target_network"]),
            "target_update_freq": int(config["target_update_interval"]),
            "polyak": 1.0 - float(config["tau"]),
            "reward_scale": float(config["reward_scale"]),
        }
    return static, traced


def create_algorithm(algo: str, spec: EnvSpec, static: Mapping[str, Any], total_timesteps: int) -> Any:
    """Instantiate the rejax algorithm from its static fields (traced fields keep their defaults)."""
    kwargs = dict(static)
    kwargs["agent_kwargs"] = dict(kwargs["agent_kwargs"])
    return ALGORITHM_CLASSES[algo].create(
        env=spec.rejax_id,
        env_params=dict(spec.env_kwargs),
        total_timesteps=total_timesteps,
        eval_freq=total_timesteps,
        skip_initial_evaluation=True,
        **kwargs,
    )
