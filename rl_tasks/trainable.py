"""Ray Tune function trainables: one trial trains ONE seed of one configuration (a replicate).

``make_trainable`` returns a function ``trainable(config)`` for ``tune.Tuner``. It reads the seed from
``config[seed_key]`` and the hyperparameters (ARLBench names, ``rl_tasks.spaces``) from the rest of ``config``,
trains in chunks of about ``eval_every`` environment steps and, after each chunk, evaluates the greedy policy
and calls ``ray.tune.report``. A replicate that the searcher cancels is therefore stopped at the next chunk
boundary. Every report carries the metric (the latest evaluation return), so Tune's strict metric checking is
satisfied; the last report (``final=True``) holds the final return, which is what ``RiskAwareSearch`` uses.

Compiled functions are cached per worker process (``rl_tasks.training``), so ``reuse_actors=True`` compiles
once per (algorithm, environment, static hyperparameters). JAX runs on its default backend: the CPU, or a GPU
when JAX sees one (request it with ``tune.with_resources(trainable, {"cpu": 1, "gpu": 1})``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_tasks.envs import check_task


def make_trainable(
    algo: str,
    env: str,
    total_timesteps: int,
    eval_every: int,
    eval_episodes: int = 128,
    seed_key: str = "seed",
    metric: str = "return",
    compilation_cache_dir: str | None = None,
) -> Callable[[dict[str, Any]], None]:
    """A Tune function trainable that trains one seed and reports evaluation returns.

    Args:
        algo: ``ppo``, ``dqn`` or ``sac``.
        env: environment name or alias (``rl_tasks.ENVIRONMENTS``).
        total_timesteps: training budget in environment steps (rounded up to whole training iterations).
        eval_every: environment steps between evaluations/reports (rounded to whole iterations, at least one).
        eval_episodes: greedy evaluation episodes per evaluation.
        seed_key: the config key holding the integer training seed.
        metric: the result key of the evaluation return.
        compilation_cache_dir: a directory for JAX's persistent compilation cache, shared by every worker
            that can see it (a node-local path, or a shared file system on a cluster). Compiling a PPO program
            takes ~45 s on one CPU core against ~3 s for 100k training steps, and each worker otherwise
            compiles every static shape (e.g. each ``minibatch_size``) itself. ``None``: JAX's own setting
            (the ``JAX_COMPILATION_CACHE_DIR`` environment variable, off by default).

    Reports (each chunk): ``{metric, "timesteps", "final"}``; the last report has ``final=True``.

    Raises:
        ValueError: unknown or mismatched algorithm/environment, or non-positive budgets.
    """
    spec = check_task(algo, env)
    if total_timesteps <= 0 or eval_every <= 0 or eval_episodes <= 0:
        raise ValueError(
            f"total_timesteps={total_timesteps}, eval_every={eval_every} and eval_episodes={eval_episodes} must be "
            "positive"
        )

    def trainable(config: dict[str, Any]) -> None:
        if seed_key not in config:
            raise ValueError(f"config has no seed key {seed_key!r}; keys: {sorted(config)}")
        if compilation_cache_dir is not None:
            _use_compilation_cache(compilation_cache_dir)
        _train_one_seed(algo, spec.name, config, int(config[seed_key]), total_timesteps, eval_every, eval_episodes,
                        metric)

    trainable.__name__ = f"{algo}_{spec.alias}"
    trainable.__qualname__ = trainable.__name__
    return trainable


def _use_compilation_cache(directory: str) -> None:
    """Point JAX's persistent compilation cache at ``directory`` and cache every program (however small)."""
    import jax  # noqa: PLC0415 - JAX loads only inside the worker

    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _train_one_seed(
    algo: str, env: str, config: dict[str, Any], seed: int, total_timesteps: int, eval_every: int,
    eval_episodes: int, metric: str,
) -> None:
    """Train one seed in chunks, reporting the greedy evaluation return after each chunk."""
    import jax  # noqa: PLC0415 - JAX loads only inside the worker
    from ray import tune  # noqa: PLC0415

    from rl_tasks.training import prepare  # noqa: PLC0415

    program, traced = prepare(algo, env, config, total_timesteps, eval_episodes)
    key_train, key_eval = jax.random.split(jax.random.PRNGKey(seed))
    ts = program.init(traced, key_train)
    chunk = max(1, round(eval_every / program.iteration_steps))
    done, evaluation = 0, 0
    while done < program.n_iterations:
        n = min(chunk, program.n_iterations - done)
        ts = program.advance(traced, ts, n)
        done += n
        final = done == program.n_iterations
        # The final evaluation uses the same key as the table generator; intermediate ones fresh keys.
        key = key_eval if final else jax.random.fold_in(key_eval, evaluation)
        value = float(program.evaluate(traced, ts, key).mean())
        evaluation += 1
        tune.report({metric: value, "timesteps": done * program.iteration_steps, "final": final})
