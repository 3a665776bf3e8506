"""The ``Example:`` sections of the public API's docstrings run as doctests (issue #39).

Lines that need a Ray cluster, JAX training or a Tune experiment folder are marked ``# doctest: +SKIP``;
every module below also has examples that run (no Ray cluster is started), so each must attempt some.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

MODULES = [
    "tune_risk.tune.searcher",  # RiskAwareSearch
    "tune_risk.tune.scheduler",  # ReplicateScheduler
    "tune_risk.engine.core",  # Engine
    "tune_risk.settings",  # EngineSettings
    "tune_risk.tune.restore",  # restore_tuner (the restore itself skipped)
    "tune_risk.offline.table",  # OfflineTable
    "tune_risk.tune.load",  # load_results (a real run's folder skipped)
    "tune_risk.offline.shipped",  # tune_risk.datasets.load
    "tune_risk.datasets",  # the module's own example
]


def run_doctests(name: str) -> doctest.TestResults:
    module = importlib.import_module(name)
    return doctest.testmod(module, optionflags=FLAGS, verbose=False, report=True)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    result = run_doctests(name)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {name}"
    assert result.attempted > 0, f"no doctest example ran in {name}"


def test_worker_pool_examples_run() -> None:
    """``rl_tasks.WorkerPool``: its argument check runs; the pool itself (a Ray cluster) is skipped."""
    pytest.importorskip("jax")
    result = run_doctests("rl_tasks.pool")
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in rl_tasks.pool"
    assert result.attempted > 0
