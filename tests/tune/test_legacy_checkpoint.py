"""Checkpoints written before the package layout of issue #17 still load and continue exactly.

``data/checkpoint-0.1.0-flat.pkl`` was written by tune_risk 0.1.0 with its modules flat in ``tune_risk/``
(``legacy_checkpoint.py`` says how): its pickles name ``tune_risk.searcher.RiskAwareSearch``,
``tune_risk.warping.FrozenWarp``, ``tune_risk.tune_space.TuneSpaceCodec`` and so on. Tune restores an
experiment from such pickles (``searcher-state-*.pkl``, ``tuner.pkl``), so they must keep loading.
"""

from __future__ import annotations

import pickle

from tests.tune.legacy_checkpoint import FIXTURE, drive
from tune_risk import Engine, ReplicateScheduler, RiskAwareSearch


def fixture() -> dict:
    return pickle.loads(FIXTURE.read_bytes())


def continuation(searcher: RiskAwareSearch, blob: dict) -> list:
    log: list = []
    drive(searcher, 60, blob["next_trial"], list(blob["in_flight"]), dict(blob["configs"]), log)
    return log


def test_a_searcher_state_of_the_flat_layout_restores_and_decides_as_before(tmp_path):
    blob = fixture()
    path = tmp_path / "searcher-state.pkl"
    path.write_bytes(blob["searcher_state"])
    searcher = RiskAwareSearch()  # Tune restores into the searcher the restored Tuner is given
    searcher.restore(str(path))
    assert continuation(searcher, blob) == blob["continuation"]
    assert searcher.engine.counts() == blob["counts"]
    assert any(event[1] == "cancelled" for event in blob["continuation"])  # the run cancels replicates


def test_objects_of_the_flat_layout_unpickle_as_todays_classes():
    blob = fixture()
    objects = pickle.loads(blob["objects"])
    searcher, scheduler, engine = objects["searcher"], objects["scheduler"], objects["engine"]
    assert type(searcher) is RiskAwareSearch and type(scheduler) is ReplicateScheduler and type(engine) is Engine
    assert engine.state_dict() == searcher.engine.state_dict()
    assert continuation(searcher, blob) == blob["continuation"]
