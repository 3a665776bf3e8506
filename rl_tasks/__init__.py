"""rl_tasks: live JAX RL trainables (rejax PPO/DQN/SAC on gymnax and brax), ARLBench search spaces, and the
offline-table generator.

This is the only package of the project that imports JAX, and it does so lazily: ``import rl_tasks`` is
cheap, JAX loads when a trainable runs or a table is generated.

Public entry points:

* :func:`make_trainable` (``rl_tasks.trainable``): a Ray Tune function trainable, one seed per trial.
* :class:`WorkerPool` (``rl_tasks.pool``) and :func:`make_pooled_trainable`: warm training workers shared by
  thin trials, so that no trial pays JAX's start-up; :class:`PoolPrefetch` (``rl_tasks.prefetch``), a Tune
  callback that starts a pending trial's replicate on a free worker before Tune has a process for the trial.
* :func:`rl_tasks.prewarm.prewarm` (``tune-risk prewarm``): compile every static shape of a search space into
  the persistent compilation cache the workers share, before a search.
* :func:`get_space`, :func:`space_name`, :func:`default_config` (``rl_tasks.spaces``): ARLBench spaces.
* :func:`generate_table` (``rl_tasks.generate``): configurations x seeds tables, ARLBench long format.
* :func:`tasks`: the supported (algorithm, environment) pairs.
"""

from __future__ import annotations

from typing import Any

from rl_tasks.envs import ALGORITHMS, ENVIRONMENTS, tasks

__all__ = [
    "ALGORITHMS",
    "ENVIRONMENTS",
    "PoolPrefetch",
    "WorkerPool",
    "default_config",
    "generate_table",
    "get_space",
    "make_pooled_trainable",
    "make_trainable",
    "space_name",
    "tasks",
]


def make_trainable(*args: Any, **kwargs: Any) -> Any:
    """See :func:`rl_tasks.trainable.make_trainable`."""
    from rl_tasks.trainable import make_trainable as _make  # noqa: PLC0415

    return _make(*args, **kwargs)


def make_pooled_trainable(*args: Any, **kwargs: Any) -> Any:
    """See :func:`rl_tasks.trainable.make_pooled_trainable`."""
    from rl_tasks.trainable import make_pooled_trainable as _make  # noqa: PLC0415

    return _make(*args, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "WorkerPool":  # imports Ray only when used
        from rl_tasks.pool import WorkerPool  # noqa: PLC0415

        return WorkerPool
    if name == "PoolPrefetch":
        from rl_tasks.prefetch import PoolPrefetch  # noqa: PLC0415

        return PoolPrefetch
    raise AttributeError(f"module 'rl_tasks' has no attribute {name!r}")


def generate_table(*args: Any, **kwargs: Any) -> Any:
    """See :func:`rl_tasks.generate.generate_table` (imports JAX)."""
    from rl_tasks.generate import generate_table as _generate  # noqa: PLC0415

    return _generate(*args, **kwargs)


def get_space(algo: str, env: str) -> dict[str, Any]:
    """See :func:`rl_tasks.spaces.get_space`."""
    from rl_tasks.spaces import get_space as _get_space  # noqa: PLC0415

    return _get_space(algo, env)


def space_name(algo: str, env: str) -> str:
    """See :func:`rl_tasks.spaces.space_name`."""
    from rl_tasks.spaces import space_name as _space_name  # noqa: PLC0415

    return _space_name(algo, env)


def default_config(algo: str, env: str) -> dict[str, Any]:
    """See :func:`rl_tasks.spaces.default_config`."""
    from rl_tasks.spaces import default_config as _default_config  # noqa: PLC0415

    return _default_config(algo, env)
