"""Discrete-event simulation of ``W`` workers driving the engine (docs/algorithms.md §2).

The direct-loop counterpart of a Ray Tune run: each idle worker asks the engine for a replicate,
"runs" it for its run time, and reports the result when the simulated clock reaches its finish
time. Replicates the engine cancels are removed from their workers at once; the compute they had
consumed (elapsed time) is charged to ``compute_spent``. Everything is deterministic: ties in
finish time are broken by launch order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE, WAIT, Replicate

Evaluate = Callable[[Replicate], tuple[float | None, float]]
"""``replicate -> (return or None for a failed run, run time)``."""


@dataclass(frozen=True)
class SimulationResult:
    """Wall-clock of the simulated run (in run-time units) and the engine's accounting."""

    wall_time: float
    counts: dict[str, float]


def simulate(
    engine: Engine, evaluate: Evaluate, workers: int = 1, on_result: Callable[[Engine], None] | None = None
) -> SimulationResult:
    """Run ``engine`` to completion with ``workers`` simulated parallel workers.

    Args:
        engine: a fresh or restored engine.
        evaluate: returns the replicate's final return (``None``: the run fails) and its run time.
        workers: number of replicates that may run at the same time (``W``).
        on_result: called with the engine after every reported result (e.g. to log progress).
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got workers={workers}")
    clock = 0.0
    running: dict[int, tuple[float, float]] = {}  # run_id -> (start, finish)
    values: dict[int, float | None] = {}
    heap: list[tuple[float, int]] = []
    while True:
        request = _fill_workers(engine, evaluate, workers, clock, running, values, heap)
        if not running:
            if request is DONE:
                break
            raise RuntimeError("the engine waits for results but no replicate is running")
        finish, run_id = heapq.heappop(heap)
        if run_id not in running:
            continue  # cancelled earlier (lazy deletion from the heap)
        clock = finish
        start, _ = running.pop(run_id)
        engine.tell(run_id, values.pop(run_id), cost=finish - start)
        if on_result is not None:
            on_result(engine)
        for cancelled in engine.pending_cancellations():
            if cancelled in running:
                started, _ = running.pop(cancelled)
                values.pop(cancelled, None)
                engine.tell_cancelled(cancelled, cost=clock - started)
    return SimulationResult(wall_time=clock, counts=engine.counts())


def _fill_workers(engine, evaluate, workers, clock, running, values, heap):
    """Launch replicates on idle workers until the engine answers WAIT or DONE."""
    request = WAIT
    while len(running) < workers:
        request = engine.ask()
        if request is WAIT or request is DONE:
            break
        value, run_time = evaluate(request)
        if not run_time >= 0.0:
            raise ValueError(f"run time must be >= 0, got {run_time!r} for run {request.run_id}")
        running[request.run_id] = (clock, clock + run_time)
        values[request.run_id] = value
        heapq.heappush(heap, (clock + run_time, request.run_id))
    return request
