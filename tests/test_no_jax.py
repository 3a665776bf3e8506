"""tune_risk must never import JAX (it lives in rl_tasks only), not even through BoTorch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments" / "studies"  # the OSCBO harness (lab code) lives there

MODULES = ["tune_risk", "tune_risk.engine.core", "tune_risk.tune.searcher", "tune_risk.tune.scheduler",
           "tune_risk.engine.simulate", "tune_risk.cli", "tune_risk.tune.space", "tune_risk.benchmarks.objectives",
           "oscbo_harness.loop", "tune_risk.oscbo", "tune_risk.lengthscale"]


def test_importing_tune_risk_does_not_import_jax():
    code = f"import importlib, sys\nsys.path.insert(0, {str(EXPERIMENTS)!r})\n" + "".join(f"importlib.import_module({m!r})\n" for m in MODULES) + (
        "import tune_risk.cli; tune_risk.cli.build_parser()\n"
        "bad = sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.'))\n"
        "assert not bad, bad[:5]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_jax_still_importable_after_tune_risk():
    code = "import tune_risk.engine.core\nimport importlib.util\nassert importlib.util.find_spec('jax') is None or __import__('jax')\n"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cli_help_works():
    out = subprocess.run([sys.executable, "-m", "tune_risk.cli", "--help"], check=True, capture_output=True, text=True)
    assert "tune-risk" in out.stdout and "generate" in out.stdout
