"""Benchmark method names of the replay (``erahbo``, ``rahbo-k<k>``, ``gp-ucb``...) and their engine settings.

docs/algorithms.md §1.13. This module imports neither torch nor pandas, so that ``tune-risk replay`` can
validate ``--methods`` and every engine flag before any heavy import (a bad call fails in well under
a second).
"""

from __future__ import annotations

import re
from typing import Any

from tune_risk.settings import EngineSettings

PAPER_METHODS = ("erahbo", "rahbo-k2", "rahbo-k20", "gp-ucb")
WARPS = ("pooled", "online")
METHOD_HELP = "erahbo, erahbo-exp, erahbo-sigmoid, rahbo-k<k> (e.g. rahbo-k2), gp-ucb"
_METHOD_PATTERN = re.compile(r"^(erahbo(?:-(?:exp|sigmoid))?|rahbo-k(\d+)|gp-ucb)$")
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
    if match is None:
        raise ValueError(f"unknown method {name!r}; valid: {METHOD_HELP}")
    if warp not in WARPS:
        raise ValueError(f"unknown warp={warp!r}; valid values are 'pooled' (the table's) and 'online' (live use)")
    common = dict(budget=budget, seed=seed, common_random_numbers=True, budget_unit="samples",
                  warp="none" if warp == "pooled" else "online")
    overrides = dict(overrides)
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


def parse_methods(text: str) -> list[str]:
    """``"erahbo,rahbo-k2"`` -> validated method names (unknown, empty and duplicate entries raise)."""
    names = [m.strip() for m in text.split(",")]
    if not any(names):
        raise ValueError(f"--methods {text!r} names no method; valid: {METHOD_HELP}")
    for position, name in enumerate(names, start=1):
        if not name:
            raise ValueError(f"--methods {text!r}: entry {position} is empty (a stray comma?)")
        if names.index(name) != position - 1:
            raise ValueError(f"--methods {text!r}: {name!r} is given twice")
        method_settings(name, budget=10, seed=0)  # raises ValueError naming the method
    return names


def seeds_needed(settings: EngineSettings) -> int:
    """Seeds a table must hold for a method: every replicate of a configuration reads a distinct seed."""
    return max(settings.k_max, settings.replicates_initial)


def check_replayable(table: str, n_configs: int, n_seeds: int, settings: EngineSettings, method: str = "") -> None:
    """Bad input: enough seeds for ``k_max`` (and ``k_init``), configurations beyond the initial
    design, and a budget of at least one round. ``ValueError`` names the table and the method."""
    who = f" ({method})" if method else ""
    needed = seeds_needed(settings)
    if n_seeds < needed:
        raise ValueError(f"table {table!r} has {n_seeds} seeds, fewer than k_max={needed} replicates{who}")
    if n_configs <= settings.n_initial:
        raise ValueError(f"table {table!r} has {n_configs} configuration(s); a replay needs more than "
                         f"n_initial={settings.n_initial} (the initial design) to have any left to search{who}")
    if settings.budget is not None and settings.budget < settings.k_min:
        raise ValueError(f"budget={settings.budget} is smaller than one round (k_min={settings.k_min} replicates)")
