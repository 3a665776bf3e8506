"""Benchmark method names of the replay and what they mean.

Two kinds of method (docs/algorithms.md §1.13, §1.15):

* **own methods** run the engine: ``erahbo`` (the paper's settings), ``erahbo-exp`` / ``erahbo-sigmoid``,
  ``rahbo-k<k>``, ``gp-ucb``, and ``tune-risk`` (``RiskAwareSearch``'s defaults, what a user gets);
* **peers** run a Ray Tune ``Searcher`` wrapped in Ray's ``Repeater(k)``: ``random-rep<k>``,
  ``tpe-rep<k>``, ``optuna-gp-rep<k>``, ``hebo-rep<k>``, ``bohb-rep<k>``, ``smac``, and
  ``<name>-rep<k>`` for a searcher a user brings with ``--searcher NAME=module:callable``
  (:class:`PeerMethod`; run by :mod:`tune_risk.offline.peers`).

This module imports neither torch nor pandas, so that ``tune-risk replay`` can validate ``--methods`` and
every engine flag before any heavy import (a bad call fails in well under a second).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tune_risk.settings import SEARCHER_INTENSIFY, EngineSettings, searcher_preset

PAPER_METHODS = ("erahbo", "rahbo-k2", "rahbo-k20", "gp-ucb")
WARPS = ("pooled", "online")
OWN_HELP = "erahbo, erahbo-exp, erahbo-sigmoid, rahbo-k<k> (e.g. rahbo-k2), gp-ucb, tune-risk"
PEER_FAMILIES = ("random", "tpe", "optuna-gp", "hebo", "bohb")
"""Built-in peers, each ``<family>-rep<k>`` (``k`` seeds per suggestion through Ray's ``Repeater``)."""
PEER_HELP = ("random-rep<k>, tpe-rep<k>, optuna-gp-rep<k>, hebo-rep<k>, bohb-rep<k>, smac, "
             "<name>-rep<k> for each --searcher NAME=module:callable")
METHOD_HELP = f"{OWN_HELP}; peers: {PEER_HELP}"
TUNE_RISK = "tune-risk"
"""The method of ``RiskAwareSearch``'s defaults: what a user who changes nothing gets (see ``tune_risk_settings``)."""
SMAC = "smac"
_METHOD_PATTERN = re.compile(r"^(erahbo(?:-(?:exp|sigmoid))?|rahbo-k(\d+)|gp-ucb)$")
_PEER_PATTERN = re.compile(r"^([A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)-rep(\d+)$")
SEARCHER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SCHEDULES = {"erahbo": "constant", "erahbo-exp": "exponential", "erahbo-sigmoid": "sigmoid"}
GP_UCB_K = 20  # the paper's GP-UCB baseline samples 20 seeds per configuration


def method_settings(name: str, budget: int, seed: int, warp: str = "pooled", **overrides: Any) -> EngineSettings:
    """Engine settings of a benchmark method name (docs/algorithms.md §1.13).

    ``erahbo`` (k_min=2, k_max=20, k_init=20), ``erahbo-exp`` / ``erahbo-sigmoid`` (β_stop
    schedules, App. C.5), ``rahbo-k<k>`` (fixed k, k_init = k) and ``gp-ucb`` (α = 0, k = 20).
    ``warp="pooled"``: the engine gets the table's pooled warp (the paper's protocol, A-13);
    ``"online"``: it fits its own on the initial design and re-fits it as in live use (§1.2).

    ``overrides`` are ``EngineSettings`` fields. What a method's name fixes wins over them: the
    ``k`` of ``rahbo-k<k>`` and ``gp-ucb`` (``k_min``/``k_max`` are ignored there), ``alpha = 0``
    of ``gp-ucb``; ``schedule_param`` applies to ``erahbo-exp``/``erahbo-sigmoid`` only.
    """
    match = _METHOD_PATTERN.match(name)
    if match is None and name != TUNE_RISK:
        raise ValueError(f"unknown method {name!r}; valid: {OWN_HELP}")
    if warp not in WARPS:
        raise ValueError(f"unknown warp={warp!r}; valid values are 'pooled' (the table's) and 'online' (live use)")
    common = dict(budget=budget, seed=seed, common_random_numbers=True, budget_unit="samples",
                  warp="none" if warp == "pooled" else "online")
    overrides = dict(overrides)
    if name == TUNE_RISK:
        return tune_risk_settings(budget, common, overrides)
    if name.startswith("erahbo"):
        schedule = _SCHEDULES[name]
        if schedule == "constant":  # the constant schedule has no parameter (one flag serves several methods)
            overrides.pop("schedule_param", None)
        return EngineSettings.for_method("erahbo", beta_stop_schedule=schedule, **common, **overrides)
    overrides.pop("schedule_param", None)
    for fixed in ("k_min", "k_max"):  # the name fixes k
        overrides.pop(fixed, None)
    if name == "gp-ucb":
        overrides.pop("alpha", None)  # risk neutral by definition
        return EngineSettings.for_method("gp-ucb", k=GP_UCB_K, **common, **overrides)
    k = int(match.group(2))
    if k < 2:
        raise ValueError(f"rahbo needs k >= 2 replicates (a variance), got {name!r}")
    return EngineSettings.for_method("rahbo", k=k, **common, **overrides)


def tune_risk_settings(budget: int, common: dict[str, Any], overrides: dict[str, Any]) -> EngineSettings:
    """``tune-risk``: the engine of ``RiskAwareSearch(budget=budget)`` with every other argument left out.

    ERAHBO with ``k_init = k_min = 2``, incumbent intensification on 10 % of the budget, the ``evidence``
    recommendation (A-21), and the budget
    counted in *runs* as under Tune (``budget_unit="runs"``: the initial design and cancelled runs are
    charged), so that ``--budget`` is the whole spend, as it is for a peer. ``overrides`` (engine flags)
    apply on top, except ``budget_unit``, which is what makes the comparison with peers equal.
    """
    overrides.pop("schedule_param", None)
    preset = searcher_preset("erahbo", overrides.pop("k_min", 2), overrides.pop("k_init", None))
    settings = {**common, "intensify": int(round(SEARCHER_INTENSIFY * budget)), **preset, **overrides,
                "budget_unit": "runs"}
    return EngineSettings.for_method("erahbo", **settings)


@dataclass(frozen=True)
class PeerMethod:
    """A peer of the replay: a Ray Tune ``Searcher`` (``family``) wrapped in ``Repeater(repeat)``.

    ``family`` is one of :data:`PEER_FAMILIES`, :data:`SMAC` (SMAC3's own intensifier, ``repeat`` = the
    most seeds it may give a configuration) or the ``NAME`` of a ``--searcher NAME=module:callable``.

    Example:
        >>> peer_method("tpe-rep3")
        PeerMethod(name='tpe-rep3', family='tpe', repeat=3)
    """

    name: str
    family: str
    repeat: int


def peer_method(name: str, searchers: tuple[str, ...] | list[str] = (), k_max: int = 20) -> PeerMethod | None:
    """The :class:`PeerMethod` of ``name``; ``None`` for an own method; ``ValueError`` for a peer-shaped
    name whose family is unknown or whose ``k`` is below 1. ``searchers``: the ``--searcher`` names."""
    if name == SMAC:
        return PeerMethod(name, SMAC, k_max)
    match = _PEER_PATTERN.match(name)
    if match is None:
        return None
    family, k = match.group(1), int(match.group(2))
    if family not in PEER_FAMILIES and family not in searchers:
        given = f" (--searcher names: {', '.join(searchers)})" if searchers else ""
        raise ValueError(f"unknown peer {name!r}: {family!r} is neither a built-in searcher "
                         f"({', '.join(PEER_FAMILIES)}) nor a --searcher NAME{given}")
    if k < 1:
        raise ValueError(f"peer {name!r}: Repeater needs k >= 1 seeds per suggestion, got k={k}")
    return PeerMethod(name, family, k)


def parse_methods(text: str, searchers: tuple[str, ...] | list[str] = ()) -> list[str]:
    """``"erahbo,tpe-rep3"`` -> validated method names (unknown, empty and duplicate entries raise).

    ``searchers``: the names given with ``--searcher NAME=module:callable``, each usable as ``NAME-rep<k>``.
    """
    names = [m.strip() for m in text.split(",")]
    if not any(names):
        raise ValueError(f"--methods {text!r} names no method; valid: {METHOD_HELP}")
    for position, name in enumerate(names, start=1):
        if not name:
            raise ValueError(f"--methods {text!r}: entry {position} is empty (a stray comma?)")
        if names.index(name) != position - 1:
            raise ValueError(f"--methods {text!r}: {name!r} is given twice")
        if _METHOD_PATTERN.match(name) is None and name != TUNE_RISK and peer_method(name, searchers) is None:
            raise ValueError(f"unknown method {name!r}; valid: {METHOD_HELP}")
        if peer_method(name, searchers) is None:
            method_settings(name, budget=10, seed=0)  # raises ValueError naming the method
    return names


def seeds_needed(settings: EngineSettings) -> int:
    """Seeds a table must hold for a method: every replicate of a configuration reads a distinct seed."""
    return max(settings.k_max, settings.replicates_initial)


def check_replayable(table: str, n_configs: int, n_seeds: int, settings: EngineSettings, method: str = "",
                     held_out: int = 0) -> None:
    """Bad input: enough seeds for ``k_max`` (and ``k_init``), configurations beyond the initial
    design, and a budget of at least one round. ``ValueError`` names the table and the method.
    ``n_seeds``: the seeds the method may read, ``held_out`` more being reserved by ``--test-seeds``."""
    who = f" ({method})" if method else ""
    needed = seeds_needed(settings)
    if n_seeds < needed:
        held = (f" to search with ({held_out} more held out by --test-seeds {held_out}; lower it or use 0)"
                if held_out else "")
        raise ValueError(f"table {table!r} has {n_seeds} seeds{held}, fewer than k_max={needed} replicates{who}")
    if n_configs <= settings.n_initial:
        raise ValueError(f"table {table!r} has {n_configs} configuration(s); a replay needs more than "
                         f"n_initial={settings.n_initial} (the initial design) to have any left to search{who}")
    if settings.budget is not None and settings.budget < settings.k_min:
        raise ValueError(f"budget={settings.budget} is smaller than one round (k_min={settings.k_min} replicates)")
