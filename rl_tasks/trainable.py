"""Ray Tune function trainables: one trial trains ONE seed of one configuration (a replicate).

``make_trainable`` returns a function ``trainable(config)`` for ``tune.Tuner``. It reads the seed from
``config[seed_key]`` and the hyperparameters (ARLBench names, ``rl_tasks.spaces``) from the rest of ``config``,
trains in chunks of about ``eval_every`` environment steps and, after each chunk, evaluates the greedy policy
and calls ``ray.tune.report``. A replicate that the searcher cancels is therefore stopped at the next chunk
boundary. Every report carries the metric (the latest evaluation return), so Tune's strict metric checking is
satisfied; the last report (``final=True``) holds the final return, which is what ``RiskAwareSearch`` uses
(``RiskAwareSearch(final_key="final")`` takes it from that report, before the trial ends, so Tune can hand the
trial's process to the next replicate).

Every report also carries ``startup_s`` (seconds from the trial's start to its first training chunk: imports,
tracing, compiling or loading programs, waiting for a pool worker), ``worker_pid`` (the training process) and
``chunk_s`` (the seconds that process spent training and evaluating the chunk).

``make_pooled_trainable`` returns a *thin* trainable with the same reports and values, which trains on a warm
``rl_tasks.pool.WorkerPool`` worker instead of in the trial's own process (no JAX start-up per trial).

Compiled functions are cached per worker process (``rl_tasks.training``), so ``reuse_actors=True`` compiles
once per (algorithm, environment, static hyperparameters). JAX runs on its default backend: the CPU, or a GPU
when JAX sees one (request it with ``tune.with_resources(trainable, {"cpu": 1, "gpu": 1})``).
"""

from __future__ import annotations

import itertools
import os
import pickle
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_tasks.envs import check_task
from rl_tasks.pinning import pin_once
from rl_tasks.seed_run import Chunk, RunState


def make_trainable(
    algo: str,
    env: str,
    total_timesteps: int,
    eval_every: int,
    eval_episodes: int = 128,
    seed_key: str = "seed",
    metric: str = "return",
    compilation_cache_dir: str | None = None,
    pin_cpus: bool = True,
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
        pin_cpus: pin the trial's process, before JAX starts, to ``floor(CPUs of the trial)`` cores that no other
            training process on its node holds (``rl_tasks.pinning``: Ray reserves CPUs but does not pin, and XLA
            otherwise runs one compute thread per core of the node in every trial). A reused actor keeps its
            cores. A 1-CPU trial then returns what a 1-CPU pool worker returns, also where XLA's results
            depend on its thread count. No pinning for fractional CPUs, outside a Ray actor
            (the function called directly), or without free cores (a warning: Ray given more CPUs than cores).

    Reports (each chunk): ``{metric, "timesteps", "final", "startup_s", "worker_pid", "chunk_s"}``; the last report has
    ``final=True``.

    Raises:
        ValueError: unknown or mismatched algorithm/environment, or non-positive budgets.
    """
    spec = check_task(algo, env)
    _check_budgets(total_timesteps, eval_every, eval_episodes)

    def trainable(config: dict[str, Any]) -> None:
        started = time.perf_counter()
        seed = _seed_of(config, seed_key)
        if pin_cpus:
            _pin_trial_process()
        if compilation_cache_dir is not None:
            from rl_tasks.training import use_compilation_cache  # noqa: PLC0415 - JAX loads in the worker only

            use_compilation_cache(compilation_cache_dir)
        from rl_tasks.seed_run import SeedRun  # noqa: PLC0415

        run = SeedRun(algo, spec.name, config, seed, total_timesteps, eval_every, eval_episodes)
        chunks = (run.advance() for _ in itertools.count())
        _report_until_final(chunks, metric, time.perf_counter() - started, os.getpid())

    return _named(trainable, algo, spec.alias)


def make_pooled_trainable(
    pool: Any,
    algo: str,
    env: str,
    total_timesteps: int,
    eval_every: int,
    eval_episodes: int = 128,
    seed_key: str = "seed",
    metric: str = "return",
    checkpoint: bool = False,
) -> Callable[[dict[str, Any]], None]:
    """A thin Tune function trainable whose replicate trains on a warm ``WorkerPool`` worker.

    Same arguments, reports and values as ``make_trainable`` (bit for bit: both run
    ``rl_tasks.seed_run.SeedRun`` on the same number of cores: one for a 1-CPU pool worker and a 1-CPU pinned
    trial; an unpinned process runs one XLA thread per core of its node, which changes the returns of some
    configurations, e.g. SAC with ``buffer_batch_size`` >= 512), except that JAX's compilation cache is the pool's. The trial leases a
    worker (waiting while none is free), starts the replicate there (``WorkerPool.start_replicate``: a
    worker found dead first is replaced and another leased) and reports after each chunk; Tune's STOP
    (raised inside ``tune.report``) ends it at the next chunk and the lease is released in a ``finally``.
    The trial requests ``pool.trial_resources`` (a hundredth of its slot's CPU: the worker holds the rest);
    give Tune ``max_concurrent_trials=pool.size``.

    ``checkpoint=True`` (for ``PopulationBasedTraining`` and PB2): every report but the last carries a
    ``tune.Checkpoint`` of the run's state (``SeedRun.snapshot``: training state, iterations and evaluations
    done), and a trial started with ``tune.get_checkpoint()`` continues that state with its own config, whose
    static hyperparameters must be the checkpoint's (PBT's exploit copies them with the checkpoint; mutate only
    traced ones). The last report has none: a finished run cannot be continued. Such a trainable is not
    prefetched (no ``pooled_task``: a prefetched replicate would start from scratch).

    Raises:
        TypeError: ``pool`` is not a ``WorkerPool``.
        ValueError: as ``make_trainable``.
    """
    from ray import tune  # noqa: PLC0415

    from rl_tasks.pool import WorkerPool  # noqa: PLC0415

    if not isinstance(pool, WorkerPool):
        raise TypeError(f"make_pooled_trainable: pool must be an rl_tasks.WorkerPool, got {type(pool).__name__}")
    spec = check_task(algo, env)
    _check_budgets(total_timesteps, eval_every, eval_episodes)

    def trainable(config: dict[str, Any]) -> None:
        started = time.perf_counter()
        seed = _seed_of(config, seed_key)
        trial_id = tune.get_context().get_trial_id()
        snapshot = None
        if checkpoint:
            resume, pid = _restored_state(), None
        else:
            resume, pid = None, pool.claim(trial_id) if trial_id else None
        if pid is not None:  # started early by rl_tasks.PoolPrefetch: relay its chunks as they are trained
            chunks = (pool.next_chunk(trial_id, index) for index in itertools.count())
            try:
                _report_until_final(chunks, metric, time.perf_counter() - started, pid)
            finally:  # also on Tune's STOP: detaching stops its training after the chunk in progress
                pool.detach(trial_id)
            return
        lease, pid = pool.start_replicate(algo, spec.name, config, seed, total_timesteps, eval_every, eval_episodes,
                                          resume)
        if checkpoint:
            snapshot = lease.snapshot
        try:
            chunks = (lease.advance() for _ in itertools.count())
            _report_until_final(chunks, metric, time.perf_counter() - started, pid, snapshot)
        finally:  # also on Tune's STOP: tune.report raises SystemExit in this thread
            lease.release()

    if not checkpoint:
        trainable.pooled_task = PooledTask(pool, algo, spec.name, total_timesteps, eval_every, eval_episodes,
                                           seed_key)
    return tune.with_resources(_named(trainable, algo, spec.alias), pool.trial_resources)


@dataclass(frozen=True)
class PooledTask:
    """What a pooled trainable trains (``trainable.pooled_task``): all a driver-side ``rl_tasks.PoolPrefetch``
    needs to start a pending trial's replicate on the pool before the trial's process runs."""

    pool: Any
    algo: str
    env: str
    total_timesteps: int
    eval_every: int
    eval_episodes: int
    seed_key: str

    def prefetch(self, trial_id: str, config: dict[str, Any]) -> bool:
        """Start trial ``trial_id``'s replicate now if a worker is free (``WorkerPool.prefetch``)."""
        return self.pool.prefetch(trial_id, self.algo, self.env, config, _seed_of(config, self.seed_key),
                                  self.total_timesteps, self.eval_every, self.eval_episodes)


