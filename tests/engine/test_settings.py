"""Bad input to ``EngineSettings`` and ``Engine``: each a ValueError naming the argument and value."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE
from tune_risk.risk.warping import fit_warp
from tune_risk.settings import EngineSettings


@pytest.mark.parametrize(
    "overrides,match",
    [
        ({"k_min": 1}, r"k_min must be >= 2, got k_min=1"),
        ({"k_min": 0, "k_max": 5}, r"k_min must be >= 2, got k_min=0"),
        ({"k_min": 4, "k_max": 3}, r"k_max must be >= 4, got k_max=3"),
        ({"k_min": 2.5}, r"k_min must be an integer, got 2\.5"),
        ({"k_max": True}, r"k_max must be an integer, got True"),
        ({"alpha": -0.1}, r"alpha must be >= 0, got alpha=-0\.1"),
        ({"alpha": float("nan")}, r"alpha must be a finite number, got nan"),
        ({"beta": 0.0}, r"beta must be > 0, got beta=0\.0"),
        ({"beta": -2.5}, r"beta must be > 0, got beta=-2\.5"),
        ({"beta_stop": -1.0}, r"beta_stop must be >= 0, got beta_stop=-1\.0"),
        ({"method": "bohb"}, r"unknown method='bohb'"),
        ({"beta_stop_schedule": "linear"}, r"beta_stop_schedule must be one of .*got 'linear'"),
        ({"beta_stop_schedule": "constant", "schedule_param": 3.0}, r"schedule_param.*3\.0"),
        ({"beta_stop_schedule": "exponential", "schedule_param": float("inf")}, r"schedule_param.*inf"),
        ({"launch_policy": "greedy"}, r"unknown launch_policy='greedy'"),
        ({"late_results": "keep"}, r"unknown late_results='keep'"),
        ({"budget_unit": "seconds"}, r"unknown budget_unit='seconds'"),
        ({"mean_noise": "exact"}, r"unknown mean_noise='exact'"),
        ({"kernel": "matern32"}, r"unknown kernel='matern32'"),
        ({"standardization": "none"}, r"unknown standardization='none'"),
        ({"max_active_configs": 0}, r"max_active_configs must be >= 1, got max_active_configs=0"),
        ({"window": 0}, r"window must be >= 1, got window=0"),
        ({"n_initial": 1}, r"n_initial must be >= 2, got n_initial=1"),
        ({"k_init": 1}, r"k_init must be >= 2, got k_init=1"),
        ({"k_min": 3, "k_max": 6, "k_init": 2}, r"k_init must be >= 3, got k_init=2 \(k_min=3: .*never be used\)"),
        ({"budget": 0}, r"budget must be >= 1, got budget=0"),
        ({"rho_bar_sq": 0.0}, r"rho_bar_sq must be > 0, got rho_bar_sq=0\.0"),
        ({"seed": -1}, r"seed must be >= 0, got seed=-1"),
        (
            {"budget": 50, "budget_unit": "runs", "n_initial": 5, "k_max": 20},
            r"budget=50 runs is smaller than the initial design \(n_initial=5 x k_init=20 = 100\)",
        ),
        (
            {"budget": 9, "budget_unit": "runs", "n_initial": 5, "k_init": 2},
            r"budget=9 runs is smaller than the initial design \(n_initial=5 x k_init=2 = 10\)",
        ),
    ],
)
def test_bad_settings(overrides, match):
    with pytest.raises(ValueError, match=match):
        EngineSettings(**overrides)


def test_budget_equal_to_initial_design_is_allowed():
    assert EngineSettings(budget=10, budget_unit="runs", n_initial=5, k_init=2).budget == 10
    assert EngineSettings(budget=1, budget_unit="samples").budget == 1  # the initial design is free


@pytest.mark.parametrize(
    "method,overrides,match",
    [
        ("random", {}, r"unknown method='random'"),
        ("gp-ucb", {"alpha": 1.0}, None),  # for_method forces alpha = 0 for GP-UCB
        ("erahbo", {"k": 3}, r"'k' fixes the replicates of rahbo/gp-ucb.*k=3"),
        ("rahbo", {"k": 1}, r"k_min must be >= 2, got k_min=1"),
    ],
)
def test_for_method(method, overrides, match):
    if match is None:
        assert EngineSettings.for_method(method, **overrides).alpha == 0.0
        return
    with pytest.raises(ValueError, match=match):
        EngineSettings.for_method(method, **overrides)


def test_method_constraints_without_for_method():
    with pytest.raises(ValueError, match=r"method='gp-ucb' is risk neutral and needs alpha=0, got alpha=1\.0"):
        EngineSettings(method="gp-ucb", alpha=1.0, k_min=20)
    with pytest.raises(ValueError, match=r"method='rahbo' .* k_min=2, k_max=20"):
        EngineSettings(method="rahbo")


def test_for_method_defaults():
    """§1.13/§1.14: RAHBO and GP-UCB fix k (default 20); ERAHBO adapts k in [2, 20]."""
    erahbo = EngineSettings.for_method("erahbo")
    assert (erahbo.k_min, erahbo.k_max, erahbo.alpha, erahbo.beta, erahbo.beta_stop) == (2, 20, 1.0, 2.5, 1.0)
    assert erahbo.kappa_acq == pytest.approx(2.5**0.5)
    assert EngineSettings.for_method("erahbo", beta_convention="multiplier").kappa_acq == 2.5
    rahbo = EngineSettings.for_method("rahbo", k=5)
    assert (rahbo.k_min, rahbo.k_max, rahbo.replicates_initial) == (5, 5, 5)
    gp_ucb = EngineSettings.for_method("gp-ucb")
    assert (gp_ucb.k_min, gp_ucb.k_max, gp_ucb.alpha) == (20, 20, 0.0)


SETTINGS = EngineSettings.for_method("erahbo", n_initial=2, k_max=4)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"dim": 0}, r"dim must be >= 1, got dim=0"),
        ({"dim": -3}, r"dim must be >= 1, got dim=-3"),
        ({}, r"give exactly one of dim .* or pool"),
        ({"dim": 2, "pool": np.full((4, 2), 0.5)}, r"give exactly one of dim .* or pool"),
        ({"pool": np.zeros((4, 0))}, r"pool must be a non-empty 2-D array .*got shape \(4, 0\)"),
        ({"pool": np.zeros((0, 2))}, r"pool must be a non-empty 2-D array .*got shape \(0, 2\)"),
        ({"pool": np.linspace(0, 1, 5)}, r"pool must be a non-empty 2-D array .*got shape \(5,\)"),
        (
            {"pool": np.array([[0.1, 0.2], [0.5, 0.5], [0.1, 0.2], [0.9, 0.9]])},
            r"pool has duplicate rows \(row 0 appears 2 times\)",
        ),
        ({"pool": np.array([[0.1, 0.2], [0.5, 1.5], [0.3, 0.3]])}, r"pool coordinates must lie in the unit cube \[0, 1\], got range \[0\.1, 1\.5\]"),
        ({"pool": np.array([[-0.2, 0.2], [0.5, 0.5], [0.3, 0.3]])}, r"unit cube .*got range \[-0\.2, 0\.5\]"),
        ({"pool": np.array([[np.nan, 0.2], [0.5, 0.5], [0.3, 0.3]])}, r"pool contains NaN or infinite"),
        ({"pool": np.array([[0.5]])}, r"pool has 1 rows, fewer than n_initial=2"),
    ],
)
def test_bad_spaces(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Engine(SETTINGS, **kwargs)


def test_bad_runs_at_the_surface():
    """The ask/tell surface rejects unknown run ids and cancelling a run that was not marked."""
    engine = Engine(SETTINGS, dim=2)
    replicate = engine.ask()
    with pytest.raises(ValueError, match=r"unknown run_id=999"):
        engine.tell(999, 1.0)
    with pytest.raises(ValueError, match=r"unknown run_id='a'"):
        engine.tell_cancelled("a")
    with pytest.raises(ValueError, match=rf"run {replicate.run_id} was not marked for cancellation"):
        engine.tell_cancelled(replicate.run_id)


def test_documented_settings_are_the_fields():
    """Every name in the ``Attributes:`` section of ``EngineSettings`` is a field and every field is
    documented (a documented ``pool_exclude_evaluated`` did not exist)."""
    doc = EngineSettings.__doc__.split("Attributes")[1].split("Example:")[0]  # the section, not the example after it
    documented = set()
    for line in doc.splitlines():
        if re.match(r"^ {8}\w", line):  # an entry: "name:" or "name / other:" or "name, other:"
            documented.update(re.findall(r"\b(\w+)\b", line.split(":")[0]))
    assert documented == {f.name for f in dataclasses.fields(EngineSettings)}


@pytest.mark.parametrize(
    "overrides,match",
    [
        ({"warp": "none"}, r"warp='none' uses returns as given.*give rho_bar_sq"),
        ({"beta_stop_schedule": "exponential", "schedule_param": 5.0},
         r"beta_stop_schedule='exponential' .* needs a budget; without one kappa_stop would stay 0"),
        ({"beta_stop_schedule": "sigmoid", "schedule_param": 10.0}, r"beta_stop_schedule='sigmoid' .* needs a budget"),
    ],
)
def test_engine_refuses_settings_that_would_silently_misbehave(overrides, match):
    """``warp="none"`` without a variance bound assumed returns in [-0.5, 0.5]; a ``beta_stop``
    schedule without a budget kept ``kappa_stop = 0`` for the whole run."""
    with pytest.raises(ValueError, match=match):
        Engine(EngineSettings(n_initial=2, k_max=4, **overrides), dim=2)
    if overrides.get("warp") == "none":  # fine with a bound or with a fitted warp
        Engine(EngineSettings(n_initial=2, k_max=4, rho_bar_sq=4.0, **overrides), dim=2)
        Engine(EngineSettings(n_initial=2, k_max=4, **overrides), dim=2, warp=fit_warp(np.arange(5.0)))
    else:
        Engine(EngineSettings(n_initial=2, k_max=4, budget=30, **overrides), dim=2)


def test_unsupported_state_version():
    state = Engine(SETTINGS, dim=2).state_dict()
    with pytest.raises(ValueError, match=r"unsupported engine state version 99; this tune_risk reads versions 1 and 2"):
        Engine.from_state_dict({**state, "version": 99})


def _as_version_1(state: dict) -> dict:
    """A version-2 state with one warp and one snapshot, written as version 1 wrote it."""
    assert len(state["warps"]) == 1 and len(state["snapshots"]) == 1
    old = {k: v for k, v in state.items() if k not in ("warps", "online_warp", "snapshots", "recommendations")}
    old["settings"] = {k: v for k, v in state["settings"].items() if k != "warp_refit"}
    old["records"] = [{k: v for k, v in r.items() if k != "snapshot"} for r in state["records"]]
    return {**old, "version": 1, "warp": state["warps"][0],
            "hyperparameters": state["snapshots"][0]["hyperparameters"]}


def test_version_1_state_loads_and_continues_with_its_frozen_warp():
    """State version 2 adds warps, snapshots and recommendations; a version-1 checkpoint (one frozen
    warp, one set of hyperparameters) still loads and continues as a run whose warp is never re-fitted."""
    objective = get_objective("sine")
    X, _ = make_pool_table(objective, 32, 1, 0)
    settings = EngineSettings.for_method("erahbo", n_initial=4, k_max=6, budget=30, seed=3, warp_refit="never")

    def run(engine: Engine, steps: int | None = None) -> Engine:
        while (steps is None or steps > 0) and (request := engine.ask()) is not DONE:
            engine.tell(request.run_id, objective.sample(np.asarray(request.x), request.seed))
            steps = None if steps is None else steps - 1
        return engine

    original = run(Engine(settings, pool=X), steps=40)
    assert original.rounds >= 1
    restored = Engine.from_state_dict(_as_version_1(original.state_dict()))
    assert restored.state_dict()["version"] == 2 and restored.online_warp is False
    assert [r.snapshot for r in restored.records if r.phase == "bo"] == [0] * restored.rounds
    run(original), run(restored)
    assert [(r.pool_index, r.n_incorporated, r.status, r.trace) for r in restored.records] == [
        (r.pool_index, r.n_incorporated, r.status, r.trace) for r in original.records]
    assert len(restored.warps) == 1
