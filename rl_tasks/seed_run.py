"""Chunked training of one seed of one configuration: the loop behind every live trainable.

``SeedRun`` trains seed ``s`` from ``jax.random.PRNGKey(s)`` (split into a training and an evaluation key)
in chunks of about ``eval_every`` environment steps, and evaluates the greedy policy after each chunk. Both
``rl_tasks.make_trainable`` (training inside the Tune trial) and the warm worker pool (``rl_tasks.pool``,
training in a long-lived worker) run this class, so both report bit-identical values for the same
configuration, seed and budgets, whichever process runs them. JAX loads when a ``SeedRun`` is built, not
on import: a thin trial unpickles ``Chunk`` results without it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def chunk_lengths(iteration_steps: int, n_iterations: int, eval_every: int) -> tuple[int, ...]:
    """Training iterations per chunk that a run uses: the regular chunk and, if the budget is not a multiple of
    it, the shorter last one. Each length is a separately compiled ``advance`` program (``n`` is static)."""
    chunk = max(1, round(eval_every / iteration_steps))
    if chunk >= n_iterations:
        return (n_iterations,)
    last = n_iterations % chunk
    return (chunk, last) if last else (chunk,)


@dataclass(frozen=True)
class Chunk:
    """The outcome of one training chunk.

    Attributes:
        value: mean greedy evaluation return after the chunk.
        timesteps: environment steps trained so far (whole iterations).
        final: whether this chunk ended the run (its value is the run's final return).
        seconds: wall seconds the process spent training and evaluating the chunk (not part of equality:
            it is a measurement, the rest are the run's values).
    """

    value: float
    timesteps: int
    final: bool
    seconds: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class RunState:
    """A ``SeedRun``'s progress as host arrays, picklable: what a checkpoint holds (e.g. for Tune's
    ``PopulationBasedTraining``), enough to continue the run in another process.

    Attributes:
        leaves: the training state's leaves (``jax.tree.leaves``), as numpy arrays.
        done: training iterations trained so far.
        evaluations: evaluations run so far (intermediate evaluation keys are folded in by this count).
    """

    leaves: tuple[Any, ...]
    done: int
    evaluations: int


class SeedRun:
    """One seed's training state, advanced one chunk at a time.

    Building it traces/compiles (or fetches from the per-process program cache) the task program and
    initialises the training state; ``advance`` runs the next chunk.

    Args:
        algo: ``ppo``, ``dqn`` or ``sac``.
        env: environment name or alias.
        config: hyperparameters in ARLBench's names (missing ones take defaults; extra keys ignored).
        seed: the integer training seed.
        total_timesteps: training budget in environment steps (rounded up to whole iterations).
        eval_every: environment steps per chunk (rounded to whole iterations, at least one).
        eval_episodes: greedy evaluation episodes per evaluation.
        resume: continue from this state (``snapshot()`` of a run with the same task, budgets and static
            hyperparameters; the traced ones, e.g. ``learning_rate``, may differ: PBT's explore step).

    Raises:
        ValueError: unknown task, hyperparameters outside their domain, non-positive budgets, or a ``resume``
            state whose arrays do not fit this configuration's training state.
    """

    def __init__(self, algo: str, env: str, config: Mapping[str, Any], seed: int, total_timesteps: int,
                 eval_every: int, eval_episodes: int, resume: RunState | None = None) -> None:
        if eval_every <= 0:
            raise ValueError(f"eval_every={eval_every} must be positive")
        import jax  # noqa: PLC0415 - JAX loads in training processes only

        from rl_tasks.training import prepare  # noqa: PLC0415

        self._program, self._traced = prepare(algo, env, config, total_timesteps, eval_episodes)
        key_train, self._key_eval = jax.random.split(jax.random.PRNGKey(int(seed)))
        self._state = self._program.init(self._traced, key_train)
        self._chunk = chunk_lengths(self._program.iteration_steps, self._program.n_iterations, eval_every)[0]
        self._done = 0
        self._evaluations = 0
        if resume is not None:
            self._resume(resume)

    def _resume(self, state: RunState) -> None:
        """Replace the fresh state by ``state``'s (same shapes and dtypes, else ``ValueError``)."""
        from jax import numpy as jnp  # noqa: PLC0415

        fresh = [(leaf.shape, leaf.dtype) for leaf in self._state]
        given = [(leaf.shape, leaf.dtype) for leaf in state.leaves]
        if fresh != given or not 0 <= state.done <= self._program.n_iterations:
            raise ValueError("SeedRun: the resumed state does not fit this configuration's training state (another "
                             "static hyperparameter, task or budget?)")
        self._state = [jnp.asarray(leaf) for leaf in state.leaves]
        self._done, self._evaluations = int(state.done), int(state.evaluations)

    def snapshot(self) -> RunState:
        """The run's progress as host arrays (a copy: training on does not change it)."""
        import numpy as np  # noqa: PLC0415

        return RunState(tuple(np.array(leaf) for leaf in self._state), self._done, self._evaluations)

    @property
    def finished(self) -> bool:
        """Whether the whole budget has been trained."""
        return self._done >= self._program.n_iterations

    def advance(self) -> Chunk:
        """Train the next chunk and evaluate the greedy policy.

        Raises:
            RuntimeError: the run is already finished.
        """
        if self.finished:
            raise RuntimeError(f"SeedRun: all {self._program.n_iterations} iterations are trained already")
        import jax  # noqa: PLC0415 - loaded by __init__ already

        started = time.perf_counter()
        n = min(self._chunk, self._program.n_iterations - self._done)
        self._state = self._program.advance(self._traced, self._state, n)
        self._done += n
        final = self.finished
        # The final evaluation uses the same key as the table generator; intermediate ones fresh keys.
        key = self._key_eval if final else jax.random.fold_in(self._key_eval, self._evaluations)
        value = float(self._program.evaluate(self._traced, self._state, key).mean())  # waits for the chunk
        self._evaluations += 1
        return Chunk(value=value, timesteps=self._done * self._program.iteration_steps, final=final,
                     seconds=time.perf_counter() - started)
