"""Codec between user hyperparameters and the unit hypercube ``[0, 1]^d`` of the GP engine.

The GP models of ERAHBO/OSCBO work on ``[0, 1]^d`` (docs/algorithms.md §1.4.1: "the configuration's
unit-hypercube vector, i.e. the ConfigSpace array"). This module defines the parameter types and the
exact, deterministic mapping between configurations and unit vectors. It is pure Python + numpy;
the Ray Tune conversion lives in :mod:`tune_risk.tune.space`.

Encoding of one parameter with bounds ``l < u`` (``u`` inclusive for every kind):

* ``FloatParam``: ``(v - l) / (u - l)``; with ``log=True``: ``(log v - log l) / (log u - log l)``.
* ``IntParam``: treated as continuous on ``[l, u]`` (``log=True``: in log space) and rounded to the
  nearest integer on decode.
* quantized (``q``): the values are the multiples ``k * q`` inside ``[l, u]``, the values Ray's
  ``quniform``/``qloguniform``/``qrandint``/``qlograndint`` produce (``np.round(v / q) * q``). They are
  encoded like the unquantized parameter and decoded by snapping to the nearest grid index ``k``
  (clipped to the grid); a float grid value ``k * q`` that float drift puts outside ``[l, u]`` (e.g.
  ``3 * 0.1 > 0.3``) is clipped to the bound. The float grid follows Ray's rule: a bound within
  ``math.isclose`` of a multiple of ``q`` is that multiple, otherwise it is rounded inwards.
* ``CategoricalParam``: choice index ``i`` of ``n >= 2`` maps to ``i / (n - 1)`` (docs/algorithms.md §1.4.1
  [CHOICE]); decode takes the nearest index (ties to even, as ``round``).

Decoding first clips ``x`` into ``[0, 1]``. Round-trip guarantees for valid values ``v``:

* ``x = 0`` decodes to ``l`` and ``x = 1`` to ``u`` exactly, and ``to_unit`` maps ``l``/``u`` to
  exactly ``0``/``1``.
* integers, quantized grid values and categorical choices: ``from_unit(to_unit(v)) == v`` exactly
  (integers are returned as Python ``int``, categorical values are the original choice objects). This
  needs integer bounds and quantized grid indices within ``±2**40``, which is validated. The float grid
  value of index ``k`` is Ray's ``k * q`` (clipped into the bounds); another float within
  ``isclose`` of it (``0.3`` for ``3 * 0.1``) is accepted and comes back as that grid value.
* continuous floats: the encoding is not injective on float64 (many floats share one ``x``), so
  ``from_unit(to_unit(v)) == v`` cannot hold for every float. What holds: (a) every value that
  ``from_unit`` returns is a fixed point, ``from_unit(to_unit(v)) == v`` exactly, so configurations the
  searcher proposed re-encode and decode to themselves bit for bit; (b) for any valid ``v`` the round
  trip is off by at most ``8 * eps * max(|l|, |u|)`` (linear) or a relative ``8 * eps * (1 + max(|log l|,
  |log u|))`` (log), ``eps = 2**-52``; usually it is exact (linear) or within an ulp or two
  (measured worst: about 3 eps).

``to_unit`` accepts values that are a float hair outside the bounds (relative ``1e-9``, e.g. Ray's
own ``exp(log u)`` drift) and clips them; anything further out, off the grid, non-integral for an
integer, or not among the choices raises a ``ValueError`` naming the parameter and the value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MAX_INT_MAGNITUDE",
    "CategoricalParam",
    "FloatParam",
    "IntParam",
    "Param",
    "SearchSpace",
]

#: Largest admissible integer bound and quantization grid index; keeps decoding exact in float64.
MAX_INT_MAGNITUDE = 2**40
_BOUND_REL_TOL = 1e-9
_FIXED_POINT_STEPS = 64


# --------------------------------------------------------------------------------------------------
# value checks
# --------------------------------------------------------------------------------------------------
def _is_real(value: Any) -> bool:
    """True for finite-or-not real numbers, excluding booleans."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _finite_float(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` if it is not a finite real number (or a bool)."""
    if not _is_real(value):
        return None
    try:
        v = float(value)
    except OverflowError:
        return None
    return v if math.isfinite(v) else None


