"""What ``RiskAwareSearch`` learns about the Tune run that drives it: its wrappers, its scheduler, its trials.

Tune hands a ``Searcher`` trial ids and results only, yet two misuses can only be recognised from the run:
a ``Repeater`` wrapped around the searcher (Tune's ``search_alg`` chain), and what stopped a censored
replicate (the run's scheduler, or the ``stop`` criterion Tune records in the trial). Every call Tune makes
into a searcher comes from a method of its ``TuneController``, so the controller is on the call stack; it is
taken from there and accepted only if its ``search_alg`` chain leads to this very searcher (each of Tune's
wrappers, ``SearchGenerator``, ``ConcurrencyLimiter``, ``Repeater``, keeps the searcher it wraps in its
public ``searcher`` attribute). Outside a Tune run (a direct ``suggest`` call) there is no controller and
nothing is checked. ``ReplicateScheduler`` gets the controller from Tune itself and checks the same chain.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from ray.tune.execution.tune_controller import TuneController
from ray.tune.schedulers import FIFOScheduler, TrialScheduler
from ray.tune.search import Repeater

UNKNOWN_CAUSE = "an early-stopping scheduler or a stop criterion"


def search_chain(search_alg: Any) -> list[Any]:
    """``search_alg`` and every searcher it wraps, outermost first (Tune's wrappers keep it in ``searcher``)."""
    chain: list[Any] = []
    node = search_alg
    while node is not None and not any(node is seen for seen in chain):
        chain.append(node)
        node = getattr(node, "searcher", None)
    return chain


def driving_controller(searcher: Any) -> TuneController | None:
    """The ``TuneController`` on the call stack whose ``search_alg`` wraps ``searcher``; ``None`` outside a run."""
    frame = inspect.currentframe()
    try:
        while frame is not None:
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, TuneController) and any(s is searcher for s in search_chain(candidate.search_alg)):
                return candidate
            frame = frame.f_back
    finally:
        del frame  # a frame in a local variable keeps every caller's locals alive
    return None


def refuse_repeater(search_alg: Any, searcher: Any) -> None:
    """Raise if a ``Repeater`` sits between Tune and ``searcher`` in the ``search_alg`` chain."""
    for wrapper in search_chain(search_alg):
        if wrapper is searcher:
            return
        if isinstance(wrapper, Repeater):
            raise ValueError(
                f"RiskAwareSearch cannot run inside Repeater(repeat={wrapper.repeat}): every replicate is already "
                "one Tune trial with its own training seed, so Repeater would average seeds that RiskAwareSearch "
                f"counts as separate runs and multiply the cost by {wrapper.repeat}; pass "
                "RiskAwareSearch itself as search_alg and choose the seeds per configuration with k_min/k_max"
            )


def censoring_cause(controller: TuneController | None, trial_id: str, result: dict | None) -> str:
    """What stopped trial ``trial_id`` before its trainable returned, in words that name it.

    The ``stop`` criterion (``RunConfig(stop={...})``) when the trial's last result meets the criterion
    Tune recorded in the trial, else the run's scheduler (the base of a ``ReplicateScheduler``); a FIFO
    scheduler never stops a trial, so then it was a ``Stopper`` given as ``stop``.
    """
    if controller is None:
        return UNKNOWN_CAUSE
    trial = controller.get_trial(trial_id)
    met = {key: value for key, value in (trial.stopping_criterion if trial is not None else {}).items()
           if _reached((result or {}).get(key), value)}
    if met:
        return f"the stop criterion RunConfig(stop={met!r})"
    scheduler = controller.scheduler_alg
    base = getattr(scheduler, "base", None)  # ReplicateScheduler: the base made the decision
    if isinstance(base, TrialScheduler):
        scheduler = base
    if type(scheduler) is FIFOScheduler:
        return "the stop criterion RunConfig(stop=...)"
    return type(scheduler).__name__


def is_stop_criterion(cause: str) -> bool:
    """Whether a ``censoring_cause`` names a ``stop`` criterion (else a scheduler or an unknown cause)."""
    return cause.startswith("the stop criterion")


def _reached(value: Any, threshold: Any) -> bool:
    """Tune's test of a ``stop`` criterion (``result[key] >= threshold``), false for values it cannot compare."""
    try:
        return value is not None and bool(value >= threshold) and not (isinstance(value, float) and math.isnan(value))
    except TypeError:
        return False
