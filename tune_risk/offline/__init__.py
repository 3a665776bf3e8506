"""Offline-table mode: ARLBench-style tables of RL returns (configurations x seeds) for replay benchmarks.

:class:`OfflineTable` (in :mod:`tune_risk.offline.table`) loads a table in the ARLBench long, Hypersweeper
wide or bracketed-list format (:mod:`tune_risk.offline.formats`), refuses or (``missing="drop"``, ERAHBO
App. C.1) drops configurations without a finite return for every seed, and provides the Tune search
space, the pooled warp and the ground-truth MV (docs/algorithms.md §1.2, §1.12). Imports are lazy so that
``tune-risk --help`` stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["OfflineTable"]

if TYPE_CHECKING:
    from tune_risk.offline.table import OfflineTable

_LAZY = {"OfflineTable": "tune_risk.offline.table"}


def __getattr__(name: str) -> Any:
    """Import :class:`OfflineTable` (and with it Ray Tune) on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tune_risk.offline' has no attribute {name!r}")
