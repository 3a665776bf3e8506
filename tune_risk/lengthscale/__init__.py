"""Lengthscale strategies selectable by name (``"mll"``, ``"oscbo"``, ``"oscbo-l1"``, ``"a-gp-ucb"``,
``"lb-gp-ucb"``) for the plain GP-UCB loop and the ERAHBO engine (docs/algorithms.md §3.10, §4)."""

from tune_risk.lengthscale.strategies import (
    STRATEGIES,
    AGPUCBStrategy,
    LBGPUCBStrategy,
    LengthscaleStrategy,
    MLLStrategy,
    OSCBOStrategy,
    make_strategy,
    strategy_from_state,
)

__all__ = [
    "STRATEGIES", "AGPUCBStrategy", "LBGPUCBStrategy", "LengthscaleStrategy", "MLLStrategy", "OSCBOStrategy",
    "make_strategy", "strategy_from_state",
]