def _as_finite(name: str, what: str, value: Any) -> float:
    """Return ``value`` as a finite float or raise naming the parameter."""
    v = _finite_float(value)
    if v is None:
        raise ValueError(f"Parameter {name!r}: {what} must be a finite real number, got {value!r}")
    return v


def _as_integral(name: str, what: str, value: Any) -> int:
    """Return ``value`` as a Python int if it is an integral real number, else raise."""
    v = _finite_float(value)
    if v is None or not v.is_integer():
        raise ValueError(f"Parameter {name!r}: {what} must be an integer, got {value!r}")
    return int(value)


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError(f"Parameter names must be non-empty strings, got {name!r}")


# --------------------------------------------------------------------------------------------------
# continuous scale shared by float and int parameters
# --------------------------------------------------------------------------------------------------
def _continuous_to_unit(v: float, lower: float, upper: float, log: bool) -> float:
    """Map ``v`` in ``[lower, upper]`` to ``[0, 1]`` linearly or in log space (bounds exact)."""
    if log:
        x = (math.log(v) - math.log(lower)) / (math.log(upper) - math.log(lower))
    else:
        x = (v - lower) / (upper - lower)
    return min(max(x, 0.0), 1.0)


def _continuous_from_unit(x: float, lower: float, upper: float, log: bool) -> float:
    """Approximate inverse of :func:`_continuous_to_unit` on clipped ``x``; exact bounds at 0 and 1."""
    if x <= 0.0:
        return lower
    if x >= 1.0:
        return upper
    if log:
        log_lower = math.log(lower)
        v = math.exp(log_lower + x * (math.log(upper) - log_lower))
    else:
        v = lower + x * (upper - lower)
    return min(max(v, lower), upper)


def _stable_from_unit(x: float, lower: float, upper: float, log: bool) -> float:
    """Decode to a fixed point ``v`` of ``decode(encode(v)) == v`` (a few steps of that map).

    ``decode(encode(v))`` moves a float by at most a few ulps of the larger bound; iterating it from
    the plain decode reaches a value it leaves unchanged (usually at once, else in 1-3 steps). A cycle,
    never observed, resolves to its smallest member, which is again a fixed point of this function.
    """
    v = _continuous_from_unit(x, lower, upper, log)
    seen = [v]
    for _ in range(_FIXED_POINT_STEPS):
        w = _continuous_from_unit(_continuous_to_unit(v, lower, upper, log), lower, upper, log)
        if w == v:
            return v
        if w in seen:
            return min(seen[seen.index(w) :])
        seen.append(w)
        v = w
    return v


def _float_grid_index(bound: float, q: float, inwards: Any) -> int:
    """Ray's grid index of a bound: the nearest multiple if ``isclose``, else rounded inwards."""
    scaled = bound / q
    nearest = round(scaled)
    if math.isclose(scaled, nearest):
        return int(nearest)
    return int(inwards(scaled))


def _check_grid(name: str, k_lo: int, k_hi: int, q: float, lower: float, upper: float) -> None:
    """Validate a quantization grid ``k_lo..k_hi``: non-empty, not a single value, representable."""
    if k_lo > k_hi:
        raise ValueError(
            f"Parameter {name!r}: no multiple of q={q!r} lies in [{lower!r}, {upper!r}]; "
            "choose bounds that contain at least two multiples of q"
        )
    if k_lo == k_hi:
        raise ValueError(
            f"Parameter {name!r}: only one multiple of q={q!r} ({k_lo * q!r}) lies in "
            f"[{lower!r}, {upper!r}]; a single value is a constant, not a search dimension"
        )
    if max(abs(k_lo), abs(k_hi)) > MAX_INT_MAGNITUDE:
        raise ValueError(
            f"Parameter {name!r}: q={q!r} is too fine for [{lower!r}, {upper!r}] "
            f"(grid index beyond 2**40); use a larger q or no quantization"
        )


