"""The public face of ``tune_risk``: its names resolve, lazily (``import tune_risk`` loads neither torch nor Ray)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import tune_risk


def test_every_public_name_resolves_to_its_module():
    from tune_risk.engine.core import Engine
    from tune_risk.engine.records import DONE, WAIT
    from tune_risk.settings import EngineSettings
    from tune_risk.tune.load import load_results
    from tune_risk.tune.restore import restore_tuner
    from tune_risk.tune.scheduler import ReplicateScheduler
    from tune_risk.tune.searcher import RiskAwareSearch

    expected = {"DONE": DONE, "WAIT": WAIT, "Engine": Engine, "EngineSettings": EngineSettings,
                "RiskAwareSearch": RiskAwareSearch, "ReplicateScheduler": ReplicateScheduler,
                "restore_tuner": restore_tuner, "load_results": load_results}
    assert set(tune_risk.__all__) == {*expected, "__version__"}
    assert all(getattr(tune_risk, name) is value for name, value in expected.items())
    engine_package = importlib.import_module("tune_risk.engine")
    assert engine_package.Engine is Engine


def test_importing_tune_risk_is_cheap():
    code = ("import sys, tune_risk\nheavy = sorted({'torch', 'ray', 'botorch', 'pandas'} & set(sys.modules))\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)