CHECKPOINT_FILE = "run_state.pkl"  # a checkpointing trainable's state file inside each tune.Checkpoint


def _report_until_final(chunks: Iterator[Chunk], metric: str, startup_s: float, worker_pid: int,
                        snapshot: Callable[[], RunState] | None = None) -> None:
    """``tune.report`` each chunk up to the replicate's final one (Tune's STOP raises inside ``report``); with
    ``snapshot``, every report but the last carries a checkpoint of the run's state."""
    from ray import tune  # noqa: PLC0415

    for chunk in chunks:
        metrics = _metrics(chunk, metric, startup_s, worker_pid)
        if snapshot is None or chunk.final:
            tune.report(metrics)
        else:
            with tempfile.TemporaryDirectory(prefix="rl_tasks_ckpt_") as folder:  # Tune persists it in report()
                (Path(folder) / CHECKPOINT_FILE).write_bytes(pickle.dumps(snapshot(), protocol=5))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
        if chunk.final:
            return


def _restored_state() -> RunState | None:
    """The run state of the checkpoint this trial was started from (PBT's exploit, a restore), if any."""
    from ray import tune  # noqa: PLC0415

    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as folder:
        return pickle.loads((Path(folder) / CHECKPOINT_FILE).read_bytes())


def _pin_trial_process() -> None:
    """Pin this Ray actor (a trial's process) to as many cores as its whole CPUs (``pinning.pin_once``)."""
    import ray  # noqa: PLC0415

    if not ray.is_initialized():
        return
    context = ray.get_runtime_context()
    if context.get_actor_id() is None:  # a driver calling the function itself: its process is not a trial's
        return
    cores = int(context.get_assigned_resources().get("CPU", 0))
    if cores >= 1:
        pin_once(cores)


def _check_budgets(total_timesteps: int, eval_every: int, eval_episodes: int) -> None:
    if total_timesteps <= 0 or eval_every <= 0 or eval_episodes <= 0:
        raise ValueError(
            f"total_timesteps={total_timesteps}, eval_every={eval_every} and eval_episodes={eval_episodes} must be "
            "positive"
        )


def _seed_of(config: dict[str, Any], seed_key: str) -> int:
    if seed_key not in config:
        raise ValueError(f"config has no seed key {seed_key!r}; keys: {sorted(config)}")
    return int(config[seed_key])


def _metrics(chunk: Chunk, metric: str, startup_s: float, worker_pid: int) -> dict[str, Any]:
    """One chunk's report; ``final`` marks the run's final return (what ``RiskAwareSearch`` observes)."""
    return {metric: chunk.value, "timesteps": chunk.timesteps, "final": chunk.final, "startup_s": startup_s,
            "worker_pid": worker_pid, "chunk_s": chunk.seconds}


def _named(trainable: Callable, algo: str, alias: str) -> Callable:
    trainable.__name__ = f"{algo}_{alias}"
    trainable.__qualname__ = trainable.__name__
    return trainable
