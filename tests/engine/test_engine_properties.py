"""Property test: the engine's book-keeping under random clusters (docs/algorithms.md §2, failure policy).

Hypothesis draws the number of workers (1-6), arrival orders, failures (``None``/NaN/+-inf),
cancellations honoured late or overtaken by the run's result, duplicate reports, the launch
policy, ``max_active_configs`` in {1, 2, 3}, late-result handling, the budget unit and whether the
online warp is re-fitted (each re-fit also re-fits the hyperparameters), and checks:

* ``k_min <= k <= k_max`` for finished BO configurations (see ``check_k`` for the budget caveat);
* the budget is never exceeded;
* ``B_t`` and ``kappa_stop,t`` never change once a round has started;
* incorporation in replicate order: ``Y_c`` are the results of slots ``0..k-1``, in order;
* no result lost or counted twice: every run ends in exactly one status and the counts add up;
* a cancelled replicate's late result is never incorporated;
* ``state_dict`` -> JSON -> ``from_state_dict`` mid-run continues exactly like the original.
"""

from __future__ import annotations

import copy
import json
import math
import os

from conftest import Cluster, bo_records, pool_of, sampler
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tune_risk.engine.core import Engine
from tune_risk.engine.records import RunStatus
from tune_risk.settings import EngineSettings

# deeper searches: ENGINE_PROPERTY_EXAMPLES=500 pytest tests/engine/test_engine_properties.py
MAX_EXAMPLES = int(os.environ.get("ENGINE_PROPERTY_EXAMPLES", "30"))
TERMINAL = {RunStatus.USED, RunStatus.DISCARDED, RunStatus.CANCELLED, RunStatus.FAILED}

scenario = st.fixed_dictionaries({
    "workers": st.integers(1, 6),
    "max_active_configs": st.sampled_from([1, 2, 3]),
    "k": st.sampled_from([(2, 4), (2, 6), (3, 5)]),
    "launch_policy": st.sampled_from(["doubling", "window", "all"]),
    "late_results": st.sampled_from(["discard", "append"]),
    "budget_unit": st.sampled_from(["samples", "runs"]),
    "warp_refit": st.sampled_from(["outside_support", "never"]),
    "p_fail": st.sampled_from([0.0, 0.1, 0.3]),
    "p_honour": st.sampled_from([0.25, 0.6, 1.0]),
    "seed": st.integers(0, 2**16),
    "snapshot_step": st.integers(1, 80),
})


def build(sc: dict) -> tuple[Engine, Cluster]:
    k_min, k_max = sc["k"]
    n_initial, k_init = 3, k_min + 1
    budget = 16 if sc["budget_unit"] == "samples" else n_initial * k_init + 16
    s = EngineSettings.for_method(
        "erahbo", k_min=k_min, k_max=k_max, k_init=k_init, n_initial=n_initial, budget=budget,
        budget_unit=sc["budget_unit"], launch_policy=sc["launch_policy"], window=2,
        max_active_configs=sc["max_active_configs"], late_results=sc["late_results"],
        max_failures_per_config=1, seed=sc["seed"] % 7, warp_refit=sc["warp_refit"],
    )
    _, X = pool_of("branin", 24, seed=1)
    cluster = Cluster(
        workers=sc["workers"], seed=sc["seed"], p_fail=sc["p_fail"], p_honour=sc["p_honour"], p_duplicate=0.03
    )
    return Engine(s, pool=X), cluster


class StepChecks:
    """Invariants checked after every event; takes the mid-run snapshot."""

    def __init__(self, snapshot_step: int) -> None:
        self.snapshot_step = snapshot_step
        self.snapshot: tuple[str, Cluster] | None = None
        self.bounds: dict[int, tuple] = {}

    def __call__(self, engine: Engine, cluster: Cluster) -> None:
        s = engine.settings
        for record in bo_records(engine):
            fixed = (record.incumbent_lcb, record.kappa_stop, record.round)
            assert self.bounds.setdefault(record.config_id, fixed) == fixed, "B_t changed inside a round"
            assert record.n_incorporated <= s.k_max
        if s.budget_unit == "samples":
            assert engine.n_used <= s.budget
        else:
            assert len(engine.runs) <= s.budget
        running = sum(r.running and r.phase == "bo" for r in engine.records)
        assert running <= s.max_active_configs
        if cluster.steps == self.snapshot_step:
            self.snapshot = (json.dumps(engine.state_dict()), copy.deepcopy(cluster))


