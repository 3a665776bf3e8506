"""Tests for tune_risk.schedules: β_stop schedules of ERAHBO App. C.5 (eqs. 35–36; docs/algorithms.md §5 item 11)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_risk.schedules import DEFAULT_PARAMS, SCHEDULES, schedule_value, validate_schedule

GAMMAS = [-20.0, -1.0, 1e-6, 1.0, 5.0, 10.0, 50.0, 500.0, 1e4]
SIGMOID_S = [-20.0, -10.0, -1e-3, 0.5, 5.0, 10.0, 20.0, 1e4]
CASES = [("exponential", g) for g in GAMMAS] + [("sigmoid", s) for s in SIGMOID_S]
TAUS = np.linspace(0.0, 1.0, 2001)


def naive_exponential(tau: float, gamma: float) -> float:
    """ERAHBO eq. 35 as printed."""
    return (math.exp(gamma * tau) - 1.0) / (math.exp(gamma) - 1.0)


def naive_sigmoid(tau: float, s: float) -> float:
    """ERAHBO eq. 36 as printed, σ_s(τ) = 1/(1 + e^{s(τ − 0.5)})."""

    def sig(t: float) -> float:
        return 1.0 / (1.0 + math.exp(s * (t - 0.5)))

    return (sig(tau) - sig(0.0)) / (sig(1.0) - sig(0.0))


def test_schedule_names():
    assert SCHEDULES == ("constant", "exponential", "sigmoid")


@pytest.mark.parametrize("name,param", CASES)
def test_end_points(name, param):
    assert schedule_value(name, 0.0, param) == 0.0
    assert schedule_value(name, 1.0, param) == 1.0


@pytest.mark.parametrize("name,param", CASES)
def test_non_decreasing_and_in_unit_interval(name, param):
    values = np.array([schedule_value(name, t, param) for t in TAUS])
    assert np.all(np.diff(values) >= 0.0)
    assert values.min() >= 0.0 and values.max() <= 1.0


def test_constant_is_one_everywhere():
    assert all(schedule_value("constant", t) == 1.0 for t in (0.0, 0.3, 1.0, -2.0, 7.0))


@pytest.mark.parametrize("gamma", [-5.0, 0.1, 1.0, 5.0, 10.0, 50.0])
def test_exponential_matches_eq35(gamma):
    for tau in (0.05, 0.3, 0.5, 0.77, 0.9, 0.99):
        assert schedule_value("exponential", tau, gamma) == pytest.approx(naive_exponential(tau, gamma), rel=1e-12)


@pytest.mark.parametrize("s", [-20.0, -5.0, 0.1, 1.0, 5.0, 10.0, 20.0])
def test_sigmoid_matches_eq36(s):
    for tau in (0.05, 0.3, 0.5, 0.77, 0.9, 0.99):
        assert schedule_value("sigmoid", tau, s) == pytest.approx(naive_sigmoid(tau, s), rel=1e-11, abs=1e-15)


def test_paper_example_gamma_50_at_0_9():
    value = schedule_value("exponential", 0.9, 50.0)
    assert value == pytest.approx(0.0067, abs=5e-5)
    assert value == pytest.approx(math.expm1(45.0) / math.expm1(50.0), rel=1e-13)


@pytest.mark.parametrize("s", [0.5, 5.0, 10.0, 20.0, 1e4])
def test_sigmoid_invariant_to_sign(s):
    for tau in np.linspace(0.0, 1.0, 41):
        assert schedule_value("sigmoid", tau, s) == schedule_value("sigmoid", tau, -s)
    assert naive_sigmoid(0.3, 7.0) == pytest.approx(naive_sigmoid(0.3, -7.0), rel=1e-12)


@pytest.mark.parametrize("name", ["exponential", "sigmoid"])
def test_zero_parameter_limit_is_tau(name):
    for tau in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0):
        assert schedule_value(name, tau, 0.0) == tau
        assert schedule_value(name, tau, 1e-7) == pytest.approx(tau, abs=1e-7)
        assert schedule_value(name, tau, -1e-7) == pytest.approx(tau, abs=1e-7)


def test_large_parameters_are_finite():
    assert schedule_value("exponential", 0.5, 1e5) == 0.0
    assert schedule_value("exponential", 0.999, 1000.0) == pytest.approx(math.exp(-1.0), rel=1e-12)
    assert schedule_value("sigmoid", 0.5, 1e5) == 0.5
    assert schedule_value("sigmoid", 0.4, 1e5) == 0.0 and schedule_value("sigmoid", 0.6, 1e5) == 1.0


def test_tau_is_clipped():
    assert schedule_value("exponential", -0.5) == 0.0
    assert schedule_value("exponential", 1.5) == 1.0
    assert schedule_value("sigmoid", 3.0, 5.0) == 1.0


def test_defaults():
    assert validate_schedule("exponential") == DEFAULT_PARAMS["exponential"] == 50.0
    assert validate_schedule("sigmoid") == DEFAULT_PARAMS["sigmoid"] == 10.0
    assert validate_schedule("constant") is None
    assert schedule_value("exponential", 0.7) == schedule_value("exponential", 0.7, 50.0)
    assert schedule_value("sigmoid", 0.7) == schedule_value("sigmoid", 0.7, 10.0)
    assert schedule_value("sigmoid", 0.7) != schedule_value("sigmoid", 0.7, 5.0)
    assert validate_schedule("exponential", np.int64(3)) == 3.0


@pytest.mark.parametrize("name", ["linear", "Constant", "", None, 3])
def test_unknown_name_raises(name):
    with pytest.raises(ValueError, match="beta_stop_schedule") as info:
        schedule_value(name, 0.5)
    assert all(valid in str(info.value) for valid in SCHEDULES)


@pytest.mark.parametrize(
    "name,param", [("exponential", math.nan), ("exponential", math.inf), ("sigmoid", "10"), ("sigmoid", True)]
)
def test_bad_parameter_raises(name, param):
    with pytest.raises(ValueError, match="schedule_param"):
        validate_schedule(name, param)


def test_constant_rejects_parameter():
    with pytest.raises(ValueError, match="schedule_param"):
        schedule_value("constant", 0.5, 3.0)


def test_nan_tau_raises():
    with pytest.raises(ValueError, match="tau"):
        schedule_value("sigmoid", math.nan)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["exponential", "sigmoid"]),
    st.floats(-200.0, 200.0, allow_nan=False),
    st.floats(-0.5, 1.5, allow_nan=False),
    st.floats(-0.5, 1.5, allow_nan=False),
)
def test_monotone_property(name, param, tau_a, tau_b):
    lo, hi = sorted((tau_a, tau_b))
    v_lo, v_hi = schedule_value(name, lo, param), schedule_value(name, hi, param)
    assert 0.0 <= v_lo <= v_hi <= 1.0
