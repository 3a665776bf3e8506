"""Incumbent intensification: reserved runs at the end of the budget go to the best configurations."""

from __future__ import annotations

import pytest
import torch

from tests.engine.conftest import pool_of, run_sequential, sampler
from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE
from tune_risk.settings import EngineSettings


def _engine(intensify: int, budget: int = 60) -> Engine:
    settings = EngineSettings.for_method("erahbo", budget=budget, budget_unit="runs", k_init=2, n_initial=4,
                                         k_max=8, intensify=intensify, seed=3)
    _, pool = pool_of("branin", n=40)
    return Engine(settings, pool=pool)


def _top_by_lcb(engine: Engine, records) -> list[int]:
    model = engine.risk_model()
    X = torch.tensor([list(r.x) for r in records], dtype=torch.float64)
    lcb = model.lcb_mv(X, engine.settings.kappa_acq)
    return [records[i].config_id for i in torch.argsort(lcb, descending=True)[:3].tolist()]


def test_reserved_runs_go_to_the_top_configurations_after_the_last_round() -> None:
    objective, _ = pool_of("branin", n=40)
    engine = _engine(intensify=12)
    sample = sampler(objective)
    intensified = 0
    while (request := engine.ask()) is not DONE:
        if engine.intensifying:
            # no round runs or starts while intensifying, and the run goes to one of the 3 best by LCB^MV
            assert not any(r.running and r.phase == "bo" for r in engine.records)
            record = engine.records[request.config_id]
            open_ = [r for r in engine.records if engine.statistics(r) is not None
                     and (len(r.slots) < engine.settings.k_max or r is record)]
            assert request.config_id in _top_by_lcb(engine, open_)
            intensified += 1
        engine.tell(request.run_id, sample(request))
    assert len(engine.runs) == 60 and intensified == engine.intensification_runs > 0


def test_without_intensify_the_budget_goes_to_rounds_and_nothing_is_intensified() -> None:
    objective, _ = pool_of("branin", n=40)
    plain = run_sequential(_engine(intensify=0), sampler(objective))
    reserved = run_sequential(_engine(intensify=12), sampler(objective))
    assert plain.intensification_runs == 0 and not plain.intensifying
    assert plain.rounds > reserved.rounds  # the reserve is taken from BO rounds
    assert len(plain.runs) == len(reserved.runs) == 60


def test_state_dict_round_trip_during_intensification_continues_identically() -> None:
    objective, _ = pool_of("branin", n=40)
    sample = sampler(objective)
    engine = _engine(intensify=12)
    while not engine.intensifying:
        request = engine.ask()
        engine.tell(request.run_id, sample(request))
    restored = Engine.from_state_dict(engine.state_dict())
    assert restored.intensifying and restored.intensification_runs == engine.intensification_runs
    for e in (engine, restored):
        run_sequential(e, sample)
    assert restored.state_dict() == engine.state_dict()


def test_intensify_needs_a_budget_larger_than_the_reserve() -> None:
    with pytest.raises(ValueError, match="intensify=5 reserves runs at the end of the budget; it needs a budget"):
        EngineSettings(intensify=5)
    with pytest.raises(ValueError, match="intensify=50 must be smaller than budget=50"):
        EngineSettings(intensify=50, budget=50)
    with pytest.raises(ValueError, match="intensify must be >= 0"):
        EngineSettings(intensify=-1, budget=50)