def _check_bounds_order(name: str, lower: float, upper: float, log: bool) -> None:
    if lower >= upper:
        raise ValueError(
            f"Parameter {name!r}: lower bound {lower!r} must be smaller than upper bound {upper!r} "
            "(degenerate range)"
        )
    if log and lower <= 0:
        raise ValueError(f"Parameter {name!r}: log scale needs lower bound > 0, got {lower!r}")
    if log and not math.log(upper) > math.log(lower):
        raise ValueError(
            f"Parameter {name!r}: range [{lower!r}, {upper!r}] is too narrow for a log scale "
            "(equal logarithms in float64); use a linear scale"
        )


# --------------------------------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FloatParam:
    """A real hyperparameter on ``[lower, upper]`` (both inclusive), optionally log-scaled/quantized."""

    name: str
    lower: float
    upper: float
    log: bool = False
    q: float | None = None

    def __post_init__(self) -> None:
        _check_name(self.name)
        lower = _as_finite(self.name, "lower bound", self.lower)
        upper = _as_finite(self.name, "upper bound", self.upper)
        _check_bounds_order(self.name, lower, upper, self.log)
        if not self.log and not math.isfinite(upper - lower):
            raise ValueError(f"Parameter {self.name!r}: range [{lower!r}, {upper!r}] overflows float64")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "log", bool(self.log))
        if self.q is not None:
            q = _as_finite(self.name, "q", self.q)
            if q <= 0:
                raise ValueError(f"Parameter {self.name!r}: q must be > 0, got {self.q!r}")
            object.__setattr__(self, "q", q)
            _check_grid(self.name, *self._grid(), q, lower, upper)

    def _grid(self) -> tuple[int, int]:
        """Grid index range ``(k_lo, k_hi)`` of the quantized values (Ray's rounding rule)."""
        assert self.q is not None
        return (
            _float_grid_index(self.lower, self.q, math.ceil),
            _float_grid_index(self.upper, self.q, math.floor),
        )

    def _grid_value(self, k: int) -> float:
        assert self.q is not None
        return min(max(k * self.q, self.lower), self.upper)

    def encode(self, value: Any) -> float:
        """Unit coordinate of ``value``; raises ``ValueError`` for out-of-range or off-grid values."""
        v = _as_finite(self.name, "value", value)
        if self.q is not None:
            v = self._grid_value(self._snap_checked(v))
        else:
            v = self._clip_checked(v)
        return _continuous_to_unit(v, self.lower, self.upper, self.log)

    def decode(self, x: float) -> float:
        """Value at unit coordinate ``x`` (clipped into ``[0, 1]``)."""
        if self.q is None:
            return _stable_from_unit(x, self.lower, self.upper, self.log)
        v = _continuous_from_unit(x, self.lower, self.upper, self.log)
        k_lo, k_hi = self._grid()
        return self._grid_value(min(max(round(v / self.q), k_lo), k_hi))

    def _clip_checked(self, v: float) -> float:
        tol = _BOUND_REL_TOL * max(abs(self.lower), abs(self.upper), self.upper - self.lower)
        if not self.lower - tol <= v <= self.upper + tol:
            raise ValueError(
                f"Parameter {self.name!r}: value {v!r} is outside [{self.lower!r}, {self.upper!r}]"
            )
        return min(max(v, self.lower), self.upper)

    def _snap_checked(self, v: float) -> int:
        assert self.q is not None
        scaled = v / self.q
        k = round(scaled)
        if not math.isclose(scaled, k, rel_tol=_BOUND_REL_TOL, abs_tol=_BOUND_REL_TOL):
            raise ValueError(f"Parameter {self.name!r}: value {v!r} is not a multiple of q={self.q!r}")
        k_lo, k_hi = self._grid()
        if not k_lo <= k <= k_hi:
            raise ValueError(
                f"Parameter {self.name!r}: value {v!r} is outside [{self.lower!r}, {self.upper!r}]"
            )
        return k


