"""Parallel replicates on W workers (docs/algorithms.md §2, §5 item 16).

Decision-equivalent mode (``max_active_configs=1``): whatever the arrival order, the launch policy
and the delay with which cancellations are honoured, ``(x_t, k_t)``, ``B_t`` and every stop check
equal the sequential run's; cancelled runs equal ``sum_t (launched_t - k_t)``. With
``late_results="append"`` in-flight replicates finish and extend ``k_t`` up to the launched count.
"""

from __future__ import annotations

import functools

import pytest
import torch
from conftest import (
    Cluster,
    bo_records,
    decisions,
    has_data,
    pool_of,
    processed_stats,
    reference_bounds,
    run_sequential,
    runs_of,
    sampler,
)

from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE, Replicate, RunStatus
from tune_risk.settings import EngineSettings

BASE = {"n_initial": 4, "k_max": 8, "budget": 40, "seed": 3}


def make_engine(**overrides) -> Engine:
    _, X = pool_of("sine", 32, seed=0)
    return Engine(EngineSettings.for_method("erahbo", **{**BASE, **overrides}), pool=X)


@functools.cache
def sequential() -> Engine:
    objective, _ = pool_of("sine", 32, seed=0)
    return run_sequential(make_engine(), sampler(objective))


def stop_traces(engine: Engine) -> list:
    return [(r.x, r.incumbent_lcb, r.kappa_stop, r.trace, r.incorporated_values()) for r in bo_records(engine)]


class Concurrency:
    """``on_step`` hook: the largest number of BO configurations running at once."""

    def __init__(self) -> None:
        self.configs = 0

    def __call__(self, engine: Engine, cluster: Cluster) -> None:
        self.configs = max(self.configs, sum(r.running and r.phase == "bo" for r in engine.records))


@pytest.mark.parametrize(
    "workers,policy,p_honour,seed",
    [
        (2, {}, 1.0, 0),
        (4, {}, 0.3, 1),
        (7, {}, 1.0, 2),
        (3, {"launch_policy": "window", "window": 3}, 0.5, 3),
        (6, {"launch_policy": "all"}, 0.2, 4),
    ],
)
def test_parallel_reproduces_sequential(workers, policy, p_honour, seed):
    """Item 16: ordered incorporation with cancellation reproduces the sequential ``(x_t, k_t)``."""
    objective, _ = pool_of("sine", 32, seed=0)
    cluster = Cluster(workers=workers, seed=seed, p_honour=p_honour)
    concurrency = Concurrency()
    engine = cluster.run(make_engine(**policy), sampler(objective), on_step=concurrency)
    reference = sequential()
    assert decisions(engine) == decisions(reference)
    assert stop_traces(engine) == stop_traces(reference)  # B_t, kappa_stop, every U_k, Y_t: bit for bit
    assert engine.n_used == reference.n_used
    assert cluster.max_in_flight == workers and concurrency.configs == 1
    # Cancelled runs = sum_t (launched_t - k_t); initial configurations launch exactly k_init.
    launched = {r.config_id: len(runs_of(engine, r.config_id)) for r in engine.records}
    for record in engine.records:
        assert record.n_incorporated <= launched[record.config_id] <= engine.settings.k_max
        if record.phase == "initial":
            assert launched[record.config_id] == record.n_incorporated
    waste = sum(launched[r.config_id] - r.n_incorporated for r in bo_records(engine))
    counts = engine.counts()
    assert counts["runs_cancelled"] == waste
    # waste = in-flight runs cancelled + results that arrived early and were buffered, then dropped
    buffered_then_dropped = [
        run for run in engine.runs.values()
        if run.status is RunStatus.DISCARDED and run.run_id not in cluster.cancel_requested
    ]
    assert len(cluster.cancel_requested) + len(buffered_then_dropped) == waste
    assert all(cluster.accepted[run.run_id] for run in buffered_then_dropped)
    if workers >= 4:
        assert waste > 0, "nothing was cancelled: the scenario does not exercise cancellation"
    assert counts["runs_launched"] == len(cluster.launched) == sum(launched.values())
    assert counts["runs_in_flight"] == 0 and counts["runs_failed"] == 0
    assert counts["runs_completed"] == sum(r.n_incorporated for r in engine.records)
    assert counts["compute_spent"] == pytest.approx(cluster.cost_reported)
    late = [run_id for run_id in cluster.cancel_requested if run_id in cluster.told]
    for run_id in late:  # results that arrived after the cancellation request
        assert cluster.accepted[run_id] is False
        assert engine.runs[run_id].status is RunStatus.DISCARDED
    if p_honour < 1.0:
        assert late, "no result arrived after its cancellation: the scenario is too easy"


