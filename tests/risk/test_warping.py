"""Tests for tune_risk.risk.warping: Vizier's default output warper and its frozen form (docs/algorithms.md §1.2, §5 item 10)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy.stats import norm, rankdata

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.risk.warping import FrozenWarp, fit_warp, warp_values

FAST = settings(max_examples=60, deadline=None)

finite_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_subnormal=False)
real_samples = st.lists(finite_floats.map(lambda v: round(v, 6)), min_size=1, max_size=40)
tied_samples = st.lists(st.integers(min_value=-6, max_value=6), min_size=1, max_size=40)
any_sample = st.one_of(real_samples, tied_samples).map(lambda v: np.asarray(v, dtype=np.float64))


def vizier_reference(y: np.ndarray) -> np.ndarray:
    """Element-by-element transcription of docs/algorithms.md §1.2 (HalfRank, then Log with c = 1.5)."""
    y = np.asarray(y, dtype=np.float64).copy()
    unique = np.unique(y)
    if unique.size == 1:
        return np.zeros_like(y)
    med = np.median(y)
    ranks = rankdata(y, method="dense")
    i_med = np.searchsorted(unique, med, "left")
    den = i_med + (0.5 if unique[i_med] == med else 0.0)
    good = unique[unique >= med]
    std = math.sqrt(sum((g - med) ** 2 for g in good) / len(good))
    if std <= 0:
        std = math.sqrt(sum((u - med) ** 2 for u in unique) / len(unique))
    h = y.copy()
    for i in range(y.size):
        if y[i] < med:
            h[i] = med + std * norm.ppf(0.5 * (ranks[i] - 0.5) / den)
    lo, hi = h.min(), h.max()
    return 0.5 - np.log1p((hi - h) / (hi - lo) * 0.5) / np.log(1.5)


def test_hand_computed_three_points():
    # median 1, den = 1 + 0.5, sigma_good = sqrt((0 + 1)/2); 0 -> 1 + sqrt(.5)*ppf(1/6); then Log.
    h0 = 1.0 + math.sqrt(0.5) * norm.ppf(1.0 / 6.0)
    middle = 0.5 - math.log1p((2.0 - 1.0) / (2.0 - h0) * 0.5) / math.log(1.5)
    np.testing.assert_allclose(warp_values(np.array([2.0, 0.0, 1.0])), [0.5, -0.5, middle], atol=1e-14)
    assert middle == pytest.approx(-0.1411811, abs=1e-6)


@pytest.mark.parametrize(
    "y",
    [
        [3.0, 1.0, 1.0, 2.0, 5.0, 5.0, 5.0],  # ties below and at the top, odd n, median observed
        [0.0, 1.0, 2.0, 10.0],  # even n, median not observed
        [-4.0, -4.0, -1.0, 7.0, 7.0, 7.0, 7.0, 7.0],  # median equals the maximum
        [1.0, 1.0, 1.0, 2.0],  # median equals the minimum: HalfRank changes nothing
        [0.0, 1.0],
    ],
)
def test_matches_reference_on_fixed_samples(y):
    np.testing.assert_allclose(warp_values(np.array(y)), vizier_reference(np.array(y)), atol=1e-12, rtol=0)


@FAST
@given(any_sample)
def test_matches_reference_property(y):
    np.testing.assert_allclose(warp_values(y), vizier_reference(y), atol=1e-12, rtol=0)


@FAST
@given(any_sample)
def test_range_and_end_points(y):
    w = warp_values(y)
    assert w.shape == y.shape
    assert np.all(w >= -0.5) and np.all(w <= 0.5)
    if np.unique(y).size > 1:
        assert w[np.argmin(y)] == -0.5 and w[np.argmax(y)] == 0.5


@FAST
@given(any_sample)
def test_rank_preserving_with_ties(y):
    w = warp_values(y)
    w_i, w_j = np.meshgrid(w, w, indexing="ij")
    y_i, y_j = np.meshgrid(y, y, indexing="ij")
    assert np.all(w_i[y_i < y_j] <= w_j[y_i < y_j])  # may tie only through rounding of close floats
    assert np.all(w_i[y_i == y_j] == w_j[y_i == y_j])


@FAST
@given(tied_samples.map(lambda v: np.asarray(v, dtype=np.float64)))
def test_strictly_rank_preserving_on_separated_values(y):
    w = warp_values(y)
    order = np.argsort(y, kind="stable")
    dy, dw = np.diff(y[order]), np.diff(w[order])
    assert np.all(dw[dy > 0] > 0) and np.all(dw[dy == 0] == 0)


@FAST
@given(real_samples.map(np.asarray), st.floats(1e-3, 1e3), st.floats(-1e3, 1e3))
def test_invariant_to_positive_affine_maps(y, scale, shift):
    # HalfRank is affine-equivariant and Log normalises by the range, so the warp is affine-invariant.
    assume(np.unique(scale * y + shift).size == np.unique(y).size)
    np.testing.assert_allclose(warp_values(scale * y + shift), warp_values(y), atol=1e-8)


def test_pooled_table_keeps_shape_and_pools_entries():
    table = np.array([[1.0, 5.0], [3.0, 2.0], [4.0, 0.0]])
    np.testing.assert_array_equal(warp_values(table), warp_values(table.ravel()).reshape(3, 2))


def test_per_configuration_variance_bounded_on_random_table():
    rng = np.random.default_rng(7)
    means, scales = rng.normal(0, 5, 256), rng.lognormal(0, 1.5, 256)
    table = means[:, None] + scales[:, None] * rng.standard_t(2, size=(256, 10))
    warped = warp_values(table)
    assert warped.min() == -0.5 and warped.max() == 0.5
    assert np.var(warped, axis=1, ddof=0).max() <= 0.25  # Popoviciu
    assert np.var(warped, axis=1, ddof=1).max() <= 0.25 * 10 / 9


def test_per_configuration_variance_bounded_on_objective_table():
    _, table = make_pool_table(get_objective("branin"), 128, 20, seed=3)
    variances = np.var(warp_values(table), axis=1, ddof=0)
    assert variances.max() <= 0.25 and variances.max() > 0.0


def test_sample_variance_ddof1_can_exceed_quarter_for_two_replicates():
    # The bound 0.25 holds for the variance of the distribution (ddof=0); the unbiased estimate with
    # k replicates is bounded by 0.25*k/(k-1), which is reached at k = 2.
    warped = warp_values(np.array([[0.0, 1.0], [0.5, 0.5]]))
    assert np.var(warped[0], ddof=1) == pytest.approx(0.5)


@FAST
@given(any_sample)
def test_frozen_warp_reproduces_fitted_sample(y):
    np.testing.assert_allclose(fit_warp(y)(y), warp_values(y), atol=1e-12, rtol=0)


@FAST
@given(any_sample, st.lists(finite_floats, min_size=2, max_size=30))
@example(np.array([0.0, 1.0, -11.0]), [0.0, -5.298341493432491e-27])  # np.interp overshot the knot by an ulp
def test_frozen_warp_monotone_and_bounded_on_new_points(y, new):
    frozen = fit_warp(y)
    new = np.sort(np.asarray(new))
    w = frozen(new)
    assert np.all(np.diff(w) >= 0)
    assert np.all(w >= -0.5) and np.all(w <= 0.5)


def test_frozen_warp_interpolates_linearly_between_knots():
    y = np.array([0.0, 1.0, 3.0, 4.0, 9.0])
    frozen = fit_warp(y)
    w = warp_values(y)
    assert frozen(2.0) == pytest.approx(0.5 * (w[1] + w[2]), abs=1e-15)
    assert frozen(np.array([[6.5]])).shape == (1, 1)
    assert frozen(6.5) == pytest.approx(0.5 * (w[3] + w[4]), abs=1e-15)


def test_frozen_warp_extrapolation_is_clipped():
    y = np.array([0.0, 1.0, 3.0, 4.0, 9.0])
    frozen = fit_warp(y)
    out = frozen(np.array([-1e300, -np.inf, -0.001, 9.001, 1e300, np.inf]))
    np.testing.assert_array_equal(out, [-0.5, -0.5, -0.5, 0.5, 0.5, 0.5])
    assert np.ndim(frozen(3.0)) == 0


def test_degenerate_sample_maps_everything_to_zero():
    frozen = fit_warp(np.array([2.0, 2.0, 2.0]))
    assert frozen.is_degenerate
    np.testing.assert_array_equal(frozen(np.array([-5.0, 2.0, 7.0, np.inf])), np.zeros(4))
    np.testing.assert_array_equal(warp_values(np.array([4.0])), [0.0])


def test_state_dict_round_trip_is_exact_and_plain():
    y = np.random.default_rng(0).normal(size=50)
    frozen = fit_warp(np.concatenate([y, y[:5]]))
    state = frozen.state_dict()
    assert type(state["bound"]) is float
    knots = [state["raw_knots"], state["warped_knots"]]
    assert all(type(v) is list and all(type(e) is float for e in v) for v in knots)
    restored = FrozenWarp.from_state_dict(json.loads(json.dumps(state)))
    assert restored == frozen and hash(restored) == hash(frozen)
    probe = np.linspace(-4, 4, 101)
    np.testing.assert_array_equal(restored(probe), frozen(probe))
    assert fit_warp(y) != frozen and frozen != "not a warp"


def test_frozen_warp_does_not_alias_caller_arrays():
    raw, warped = np.array([0.0, 1.0]), np.array([-0.5, 0.5])
    frozen = FrozenWarp(raw, warped)
    raw[1] = 5.0  # still writable, and the warp is unaffected
    assert frozen(1.0) == 0.5 and not frozen.raw_knots.flags.writeable


def test_from_state_dict_rejects_bad_state():
    with pytest.raises(ValueError, match="warped_knots"):
        FrozenWarp.from_state_dict({"raw_knots": [0.0, 1.0]})
    with pytest.raises(ValueError, match="strictly increasing"):
        FrozenWarp.from_state_dict({"raw_knots": [1.0, 0.0], "warped_knots": [-0.5, 0.5]})
    with pytest.raises(ValueError, match=r"\[-0.5, 0.5\]"):
        FrozenWarp.from_state_dict({"raw_knots": [0.0, 1.0], "warped_knots": [-0.5, 0.7]})


def test_tiny_spreads_do_not_underflow():
    y = np.array([0.0, 0.0, -2.2642156759732396e-259])  # (y - median)**2 underflows to 0
    np.testing.assert_array_equal(warp_values(y), [0.5, 0.5, -0.5])


def test_overflowing_range_raises():
    with pytest.raises(ValueError, match="too large"):
        warp_values(np.array([-1.7e308, 0.0, 1.7e308]))


@pytest.mark.parametrize("bad", [[], [1.0, np.nan], [0.0, np.inf], [-np.inf, 2.0]])
def test_invalid_inputs_raise(bad):
    with pytest.raises(ValueError, match="empty|non-finite"):
        fit_warp(np.array(bad))
    with pytest.raises(ValueError, match="empty|non-finite"):
        warp_values(np.array(bad))


def test_frozen_warp_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        fit_warp(np.array([0.0, 1.0]))(np.array([0.5, np.nan]))


def test_wide_bound_keeps_returns_beyond_the_fitted_range_ordered():
    """Online use: returns better than every fitted return must still rank (not saturate at 0.5)."""
    y = np.random.default_rng(3).normal(size=12)
    narrow, wide = fit_warp(y), fit_warp(y, bound=1.0)
    beyond = y.max() + np.array([0.1, 0.5, 1.0, 2.0])
    np.testing.assert_array_equal(narrow(beyond), np.full(4, 0.5))
    out = wide(beyond)
    assert np.all(np.diff(out) > 0) and out[0] > 0.5 and out.max() <= 1.0
    np.testing.assert_array_equal(wide(y), narrow(y))  # identical inside the fitted range
    below = wide(y.min() - np.array([3.0, 1.0]))
    assert np.all(np.diff(below) > 0) and below.min() >= -1.0 and below.max() < -0.5
    assert wide.variance_bound == 1.0 and narrow.variance_bound == 0.25
    with pytest.raises(ValueError, match="bound"):
        fit_warp(y, bound=0.2)


def test_wide_bound_with_two_distinct_returns_still_ranks_beyond_them():
    """Two unique initial returns (e.g. CartPole's 500 cap reached by half the design): the secant is
    the only segment, not a 0/0 slope that would flatten everything above the best return."""
    wide = fit_warp(np.array([200.0, 500.0, 500.0, 200.0]), bound=1.0)
    assert wide.raw_knots.size == 2
    with np.errstate(all="raise"):
        out = wide(np.array([100.0, 150.0, 550.0, 600.0]))
    assert np.all(np.diff(out) > 0) and out[0] >= -1.0 and out[-1] <= 1.0 and out[2] > 0.5
