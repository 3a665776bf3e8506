"""Ray Tune ``param_space`` ↔ unit cube: converts Tune domains into a :class:`~tune_risk.space.SearchSpace`.

Only the Ray searcher adapter imports this module (it imports ``ray.tune``); the engine works on
:mod:`tune_risk.space` alone. The conversion mirrors the values each Ray 2.x domain can sample, so a
configuration decoded here is one Ray itself could have produced:

========================================  ==========================================================
Tune domain                               parameter
========================================  ==========================================================
``uniform(l, u)`` / ``loguniform(l, u)``  ``FloatParam(l, u[, log])``
``quniform`` / ``qloguniform(l, u, q)``   ``FloatParam(l, u[, log], q)``: multiples of q, ``u`` inclusive
``randint(l, u)`` / ``lograndint(l, u)``  ``IntParam(l, u - 1[, log])``: Ray's ``u`` is exclusive
``qrandint`` / ``qlograndint(l, u, q)``   ``q == 1``: as ``randint`` (``u`` exclusive); otherwise the
                                          multiples of q in ``[l, u]`` (``u`` inclusive):
                                          ``IntParam(ceil(l/q) q, floor(u/q) q[, log], q)``
``choice(categories)``                    ``CategoricalParam`` (original objects, including lists/None)
========================================  ==========================================================

A domain with exactly one possible value (``choice([a])``, ``randint(3, 4)``, a ``qrandint`` with one
multiple in range) is a constant, not a dimension; plain constants are kept verbatim. Nested dicts
give flat names joined by ``"/"`` (``{"optimizer": {"lr": ...}}`` → ``"optimizer/lr"``) and decode
back to the same nesting. ``grid_search``, ``sample_from``/``{"eval": ...}``, ``randn``/``qrandn``,
domains inside lists, and any other domain raise a ``ValueError`` naming the parameter path.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ray.tune.search.sample import (
    Categorical,
    Domain,
    Float,
    Function,
    Integer,
    LogUniform,
    Normal,
    Quantized,
    Uniform,
)
from ray.tune.search.variant_generator import parse_spec_vars

from tune_risk.space import CategoricalParam, FloatParam, IntParam, Param, SearchSpace

__all__ = ["TuneSpaceCodec"]

_SEARCHER = "RiskAwareSearch"
_SUPPORTED = (
    "tune.uniform, loguniform, quniform, qloguniform, randint, lograndint, qrandint, qlograndint, choice"
)

Path = tuple[str, ...]


@dataclass(frozen=True)
class _Constant:
    """A domain with a single possible value: decoded as that value, not a search dimension."""

    value: Any


def _unsupported(name: str, what: str, hint: str) -> ValueError:
    return ValueError(f"Parameter {name!r}: {what} is not supported by {_SEARCHER}; {hint}")


def _check_path(param_space: Mapping, path: tuple) -> str:
    """Validate that ``path`` runs through string-keyed dicts only; return its ``"/"``-joined name."""
    name = "/".join(str(k) for k in path)
    node: Any = param_space
    for key in path:
        if not isinstance(node, Mapping):
            raise _unsupported(
                name,
                "a search domain inside a list or tuple",
                "put it in a dict instead (e.g. {'layer_0': tune.choice([...])})",
            )
        if not isinstance(key, str) or "/" in key:
            raise ValueError(
                f"Parameter {name!r}: key {key!r} must be a string without '/' "
                "('/' joins the names of nested parameters)"
            )
        node = node[key]
    return name


def _convert_float(name: str, domain: Float, sampler: Any, q: float | None) -> Param:
    if isinstance(sampler, Normal):
        raise _unsupported(
            name,
            "tune.randn/qrandn (normal sampling)",
            "use tune.uniform or tune.loguniform with finite bounds",
        )
    if not isinstance(sampler, (Uniform, LogUniform)):
        raise _unsupported(name, f"a Float domain with sampler {sampler}", f"use one of {_SUPPORTED}")
    return FloatParam(name, domain.lower, domain.upper, log=isinstance(sampler, LogUniform), q=q)


def _convert_integer(name: str, domain: Integer, sampler: Any, q: Any) -> Param | _Constant:
    if not isinstance(sampler, (Uniform, LogUniform)):
        raise _unsupported(name, f"an Integer domain with sampler {sampler}", f"use one of {_SUPPORTED}")
    log = isinstance(sampler, LogUniform)
    lower, upper = _integral(name, "lower bound", domain.lower), _integral(name, "upper bound", domain.upper)
    if q is None or q == 1:  # Ray: upper exclusive (also for q == 1)
        lo, hi, step = lower, upper - 1, None
    else:  # Ray: grid indices ceil(l/q)..floor(u/q), upper inclusive
        step = _integral(name, "q", q)
        if step <= 0:
            raise ValueError(f"Parameter {name!r}: q must be > 0, got {q!r}")
        lo, hi = -(-lower // step) * step, (upper // step) * step
    if hi < lo:
        raise ValueError(f"Parameter {name!r}: Ray domain {domain.domain_str} with q={q!r} has no values")
    if hi == lo:
        return _Constant(lo)
    return IntParam(name, lo, hi, log=log, q=step)


def _integral(name: str, what: str, value: Any) -> int:
    """``value`` as a Python int if it is an integral real number (not a bool), else raise."""
    if (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and float(value).is_integer()
    ):
        return int(value)
    raise ValueError(f"Parameter {name!r}: {what} must be an integer, got {value!r}")


def _convert_categorical(name: str, domain: Categorical, sampler: Any) -> Param | _Constant:
    if not isinstance(sampler, Uniform):
        raise _unsupported(name, f"a Categorical domain with sampler {sampler}", "use tune.choice")
    if len(domain.categories) == 1:
        return _Constant(domain.categories[0])
    return CategoricalParam(name, tuple(domain.categories))


def _convert_domain(name: str, domain: Domain) -> Param | _Constant:
    """Convert one Tune domain (already known not to be a grid) into a parameter or a constant."""
    if isinstance(domain, Function):
        raise _unsupported(
            name,
            "tune.sample_from (or an {'eval': ...} spec)",
            f"the GP needs an explicit domain: use one of {_SUPPORTED}",
        )
    sampler = domain.get_sampler()
    q = None
    if isinstance(sampler, Quantized):
        q, sampler = sampler.q, sampler.get_sampler()
    if isinstance(domain, Float):
        return _convert_float(name, domain, sampler, q)
    if isinstance(domain, Integer):
        return _convert_integer(name, domain, sampler, q)
    if isinstance(domain, Categorical):
        return _convert_categorical(name, domain, sampler)
    raise _unsupported(name, f"domain type {type(domain).__name__}", f"use one of {_SUPPORTED}")


def copy_dicts(tree: Any) -> Any:
    """Copy the dict skeleton of ``tree`` (so assignments do not leak); other leaves are shared."""
    if isinstance(tree, dict):
        out = copy.copy(tree)
        for key, value in tree.items():
            out[key] = copy_dicts(value)
        return out
    return tree


def _assign(tree: dict, path: Path, value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


@dataclass(frozen=True, eq=False)
class TuneSpaceCodec:
    """Encodes nested Tune configurations into unit vectors of :attr:`space` and decodes them back.

    Build it with :meth:`from_param_space`. ``decode`` returns the full nested configuration: sampled
    values at the domain paths and every constant of the ``param_space`` (the same objects, not copies;
    Ray's ``SearchGenerator`` deep-copies suggested configs itself).
    """

    space: SearchSpace
    paths: tuple[Path, ...]
    constants: tuple[tuple[Path, Any], ...]
    template: dict = field(repr=False)

    @classmethod
    def from_param_space(cls, param_space: dict) -> TuneSpaceCodec:
        """Convert a (possibly nested) Ray Tune ``param_space``; raises ``ValueError`` if unsupported."""
        if not isinstance(param_space, Mapping):
            raise ValueError(f"param_space must be a dict, got {type(param_space).__name__}")
        _, domain_vars, grid_vars = parse_spec_vars(dict(param_space))
        if grid_vars:
            raise _unsupported(
                "/".join(str(k) for k in grid_vars[0][0]),
                "grid_search",
                "use tune.choice([...]) for a categorical parameter",
            )
        params: list[Param] = []
        paths: list[Path] = []
        constants: list[tuple[Path, Any]] = []
        for path, domain in domain_vars:
            name = _check_path(param_space, path)
            converted = _convert_domain(name, domain)
            if isinstance(converted, _Constant):
                constants.append((tuple(path), converted.value))
            else:
                params.append(converted)
                paths.append(tuple(path))
        if not params:
            raise ValueError(
                f"search space is empty: param_space has no searchable parameter (only constants); "
                f"{_SEARCHER} needs at least one of {_SUPPORTED} with more than one value"
            )
        return cls(SearchSpace(params), tuple(paths), tuple(constants), copy_dicts(dict(param_space)))

    @property
    def flat_names(self) -> tuple[str, ...]:
        """Names of the unit-cube dimensions, nested keys joined by ``"/"``."""
        return self.space.names

    def encode(self, config: Mapping[str, Any]) -> np.ndarray:
        """Unit vector ``(d,)`` of a nested configuration (extra keys, e.g. an injected seed, ignored)."""
        flat = {}
        for name, path in zip(self.space.names, self.paths, strict=True):
            node: Any = config
            for key in path:
                if not isinstance(node, Mapping) or key not in node:
                    raise ValueError(f"Parameter {name!r}: missing from config")
                node = node[key]
            flat[name] = node
        return self.space.to_unit(flat)

    def decode(self, x: np.ndarray) -> dict[str, Any]:
        """Nested configuration at unit vector ``x`` (clipped into ``[0, 1]``), constants included."""
        values = self.space.from_unit(x)
        config = copy_dicts(self.template)
        for path, value in self.constants:
            _assign(config, path, value)
        for name, path in zip(self.space.names, self.paths, strict=True):
            _assign(config, path, values[name])
        return config