@dataclass(frozen=True)
class IntParam:
    """An integer hyperparameter on ``[lower, upper]`` (both inclusive), optionally log/quantized."""

    name: str
    lower: int
    upper: int
    log: bool = False
    q: int | None = None

    def __post_init__(self) -> None:
        _check_name(self.name)
        lower = _as_integral(self.name, "lower bound", self.lower)
        upper = _as_integral(self.name, "upper bound", self.upper)
        _check_bounds_order(self.name, lower, upper, self.log)
        if max(abs(lower), abs(upper)) > MAX_INT_MAGNITUDE:
            raise ValueError(f"Parameter {self.name!r}: integer bounds [{lower!r}, {upper!r}] exceed ±2**40")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "log", bool(self.log))
        if self.q is not None:
            if _is_real(self.q) and self.q <= 0:
                raise ValueError(f"Parameter {self.name!r}: q must be > 0, got {self.q!r}")
            q = _as_integral(self.name, "q", self.q)
            object.__setattr__(self, "q", q)
            _check_grid(self.name, *self._grid(), q, lower, upper)

    def _grid(self) -> tuple[int, int]:
        """Grid index range ``(k_lo, k_hi)``: the multiples of ``q`` inside the bounds (exact)."""
        q = self.q or 1
        return -(-self.lower // q), self.upper // q

    def encode(self, value: Any) -> float:
        """Unit coordinate of ``value``; raises ``ValueError`` for non-integral/out-of-range values."""
        v = _as_integral(self.name, "value", value)
        if not self.lower <= v <= self.upper:
            raise ValueError(
                f"Parameter {self.name!r}: value {value!r} is outside [{self.lower}, {self.upper}]"
            )
        if self.q is not None and v % self.q:
            raise ValueError(f"Parameter {self.name!r}: value {value!r} is not a multiple of q={self.q}")
        return _continuous_to_unit(float(v), float(self.lower), float(self.upper), self.log)

    def decode(self, x: float) -> int:
        """Integer at unit coordinate ``x`` (clipped into ``[0, 1]``), snapped to the ``q`` grid."""
        v = _continuous_from_unit(x, float(self.lower), float(self.upper), self.log)
        q = self.q or 1
        k_lo, k_hi = self._grid()
        return int(min(max(round(v / q), k_lo), k_hi)) * q


@dataclass(frozen=True)
class CategoricalParam:
    """A categorical hyperparameter over ``choices`` (any objects, at least two, no duplicates)."""

    name: str
    choices: tuple

    def __post_init__(self) -> None:
        _check_name(self.name)
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Iterable):
            raise ValueError(f"Parameter {self.name!r}: choices must be a sequence, got {self.choices!r}")
        choices = tuple(self.choices)
        object.__setattr__(self, "choices", choices)
        if not choices:
            raise ValueError(f"Parameter {self.name!r}: categorical has no choices")
        if len(choices) == 1:
            raise ValueError(
                f"Parameter {self.name!r}: categorical has a single choice {choices[0]!r}; "
                "a single value is a constant, not a search dimension"
            )
        for i, a in enumerate(choices):
            if any(_same_choice(a, b) for b in choices[:i]):
                raise ValueError(f"Parameter {self.name!r}: duplicate choice {a!r} in {choices!r}")

    def encode(self, value: Any) -> float:
        """``index / (n - 1)`` of ``value``; raises ``ValueError`` if it is not one of the choices."""
        index = _choice_index(self.choices, value)
        if index is None:
            raise ValueError(
                f"Parameter {self.name!r}: value {value!r} is not one of the choices {self.choices!r}"
            )
        return index / (len(self.choices) - 1)

    def decode(self, x: float) -> Any:
        """The choice whose index is nearest to ``x * (n - 1)`` (``x`` clipped into ``[0, 1]``)."""
        n = len(self.choices)
        return self.choices[round(min(max(x, 0.0), 1.0) * (n - 1))]