@pytest.mark.parametrize("workers,seed", [(4, 0), (8, 1)])
def test_late_results_append(workers, seed):
    """Item 16 / §2.4: with ``late_results="append"``, ``k_t <= launched <= k_max``, replicates still
    in flight at the stop are appended in replicate order, and nothing is cancelled."""
    objective, _ = pool_of("sine", 32, seed=0)
    cluster = Cluster(workers=workers, seed=seed, p_honour=1.0)
    engine = cluster.run(make_engine(late_results="append"), sampler(objective))
    s = engine.settings
    grew = 0
    for record in bo_records(engine):
        launched = runs_of(engine, record.config_id)
        stop_k = record.trace[-1][0]
        assert s.k_min <= stop_k <= record.n_incorporated <= len(launched) <= s.k_max
        grew += record.n_incorporated > stop_k
        for i, slot in enumerate(record.slots[: record.n_incorporated]):
            assert engine.runs[slot.run_id].replicate_index == i
            assert cluster.told[slot.run_id] == slot.value
    assert grew > 0, "no round received late results: the scenario does not exercise append mode"
    counts = engine.counts()
    assert counts["runs_cancelled"] == 0 and not cluster.cancel_requested
    assert all(run.status is RunStatus.USED for run in engine.runs.values())
    assert engine.n_used == sum(r.n_incorporated for r in bo_records(engine)) <= s.budget
    # the first round starts from the same data as the sequential run
    assert bo_records(engine)[0].x == bo_records(sequential())[0].x


def test_late_results_discard_never_incorporates_cancelled_results():
    """§2.4: results of cancelled replicates are never observations, even when they arrive."""
    objective, _ = pool_of("sine", 32, seed=0)
    cluster = Cluster(workers=8, seed=5, p_honour=0.0)  # never honour: every result arrives
    engine = cluster.run(make_engine(launch_policy="all"), sampler(objective))
    assert cluster.cancel_requested and not cluster.cancelled
    used = {slot.run_id for r in engine.records for slot in r.slots[: r.n_incorporated]}
    assert used.isdisjoint(cluster.cancel_requested)
    assert decisions(engine) == decisions(sequential())


