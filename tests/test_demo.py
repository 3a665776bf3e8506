"""``make demo`` shows only what it means to show (issue #37): no line from Tune before the comparison.

It used to print ``Trial trainable_... completed. Last result: `` for every replicate cancelled before
it started, the first thing a user saw. The demo's own ``main`` runs here in a subprocess (it starts Ray
itself) on a smaller replay: a small initial design, a small budget and the Tune part only (the direct
replays of part 2 involve no Tune), with 4 concurrent trials on 2 CPUs as in the demo, so that
replicates are cancelled while PENDING.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
import functools, sys
sys.path.insert(0, {root!r})
from tests.scripts import load_script

demo = load_script("demo")
demo.replay_tune = functools.partial(demo.replay_tune, n_initial=2, k_init=2)
demo.METHODS = (("ERAHBO", "erahbo"),)
demo.compare_on_tables = lambda budget, repeats: None
sys.argv = ["demo.py", "--budget", "60"]
demo.main()
"""

DEMO_LINES = ("Replaying ", "ERAHBO", "  recommended configuration", "  true mean-variance regret",
              "  replicate runs", "  wall time")


@pytest.mark.slow
def test_the_demo_prints_only_its_own_lines(tmp_path):
    proc = subprocess.run([sys.executable, "-c", DRIVER.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines and all(line.startswith(DEMO_LINES) for line in lines), proc.stdout
    cancelled = next(line for line in lines if line.startswith("  replicate runs"))
    assert " 0 cancelled" not in cancelled, "no replicate was cancelled: the run does not test what it should"
    assert "Trial " not in proc.stderr and "Could not fetch metrics" not in proc.stderr, proc.stderr[-3000:]
