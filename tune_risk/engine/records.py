"""Book-keeping types of the engine: replicate slots, runs, configuration records, ask() answers.

A *replicate* is one training run (one seed) of one configuration. A configuration owns an ordered
list of replicate *slots* (the seed order, docs/algorithms.md §1.3); each launch of a slot is a *run*
with a unique ``run_id``. A failed run puts its slot back in the queue with a fresh seed, so a slot
can have several runs but at most one result.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Signal(enum.Enum):
    """``ask()`` answers other than a replicate to launch."""

    WAIT = "wait"  # nothing to launch until a result (or cancellation) arrives
    DONE = "done"  # the budget or the candidate pool is exhausted and nothing is in flight

    def __repr__(self) -> str:
        return self.name


WAIT = Signal.WAIT
DONE = Signal.DONE


@dataclass(frozen=True)
class Replicate:
    """One replicate run to launch: configuration ``config_id`` at unit-cube point ``x``.

    ``seed`` is the training seed the run must use; ``seed_index`` is its position in the
    configuration's seed stream (``seed == seed_index`` under common random numbers).
    """

    run_id: int
    config_id: int
    replicate_index: int
    seed_index: int
    seed: int
    x: tuple[float, ...]
    pool_index: int | None


class SlotState(enum.StrEnum):
    QUEUED = "queued"  # waiting to be launched (first time or after a failed run)
    LAUNCHED = "launched"  # a run is in flight
    DONE = "done"  # a finite result arrived (incorporated once all earlier slots are done)


class RunStatus(enum.StrEnum):
    IN_FLIGHT = "in_flight"
    USED = "used"  # result incorporated into its configuration's sample
    BUFFERED = "buffered"  # result arrived; waits for earlier replicates (replicate order)
    DISCARDED = "discarded"  # completed, but its configuration had stopped: never an observation
    CANCEL_REQUESTED = "cancel_requested"
    CANCELLED = "cancelled"
    FAILED = "failed"
    CENSORED = "censored"  # stopped early by someone else (e.g. ASHA): its last value is no observation


@dataclass
class Slot:
    """Replicate position ``replicate_index`` of a configuration."""

    replicate_index: int
    state: SlotState = SlotState.QUEUED
    run_id: int | None = None
    seed_index: int | None = None
    value: float | None = None  # raw return once DONE


@dataclass
class Run:
    """One launched run of a slot."""

    run_id: int
    config_id: int
    replicate_index: int
    seed_index: int
    status: RunStatus = RunStatus.IN_FLIGHT
    cost: float = 0.0

    def to_list(self) -> list:
        """``[run_id, config_id, replicate_index, seed_index, status, cost]`` (plain data, ``from_list`` inverts)."""
        return [self.run_id, self.config_id, self.replicate_index, self.seed_index, self.status.value, self.cost]

    @classmethod
    def from_list(cls, row: list) -> Run:
        run_id, config_id, replicate_index, seed_index, status, cost = row
        return cls(run_id, config_id, replicate_index, seed_index, RunStatus(status), cost)


@dataclass
class ConfigRecord:
    """Everything known about one configuration (docs/algorithms.md §1.3).

    ``status`` is ``running`` while replicates are collected; then ``initial`` (initial design),
    ``certified`` (``UCB^MV <= B_t``, eq. 12; ERAHBO only), ``k_max``, ``budget`` or ``failed``.
    """

    config_id: int
    x: tuple[float, ...]
    pool_index: int | None
    phase: str  # "initial" or "bo"
    round: int  # BO round t (0 for the initial design)
    target: int  # replicates this configuration may launch now (doubling waves, §2.3)
    slots: list[Slot] = field(default_factory=list)
    n_incorporated: int = 0
    status: str = "running"
    failures: int = 0
    next_seed_index: int = 0
    incumbent_lcb: float | None = None  # B_t, fixed for the round (eq. 10); None without a certificate
    kappa_stop: float | None = None
    snapshot: int | None = None  # index of the model snapshot every decision of this round uses
    trace: list[tuple[int, float, float, float]] = field(default_factory=list)  # (k, UCB^MV, σ_f, σ_var)
    closed_after_runs: int | None = None  # runs launched (all configurations) when it stopped sampling

    @property
    def running(self) -> bool:
        return self.status == "running"

    def incorporated_values(self) -> list[float]:
        """Raw returns in replicate (seed) order: the configuration's sample ``Y_c``."""
        return [slot.value for slot in self.slots[: self.n_incorporated]]  # type: ignore[misc]

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (lists for tuples, slot rows, enum values); ``from_dict`` inverts it exactly."""
        return {
            "config_id": self.config_id, "x": list(self.x), "pool_index": self.pool_index,
            "phase": self.phase, "round": self.round, "target": self.target,
            "slots": [[s.replicate_index, s.state.value, s.run_id, s.seed_index, s.value] for s in self.slots],
            "n_incorporated": self.n_incorporated, "status": self.status, "failures": self.failures,
            "next_seed_index": self.next_seed_index, "incumbent_lcb": self.incumbent_lcb,
            "kappa_stop": self.kappa_stop, "snapshot": self.snapshot, "trace": [list(t) for t in self.trace],
            "closed_after_runs": self.closed_after_runs,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ConfigRecord:
        slots = [
            Slot(index, SlotState(slot_state), run_id, seed_index, value)
            for index, slot_state, run_id, seed_index, value in state["slots"]
        ]
        fields = {k: v for k, v in state.items() if k not in ("slots", "x", "trace")}
        return cls(**fields, x=tuple(state["x"]), slots=slots, trace=[tuple(t) for t in state["trace"]])


def sample_statistics(values: np.ndarray) -> tuple[float, float]:
    """Sample mean and unbiased sample variance (ERAHBO eq. 7); needs ``k >= 2``."""
    return float(np.mean(values)), float(np.var(values, ddof=1))


def sample_mv_lower_bound(values: np.ndarray, alpha: float) -> float:
    """A lower bound of a configuration's MV from its own ``k >= 2`` returns alone, one standard error each way.

    ``m - s / sqrt(k) - alpha * s^2 * (1 + sqrt(2 / (k - 1)))``: the mean less its standard error, and the
    sample variance plus its standard error under normal returns (``Var[s^2] = 2 sigma^4 / (k - 1)``), with
    ``m, s^2`` of eq. 7. No GP enters, so a mean GP whose long lengthscales pull every configuration towards
    one value cannot hide what a configuration's seeds show (A-21, ``recommend="evidence"``).

    Example:
        >>> round(sample_mv_lower_bound(np.array([0.0, 0.0, 0.0, 0.0]), alpha=1.0), 3)
        0.0
        >>> sample_mv_lower_bound(np.array([0.1, 0.3]), 1.0) < 0.2 - 0.02
        True
    """
    mean, variance = sample_statistics(values)
    k = values.size
    return mean - math.sqrt(variance / k) - alpha * variance * (1.0 + math.sqrt(2.0 / (k - 1)))


def sample_mean_variance(samples: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """``MV = mean − α·var(ddof=1)`` of each row of ``samples`` (ERAHBO eq. 1 with the eq. 7 estimates).

    Offline tables use it on warped returns over all seeds as the ground truth (docs/algorithms.md §1.12, A-17).
    """
    return samples.mean(axis=1) - alpha * samples.var(axis=1, ddof=1)
