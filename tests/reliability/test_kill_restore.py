"""Driver killed with SIGKILL during a Tune table replay, then ``Tuner.restore`` completes the run.

The driver (``tune_driver.py``) is a subprocess with its own Ray; the test SIGKILLs it once its
completion log has grown by the kill point, restores the run in a new driver (killed again at the
next point), and lets a last restore finish (``reliability_support.kill_chain``). Checked
(``check_chain``): every replicate completed before a kill is in the final engine state with the
same value, no replicate is run twice in the final state nor counted twice, Tune's trials are
the searcher's runs, and the decisions equal an uninterrupted replay's (``max_active_configs=1``).

Tune snapshots the experiment (trial list + searcher state) every ``TUNE_GLOBAL_CHECKPOINT_S``; the
tests use 2 s so that kills land between snapshots and restores resume from one (the default,
"auto", is >= 10 s: a short run would restart from its first snapshot). The harness waits for
Ray's background copy of a snapshot to finish before killing (``wait_for_state_sync``: a kill
inside that copy is a Ray limitation, see the README's Reliability section).

Fast part (``make test``): one chain with 2 kill points. Soak (``make soak``,
``RELIABILITY_SOAK=1``): 10 seeded random kill points in two chains of a longer run.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from reliability_support import check_chain, kill_chain, write_table

SOAK = os.environ.get("RELIABILITY_SOAK") == "1"
soak = pytest.mark.skipif(not SOAK, reason="soak test: make soak (RELIABILITY_SOAK=1)")
CHECKPOINT_S = "2"  # TUNE_GLOBAL_CHECKPOINT_S: Tune snapshots the experiment every 2 s (default: >= 10 s)


def report(name: str, chain, figures: dict) -> None:
    runs = [(r.mode, "killed" if r.killed else f"rc={r.returncode}", r.log_after, round(r.seconds, 1))
            for r in chain.runs]
    print(f"\n{name}: {json.dumps(figures)}\n  drivers: {runs}")


def test_sigkill_twice_then_restore_keeps_every_replicate(tmp_path):
    table = write_table(tmp_path / "h3.parquet")
    chain = kill_chain(tmp_path / "chain", table, kill_points=[12, 8], trial_sleep=0.2, checkpoint_period=CHECKPOINT_S)
    assert len(chain.kills) == 2, [r.__dict__ for r in chain.runs]
    figures = check_chain(chain, table)
    assert figures["lost"] == 0 and figures["completed_before_kills"] >= 5
    report("kill chain (fast)", chain, figures)


@soak
@pytest.mark.parametrize("chain_seed", [0, 1])
def test_soak_random_sigkills(tmp_path, chain_seed):
    """Five seeded random kill points per chain (two chains: 10 kills) in a longer run (budget 40)."""
    rng = random.Random(1000 + chain_seed)
    points = [rng.randint(3, 12) for _ in range(5)]
    table = write_table(tmp_path / "h3.parquet")
    chain = kill_chain(tmp_path / "chain", table, kill_points=points, budget=40, trial_sleep=0.2,
                       checkpoint_period=CHECKPOINT_S, timeout=600)
    assert len(chain.kills) == len(points), [r.__dict__ for r in chain.runs]
    figures = check_chain(chain, table)
    assert figures["lost"] == 0
    report(f"kill chain soak {chain_seed} points={points}", chain, figures)