def test_asynchronous_mode_runs_several_configurations():
    """§2.5: with ``max_active_configs > 1`` idle workers start further configurations; pending ones
    below ``k_min`` steer the acquisition as kriging-believer fantasies and are never proposed twice;
    each configuration keeps its own ``B_t``."""
    objective, X = pool_of("sine", 32, seed=0)
    engine = make_engine(max_active_configs=3)
    sample = sampler(objective)
    in_flight: list[Replicate] = []
    checked_fantasy = False
    bounds: dict[int, float] = {}
    while True:
        while len(in_flight) < 6 and isinstance(request := engine.ask(), Replicate):
            in_flight.append(request)
        running = [r for r in engine.records if r.running and r.phase == "bo"]
        assert len(running) <= 3
        for record in running:
            assert bounds.setdefault(record.config_id, record.incumbent_lcb) == record.incumbent_lcb
        pending = [r for r in running if r.n_incorporated < engine.settings.k_min]
        if len(running) >= 2 and pending and not checked_fantasy:
            snapshot = len(engine.snapshots) - 1
            observed = engine.data_rows([r for r in engine.records if engine.has_data(r)], engine.snapshots[snapshot])
            fantasy = engine._fantasy_rows(snapshot, engine.risk_model())
            assert [row[0] for row in fantasy] == [r.x for r in pending]
            mu_f, _, mu_var, _ = engine.build_model(observed, engine.snapshots[snapshot]).predict(
                torch.tensor([list(row[0]) for row in fantasy], dtype=torch.float64)
            )
            for row, m, v in zip(fantasy, mu_f.tolist(), mu_var.tolist(), strict=True):
                assert row[1:] == (m, max(v, 0.0), engine.settings.k_min)
            checked_fantasy = True
        if not in_flight:
            assert engine.ask() is DONE
            break
        for run_id in engine.pending_cancellations():
            in_flight = [r for r in in_flight if r.run_id != run_id]
            engine.tell_cancelled(run_id)
        if not in_flight:
            continue
        request = in_flight.pop(len(in_flight) // 2)
        engine.tell(request.run_id, sample(request))
    assert checked_fantasy
    rows = [r.pool_index for r in engine.records]
    assert len(rows) == len(set(rows)), "a configuration was proposed twice"
    assert engine.n_used <= engine.settings.budget
    for record in bo_records(engine):
        assert engine.settings.k_min <= record.n_incorporated <= engine.settings.k_max


class RoundAudit:
    """Asynchronous driver that checks every certificate against an independent reference.

    When a round starts, it captures the model the engine exposes then (``hyperparameters``, ``warp``,
    ``rho_bar_sq``) and recomputes ``B_t`` with BoTorch models on the *data* at that moment: every
    configuration with ``k >= k_min`` returns, no fantasy. After every result it recomputes each new
    stop check ``U_k`` on the data at that moment under the model captured at the round's start.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine, self.models, self.seen = engine, {}, {}
        self.bounds_with_pending = self.checks_with_pending = self.checks_after_newer_round = 0

    def rows(self, warp, replace=None) -> list[tuple]:
        """Data rows now, processed by ``warp``; ``replace=(record, k)`` uses that record's first ``k``."""
        rows = []
        for r in self.engine.records:
            k = replace[1] if replace is not None and r is replace[0] else r.n_incorporated
            if has_data(self.engine, r) or (replace is not None and r is replace[0]):
                rows.append((r.x, *processed_stats(self.engine, r, k, warp), k))
        return rows

    def pending_below_k_min(self, but=None) -> bool:
        return any(r.running and r.phase == "bo" and r is not but and not has_data(self.engine, r)
                   for r in self.engine.records)

    def on_new_round(self, record) -> None:
        engine = self.engine
        model = (engine.hyperparameters, engine.warp, engine.rho_bar_sq)
        self.models[record.config_id] = model
        rows = self.rows(model[1])
        X = torch.tensor([list(row[0]) for row in rows], dtype=torch.float64)
        _, lcb = reference_bounds(rows, model[0], engine.settings, X, record.kappa_stop, model[2])
        assert record.incumbent_lcb == pytest.approx(float(lcb.max()), abs=1e-8), "B_t is not max LCB^MV on the data"
        self.bounds_with_pending += self.pending_below_k_min(but=record)

    def after_tell(self) -> None:
        engine = self.engine
        for record in bo_records(engine):
            new = record.trace[self.seen.get(record.config_id, 0):]
            self.seen[record.config_id] = len(record.trace)
            hp, warp, rho = self.models[record.config_id]
            for k, u, _, _ in new:
                rows = self.rows(warp, replace=(record, k))
                x = torch.tensor([list(record.x)], dtype=torch.float64)
                ucb, _ = reference_bounds(rows, hp, engine.settings, x, record.kappa_stop, rho)
                assert u == pytest.approx(float(ucb[0]), abs=1e-8), (record.config_id, k)
                self.checks_with_pending += self.pending_below_k_min(but=record)
                self.checks_after_newer_round += record is not bo_records(engine)[-1]

    def run(self, sample, workers: int) -> Engine:
        engine, in_flight = self.engine, []
        while True:
            while len(in_flight) < workers and isinstance(request := engine.ask(), Replicate):
                in_flight.append(request)
                record = engine.records[request.config_id]
                if record.phase == "bo" and record.config_id not in self.models:
                    self.on_new_round(record)
            for run_id in engine.pending_cancellations():
                in_flight = [r for r in in_flight if r.run_id != run_id]
                engine.tell_cancelled(run_id)
            if not in_flight:
                if engine.ask() is DONE:
                    return engine
                continue
            request = in_flight.pop(len(in_flight) // 2)
            engine.tell(request.run_id, sample(request))
            self.after_tell()


@pytest.mark.parametrize("overrides", [{}, {"refit": "every_round"}, {"lengthscale": "oscbo"}],
                         ids=["frozen", "refit_every_round", "oscbo_lengthscale"])
def test_asynchronous_certificates_rest_on_data_under_one_model(overrides):
    """§2.5 and one model per round (§1.4.4, §3.10): in the asynchronous mode ``B_t`` and every stop
    check use data only (fantasies steer the acquisition, never the certificate), and each round's
    checks use the model of its own start, even after later rounds re-fitted the hyperparameters or
    played another lengthscale. Before the fix, rounds used fantasy rows and the newest model."""
    objective, _ = pool_of("sine", 32, seed=0)
    engine = make_engine(max_active_configs=3, budget=60, **overrides)
    audit = RoundAudit(engine)
    audit.run(sampler(objective), workers=6)
    assert audit.bounds_with_pending > 0 and audit.checks_with_pending > 0, "no fantasy was ever present"
    assert audit.checks_after_newer_round > 0, "no check happened after a later round had started"
    if overrides:  # the model did change between rounds, so the checks above could tell
        assert len({repr(hp) for hp, _, _ in audit.models.values()}) > 1


def test_budget_stop_waits_for_results_that_arrived_out_of_order():
    """Regression: when the budget is spent, results that already arrived for later replicates are
    part of the budget and are incorporated, as in the sequential run; the round must not stop with
    ``k`` below the number of replicates completed (it stopped at ``k = 2`` of 5 before the fix)."""
    objective, X = pool_of("sine", 32, seed=0)
    s = EngineSettings.for_method("erahbo", **{**BASE, "budget": 5, "beta_stop": 1e12, "launch_policy": "all"})
    engine = Engine(s, pool=X)
    sample, launched = sampler(objective), []
    while isinstance(request := engine.ask(), Replicate) or engine.in_flight_runs():
        if isinstance(request, Replicate):
            launched.append(request)
            continue
        bo = [r for r in launched if engine.records[r.config_id].phase == "bo"]
        order = bo[::-1] if bo else launched  # the BO round's results arrive last-launched first
        for replicate in order:
            engine.tell(replicate.run_id, sample(replicate))
        launched = []
    record = bo_records(engine)[0]
    assert (record.n_incorporated, record.status, engine.n_used) == (5, "budget", 5)
    assert len(bo_records(engine)) == 1
    assert all(run.status is RunStatus.USED for run in engine.runs.values())


def test_asynchronous_round_keeps_the_k_min_it_started_with():
    """Regression: a round starts only with ``k_min`` budget left; in the asynchronous mode another
    configuration's next wave used to take that budget first, ending the new round with ``k = 1``
    (a run charged to the budget that never enters the GPs). Rounds short of ``k_min`` launch first."""
    _, X = pool_of("branin", 24, seed=1)
    objective, _ = pool_of("branin", 24, seed=1)
    s = EngineSettings.for_method(
        "erahbo", k_min=2, k_max=6, k_init=3, n_initial=3, budget=16, launch_policy="doubling",
        max_active_configs=3, seed=0,
    )
    cluster = Cluster(workers=3, seed=140, p_honour=0.25, p_duplicate=0.03)
    engine = cluster.run(Engine(s, pool=X), sampler(objective))
    assert engine.n_used == 16
    for record in bo_records(engine):
        assert s.k_min <= record.n_incorporated <= s.k_max, (record.config_id, record.status)
