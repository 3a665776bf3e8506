"""Helpers shared by the engine test harnesses (the ask/tell simulator and the tell fuzzer)."""

from __future__ import annotations

from tune_risk.engine.core import Engine
from tune_risk.engine.records import Replicate, Signal


def launch_replicates(engine: Engine, limit: int, launched: dict[int, Replicate],
                      in_flight: list[Replicate]) -> Replicate | Signal | None:
    """Ask ``engine`` for up to ``limit`` replicates, recording each in ``launched`` and ``in_flight``.

    Asserts that no run id is handed out twice. Returns the last answer (a ``Replicate``, ``WAIT`` or
    ``DONE``), or ``None`` when ``limit`` is 0.
    """
    request = None
    for _ in range(limit):
        request = engine.ask()
        if not isinstance(request, Replicate):
            break
        assert request.run_id not in launched, "a run id was handed out twice"
        launched[request.run_id] = request
        in_flight.append(request)
    return request
