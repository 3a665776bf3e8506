"""Hypothesis fuzzing of engine tell sequences: noise must never change what the engine decides.

``tests/engine/test_engine_properties.py`` already drives the engine with random clusters (arrival
orders, failures, late cancellations, a few duplicate results, one state round trip) and checks
its invariants. This file covers what it does not, with a metamorphic check:

* a drawn sequence of *core* events (ask, a result or failure of an in-flight run, acknowledging
  a cancellation, a late result of a run whose cancellation is pending) is applied to engine ``B``;
* engine ``A`` receives the same core events interleaved with *noise*: results for unknown run
  ids (never launched, negative, non-integer), results or cancellation acknowledgements for runs
  already resolved (used, failed, discarded, cancelled — i.e. results after cancellation),
  malformed values and costs, a cancellation acknowledgement for a run that was not cancelled,
  ``state_dict`` round trips through JSON or pickle, and *rewinds*: ``A`` is replaced by an engine
  restored from an older ``state_dict`` and the core events since then are delivered again, with
  duplicates of older events mixed in (at-least-once delivery after a restore, as Tune does);
* after every core event ``A.state_dict() == B.state_dict()``, every rejected call leaves the state
  untouched, terminal run statuses never change, and the run counts add up.

Deterministic (``derandomize=True``); more examples: ``TELL_FUZZ_EXAMPLES=300``.
"""

from __future__ import annotations

import json
import math
import os
import pickle

import hypothesis
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness import launch_replicates
from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.engine.core import Engine
from tune_risk.engine.records import Replicate, RunStatus
from tune_risk.settings import EngineSettings

MAX_EXAMPLES = int(os.environ.get("TELL_FUZZ_EXAMPLES", "25"))
TERMINAL = {RunStatus.USED, RunStatus.DISCARDED, RunStatus.CANCELLED, RunStatus.FAILED}
FAILURES = (None, float("nan"), float("inf"), float("-inf"))
OBJECTIVE = get_objective("branin")
POOL, _ = make_pool_table(OBJECTIVE, 20, 1, seed=2)

core_event = st.one_of(
    st.tuples(st.just("ask"), st.integers(1, 4)),  # up to n launches (workers asking at once)
    st.tuples(st.just("ask"), st.integers(1, 4)),
    st.tuples(st.just("result"), st.integers(0, 7), st.sampled_from(["ok"] * 6 + ["fail"])),
    st.tuples(st.just("result"), st.integers(0, 7), st.sampled_from(["ok"] * 6 + ["fail"])),
    st.tuples(st.just("cancel"), st.integers(0, 7)),
)
noise_event = st.one_of(
    st.tuples(st.just("unknown"), st.sampled_from([1, 5, -1, "a", None, 2.5])),
    st.tuples(st.just("resolved"), st.integers(0, 50), st.sampled_from([0.3, None, float("nan"), 1e300])),
    st.tuples(st.just("malformed"), st.integers(0, 7), st.sampled_from(["value", "cost", "huge_int", "list"])),
    st.tuples(st.just("wrong_cancel"), st.integers(0, 7)),
    st.tuples(st.just("roundtrip"), st.sampled_from(["json", "pickle"])),
    st.tuples(st.just("rewind"), st.integers(1, 6)),
)
scenario = st.fixed_dictionaries({
    "events": st.lists(st.one_of(core_event, core_event, core_event, noise_event), min_size=30, max_size=110),
    "k": st.sampled_from([(2, 4), (2, 5)]),
    "launch_policy": st.sampled_from(["all", "doubling"]),
    "max_active_configs": st.sampled_from([1, 2]),
    "late_results": st.sampled_from(["discard", "append"]),
    "budget_unit": st.sampled_from(["samples", "runs"]),
    "seed": st.integers(0, 3),
})