Param = FloatParam | IntParam | CategoricalParam


def _equal(a: Any, b: Any) -> bool:
    """``a == b`` as a bool; objects whose equality is not a bool (arrays) compare unequal."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - arbitrary user objects
        return False


def _same_choice(a: Any, b: Any) -> bool:
    """Strict identity of choices: same object, or same type and equal (so ``1`` and ``True`` differ)."""
    return a is b or (type(a) is type(b) and _equal(a, b))


def _choice_index(choices: tuple, value: Any) -> int | None:
    """Index of ``value``: by identity, then by strict equality, then by a unique loose equality."""
    for matcher in (lambda c: c is value, lambda c: _same_choice(c, value)):
        for i, c in enumerate(choices):
            if matcher(c):
                return i
    is_bool = isinstance(value, (bool, np.bool_))
    loose = [
        i for i, c in enumerate(choices) if isinstance(c, (bool, np.bool_)) == is_bool and _equal(c, value)
    ]
    return loose[0] if len(loose) == 1 else None


# --------------------------------------------------------------------------------------------------
# search space
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchSpace:
    """An ordered set of parameters; dimension ``j`` of the unit cube is ``params[j]``."""

    params: tuple[Param, ...]

    def __post_init__(self) -> None:
        params = tuple(self.params)
        object.__setattr__(self, "params", params)
        if not params:
            raise ValueError("search space is empty: add at least one parameter")
        seen: set[str] = set()
        for p in params:
            if not isinstance(p, (FloatParam, IntParam, CategoricalParam)):
                raise TypeError(f"SearchSpace expects FloatParam/IntParam/CategoricalParam, got {p!r}")
            if p.name in seen:
                raise ValueError(f"Parameter {p.name!r}: duplicate parameter name")
            seen.add(p.name)

    @property
    def dim(self) -> int:
        """Number of unit-cube dimensions ``d``."""
        return len(self.params)

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names in dimension order."""
        return tuple(p.name for p in self.params)

    def to_unit(self, config: Mapping[str, Any]) -> np.ndarray:
        """Encode ``config`` (name → value; extra keys ignored) as a float64 vector of shape ``(d,)``."""
        x = np.empty(self.dim, dtype=np.float64)
        for j, p in enumerate(self.params):
            if p.name not in config:
                raise ValueError(f"Parameter {p.name!r}: missing from config with keys {list(config)!r}")
            x[j] = p.encode(config[p.name])
        return x

    def to_unit_many(self, configs: Iterable[Mapping[str, Any]]) -> np.ndarray:
        """Encode several configurations into an array of shape ``(n, d)``."""
        rows = [self.to_unit(c) for c in configs]
        return np.stack(rows) if rows else np.empty((0, self.dim), dtype=np.float64)

    def from_unit(self, x: Sequence[float] | np.ndarray) -> dict[str, Any]:
        """Decode a unit vector of shape ``(d,)`` (clipped into ``[0, 1]``) into name → value."""
        arr = np.asarray(x, dtype=np.float64)
        if arr.shape != (self.dim,):
            raise ValueError(f"expected a unit vector of shape ({self.dim},), got shape {arr.shape}")
        if np.isnan(arr).any():
            raise ValueError(f"unit vector contains NaN: {arr!r}")
        arr = np.clip(arr, 0.0, 1.0)
        return {p.name: p.decode(float(u)) for p, u in zip(self.params, arr, strict=True)}
