"""The ERAHBO ask/tell engine: a state machine over replicate runs, with no Ray and no JAX (docs/algorithms.md §1-2).

* ``core``: ``Engine`` (ask/tell, rounds, doubling waves, the stop rule, failures, budget,
  intensification, ``state_dict``/``from_state_dict``).
* ``records``: the book-keeping types (slots, runs, configuration records, ``DONE``/``WAIT``) and the
  sample statistics of eq. 7.
* ``design``: the scrambled-Sobol initial design, snapped to a candidate pool.
* ``snapshots``: ``ModelSnapshot``, the frozen model of a round (hyperparameters, warp, ``rho_bar^2``).
* ``lengthscale``: the hook through which a strategy of ``tune_risk.lengthscale`` sets ``G_f``'s
  lengthscale (it sees the engine through public methods only).
* ``state``: versions of ``Engine.state_dict`` and the upgrade of older ones.
* ``threads``: the torch thread count of the engine's small-matrix algebra.
* ``simulate``: ``W`` simulated workers driving an engine (the direct-loop counterpart of Ray Tune).
* ``reporting``: per-configuration summary rows of a run.

Built on ``tune_risk.risk`` (the model) and ``tune_risk.gp``; the Ray adapters in ``tune_risk.tune`` and
the applications (``tune_risk.offline``) sit above it. ``Engine`` is importable from here (lazily, so
that ``tune_risk.engine.records`` stays light).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["Engine"]

if TYPE_CHECKING:
    from tune_risk.engine.core import Engine


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from tune_risk.engine.core import Engine

        return Engine
    raise AttributeError(f"module 'tune_risk.engine' has no attribute {name!r}")
