"""Tests for :mod:`tune_risk.space`: validation, exact bounds, and round-trip properties per kind."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_risk.space import CategoricalParam, FloatParam, IntParam, SearchSpace

EPS = 2.0**-52
FAST = settings(max_examples=150, deadline=None)


def _roundtrip(param, value):
    space = SearchSpace([param])
    return space.from_unit(space.to_unit({param.name: value}))[param.name]


# --------------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: FloatParam("lr", 1.0, 1.0), r"'lr'.*lower bound 1\.0 must be smaller"),
        (lambda: FloatParam("lr", 2.0, 1.0), r"'lr'.*degenerate"),
        (lambda: FloatParam("lr", 0.0, 1.0, log=True), r"'lr'.*log scale needs lower bound > 0, got 0"),
        (lambda: FloatParam("lr", -1.0, 1.0, log=True), r"'lr'.*lower bound > 0"),
        (lambda: FloatParam("lr", 0.0, math.inf), r"'lr'.*finite real number, got inf"),
        (lambda: FloatParam("lr", "0", 1.0), r"'lr'.*lower bound must be a finite real number"),
        (lambda: FloatParam("lr", 0.0, 1.0, q=0.0), r"'lr'.*q must be > 0, got 0"),
        (lambda: FloatParam("lr", 0.0, 1.0, q=-0.1), r"'lr'.*q must be > 0"),
        (lambda: FloatParam("lr", 0.01, 0.09, q=0.1), r"'lr'.*no multiple of q=0\.1"),
        (lambda: FloatParam("lr", 0.05, 0.15, q=0.1), r"'lr'.*only one multiple"),
        (lambda: FloatParam("lr", -1e308, 1e308), r"'lr'.*overflows"),
        (
            lambda: FloatParam("lr", 24567097.360053144, 24567097.360053148, log=True),
            r"'lr'.*too narrow for a log scale",
        ),
        (lambda: IntParam("units", 4, 4), r"'units'.*degenerate"),
        (lambda: IntParam("units", 0, 8, log=True), r"'units'.*log scale needs lower bound > 0"),
        (lambda: IntParam("units", 1.5, 8), r"'units'.*lower bound must be an integer, got 1\.5"),
        (lambda: IntParam("units", 1, 8.5), r"'units'.*upper bound must be an integer"),
        (lambda: IntParam("units", True, 8), r"'units'.*lower bound must be an integer"),
        (lambda: IntParam("units", 1, 8, q=0), r"'units'.*q must be > 0, got 0"),
        (lambda: IntParam("units", 1, 8, q=-2), r"'units'.*q must be > 0"),
        (lambda: IntParam("units", 1, 8, q=2.5), r"'units'.*q must be an integer, got 2\.5"),
        (lambda: IntParam("units", 1, 4, q=5), r"'units'.*no multiple of q=5"),
        (lambda: IntParam("units", 3, 7, q=5), r"'units'.*only one multiple"),
        (lambda: IntParam("units", 0, 2**41), r"'units'.*exceed"),
        (lambda: CategoricalParam("act", ()), r"'act'.*no choices"),
        (lambda: CategoricalParam("act", ("relu",)), r"'act'.*single choice 'relu'"),
        (lambda: CategoricalParam("act", ("relu", "tanh", "relu")), r"'act'.*duplicate choice 'relu'"),
        (lambda: CategoricalParam("act", ([1], [1])), r"'act'.*duplicate choice \[1\]"),
        (lambda: CategoricalParam("act", "relu"), r"'act'.*choices must be a sequence"),
        (lambda: FloatParam("", 0.0, 1.0), r"non-empty strings"),
    ],
)
def test_invalid_parameters_raise_with_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_empty_space_raises():
    with pytest.raises(ValueError, match="search space is empty"):
        SearchSpace([])


def test_duplicate_names_raise():
    with pytest.raises(ValueError, match=r"'lr'.*duplicate parameter name"):
        SearchSpace([FloatParam("lr", 0.0, 1.0), IntParam("lr", 0, 3)])


def test_non_param_raises_type_error():
    with pytest.raises(TypeError, match="FloatParam/IntParam/CategoricalParam"):
        SearchSpace([("lr", 0.0, 1.0)])


@pytest.mark.parametrize(
    ("param", "value", "match"),
    [
        (FloatParam("lr", 0.0, 1.0), 1.5, r"'lr'.*value 1\.5 is outside"),
        (FloatParam("lr", 0.0, 1.0), math.nan, r"'lr'.*finite real number, got nan"),
        (FloatParam("lr", 0.0, 1.0), "0.5", r"'lr'.*finite real number, got '0\.5'"),
        (FloatParam("lr", 0.0, 1.0, q=0.1), 0.25, r"'lr'.*0\.25 is not a multiple of q=0\.1"),
        (FloatParam("lr", 0.0, 1.0, q=0.1), 1.1, r"'lr'.*outside"),
        (IntParam("units", 1, 8), 9, r"'units'.*value 9 is outside \[1, 8\]"),
        (IntParam("units", 1, 8), 2.5, r"'units'.*value must be an integer, got 2\.5"),
        (IntParam("units", 2, 8, q=2), 3, r"'units'.*3 is not a multiple of q=2"),
        (CategoricalParam("act", ("relu", "tanh")), "gelu", r"'act'.*'gelu' is not one of the choices"),
        (CategoricalParam("flag", (0, "x")), False, r"'flag'.*False is not one of"),
    ],
)
def test_invalid_values_raise_with_name(param, value, match):
    with pytest.raises(ValueError, match=match):
        SearchSpace([param]).to_unit({param.name: value})


def test_missing_parameter_raises():
    space = SearchSpace([FloatParam("lr", 0.0, 1.0), IntParam("units", 1, 8)])
    with pytest.raises(ValueError, match=r"'units'.*missing"):
        space.to_unit({"lr": 0.5})


def test_from_unit_checks_shape_and_nan():
    space = SearchSpace([FloatParam("lr", 0.0, 1.0), IntParam("units", 1, 8)])
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        space.from_unit(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        space.from_unit(np.array([0.5, np.nan]))


# --------------------------------------------------------------------------------------------------
# exact behaviour at the bounds, types, clipping
# --------------------------------------------------------------------------------------------------
ALL_KINDS = [
    FloatParam("f", -3.7, 11.3),
    FloatParam("lf", 1e-5, 0.3, log=True),
    FloatParam("qf", 0.1, 0.9, q=0.1),
    FloatParam("qlf", 5e-5, 1e-2, log=True, q=5e-5),
    IntParam("i", -7, 13),
    IntParam("li", 1, 1024, log=True),
    IntParam("qi", 5, 100, q=5),
    IntParam("qli", 8, 512, log=True, q=8),
    CategoricalParam("c", ("a", None, (1, 2), 3.5)),
]


@pytest.mark.parametrize("param", ALL_KINDS, ids=lambda p: p.name)
def test_bounds_are_exact(param):
    space = SearchSpace([param])
    if isinstance(param, CategoricalParam):
        lo, hi = param.choices[0], param.choices[-1]
    else:
        lo, hi = param.lower, param.upper
    assert space.from_unit([0.0])[param.name] == lo
    assert space.from_unit([1.0])[param.name] == hi
    assert space.from_unit([-5.0])[param.name] == lo
    assert space.from_unit([np.inf])[param.name] == hi
    assert space.to_unit({param.name: lo})[0] == 0.0
    assert space.to_unit({param.name: hi})[0] == 1.0


def test_decoded_types():
    obj = object()
    space = SearchSpace(
        [
            FloatParam("f", 0, 1),
            IntParam("i", 0, 10),
            IntParam("q", 0, 10, q=2),
            CategoricalParam("c", (obj, "x")),
        ]
    )
    cfg = space.from_unit(np.array([0.3, 0.31, 0.77, 0.2], dtype=np.float32))
    assert type(cfg["f"]) is float and type(cfg["i"]) is int and type(cfg["q"]) is int
    assert cfg["c"] is obj
    assert isinstance(space.params[0].lower, float)


def test_integers_accept_integral_floats_and_numpy():
    p = IntParam("units", 1.0, np.int64(64), q=1)
    assert (p.lower, p.upper, p.q) == (1, 64, 1) and type(p.upper) is int
    assert _roundtrip(p, np.float64(32.0)) == 32
    assert _roundtrip(p, np.int32(7)) == 7


def test_categorical_lookup_is_strict_about_bools():
    p = CategoricalParam("c", (1, True, 1.0, "1"))
    for choice in p.choices:
        got = _roundtrip(p, choice)
        assert got == choice and type(got) is type(choice)
    assert _roundtrip(CategoricalParam("d", (0, 7)), np.int64(7)) == 7


def test_quantized_float_snaps_to_rays_grid_value():
    p = FloatParam("x", 0.0, 1.0, q=0.1)
    assert _roundtrip(p, 0.3) == 3 * 0.1  # Ray's np.round(v / q) * q representation
    edge = FloatParam("y", 0.0, 0.3, q=0.1)
    assert _roundtrip(edge, 3 * 0.1) == 0.3  # 0.30000000000000004 is clipped into the bounds


def test_to_unit_many_and_pickle():
    space = SearchSpace(ALL_KINDS)
    rng = np.random.default_rng(0)
    configs = [space.from_unit(rng.random(space.dim)) for _ in range(5)]
    xs = space.to_unit_many(configs)
    assert xs.shape == (5, space.dim) and xs.dtype == np.float64
    assert space.to_unit_many([]).shape == (0, space.dim)
    restored = pickle.loads(pickle.dumps(space))
    assert restored == space
    assert [restored.from_unit(x) for x in xs] == configs
    assert space.names == tuple(p.name for p in ALL_KINDS) and space.dim == len(ALL_KINDS)


@FAST
@given(st.lists(st.floats(-2.0, 3.0, allow_nan=False), min_size=len(ALL_KINDS), max_size=len(ALL_KINDS)))
def test_every_decoded_value_is_valid_and_a_fixed_point(xs):
    space = SearchSpace(ALL_KINDS)
    cfg = space.from_unit(np.array(xs))
    for p in ALL_KINDS:
        v = cfg[p.name]
        if isinstance(p, CategoricalParam):
            assert any(v is c for c in p.choices)
            continue
        assert p.lower <= v <= p.upper
        if p.q is not None:
            assert math.isclose(v / p.q, round(v / p.q), rel_tol=1e-9)
    assert space.from_unit(space.to_unit(cfg)) == cfg


# --------------------------------------------------------------------------------------------------
# round-trip properties per kind
# --------------------------------------------------------------------------------------------------
@st.composite
def float_params(draw, log: bool):
    if log:
        lower = draw(st.floats(1e-12, 1e9))
        upper = draw(st.floats(lower, 1e12).filter(lambda u: math.log(u) > math.log(lower)))
    else:
        lower = draw(st.floats(-1e9, 1e9))
        upper = draw(st.floats(lower, 1e10).filter(lambda u: u > lower))
    return FloatParam("x", lower, upper, log=log)


def _float_tolerance(p: FloatParam, v: float) -> float:
    if p.log:
        return 8 * EPS * (1 + max(abs(math.log(p.lower)), abs(math.log(p.upper)))) * v
    return 8 * EPS * max(abs(p.lower), abs(p.upper))


@FAST
@given(st.data(), st.booleans())
def test_float_roundtrip_is_within_bound_and_stable(data, log):
    p = data.draw(float_params(log))
    v = data.draw(st.floats(p.lower, p.upper))
    w = _roundtrip(p, v)
    assert p.lower <= w <= p.upper
    assert abs(w - v) <= _float_tolerance(p, v)
    assert _roundtrip(p, w) == w  # decoded values are fixed points


@FAST
@given(st.data(), st.booleans())
def test_float_decode_is_a_fixed_point(data, log):
    p = data.draw(float_params(log))
    space = SearchSpace([p])
    v = space.from_unit([data.draw(st.floats(0.0, 1.0))])["x"]
    assert _roundtrip(p, v) == v


@FAST
@given(st.data(), st.booleans())
def test_int_roundtrip_is_exact(data, log):
    lower = data.draw(st.integers(1 if log else -(2**40), 2**40 - 1))
    upper = data.draw(st.integers(lower + 1, 2**40))
    p = IntParam("n", lower, upper, log=log)
    v = data.draw(st.integers(lower, upper))
    got = _roundtrip(p, v)
    assert got == v and type(got) is int


@FAST
@given(st.data(), st.booleans())
def test_quantized_int_roundtrip_is_exact(data, log):
    q = data.draw(st.integers(1, 1000))
    k_lo = data.draw(st.integers(1 if log else -(10**6), 10**6))
    k_hi = data.draw(st.integers(k_lo + 1, k_lo + 10**6))
    p = IntParam("n", k_lo * q - data.draw(st.integers(0, q - 1)), k_hi * q, log=log, q=q)
    v = data.draw(st.integers(k_lo, k_hi)) * q
    got = _roundtrip(p, v)
    assert got == v and type(got) is int


@FAST
@given(st.data(), st.booleans(), st.sampled_from([0.1, 0.25, 0.01, 1e-3, 5e-5, 0.5, 2.0, 3.0, 0.3]))
def test_quantized_float_roundtrip_is_exact(data, log, q):
    k_lo = data.draw(st.integers(1 if log else -(10**6), 10**6))
    k_hi = data.draw(st.integers(k_lo + 1, k_lo + 10**6))
    p = FloatParam("x", k_lo * q, k_hi * q, log=log, q=q)
    grid_value = min(max(data.draw(st.integers(k_lo, k_hi)) * q, p.lower), p.upper)
    assert _roundtrip(p, grid_value) == grid_value


CHOICE = st.one_of(
    st.text(max_size=5),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.tuples(st.integers(), st.text(max_size=2)),
)


@FAST
@given(st.lists(CHOICE, min_size=2, max_size=12, unique_by=lambda c: (type(c), c)), st.data())
def test_categorical_roundtrip_returns_the_original_object(choices, data):
    p = CategoricalParam("c", tuple(choices))
    i = data.draw(st.integers(0, len(choices) - 1))
    assert _roundtrip(p, choices[i]) is p.choices[i]
    assert SearchSpace([p]).to_unit({"c": choices[i]})[0] == i / (len(choices) - 1)


@FAST
@given(st.data())
def test_encoding_is_monotone(data):
    p = data.draw(float_params(log=data.draw(st.booleans())))
    a, b = sorted(data.draw(st.lists(st.floats(p.lower, p.upper), min_size=2, max_size=2)))
    assert p.encode(a) <= p.encode(b)