def make_engine(sc: dict) -> Engine:
    k_min, k_max = sc["k"]
    budget = 8 if sc["budget_unit"] == "samples" else 3 * k_min + 10
    settings = EngineSettings.for_method(
        "erahbo", k_min=k_min, k_max=k_max, k_init=k_min, n_initial=3, budget=budget, budget_unit=sc["budget_unit"],
        max_active_configs=sc["max_active_configs"], late_results=sc["late_results"], max_failures_per_config=1,
        launch_policy=sc["launch_policy"],
        seed=sc["seed"], raw_samples=64, num_restarts=1,
    )
    return Engine(settings, pool=POOL)


def value_of(replicate: Replicate) -> float:
    return float(OBJECTIVE.sample(np.asarray(replicate.x), replicate.seed))


class Harness:
    """An engine plus the harness's view of it: runs in flight (launched, no result delivered)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.in_flight: list[Replicate] = []
        self.launched: dict[int, Replicate] = {}
        self.terminal: dict[int, RunStatus] = {}

    def apply(self, event: tuple) -> None:
        """One core event; deterministic given the harness state."""
        engine, kind = self.engine, event[0]
        if kind == "ask":
            launch_replicates(engine, event[1], self.launched, self.in_flight)
        elif kind == "result" and self.in_flight:
            replicate = self.in_flight.pop(event[1] % len(self.in_flight))
            value = value_of(replicate) if event[2] == "ok" else FAILURES[replicate.run_id % len(FAILURES)]
            status = engine.runs[replicate.run_id].status
            if status is RunStatus.CANCEL_REQUESTED:
                hypothesis.event("core: late result of a cancelled run")
            accepted = engine.tell(replicate.run_id, value, cost=0.5 + (replicate.run_id % 3) / 4)
            if status is RunStatus.CANCEL_REQUESTED or value is None or not math.isfinite(value):
                assert accepted is False  # a late result or a failure is never an observation
        elif kind == "cancel":
            pending = [r for r in self.in_flight if r.run_id in set(engine.pending_cancellations())]
            if pending:
                replicate = pending[event[1] % len(pending)]
                self.in_flight.remove(replicate)
                engine.tell_cancelled(replicate.run_id, cost=0.25)
                hypothesis.event("core: cancellation acknowledged")
        self.check()

    def check(self) -> None:
        engine = self.engine
        for run_id, status in self.terminal.items():
            assert engine.runs[run_id].status is status, f"terminal run {run_id} changed status"
        self.terminal.update({r: run.status for r, run in engine.runs.items() if run.status in TERMINAL})
        counts = engine.counts()
        assert counts["runs_launched"] == len(self.launched) == len(engine.runs)
        assert counts["runs_completed"] + counts["runs_cancelled"] + counts["runs_failed"] + counts[
            "runs_in_flight"] == counts["runs_launched"]
        assert set(engine.in_flight_runs()) == {r.run_id for r in self.in_flight}
        used = [s.run_id for rec in engine.records for s in rec.slots[: rec.n_incorporated]]
        assert len(used) == len(set(used)), "a result was incorporated twice"
        assert {r for r, run in engine.runs.items() if run.status is RunStatus.USED} == set(used)


def unchanged(harness: Harness, call, expect: type[BaseException] | None = None):
    """Run a noise call; it must raise ``expect`` (or return) and leave the state exactly as it was."""
    before = json.dumps(harness.engine.state_dict())
    try:
        result = call()
    except Exception as error:  # noqa: BLE001 - the type is checked below
        assert expect is not None and isinstance(error, expect), f"unexpected {error!r}"
        result = error
    else:
        assert expect is None, f"expected {expect.__name__}"
    assert json.dumps(harness.engine.state_dict()) == before, "a rejected or ignored call changed the state"
    return result


def noise(a: Harness, event: tuple, history: list) -> None:
    engine, kind = a.engine, event[0]
    if kind == "unknown":
        offset = event[1]
        bad_id = len(engine.runs) + offset if isinstance(offset, int) and offset > 0 else offset
        unchanged(a, lambda: engine.tell(bad_id, 1.0), ValueError)
        unchanged(a, lambda: engine.tell_cancelled(bad_id), ValueError)
    elif kind == "resolved":
        resolved = [r for r in a.launched if r not in {x.run_id for x in a.in_flight}]
        after_cancel = [r for r in resolved if engine.runs[r].status in (RunStatus.CANCELLED, RunStatus.DISCARDED)]
        resolved = after_cancel if after_cancel and event[1] % 2 == 0 else resolved  # favour results after cancellation
        if resolved:
            run_id = resolved[event[1] % len(resolved)]
            hypothesis.event(f"noise: result for a {engine.runs[run_id].status.value} run")
            assert unchanged(a, lambda: engine.tell(run_id, event[2])) is False
            unchanged(a, lambda: engine.tell_cancelled(run_id))
    elif kind == "malformed" and a.in_flight:
        run_id = a.in_flight[event[1] % len(a.in_flight)].run_id
        args = {"value": ("abc", 1.0), "cost": (1.0, "abc"), "huge_int": (10**400, 1.0), "list": ([1.0], 1.0)}[event[2]]
        unchanged(a, lambda: engine.tell(run_id, args[0], cost=args[1]), ValueError)
    elif kind == "wrong_cancel" and a.in_flight:
        run_id = a.in_flight[event[1] % len(a.in_flight)].run_id
        if engine.runs[run_id].status is RunStatus.IN_FLIGHT:
            unchanged(a, lambda: engine.tell_cancelled(run_id), ValueError)
    elif kind == "roundtrip":
        state = engine.state_dict()
        blob = json.loads(json.dumps(state)) if event[1] == "json" else pickle.loads(pickle.dumps(state))
        a.engine = Engine.from_state_dict(blob)
        assert a.engine.state_dict() == state
    elif kind == "rewind" and history:
        # Restore an older snapshot and deliver everything since again, plus duplicates of older results.
        snapshot, in_flight, launched, terminal, since = history[-min(event[1], len(history))]
        current = engine.state_dict()
        a.engine = Engine.from_state_dict(json.loads(snapshot))
        a.in_flight, a.launched, a.terminal = list(in_flight), dict(launched), dict(terminal)
        for old in list(a.terminal)[:3]:
            unchanged(a, lambda old=old: a.engine.tell(old, 0.5))
        hypothesis.event(f"noise: rewind over {len(since)} events, {len(in_flight)} runs in flight")
        for core in since:
            a.apply(core)
        assert a.engine.state_dict() == current, "restore + redelivery diverged from the original run"


@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sc=scenario)
def test_noise_never_changes_the_engine(sc):
    a, b = Harness(make_engine(sc)), Harness(make_engine(sc))
    history: list[tuple] = []  # (state json, in flight, launched, terminal, core events since)
    for event in sc["events"]:
        if event[0] in ("ask", "result", "cancel"):
            history.append((json.dumps(a.engine.state_dict()), list(a.in_flight), dict(a.launched),
                            dict(a.terminal), []))
            for entry in history:
                entry[4].append(event)
            history = history[-6:]
            a.apply(event)
            b.apply(event)
            assert a.engine.state_dict() == b.engine.state_dict()
            assert [r.run_id for r in a.in_flight] == [r.run_id for r in b.in_flight]
        else:
            noise(a, event, history)
            assert a.engine.state_dict() == b.engine.state_dict()
    # Deliver the rest: both engines end in the same state, with every run resolved.
    drain(a)
    drain(b)
    assert a.engine.state_dict() == b.engine.state_dict()
    assert not a.engine.in_flight_runs() and all(run.status in TERMINAL for run in a.engine.runs.values())
    assert a.engine.finished


def drain(harness: Harness) -> None:
    """Acknowledge cancellations, deliver results and ask until the engine is done."""
    for _ in range(2000):
        harness.apply(("cancel", 0))
        if harness.in_flight:
            harness.apply(("result", 0, "ok"))
            continue
        launched = len(harness.launched)
        harness.apply(("ask", 1))
        if len(harness.launched) == launched:
            return
    raise AssertionError("the engine did not finish")
