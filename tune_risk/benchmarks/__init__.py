"""Benchmark objectives: ERAHBO's synthetic ones and the OSCBO paper's tasks with its GP-UCB loop (docs/algorithms.md §4).

* ``objectives``: heteroscedastic test functions with known mean and variance (sine, Branin, Hartmann),
  and offline tables drawn from them (the tests and the demo use them).
* ``tasks``: Levy 5D, Hartmann 3D/6D, Lunar Lander 12D, Concrete 7D, Material 5D, Crossbarrel 4D.
* ``tabular``: the continuous oracle over experimental tables (App. E.3).
* ``loop``: ``run_bo(task, method, seed)`` for the eight methods of the comparison.
* ``store``: the compact, resumable store of finished runs (``RunStore``: Parquet plus a journal).

Imports are lazy: ``tune_risk.benchmarks.objectives`` does not load BoTorch or the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["METHODS", "TASKS", "BOResult", "TabularOracle", "Task", "TaskUnavailable", "make_task", "run_bo"]

if TYPE_CHECKING:
    from tune_risk.benchmarks.loop import METHODS, BOResult, run_bo
    from tune_risk.benchmarks.tabular import TabularOracle
    from tune_risk.benchmarks.tasks import TASKS, Task, make_task
    from tune_risk.benchmarks.unavailable import TaskUnavailable

_LAZY = {
    "METHODS": "loop", "BOResult": "loop", "run_bo": "loop", "TabularOracle": "tabular", "TASKS": "tasks",
    "Task": "tasks", "make_task": "tasks", "TaskUnavailable": "unavailable",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"tune_risk.benchmarks.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'tune_risk.benchmarks' has no attribute {name!r}")
