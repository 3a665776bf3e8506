"""Checkpoints written before the package layout of issue #17 still load and continue exactly.

``data/checkpoint-0.1.0-flat.pkl`` was written by tune_risk 0.1.0 with its modules flat in ``tune_risk/``
(``legacy_checkpoint.py`` says how): its pickles name ``tune_risk.searcher.RiskAwareSearch``,
``tune_risk.warping.FrozenWarp``, ``tune_risk.tune_space.TuneSpaceCodec`` and so on. Tune restores an
experiment from such pickles (``searcher-state-*.pkl``, ``tuner.pkl``), so they must keep loading.
"""

from __future__ import annotations

import importlib
import pickle
import sys

import pytest

from tests.tune.legacy_checkpoint import FIXTURE, drive
from tune_risk import Engine, ReplicateScheduler, RiskAwareSearch
from tune_risk.tune.restore import RestorePoints, load_pickle, searcher_marks

# Unpickling names the old module paths, which warn (code should import the new ones): expected here.
old_paths = pytest.mark.filterwarnings("ignore:tune_risk.* is now tune_risk:DeprecationWarning")


def fixture() -> dict:
    return pickle.loads(FIXTURE.read_bytes())


def continuation(searcher: RiskAwareSearch, blob: dict) -> list:
    log: list = []
    drive(searcher, 60, blob["next_trial"], list(blob["in_flight"]), dict(blob["configs"]), log)
    return log


@old_paths
def test_a_searcher_state_of_the_flat_layout_restores_and_decides_as_before(tmp_path):
    blob = fixture()
    path = tmp_path / "searcher-state.pkl"
    path.write_bytes(blob["searcher_state"])
    searcher = RiskAwareSearch()  # Tune restores into the searcher the restored Tuner is given
    searcher.restore(str(path))
    assert continuation(searcher, blob) == blob["continuation"]
    assert searcher.engine.counts() == blob["counts"]
    assert any(event[1] == "cancelled" for event in blob["continuation"])  # the run cancels replicates


@old_paths
def test_objects_of_the_flat_layout_unpickle_as_todays_classes():
    blob = fixture()
    objects = pickle.loads(blob["objects"])
    searcher, scheduler, engine = objects["searcher"], objects["scheduler"], objects["engine"]
    assert type(searcher) is RiskAwareSearch and type(scheduler) is ReplicateScheduler and type(engine) is Engine
    assert engine.state_dict() == searcher.engine.state_dict()
    assert continuation(searcher, blob) == blob["continuation"]


def test_the_restore_points_of_a_flat_layout_searcher_file_are_found():
    """``restore_tuner``'s repair reads searcher files without importing anything (``load_pickle``): it must
    recognise the flat layout's ``tune_risk.restore.RestorePoints`` as today's class."""
    state = load_pickle(fixture()["searcher_state"])
    assert state["_restore_points"].origin == ("tune_risk.restore", "RestorePoints")
    assert isinstance(searcher_marks(state), RestorePoints)


def test_old_module_paths_give_todays_modules_with_a_warning():
    import tune_risk.tune.space as space

    sys.modules.pop("tune_risk.tune_space", None)
    with pytest.warns(DeprecationWarning, match="tune_risk.tune_space is now tune_risk.tune.space"):
        old = importlib.import_module("tune_risk.tune_space")
    assert old is space


def test_a_file_naming_classes_this_version_lacks_fails_with_a_clear_message(tmp_path):
    path = tmp_path / "searcher-state.pkl"
    path.write_bytes(b"ctune_risk.no_such_module\nThing\n.")  # a pickle that names tune_risk.no_such_module.Thing
    with pytest.raises(ValueError, match="cannot restore .*no_such_module.*another version of tune_risk"):
        RiskAwareSearch().restore(str(path))
