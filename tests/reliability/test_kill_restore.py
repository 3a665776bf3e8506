"""Driver killed with SIGKILL during a Tune table replay, then ``restore_tuner`` completes the run.

The driver (``tune_driver.py``) is a subprocess with its own Ray; the test SIGKILLs it once its
completion log has grown by the kill point, restores the run in a new driver
(``tune_risk.tune.restore.restore_tuner``; killed again at the next point), and lets a last restore
finish (``reliability_support.kill_chain``). Checked (``check_chain``): every replicate completed
before a kill is in the final engine state with the same value, no replicate is run twice in the
final state nor counted twice, Tune's trials are the searcher's runs, the decisions equal an
uninterrupted replay's (``max_active_configs=1``), and every intact restore point left in storage is
a consistent snapshot.

Tune snapshots the experiment (trial list + searcher state) every ``TUNE_GLOBAL_CHECKPOINT_S``; the
tests use 2 s so that kills land between snapshots and restores resume from one (the default,
"auto", is >= 10 s: a short run would restart from its first snapshot). A kill is either outside
Tune's background copy of a snapshot to storage (the harness waits for the copy to end) or *inside*
it: the driver's storage filesystem (``tear_fs``) stops the next copy of a chosen file half-way —
truncated and partly written (``mid``) or not yet opened while the others are copied (``before``) —
and the driver is SIGKILLed there. Restored with plain ``tune.Tuner.restore``
(``RELIABILITY_RESTORE_WITH=ray``), such a kill makes the run start again from scratch, hang on a
searcher and trial list that disagree, or fail on a torn ``tuner.pkl``; ``restore_tuner`` repairs it.

Fast part (``make test``): one chain, killed first inside the copy of ``experiment_state`` (torn),
then outside a copy. Soak (``make soak``, ``RELIABILITY_SOAK=1``): 30 seeded kill points in three
chains of 10, 10 of them inside a copy (seeded file, mode and cut).
"""

from __future__ import annotations

import json
import os
import random

import pytest
from reliability_support import NAME, check_chain, kill_chain, reference_engine, write_table

from tune_risk import load_results
from tune_risk.offline.replay import ROW_KEY

SOAK = os.environ.get("RELIABILITY_SOAK") == "1"
soak = pytest.mark.skipif(not SOAK, reason="soak test: make soak (RELIABILITY_SOAK=1)")
CHECKPOINT_S = "2"  # TUNE_GLOBAL_CHECKPOINT_S: Tune snapshots the experiment every 2 s (default: >= 10 s)


def report(name: str, chain, figures: dict) -> None:
    runs = [(r.mode, "killed" if r.killed else f"rc={r.returncode}", r.log_after, round(r.seconds, 1),
             r.torn and f"{r.torn['mode']}:{r.torn['file']}:{r.torn['written']}/{r.torn['size']}") for r in chain.runs]
    sources = [(r["source"], r["repaired"]) for r in chain.repairs]
    print(f"\n{name}: {json.dumps(figures)}\n  drivers: {runs}\n  restored from: {sources}")


def test_sigkill_inside_and_outside_a_snapshot_copy_then_restore_keeps_every_replicate(tmp_path):
    table = write_table(tmp_path / "h3.parquet")
    torn_state = {"target": "experiment_state", "mode": "mid", "fraction": 0.5}
    chain = kill_chain(tmp_path / "chain", table, kill_points=[12, 8], tears=[torn_state, None], trial_sleep=0.2,
                       checkpoint_period=CHECKPOINT_S)
    assert len(chain.kills) == 2, [r.__dict__ for r in chain.runs]
    assert chain.kills[0].torn["file"].startswith("experiment_state-") and chain.kills[0].torn["written"] > 0
    figures = check_chain(chain, table)
    assert figures["lost"] == 0 and figures["completed_before_kills"] >= 5
    assert chain.repairs[0]["repaired"] and chain.repairs[0]["source"].startswith("tune_risk-restore-")
    assert not chain.repairs[1]["repaired"]
    # What the user takes home after kills and restores: the uninterrupted run's recommendation.
    recommended = reference_engine(table, chain.workers, chain.budget).recommend()
    results = load_results(chain.workdir / "storage" / NAME)
    assert results.best_config[ROW_KEY] == recommended.pool_index
    assert results.recommendation["evidence"]["k"] == recommended.n_incorporated
    report("kill chain (fast)", chain, figures)


# The soak's tears: each file Tune copies, torn (mid) or left from the previous snapshot (before); the
# newest session's file, except one earlier session's file (every copy after a restore rewrites those).
TEARS = [("experiment_state", "mid", True), ("experiment_state", "before", True), ("searcher-state", "mid", True),
         ("searcher-state", "before", True), ("search_gen_state", "mid", True), ("search_gen_state", "before", True),
         ("tune_risk-restore", "mid", True), ("tuner.pkl", "mid", True), ("experiment_state", "mid", False),
         ("searcher-state", "mid", True)]


def soak_plan(seed: int = 16, chains: int = 3, kills: int = 10) -> list[list[tuple[int, dict | None]]]:
    """Per chain, ``kills`` seeded (kill point, tear or None); the ``TEARS`` go to seeded kills (a
    ``tuner.pkl`` tear to a restored driver's: only those stage it)."""
    rng = random.Random(seed)
    slots = rng.sample(range(chains * kills), len(TEARS))
    tears = rng.sample(TEARS, len(TEARS))
    if any(slot % kills == 0 and tear[0] == "tuner.pkl" for slot, tear in zip(slots, tears, strict=True)):
        slots.sort(key=lambda slot: slot % kills == 0)  # fresh drivers' slots first ...
        tears.sort(key=lambda tear: tear[0] == "tuner.pkl")  # ... never with tuner.pkl
    plan = [[(rng.randint(4, 8), None) for _ in range(kills)] for _ in range(chains)]
    for slot, (target, mode, newest) in zip(slots, tears, strict=True):
        point = plan[slot // kills][slot % kills][0]
        plan[slot // kills][slot % kills] = (point, {"target": target, "mode": mode, "newest": newest,
                                                     "fraction": round(rng.uniform(0.05, 0.95), 2)})
    return plan


@soak
@pytest.mark.parametrize("chain_index", [0, 1, 2])
def test_soak_random_sigkills(tmp_path, chain_index):
    """Ten seeded kill points per chain (three chains: 30 kills, 10 inside a snapshot copy), budget 40."""
    plan = soak_plan()[chain_index]
    table = write_table(tmp_path / "h3.parquet")
    chain = kill_chain(tmp_path / "chain", table, kill_points=[p for p, _ in plan], tears=[t for _, t in plan],
                       budget=40, trial_sleep=0.2, checkpoint_period=CHECKPOINT_S, timeout=600)
    assert len(chain.kills) == len(plan), [r.__dict__ for r in chain.runs]
    figures = check_chain(chain, table)
    assert figures["lost"] == 0 and figures["in_copy_kills"] == sum(t is not None for _, t in plan)
    report(f"kill chain soak {chain_index} plan={plan}", chain, figures)
