"""The model of a round: one frozen snapshot of everything a decision depends on besides the data.

ERAHBO's certificate compares ``UCB^MV(x_t; k)`` with ``B_t`` (eqs. 10, 12). Both sides must come from
the same model, or ``U_k <= B_t`` compares numbers on two scales. A :class:`ModelSnapshot` holds
that model's non-data part: the frozen hyperparameters of both GPs (lengthscales, constant means,
``G_var``'s noise, output standardisation), the output warp that turns raw returns into the processed
returns the GPs see (§1.2), and the variance bound ``rho_bar^2`` that clips eq. 19.

The engine takes a snapshot when a round starts, after everything that may change at a round
boundary: a re-fit of the online warp when data have left its support (§1.2), a hyperparameter
re-fit (``refit="every_round"``, A-7, or after a warp re-fit, since every target changed), a
lengthscale strategy's play (§3.10). The round's acquisition, its ``B_t`` and every one of its stop checks use
that snapshot, even when later rounds have started under newer ones (asynchronous mode, §2.5).
Rounds that change nothing share one snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tune_risk.risk.model import RiskHyperparameters
from tune_risk.risk.warping import FrozenWarp


@dataclass(frozen=True)
class ModelSnapshot:
    """Frozen non-data part of the risk model of one or more rounds.

    Attributes:
        hyperparameters: both GPs' hyperparameters, standardisation constants included.
        warp_index: index of the output warp in the engine's list of warps; ``None``: returns are
            used as given (``warp="none"``).
        rho_bar_sq: variance bound of the processed returns (eq. 19's clip, A-5).
        first_round: the first BO round decided under it.
    """

    hyperparameters: RiskHyperparameters
    warp_index: int | None
    rho_bar_sq: float
    first_round: int

    def same_model(self, other: ModelSnapshot) -> bool:
        """Whether both snapshots define the same model (``first_round`` aside)."""
        return (self.hyperparameters, self.warp_index, self.rho_bar_sq) == (
            other.hyperparameters, other.warp_index, other.rho_bar_sq)

    def to_dict(self) -> dict[str, Any]:
        return {"hyperparameters": self.hyperparameters.to_dict(), "warp_index": self.warp_index,
                "rho_bar_sq": self.rho_bar_sq, "first_round": self.first_round}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ModelSnapshot:
        return cls(RiskHyperparameters.from_dict(state["hyperparameters"]), state["warp_index"],
                   state["rho_bar_sq"], state["first_round"])


def outside_support(warp: FrozenWarp, returns: Sequence[float]) -> bool:
    """Whether any raw return lies outside ``[raw_knots[0], raw_knots[-1]]``, the range the warp was
    fitted on: there it only extrapolates (and saturates at its bound), so it must be re-fitted."""
    if not len(returns):
        return False
    return min(returns) < warp.raw_knots[0] or max(returns) > warp.raw_knots[-1]