def check_k(engine: Engine, cluster: Cluster) -> None:
    """``k_min <= k_t <= k_max`` for finished BO configurations, except ``failed`` ones.

    A ``budget`` stop can leave ``k < k_min`` only under ``budget_unit="runs"``, where failed runs
    are charged, so failures can spend the budget a round counted on. Such a configuration never
    enters the GPs. (In the asynchronous mode another configuration could also take that budget;
    the engine launches rounds short of ``k_min`` first to prevent it.)
    """
    s = engine.settings
    for record in bo_records(engine):
        k = record.n_incorporated
        assert record.status in ("certified", "k_max", "budget", "failed"), record.status
        assert k <= s.k_max
        if record.status in ("certified", "k_max"):
            assert k >= s.k_min
        if record.status == "k_max":
            assert record.trace[-1][0] == s.k_max
        if record.status == "budget" and k < s.k_min:
            assert s.budget_unit == "runs", "a round started with k_min budget left ended below k_min"
            assert any(run.status is RunStatus.FAILED for run in engine.runs.values())
        failed_runs = sum(
            run.status is RunStatus.FAILED for run in engine.runs.values() if run.config_id == record.config_id
        )
        assert record.failures <= failed_runs
        if record.status == "failed":
            assert record.failures == s.max_failures_per_config + 1
        elif s.late_results == "discard":  # append mode also counts late runs that fail after the stop
            assert record.failures <= s.max_failures_per_config
        if record.trace:  # first-crossing rule (eq. 12) at every check that was made
            ks = [t[0] for t in record.trace]
            assert ks == list(range(s.k_min, ks[-1] + 1))
            assert all(t[1] > record.incumbent_lcb for t in record.trace[:-1])
            assert (record.status == "certified") == (record.trace[-1][1] <= record.incumbent_lcb)
            assert ks[-1] <= k if s.late_results == "append" else ks[-1] == k


def check_bookkeeping(engine: Engine, cluster: Cluster) -> None:
    """Replicate order, one terminal status per run, counts, cancellations, compute."""
    s = engine.settings
    used_slots = set()
    for record in engine.records:
        assert not record.running
        for i, slot in enumerate(record.slots[: record.n_incorporated]):
            run = engine.runs[slot.run_id]
            assert run.status is RunStatus.USED and run.config_id == record.config_id
            assert run.replicate_index == i, "incorporated out of replicate order"
            assert cluster.told[slot.run_id] == slot.value
            used_slots.add(slot.run_id)
    assert {r for r, run in engine.runs.items() if run.status is RunStatus.USED} == used_slots
    assert set(engine.runs) == set(cluster.launched)
    for run_id, run in engine.runs.items():
        assert run.status in TERMINAL, (run_id, run.status)
        value = cluster.told.get(run_id, "never")
        finite = isinstance(value, float) and math.isfinite(value)
        if value == "never":  # no result: it must have been cancelled and acknowledged
            assert run.status is RunStatus.CANCELLED and run_id in cluster.cancelled
        elif finite:
            assert run.status in (RunStatus.USED, RunStatus.DISCARDED)
        else:
            assert run.status is RunStatus.FAILED
        if run_id in cluster.cancel_requested:
            assert run.status is not RunStatus.USED, "a cancelled replicate's result was incorporated"
            if run_id in cluster.told:
                assert cluster.accepted[run_id] is False
    counts = engine.counts()
    assert counts["runs_launched"] == len(engine.runs)
    assert counts["runs_in_flight"] == 0
    assert counts["runs_completed"] + counts["runs_cancelled"] + counts["runs_failed"] == counts["runs_launched"]
    assert counts["runs_completed"] == len(used_slots) == sum(r.n_incorporated for r in engine.records)
    assert counts["runs_failed"] == sum(1 for v in cluster.told.values() if not (v is not None and math.isfinite(v)))
    charged = [r for r in engine.records if r.phase == "bo" or s.charge_initial]
    assert engine.n_used == sum(r.n_incorporated for r in charged)
    assert counts["compute_spent"] == cluster.cost_reported or math.isclose(
        counts["compute_spent"], cluster.cost_reported, rel_tol=1e-12
    )
    pool_rows = [r.pool_index for r in engine.records]
    assert len(pool_rows) == len(set(pool_rows)), "a configuration was proposed twice"


@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenario)
def test_engine_invariants_under_random_clusters(sc):
    engine, cluster = build(sc)
    objective, _ = pool_of("branin", 24, seed=1)
    sample = sampler(objective)
    checks = StepChecks(sc["snapshot_step"])
    cluster.run(engine, sample, on_step=checks)
    check_k(engine, cluster)
    check_bookkeeping(engine, cluster)
    if checks.snapshot is not None:  # resume from the mid-run state: the same continuation
        state, resumed_cluster = checks.snapshot
        resumed = Engine.from_state_dict(json.loads(state))
        resumed_cluster.run(resumed, sample, on_step=StepChecks(-1))
        assert resumed.state_dict() == engine.state_dict()
        assert repr(resumed_cluster.told) == repr(cluster.told)
        assert resumed_cluster.accepted == cluster.accepted
