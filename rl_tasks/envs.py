"""Registry of the environments that ``rl_tasks`` trains on (JAX-free).

Each entry records how rejax creates the environment, whether its action space is discrete (which decides the
algorithms that apply: DQN needs discrete actions, SAC continuous ones, PPO takes both), and the ARLBench
environment settings that our algorithms use as fixed (not tuned) values: the number of parallel training
environments and ARLBench's training budget. Short aliases (``cartpole``) name tables on disk, and ARLBench's
own names (``cc_cartpole``, ``brax_halfcheetah``: its ``runscripts/configs/environment/*.yaml``) are accepted too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EnvSpec:
    """One environment: rejax creation string, action type and ARLBench's fixed settings.

    Attributes:
        name: the public name (``CartPole-v1``, ``brax/fast``).
        rejax_id: the string handed to ``rejax.compat.create``.
        alias: short lower-case name used in table file names and space names.
        domain: ``cc`` (gymnax classic control) or ``brax``.
        discrete: whether actions are discrete.
        num_envs: parallel training environments (ARLBench ``n_envs``).
        arlbench_timesteps: ARLBench's training budget for this environment.
        env_kwargs: extra keyword arguments for environment creation.
        arlbench_names: ARLBench's names of the environment (its environment config files).
    """

    name: str
    rejax_id: str
    alias: str
    domain: str
    discrete: bool
    num_envs: int
    arlbench_timesteps: int
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    arlbench_names: tuple[str, ...] = ()

    def kwargs_items(self) -> tuple[tuple[str, Any], ...]:
        """The environment keyword arguments as a hashable, sorted tuple."""
        return tuple(sorted(self.env_kwargs.items()))


ENVIRONMENTS: dict[str, EnvSpec] = {
    spec.name: spec
    for spec in (
        EnvSpec("CartPole-v1", "CartPole-v1", "cartpole", "cc", True, 8, 100_000, arlbench_names=("cc_cartpole",)),
        EnvSpec("Acrobot-v1", "Acrobot-v1", "acrobot", "cc", True, 8, 100_000, arlbench_names=("cc_acrobot",)),
        EnvSpec("MountainCar-v0", "MountainCar-v0", "mountain_car", "cc", True, 8, 100_000,
                arlbench_names=("cc_mountain_car",)),
        EnvSpec("Pendulum-v1", "Pendulum-v1", "pendulum", "cc", False, 8, 100_000, arlbench_names=("cc_pendulum",)),
        EnvSpec(
            "MountainCarContinuous-v0", "MountainCarContinuous-v0", "continuous_mountain_car", "cc", False, 8, 100_000,
            arlbench_names=("cc_continuous_mountain_car", "cc_mountain_car_continuous"),
        ),
        EnvSpec("brax/fast", "brax/fast", "brax_fast", "brax", False, 8, 1_000_000, arlbench_names=("brax_fast",)),
        # ARLBench runs halfcheetah on the mjx backend with 2048 environments; on CPU the spring backend is
        # an order of magnitude cheaper (see rl_tasks/README.md, deviations).
        EnvSpec(
            "brax/halfcheetah", "brax/halfcheetah", "brax_halfcheetah", "brax", False, 64, 50_000_000,
            {"backend": "spring"}, arlbench_names=("brax_halfcheetah",),
        ),
    )
}

ALGORITHMS: tuple[str, ...] = ("ppo", "dqn", "sac")


def get_env_spec(env: str) -> EnvSpec:
    """Look an environment up by its name, alias or ARLBench name (``cc_cartpole``).

    Raises:
        ValueError: the name is unknown; the message lists the valid names.
    """
    if env in ENVIRONMENTS:
        return ENVIRONMENTS[env]
    for spec in ENVIRONMENTS.values():
        if env in (spec.alias, spec.rejax_id.split("/")[-1], *spec.arlbench_names):
            return spec
    arlbench = sorted(name for spec in ENVIRONMENTS.values() for name in spec.arlbench_names)
    raise ValueError(f"unknown environment {env!r}; valid: {sorted(ENVIRONMENTS)}, their aliases, "
                     f"or ARLBench's names {arlbench}")


def check_task(algo: str, env: str) -> EnvSpec:
    """Validate an (algorithm, environment) pair and return the environment's spec.

    DQN needs discrete actions, SAC continuous actions (as in ARLBench); PPO takes both.

    Raises:
        ValueError: unknown algorithm, unknown environment or a mismatched action type.
    """
    if algo not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algo!r}; valid: {list(ALGORITHMS)}")
    spec = get_env_spec(env)
    if algo == "dqn" and not spec.discrete:
        raise ValueError(f"dqn needs a discrete action space; {spec.name} is continuous")
    if algo == "sac" and spec.discrete:
        raise ValueError(f"sac is offered on continuous action spaces only; {spec.name} is discrete")
    return spec


def tasks() -> list[tuple[str, str]]:
    """Every supported (algorithm, environment) pair."""
    pairs = []
    for algo in ALGORITHMS:
        for name, spec in ENVIRONMENTS.items():
            if (algo == "dqn" and not spec.discrete) or (algo == "sac" and spec.discrete):
                continue
            pairs.append((algo, name))
    return pairs
