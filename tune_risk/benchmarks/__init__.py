"""The OSCBO paper's benchmarks and its plain GP-UCB comparison loop (docs/algorithms.md §4).

* ``tasks``: Levy 5D, Hartmann 3D/6D, Lunar Lander 12D, Concrete 7D, Material 5D, Crossbarrel 4D.
* ``tabular``: the continuous oracle over experimental tables (App. E.3).
* ``loop``: ``run_bo(task, method, seed)`` for the eight methods of the comparison.
* ``store``: the compact, resumable store of finished runs (``RunStore``: Parquet plus a journal).
"""

from tune_risk.benchmarks.loop import METHODS, BOResult, run_bo
from tune_risk.benchmarks.tabular import TabularOracle
from tune_risk.benchmarks.tasks import TASKS, Task, make_task
from tune_risk.benchmarks.unavailable import TaskUnavailable

__all__ = ["METHODS", "TASKS", "BOResult", "TabularOracle", "Task", "TaskUnavailable", "make_task", "run_bo"]
