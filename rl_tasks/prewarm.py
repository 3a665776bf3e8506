"""Pre-warm JAX's persistent compilation cache for every static shape of a search space, before a search.

Why: a worker that meets a configuration whose static part (e.g. PPO's ``minibatch_size``) it has not compiled
yet traces and compiles its training programs (about 21 s for PPO CartPole on one core, more on a busy one),
and every worker of a cluster would do so for every static shape. Compiled once into a persistent cache
directory that the workers share (``make_trainable(..., compilation_cache_dir=...)`` or
``WorkerPool(compilation_cache_dir=...)``), each worker loads the programs instead (3.7 s measured).

A configuration's static part is what ``rl_tasks.training.rejax_settings`` compiles in; a search space's
static shapes are found by enumerating its categorical hyperparameters (every choice, the product over
hyperparameters) and probing each numeric one at its bounds: a numeric hyperparameter that changes the static
part (none in the ARLBench spaces) has only its bounds pre-warmed, with a warning. For each shape, the three
programs a replicate runs are compiled ahead of time with ``jit(...).lower(...).compile()``, which writes the
same cache entries the worker will look up: ``init``, ``advance`` for each chunk length
(:func:`rl_tasks.seed_run.chunk_lengths`) and ``evaluate``. Nothing is trained.

The cache keys include the JAX version, the backend and device kind and ``XLA_FLAGS``: pre-warm on the node
type (and with the environment) the workers will use. ``tune-risk prewarm --help`` is the command line.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ray.tune.search import sample

from rl_tasks.envs import check_task
from rl_tasks.spaces import default_config, full_config, get_space

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WarmShape:
    """One pre-warmed static shape: a configuration that has it, the static fields and the compile seconds."""

    config: dict[str, Any]
    static: dict[str, Any]
    seconds: float


def _static_part(algo: str, env: str, config: Mapping[str, Any], total_timesteps: int) -> tuple:
    from rl_tasks.algos import rejax_settings  # noqa: PLC0415 - loads JAX: only when a command runs

    spec = check_task(algo, env)
    static, _ = rejax_settings(algo, spec, full_config(algo, spec.name, config), total_timesteps)
    return tuple(sorted(static.items()))  # static values are hashable: they key the compiled programs


def shape_configs(algo: str, env: str, total_timesteps: int,
                  space: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One configuration per distinct static shape of ``space`` (default: the task's ARLBench space).

    Categorical hyperparameters take every choice (their product); numeric ones their default, or both
    bounds where a bound changes the static part; constants are kept; the seed key and other keys the
    task does not know are ignored by the programs. Order: first appearance in the product.
    """
    space = dict(get_space(algo, env) if space is None else space)
    base = {**default_config(algo, env), **{k: v for k, v in space.items() if not isinstance(v, sample.Domain)}}
    reference = _static_part(algo, env, base, total_timesteps)
    axes: list[tuple[str, list[Any]]] = []
    for name, domain in space.items():
        if isinstance(domain, sample.Categorical):
            axes.append((name, list(domain.categories)))
        elif isinstance(domain, sample.Domain) and hasattr(domain, "lower"):
            probes = [domain.lower, domain.upper - 1 if isinstance(domain, sample.Integer) else domain.upper]
            if any(_static_part(algo, env, {**base, name: v}, total_timesteps) != reference for v in probes):
                logger.warning("prewarm: hyperparameter %r changes the compiled shape; only its bounds are "
                               "pre-warmed", name)
                axes.append((name, probes))
    seen: dict[tuple, dict[str, Any]] = {}
    for values in itertools.product(*(choices for _, choices in axes)):
        config = {**base, **dict(zip((name for name, _ in axes), values, strict=True))}
        seen.setdefault(_static_part(algo, env, config, total_timesteps), config)
    return list(seen.values())


def compile_programs(algo: str, env: str, config: Mapping[str, Any], total_timesteps: int, eval_every: int,
                     eval_episodes: int) -> None:
    """Compile (ahead of time, without training) the programs a replicate of ``config`` runs."""
    import jax  # noqa: PLC0415 - the command loads JAX, importing this module does not

    from rl_tasks.seed_run import chunk_lengths  # noqa: PLC0415
    from rl_tasks.training import prepare  # noqa: PLC0415

    program, traced = prepare(algo, env, config, total_timesteps, eval_episodes)
    key = jax.random.PRNGKey(0)
    leaves = jax.eval_shape(program.init, traced, key)
    program.init.lower(traced, key).compile()
    for n in chunk_lengths(program.iteration_steps, program.n_iterations, eval_every):
        program.advance.lower(traced, leaves, n).compile()
    program.evaluate.lower(traced, leaves, key).compile()


def prewarm(algo: str, env: str, total_timesteps: int, eval_every: int, eval_episodes: int,
            compilation_cache_dir: str, space: Mapping[str, Any] | None = None) -> list[WarmShape]:
    """Compile every static shape of ``space`` into ``compilation_cache_dir``; the budgets must be the live
    trainable's (``make_trainable``/``make_pooled_trainable`` arguments), or the workers will not find them.

    Raises:
        ValueError: unknown or mismatched task, non-positive budgets.
    """
    if min(total_timesteps, eval_every, eval_episodes) <= 0:
        raise ValueError(f"total_timesteps={total_timesteps}, eval_every={eval_every} and "
                         f"eval_episodes={eval_episodes} must be positive")
    from rl_tasks.training import use_compilation_cache  # noqa: PLC0415

    use_compilation_cache(compilation_cache_dir)
    shapes = []
    for config in shape_configs(algo, env, total_timesteps, space):
        started = time.perf_counter()
        compile_programs(algo, env, config, total_timesteps, eval_every, eval_episodes)
        static = dict(_static_part(algo, env, config, total_timesteps))
        shapes.append(WarmShape(config=config, static=static, seconds=time.perf_counter() - started))
        logger.info("prewarm: %s %s shape %d compiled in %.1f s", algo, env, len(shapes), shapes[-1].seconds)
    return shapes
