"""The OSCBO paper's benchmark harness (docs/algorithms.md §4): lab code for ``experiments/studies/oscbo_benchmark.py``.

Not part of the installed ``tune_risk`` package: it uses the product's public GP, OSCBO and lengthscale
modules and adds what only the paper's comparison needs.

* ``tasks``: Levy 5D, Hartmann 3D/6D, Lunar Lander 12D, Concrete 7D, Material 5D, Crossbarrel 4D.
* ``tabular``: the continuous oracle over experimental tables (App. E.3).
* ``surrogates``: the baselines' GP surrogates (VanillaBO, OCBO, SCGP, fixed-lengthscale GPs).
* ``loop``: ``run_bo(task, method, seed)`` for the eight methods of the comparison.
* ``store``: the compact, resumable store of finished runs (``RunStore``: Parquet plus a journal).

``experiments/`` is on ``sys.path`` when a script there runs (and in the tests, through ``pyproject.toml``'s
pytest ``pythonpath``), so ``import oscbo_harness`` finds this package. Imports are lazy: importing the package
loads neither BoTorch nor the loop.

Example:
    >>> from oscbo_harness import make_task, run_bo            # doctest: +SKIP
    >>> result = run_bo(make_task("levy5"), "oscbo", seed=0)   # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["METHODS", "TASKS", "BOResult", "TabularOracle", "Task", "TaskUnavailable", "make_task", "run_bo"]

if TYPE_CHECKING:
    from oscbo_harness.loop import METHODS, BOResult, run_bo
    from oscbo_harness.tabular import TabularOracle
    from oscbo_harness.tasks import TASKS, Task, make_task
    from oscbo_harness.unavailable import TaskUnavailable

_LAZY = {
    "METHODS": "loop", "BOResult": "loop", "run_bo": "loop", "TabularOracle": "tabular", "TASKS": "tasks",
    "Task": "tasks", "make_task": "tasks", "TaskUnavailable": "unavailable",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"oscbo_harness.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'oscbo_harness' has no attribute {name!r}")
