"""The ERAHBO ask/tell engine: rounds, replicates, the stop rule and parallel launch (docs/algorithms.md §1-2).

One state machine over *replicate runs*, with no Ray and no JAX in it::

    engine = Engine(EngineSettings.for_method("erahbo", budget=300), pool=unit_points)
    while (request := engine.ask()) is not DONE:
        if request is WAIT: ...wait for a result...
        else: launch(request)                     # one seed of one configuration
    engine.tell(run_id, value)                    # None / NaN / inf -> the failure policy
    engine.pending_cancellations()                # runs to stop now; then engine.tell_cancelled(run_id)

Algorithm (ERAHBO §1.10, parallel semantics §2):

1. Initial design: ``n_initial`` scrambled-Sobol points (snapped to the pool), ``k_init`` replicates
   each, all launchable at once. When complete, the output warp (online mode) and the GP
   hyperparameters are fitted (§1.2, §1.4.4).
2. Round ``t`` starts with a *model snapshot* (``tune_risk.engine.snapshots``): at this round boundary, and
   only here, the online warp is re-fitted on all data if returns have left the range it was fitted
   on, the hyperparameters are re-fitted (warm-started) if ``refit="every_round"`` or the warp
   changed, and a lengthscale strategy plays. Every decision of the round uses that snapshot:
   ``x_t = argmax UCB^MV(x; kappa_acq)`` over unevaluated candidates (eq. 11); the incumbent bound
   ``B_t = max_D LCB^MV(x_c; kappa_stop,t)`` computed once (eq. 10) with ``kappa_stop,t =
   kappa(beta_stop * s(tau))`` and ``tau = N_used / N_max`` at round start (§1.9); every stop check.
3. Replicates launch in doubling waves ``k_min, 2k_min, ...`` up to ``k_max`` (§2.3); results are
   incorporated **in replicate order** whatever their arrival order; after each incorporation with
   ``k >= k_min`` both GPs are re-conditioned (snapshot frozen) and the round stops at the first
   ``k`` with ``UCB^MV(x_t; kappa_stop,t) <= B_t`` ("certified", eq. 12; ERAHBO only, RAHBO and
   GP-UCB have no certificate), at ``k = k_max``, or when the budget is spent (§1.8). In-flight
   replicates of a stopped configuration are listed for cancellation; their results are never
   observations (§2.4).
4. ``max_active_configs > 1`` (asynchronous mode, §2.5) lets further configurations start while
   workers would idle. Only the *choice* of ``x_t`` sees pending configurations below ``k_min``, as
   kriging-believer fantasies; ``B_t`` and every stop check rest on data alone (incorporated
   returns, partial data of pending configurations with ``k >= k_min`` included), each under its own
   round's snapshot. What this guarantees: each certificate compares a configuration's upper bound
   with a lower bound of an observed configuration under one model, as in the sequential
   algorithm; what it does not: ``x_t`` is chosen without the final data of pending rounds (the
   asynchronous-BO setting, GP-BUCB). With 1, decisions equal the sequential algorithm's (§2.6).

Failure policy: a run that errors or returns NaN/inf is counted as failed and its replicate slot is
re-queued with a fresh seed, up to ``max_failures_per_config`` failures per configuration; one more
marks the configuration ``failed``: its in-flight runs are cancelled, it is never proposed again
(pool), and it enters the GPs only if it already has ``k >= k_min`` incorporated returns. A failed
initial-design configuration is replaced by the next Sobol point.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from tune_risk.engine.design import check_pool, snap_to_pool, sobol_points
from tune_risk.engine.lengthscale import EngineLengthscale
from tune_risk.engine.records import (
    DONE,
    WAIT,
    ConfigRecord,
    Replicate,
    Run,
    RunStatus,
    Signal,
    Slot,
    SlotState,
    sample_mv_lower_bound,
    sample_statistics,
)
from tune_risk.engine.snapshots import ModelSnapshot, outside_support
from tune_risk.engine.state import STATE_VERSION, current_state
from tune_risk.engine.threads import engine_threads
from tune_risk.gp.exact import DTYPE
from tune_risk.risk.acquisition import argmax_pool, maximize_continuous
from tune_risk.risk.model import RiskData, RiskHyperparameters, RiskModel, fit_risk_hyperparameters, mv_bounds
from tune_risk.risk.warping import FrozenWarp, fit_warp
from tune_risk.schedules import schedule_value
from tune_risk.settings import EngineSettings

logger = logging.getLogger(__name__)

_INTENSIFY_TOP = 3  # incumbent and two challengers (by LCB^MV) share the reserved runs
_SEED_MASK = 0x7FFFFFFF


class Engine:
    """ERAHBO / RAHBO / GP-UCB as an ask/tell state machine over replicate runs.

    Args:
        settings: validated ``EngineSettings`` (method, alpha, k_min/k_max, beta, budget, ...).
        dim: dimension of the continuous unit cube (exclusive with ``pool``).
        pool: ``n x d`` finite candidate set in the unit cube (offline tables); the acquisition
            is an exact argmax over its unevaluated rows.
        warp: a pre-fitted ``FrozenWarp`` (the pooled offline warp), used as is and never
            re-fitted; ``None`` with ``settings.warp == "online"`` fits one on the initial design
            and re-fits it at round boundaries (``settings.warp_refit``).
        initial_points: user configurations (``m x d`` unit cube) that open the initial design
            before the Sobol points (Ray's ``points_to_evaluate``); snapped to the pool if any.
        initial_values: for each initial point, returns already observed (Ray's
            ``evaluated_rewards``): they fill its first replicate slots without runs.

    Example:
        A sequential ask/tell loop over an 11-point pool, with a toy noisy objective as the "training run":

        >>> import numpy as np
        >>> from tune_risk import DONE, WAIT, Engine, EngineSettings
        >>> settings = EngineSettings.for_method("erahbo", k_max=4, n_initial=3, budget=20, seed=0)
        >>> engine = Engine(settings, pool=np.linspace(0.0, 1.0, 11).reshape(-1, 1))
        >>> def train(x, seed):  # the final return of one seed at configuration x
        ...     return -(x[0] - 0.3) ** 2 + 0.1 * np.random.default_rng(seed).normal()
        >>> while (request := engine.ask()) is not DONE:
        ...     if request is not WAIT:  # WAIT: a result must arrive first (runs in flight)
        ...         accepted = engine.tell(request.run_id, train(request.x, request.seed))
        >>> counts = engine.counts()
        >>> counts["runs_launched"], counts["n_used"], counts["rounds"]
        (32, 20, 6)
        >>> engine.recommend().pool_index  # the pool row to deploy: x = 0.3, the toy's optimum
        3
    """

    def __init__(
        self,
        settings: EngineSettings,
        dim: int | None = None,
        pool: np.ndarray | None = None,
        warp: FrozenWarp | None = None,
        initial_points: np.ndarray | None = None,
        initial_values: list[list[float]] | None = None,
    ) -> None:
        if (dim is None) == (pool is None):
            raise ValueError("give exactly one of dim (continuous unit cube) or pool (finite candidates)")
        self.settings = settings
        self.pool = None if pool is None else check_pool(pool)
        self.dim = int(self.pool.shape[1]) if self.pool is not None else int(dim)  # type: ignore[arg-type]
        if self.dim < 1:
            raise ValueError(f"dim must be >= 1, got dim={dim}")
        if self.pool is not None and self.pool.shape[0] < settings.n_initial:
            raise ValueError(
                f"pool has {self.pool.shape[0]} rows, fewer than n_initial={settings.n_initial}"
            )
        _check_engine_settings(settings, warp)
        self.warps: list[FrozenWarp] = [] if warp is None else [warp]  # every warp used, re-fits in order
        self.online_warp = warp is None and settings.warp == "online"  # fitted (and re-fitted) here
        self.hyperparameters: RiskHyperparameters | None = None
        self.snapshots: list[ModelSnapshot] = []  # model of each round (ConfigRecord.snapshot indexes it)
        self.lengthscale_adapter: EngineLengthscale | None = None  # settings.lengthscale != "mll" (§3.10)
        self.records: list[ConfigRecord] = []
        self.runs: dict[int, Run] = {}
        self.n_used = 0  # the paper's sample count N_used (charged, incorporated replicates)
        self.rounds = 0
        self.initial_points_drawn = 0
        self.compute_spent = 0.0
        self.intensifying = False  # True once the reserved intensification runs have started
        self.intensification_runs = 0
        self.intensification_done = False  # the reserve was spent, or given back to BO rounds
        self.recommendations: list[tuple[int, int]] = []  # (N_used, config id of recommend()) per finished round
        self._reset_derived()
        self._start_initial_design(initial_points, initial_values)

    def _reset_derived(self) -> None:
        """Caches derived from the fields above: never part of the state, rebuilt on demand."""
        self._pool_tensor = None if self.pool is None else torch.from_numpy(self.pool)
        self._row_cache: dict[tuple[int, int, int | None], tuple] = {}
        self._model_memo: tuple[tuple, RiskModel] | None = None  # the last data-only model built

    # ------------------------------------------------------------------ public ask/tell surface
    @engine_threads
    def ask(self) -> Replicate | Signal:
        """The next replicate run to launch, ``WAIT`` (a result must arrive first) or ``DONE``."""
        for record in self._launch_order():
            replicate = self._launch_queued(record)
            if replicate is not None:
                return replicate
        self._close_starved_records()
        if any(r.running and r.phase == "initial" for r in self.records):
            return WAIT if self.in_flight_runs() else DONE
        if self.hyperparameters is None:
            if sum(self.has_data(r) for r in self.records) < 2:
                logger.warning("fewer than two initial configurations succeeded; stopping")
                return DONE
            self._fit_after_initial_design()
        if self._can_start_round():
            return self._launch_queued(self._start_round())  # type: ignore[return-value]
        replicate = self._intensify()
        if replicate is not None:
            return replicate
        if self._can_start_round():  # the top configurations were all at k_max: the reserve went back to rounds
            return self._launch_queued(self._start_round())  # type: ignore[return-value]
        if any(r.running for r in self.records) or self.in_flight_runs():
            return WAIT
        return DONE

    @engine_threads
    def tell(self, run_id: int, value: float | None, cost: float = 1.0) -> bool:
        """Report the final return of run ``run_id`` (``None``/NaN/inf: the run failed).

        ``cost`` is the compute the run consumed (run-equivalents by default). Returns ``True`` if
        the result was accepted as a (possibly buffered) observation, ``False`` if it was a
        duplicate, a failure, or arrived after its configuration stopped (never an observation).
        """
        run = self._run(run_id)
        if run.status not in (RunStatus.IN_FLIGHT, RunStatus.CANCEL_REQUESTED):
            logger.warning("ignoring a second result for run %d (status %s)", run_id, run.status.value)
            return False
        try:  # convert before any change: a rejected call must leave the state untouched
            finite, cost = value is not None and math.isfinite(float(value)), float(cost)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"run {run_id}: value must be a number or None and cost a number, "
                             f"got value={value!r}, cost={cost!r}") from None
        run.cost = cost
        self.compute_spent += run.cost
        if run.status is RunStatus.CANCEL_REQUESTED:  # late result of a stopped configuration
            run.status = RunStatus.DISCARDED if finite else RunStatus.FAILED
            return False
        record = self.records[run.config_id]
        slot = record.slots[run.replicate_index]
        if not finite:
            self._handle_failure(record, slot, run)
            return False
        slot.state, slot.value = SlotState.DONE, float(value)  # type: ignore[arg-type]
        run.status = RunStatus.BUFFERED
        self._incorporate(record)
        return True

    def pending_cancellations(self) -> list[int]:
        """Run ids that must be stopped now (their configuration stopped); acknowledge each
        with ``tell_cancelled`` once it is stopped."""
        return [r.run_id for r in self.runs.values() if r.status is RunStatus.CANCEL_REQUESTED]

    def tell_cancelled(self, run_id: int, cost: float = 1.0) -> None:
        """Acknowledge that run ``run_id`` was stopped (``cost``: compute it consumed before)."""
        run = self._run(run_id)
        if run.status is RunStatus.CANCEL_REQUESTED:
            run.status, run.cost = RunStatus.CANCELLED, float(cost)
            self.compute_spent += run.cost
        elif run.status is RunStatus.IN_FLIGHT:
            raise ValueError(f"run {run_id} was not marked for cancellation; report its result with tell()")

    def tell_censored(self, run_id: int, cost: float = 1.0) -> None:
        """Run ``run_id`` was stopped before it finished by someone other than the engine.

        An early-stopping scheduler (ASHA, HyperBand, median stopping) or a ``stop`` criterion ended
        it: its last value is an intermediate one, selected by the very rule that stopped it, so it
        is never an observation. The run is charged like any launched run (``compute_spent`` and,
        with ``budget_unit="runs"``, one run of the budget). The stopper judged the configuration not
        worth more seeds, so it stops sampling with status ``"stopped"``; replicates it already
        incorporated stay data. An initial-design configuration is replaced, as after failures.
        """
        run = self._run(run_id)
        if run.status is RunStatus.CANCEL_REQUESTED:
            self.tell_cancelled(run_id, cost)
            return
        if run.status is not RunStatus.IN_FLIGHT:
            logger.warning("ignoring a censoring of run %d (status %s)", run_id, run.status.value)
            return
        run.status, run.cost = RunStatus.CENSORED, float(cost)
        self.compute_spent += run.cost
        record = self.records[run.config_id]
        slot = record.slots[run.replicate_index]
        slot.state, slot.run_id = SlotState.QUEUED, None
        if not record.running:  # append mode: later replicates cannot be appended past this gap
            self._truncate(record, run.replicate_index)
            return
        self._finish(record, "stopped")
        self._after_stop(record)
        if record.phase == "initial" and not (self.pool is not None and self._used_pool_rows().all()):
            self._add_initial_config()

    def initial_design_can_complete(self, runs_left: int | None = None) -> bool:
        """Whether the initial design can still give two configurations with data, what ``ask()`` needs
        to fit the model, if every replicate in flight and every replicate the budget allows finished.

        ``True`` once the design is complete. ``False`` is final: the runs the initial design may still
        launch (the budget left, less the intensification reserve, and at most ``runs_left``, a cap from
        outside such as the trials Tune will still create) cannot complete two configurations, counting
        those with data, the running ones (fewest missing replicates first) and new Sobol configurations
        of ``k_init`` replicates each (unused pool rows only); ``ask()`` will then end the run (``DONE``)
        without a model.
        """
        if self.hyperparameters is not None:
            return True
        reach = sum(self.has_data(r) for r in self.records)
        running = [r for r in self.records if r.running and r.phase == "initial"]
        charged = self.settings.budget_unit == "runs" or self.settings.charge_initial
        caps = [v for v in (self._budget_left() if charged else None, runs_left) if v is not None]
        left = min(caps) if caps else None
        spare_rows = None if self.pool is None else int((~self._used_pool_rows()).sum())
        if left is None:
            return reach + len(running) + (2 if spare_rows is None else spare_rows) >= 2
        for missing in sorted(sum(s.state is SlotState.QUEUED for s in r.slots) for r in running):
            if missing > left:
                break
            reach, left = reach + 1, left - missing
        new = max(left, 0) // self.settings.replicates_initial
        return reach + (new if spare_rows is None else min(new, spare_rows)) >= 2

    def in_flight_runs(self) -> list[int]:
        """Run ids launched and not yet resolved (results or cancellation acknowledgements due)."""
        active = (RunStatus.IN_FLIGHT, RunStatus.CANCEL_REQUESTED)
        return [r.run_id for r in self.runs.values() if r.status in active]

    @property
    def finished(self) -> bool:
        """``True`` once ``ask()`` would return ``DONE``."""
        return not self.in_flight_runs() and not any(r.running for r in self.records) and (
            self.hyperparameters is not None and not self._can_start_round()
        )

    # ------------------------------------------------------------------ accounting and reporting
    def counts(self) -> dict[str, float]:
        """Replicate-run accounting: the paper's sample count and the compute actually spent."""
        by_status = {s: 0 for s in RunStatus}
        for run in self.runs.values():
            by_status[run.status] += 1
        return {
            "n_used": self.n_used,
            "runs_launched": len(self.runs),
            "runs_completed": by_status[RunStatus.USED] + by_status[RunStatus.BUFFERED],
            "runs_cancelled": by_status[RunStatus.CANCELLED] + by_status[RunStatus.DISCARDED]
            + by_status[RunStatus.CANCEL_REQUESTED],
            "runs_failed": by_status[RunStatus.FAILED],
            "runs_censored": by_status[RunStatus.CENSORED],
            "runs_in_flight": by_status[RunStatus.IN_FLIGHT],
            "compute_spent": self.compute_spent,
            "rounds": self.rounds,
        }

    def statistics(self, record: ConfigRecord) -> tuple[float, float] | None:
        """Processed ``(m_c, s2_c)`` of a configuration under the current warp, ``None`` below two
        returns (eq. 7)."""
        if record.n_incorporated < 2 or (self.warp is None and self.online_warp):
            return None
        return sample_statistics(self._processed(record.incorporated_values(), self.warp))

    @property
    def warp(self) -> FrozenWarp | None:
        """The current output warp (the last re-fit), ``None`` before the online fit or without one."""
        return self.warps[-1] if self.warps else None

    @engine_threads
    def risk_model(self) -> RiskModel | None:
        """Both GPs of the current snapshot conditioned on every configuration with ``k >= k_min`` returns."""
        if not self.snapshots:
            return None
        return self._data_model(len(self.snapshots) - 1)

    def has_data(self, record: ConfigRecord) -> bool:
        """Whether ``record`` enters the GPs: a finished initial configuration, or a BO one with
        ``k >= k_min`` incorporated returns (§1.8, partial data of a running round included)."""
        done_initial = record.phase == "initial" and record.status == "initial"
        return record.n_incorporated >= self.settings.k_min and (record.phase == "bo" or done_initial)

    def current_snapshot(self) -> ModelSnapshot | None:
        """The model the next round would start with (hyperparameters, warp, ``rho_bar^2``)."""
        if self.hyperparameters is None:
            return None
        warp_index = len(self.warps) - 1 if self.warps else None
        return ModelSnapshot(self.hyperparameters, warp_index, self.rho_bar_sq, self.rounds + 1)

    def snapshot_of(self, record: ConfigRecord) -> ModelSnapshot:
        """The snapshot every decision of ``record``'s round uses (BO rounds)."""
        if record.snapshot is None:
            raise ValueError(f"configuration {record.config_id} ({record.phase}) has no round snapshot")
        return self.snapshots[record.snapshot]

    def data_rows(self, records: list[ConfigRecord], snapshot: ModelSnapshot) -> list[tuple]:
        """``(x, m_c, s2_c, k_c)`` of ``records`` with the returns processed by ``snapshot``'s warp (eq. 7)."""
        return [self._statistics_row(record, snapshot.warp_index) for record in records]

    def build_model(self, rows: list[tuple], snapshot: ModelSnapshot) -> RiskModel:
        """Both GPs conditioned on ``rows`` with ``snapshot``'s hyperparameters and ``rho_bar^2``."""
        return RiskModel(RiskData.from_rows(rows, self.dim), snapshot.hyperparameters, self.settings,
                         snapshot.rho_bar_sq)

    @staticmethod
    def x_tensor(records: list[ConfigRecord]) -> torch.Tensor:
        """The unit-cube points of ``records`` as an ``n x d`` float64 tensor (the GPs' inputs)."""
        return torch.tensor([list(r.x) for r in records], dtype=DTYPE)

    @engine_threads
    def recommend(self) -> ConfigRecord | None:
        """The configuration to deploy, by ``settings.recommend`` (§1.10, A-21).

        ``"lcb"``: ``argmax_{c in D} LCB^MV(x_c; kappa_acq)`` (CODE-RAHBO's reporting rule). ``"posterior"``:
        ``argmax`` of the posterior MV ``mu_f - alpha max(mu_var, 0)`` over the configurations with at least
        ``min(ceil(k_max / 2), max_c k_c)`` seeds: a configuration is deployed on the evidence of its own
        seeds, and the LCB's penalty on the variance GP's uncertainty does not favour configurations that
        never learn (zero spread). ``"evidence"``: among the same configurations, ``argmax`` of the lower
        bound of MV from the configuration's own seeds (:func:`sample_mv_lower_bound`), so that a nearly
        constant G_f cannot shrink what the seeds show. Ties: the first configuration proposed.
        """
        records = [r for r in self.records if self.has_data(r)]
        model = self.risk_model()
        if not records or model is None:
            return None
        X = self.x_tensor(records)
        if self.settings.recommend == "lcb":
            return records[int(torch.argmax(model.lcb_mv(X, self.settings.kappa_acq)))]
        seeds = torch.tensor([r.n_incorporated for r in records])
        needed = min(math.ceil(self.settings.k_max / 2), int(seeds.max()))
        if self.settings.recommend == "posterior":
            score = model.posterior_mv(X)
        else:  # "evidence": the configuration's own seeds, no GP
            score = torch.tensor([sample_mv_lower_bound(self._processed(r.incorporated_values(), self.warp),
                                                        self.settings.alpha) for r in records], dtype=torch.float64)
        return records[int(torch.argmax(score.masked_fill(seeds < needed, -math.inf)))]

    @property
    def rho_bar_sq(self) -> float:
        """Variance bound of the processed returns (eq. 19's clip): the setting, else the current
        warp's Popoviciu bound (``bound^2``; 0.25 on [-0.5, 0.5], A-5)."""
        if self.settings.rho_bar_sq is not None:
            return self.settings.rho_bar_sq
        return 0.25 if self.warp is None else self.warp.variance_bound  # None: before the online fit

    def replicate_seed(self, config_id: int, seed_index: int) -> int:
        """Training seed of stream position ``seed_index`` of a configuration (31-bit)."""
        if self.settings.common_random_numbers:
            return seed_index
        state = np.random.SeedSequence([self.settings.seed, config_id, seed_index]).generate_state(1)
        return int(state[0]) & _SEED_MASK

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Exact, picklable, versioned state (plain Python containers, ``tune_risk.engine.state``).

        Models are not stored: they are a pure function of the data and a round's snapshot (warp,
        hyperparameters, ``rho_bar^2``) and are rebuilt on demand, bit for bit.
        """
        return {
            "version": STATE_VERSION,
            "settings": self.settings.to_dict(),
            "dim": self.dim,
            "pool": None if self.pool is None else self.pool.tolist(),
            "warps": [warp.state_dict() for warp in self.warps],
            "online_warp": self.online_warp,
            "snapshots": [snapshot.to_dict() for snapshot in self.snapshots],
            "records": [record.to_dict() for record in self.records],
            "runs": [run.to_list() for run in self.runs.values()],
            "n_used": self.n_used,
            "rounds": self.rounds,
            "initial_points_drawn": self.initial_points_drawn,
            "compute_spent": self.compute_spent,
            "intensifying": self.intensifying,
            "intensification_runs": self.intensification_runs,
            "intensification_done": self.intensification_done,
            "recommendations": [list(r) for r in self.recommendations],
            "lengthscale": None if self.lengthscale_adapter is None else self.lengthscale_adapter.state_dict(),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Engine:
        """Rebuild an engine from ``state_dict()`` (this version or an older one); continues exactly where it stopped."""
        state = current_state(state)
        engine = cls.__new__(cls)  # the state replaces __init__'s checks and initial design
        engine.settings = EngineSettings(**state["settings"])
        engine.dim = state["dim"]
        engine.pool = None if state["pool"] is None else np.asarray(state["pool"], dtype=np.float64)
        engine.warps = [FrozenWarp.from_state_dict(w) for w in state["warps"]]
        engine.online_warp = state["online_warp"]
        engine.snapshots = [ModelSnapshot.from_dict(s) for s in state["snapshots"]]
        engine.hyperparameters = engine.snapshots[-1].hyperparameters if engine.snapshots else None
        engine.records = [ConfigRecord.from_dict(r) for r in state["records"]]
        engine.runs = {row[0]: Run.from_list(row) for row in state["runs"]}
        engine.n_used = state["n_used"]
        engine.rounds = state["rounds"]
        engine.initial_points_drawn = state["initial_points_drawn"]
        engine.compute_spent = state["compute_spent"]
        engine.intensifying = state.get("intensifying", False)  # absent before intensification existed
        engine.intensification_runs = state.get("intensification_runs", 0)
        engine.intensification_done = state.get("intensification_done", False)
        engine.recommendations = [tuple(r) for r in state["recommendations"]]
        engine.lengthscale_adapter = EngineLengthscale.from_state_dict(state.get("lengthscale"))
        engine._reset_derived()
        return engine

    # ------------------------------------------------------------------ initial design
    def _start_initial_design(self, points: np.ndarray | None, values: list[list[float]] | None) -> None:
        points = np.zeros((0, self.dim)) if points is None else np.asarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != self.dim or not np.isfinite(points).all():
            raise ValueError(f"initial_points must be a finite (m x {self.dim}) array, got shape {points.shape}")
        if values is not None and len(values) != len(points):
            raise ValueError(f"initial_values has {len(values)} entries for {len(points)} initial_points")
        for i, point in enumerate(np.clip(points, 0.0, 1.0)):
            record = self._add_initial_record(point)
            given = [] if values is None else [float(v) for v in values[i]]
            if not all(math.isfinite(v) for v in given):
                raise ValueError(f"initial_values[{i}] contains NaN or infinite returns: {values[i]!r}")
            record.slots.extend(Slot(j) for j in range(len(record.slots), len(given)))
            for slot, value in zip(record.slots, given, strict=False):
                slot.state, slot.value = SlotState.DONE, value
            self._incorporate(record)
        for _ in range(len(points), self.settings.n_initial):
            self._add_initial_config()

    def _add_initial_config(self) -> None:
        """The next scrambled-Sobol point of the initial design (§1.11)."""
        index = self.initial_points_drawn
        self.initial_points_drawn += 1
        self._add_initial_record(sobol_points(self.dim, index + 1, self.settings.seed)[index])

    def _add_initial_record(self, point: np.ndarray) -> ConfigRecord:
        pool_index = None
        if self.pool is not None:
            pool_index = snap_to_pool(point, self.pool, self._used_pool_rows())
            point = self.pool[pool_index]
        k_init = self.settings.replicates_initial
        return self._add_record(tuple(float(v) for v in point), pool_index, "initial", k_init)

    def _fit_after_initial_design(self) -> None:
        """Fit the output warp (online mode, §1.2) and the hyperparameters (§1.4.4); first snapshot."""
        if self.online_warp:
            self._fit_warp()
        self.hyperparameters = self._fit_hyperparameters(init=None)
        self.lengthscale_adapter = EngineLengthscale.create(self)
        self._take_snapshot()
        self._note_recommendation()

    def _fit_warp(self) -> None:
        """(Re-)fit the online warp on every return of the configurations with data (§1.2)."""
        values = [v for r in self.records if self.has_data(r) for v in r.incorporated_values()]
        self.warps.append(fit_warp(np.asarray(values), bound=self.settings.warp_bound))
        if len(self.warps) > 1:
            logger.info("round %d: output warp re-fitted on %d returns in [%.6g, %.6g] (re-fit %d)",
                        self.rounds + 1, len(values), min(values), max(values), len(self.warps) - 1)

    def _fit_hyperparameters(self, init: RiskHyperparameters | None) -> RiskHyperparameters:
        """MAP fit of both GPs on the data under the current warp (§1.4.4), warm-started from ``init``."""
        rows = [self._statistics_row(r, self._warp_index()) for r in self.records if self.has_data(r)]
        return fit_risk_hyperparameters(RiskData.from_rows(rows, self.dim), self.settings, self.rho_bar_sq, init=init)

    def _warp_index(self) -> int | None:
        return len(self.warps) - 1 if self.warps else None

    def _take_snapshot(self) -> int:
        """Index of the snapshot of the current model, appended if the model changed (§1.2, §1.4.4)."""
        snapshot = self.current_snapshot()
        if not self.snapshots or not snapshot.same_model(self.snapshots[-1]):  # type: ignore[union-attr]
            self.snapshots.append(snapshot)  # type: ignore[arg-type]
        return len(self.snapshots) - 1

    # ------------------------------------------------------------------ rounds
    def _can_start_round(self) -> bool:
        if self.intensifying:
            return False
        active = sum(r.running for r in self.records)
        if active >= self.settings.max_active_configs:
            return False
        if self.pool is not None and self._used_pool_rows().all():
            return False
        budget_left = self._budget_left()
        return budget_left is None or budget_left >= self.settings.k_min

    def _round_boundary(self) -> None:
        """Everything that may change the model, here and nowhere else: the online warp is re-fitted
        when data have left its support (§1.2); the hyperparameters when ``refit="every_round"`` (A-7)
        or when the warp changed, since every target did (warm-started MAP on all data: keeping the
        old ones, or re-standardising only, lost clearly on a replay of Hartmann-6); then a lengthscale
        strategy plays (§3.10)."""
        settings = self.settings
        new_warp = self.online_warp and settings.warp_refit == "outside_support" and outside_support(
            self.warp, [v for r in self.records if self.has_data(r) for v in r.incorporated_values()])  # type: ignore[arg-type]
        if new_warp:
            self._fit_warp()
        if new_warp or (settings.refit == "every_round" and self.rounds > 0):
            self.hyperparameters = self._fit_hyperparameters(init=self.hyperparameters)
        if self.lengthscale_adapter is not None:
            self.lengthscale_adapter.before_round(self)  # theta_{t-1} played for the whole round

    def _start_round(self) -> ConfigRecord:
        """Take the round's snapshot, choose ``x_t`` (eq. 11) and fix ``B_t`` (eq. 10)."""
        settings = self.settings
        self._round_boundary()
        snapshot = self._take_snapshot()
        self.rounds += 1
        data_model = self._data_model(snapshot)
        fantasies = self._fantasy_rows(snapshot, data_model)  # pending configurations below k_min (§2.5)
        model = data_model if not fantasies else self.build_model(
            self._snapshot_rows(snapshot) + fantasies, self.snapshots[snapshot])
        if self.pool is not None:
            pool_index = argmax_pool(model, self._pool_tensor, ~self._used_pool_rows(), settings.kappa_acq)
            x = self.pool[pool_index]
        else:
            pool_index = None
            round_seed = int(np.random.SeedSequence([settings.seed, self.rounds]).generate_state(1)[0])
            x = maximize_continuous(
                model, self.dim, settings.kappa_acq, round_seed, settings.num_restarts, settings.raw_samples
            )
        first_wave = settings.k_max if settings.launch_policy == "all" else settings.k_min
        record = self._add_record(tuple(float(v) for v in x), pool_index, "bo", first_wave)
        record.snapshot = snapshot
        if settings.has_certificate:
            record.kappa_stop = self._kappa_stop()
            observed = [r for r in self.records if self.has_data(r)]
            lcb = data_model.lcb_mv(self.x_tensor(observed), record.kappa_stop)
            record.incumbent_lcb = float(lcb.max().detach())  # B_t, ERAHBO eq. 10: data only, fixed for the round
        return record

    def _kappa_stop(self) -> float:
        """``kappa_stop,t = kappa(beta_stop,max * s(tau))`` with ``tau = N_used / N_max`` (App. C.5, §1.9)."""
        settings = self.settings
        tau = 0.0 if settings.budget is None else self._charged_completed() / settings.budget
        return settings.kappa(settings.beta_stop * schedule_value(settings.beta_stop_schedule, tau, settings.schedule_param))

    # ------------------------------------------------------------------ intensification
    def _intensify(self) -> Replicate | None:
        """Launch one reserved intensification replicate, or ``None`` (none reserved, or not yet, or nothing to do).

        Incumbent intensification (``settings.intensify``), as SMAC's intensifier races its incumbent
        against challengers on more seeds, here on the MV certificate: once no BO round can start and
        none is running, each reserved run adds a replicate to the least-replicated of the three
        configurations with the highest ``LCB^MV`` (kappa_acq, eq. 24) among those with fewer than
        ``k_max`` replicates (an incumbent already at ``k_max`` is raced by its best challengers); the
        recommendation stays argmax ``LCB^MV``. Only when every evaluated configuration has ``k_max``
        replicates does the rest of the reserve go back to BO rounds.
        """
        if self.intensification_done or self.hyperparameters is None or any(
                r.running and r.phase == "bo" for r in self.records):
            return None
        raw_left = self._raw_budget_left()
        if raw_left is not None and raw_left <= 0:
            return None
        # The reserve starts intensification; once started it may use whatever budget is left (no round can).
        if self._reserve_left() <= 0 and not self.intensifying:
            return None
        record = self._intensification_target()
        if record is None:  # every top configuration has k_max replicates: give the reserve back to rounds
            self.intensification_done, self.intensifying = True, False
            return None
        self.intensifying = True
        self.intensification_runs += 1
        slot = Slot(len(record.slots))
        record.slots.append(slot)
        return self._launch(record, slot)

    def _intensification_target(self) -> ConfigRecord | None:
        open_ = [r for r in self.records if self.has_data(r) and len(r.slots) < self.settings.k_max]
        if not open_:
            return None
        lcb = self.risk_model().lcb_mv(self.x_tensor(open_), self.settings.kappa_acq).detach()  # type: ignore[union-attr]
        top = [open_[i] for i in torch.argsort(lcb, descending=True)[:_INTENSIFY_TOP].tolist()]
        return min(top, key=lambda r: len(r.slots))

    # ------------------------------------------------------------------ launching
    def _launch_order(self) -> list[ConfigRecord]:
        """Configurations in launch priority: BO rounds still short of ``k_min`` launched replicates
        first, then proposal order. A round starts only with ``k_min`` budget left (§1.10); in the
        asynchronous mode another configuration must not take that budget before the new round
        has launched its first ``k_min`` replicates, or the round ends below ``k_min``."""
        k_min = self.settings.k_min

        def short_of_k_min(record: ConfigRecord) -> bool:
            started = sum(slot.state is not SlotState.QUEUED for slot in record.slots)
            return record.running and record.phase == "bo" and started < k_min

        running = [record for record in self.records if record.running]  # only these can launch
        return sorted(running, key=lambda record: not short_of_k_min(record))

    def _launch_queued(self, record: ConfigRecord) -> Replicate | None:
        if not record.running:
            return None
        for slot in record.slots:
            if slot.state is SlotState.QUEUED and slot.replicate_index < record.target:
                if not self._budget_allows_launch(record):
                    return None
                return self._launch(record, slot)
        return None

    def _launch(self, record: ConfigRecord, slot: Slot) -> Replicate:
        run = Run(len(self.runs), record.config_id, slot.replicate_index, record.next_seed_index)
        record.next_seed_index += 1
        self.runs[run.run_id] = run
        slot.state, slot.run_id, slot.seed_index = SlotState.LAUNCHED, run.run_id, run.seed_index
        return Replicate(
            run.run_id, record.config_id, slot.replicate_index, run.seed_index,
            self.replicate_seed(record.config_id, run.seed_index), record.x, record.pool_index,
        )

    def _add_record(self, x: tuple[float, ...], pool_index: int | None, phase: str, target: int) -> ConfigRecord:
        n_slots = self.settings.replicates_initial if phase == "initial" else self.settings.k_max
        record = ConfigRecord(
            config_id=len(self.records), x=x, pool_index=pool_index, phase=phase,
            round=self.rounds if phase == "bo" else 0, target=target,
            slots=[Slot(i) for i in range(n_slots)],
        )
        self.records.append(record)
        return record

    # ------------------------------------------------------------------ incorporation and stopping
    def _incorporate(self, record: ConfigRecord) -> None:
        """Incorporate buffered results in replicate order, checking the stop rule after each (§2.2)."""
        while record.n_incorporated < len(record.slots) and record.slots[record.n_incorporated].state is SlotState.DONE:
            slot = record.slots[record.n_incorporated]
            if slot.run_id is not None:  # None: a return given by the user (initial_values)
                self.runs[slot.run_id].status = RunStatus.USED
            record.n_incorporated += 1
            if record.phase == "bo" or self.settings.charge_initial:
                self.n_used += 1
            if not record.running:  # late_results="append" or intensification: k grows after the round
                self._note_recommendation()  # the deployed configuration must see these seeds too
                continue
            if record.phase == "initial":
                if record.n_incorporated == len(record.slots):
                    self._finish(record, "initial")
            else:
                self._check_stop(record)
            if not record.running:
                self._after_stop(record)

    def _check_stop(self, record: ConfigRecord) -> None:
        """ERAHBO eq. 12 with ``B_t`` fixed: stop at the first certified ``k >= k_min`` (§1.8); methods
        without a certificate (RAHBO, GP-UCB) stop at ``k_max``."""
        k = record.n_incorporated
        settings = self.settings
        if k < settings.k_min:
            return
        if settings.has_certificate and self._certified(record):
            self._finish(record, "certified")
        elif k >= settings.k_max:
            self._finish(record, "k_max")
        elif self._budget_exhausted_for(record):
            self._finish(record, "budget")
        elif k >= record.target:
            record.target = self._next_target(k)

    def _certified(self, record: ConfigRecord) -> bool:
        """``UCB^MV(x_t; kappa_stop,t) <= B_t`` on the data, ``x_t``'s own ``k`` returns included, under
        the round's snapshot (eq. 12, §1.8 step 3); appends ``(k, U_k, sigma_f, sigma_var)`` to the trace."""
        model = self._data_model(record.snapshot)  # type: ignore[arg-type]
        mu_f, sd_f, mu_var, sd_var = model.predict(self.x_tensor([record]))
        ucb_mv = float(mv_bounds(mu_f, sd_f, mu_var, sd_var, record.kappa_stop, self.settings.alpha)[0][0])  # type: ignore[arg-type]
        record.trace.append((record.n_incorporated, ucb_mv, float(sd_f[0]), float(sd_var[0])))
        return ucb_mv <= record.incumbent_lcb  # type: ignore[operator]

    def _next_target(self, k: int) -> int:
        """Launch policy (§2.3): doubling waves, a sliding window, or everything at once."""
        settings = self.settings
        if settings.launch_policy == "window":
            return min(settings.k_max, k + settings.window)
        if settings.launch_policy == "all":
            return settings.k_max
        return min(settings.k_max, 2 * k)

    def _finish(self, record: ConfigRecord, status: str) -> None:
        record.status = status
        record.closed_after_runs = len(self.runs)
        if status != "initial":
            self._log_finished(record)
            if self.lengthscale_adapter is not None:
                self.lengthscale_adapter.after_round(self, record)
            if record.phase == "bo":
                self._note_recommendation()

    def _note_recommendation(self) -> None:
        """Log ``recommend(D)`` once a round is over (§1.12: regret of the recommended configuration)."""
        recommended = self.recommend()
        if recommended is not None:
            self.recommendations.append((self.n_used, recommended.config_id))

    def _after_stop(self, record: ConfigRecord) -> None:
        """Cancel (or, in append mode, keep) the replicates of a stopped configuration (§2.4)."""
        keep = record.n_incorporated
        if self.settings.late_results == "append" and record.status != "failed":
            # in-flight replicates finish and extend k_t, in replicate order, up to the first gap
            while keep < len(record.slots) and record.slots[keep].state is not SlotState.QUEUED:
                keep += 1
        self._truncate(record, keep)
        self._incorporate(record)

    def _truncate(self, record: ConfigRecord, keep: int) -> None:
        """Drop slots from ``keep`` on: launched runs are to be cancelled, buffered results discarded."""
        for slot in record.slots[keep:]:
            if slot.state is SlotState.LAUNCHED:
                self.runs[slot.run_id].status = RunStatus.CANCEL_REQUESTED  # type: ignore[index]
            elif slot.state is SlotState.DONE:
                self.runs[slot.run_id].status = RunStatus.DISCARDED  # type: ignore[index]
        del record.slots[keep:]

    def _close_starved_records(self) -> None:
        """Finish running configurations that can never launch or incorporate another replicate."""
        for record in self.records:
            if not record.running or any(s.state is SlotState.LAUNCHED for s in record.slots):
                continue
            budget_left = self._budget_left()
            if budget_left is not None and budget_left <= 0 and not self._budget_allows_launch(record):
                self._finish(record, "budget" if record.phase == "bo" else "failed")
                self._after_stop(record)

    def _handle_failure(self, record: ConfigRecord, slot: Slot, run: Run) -> None:
        """Failure policy (module docstring): retry with a fresh seed, then mark the config failed."""
        run.status = RunStatus.FAILED
        record.failures += 1
        slot.state, slot.run_id = SlotState.QUEUED, None
        if not record.running:  # append mode: a late run failed; later replicates cannot be appended
            self._truncate(record, slot.replicate_index)
            return
        if record.failures > self.settings.max_failures_per_config:
            logger.warning(
                "configuration %d failed %d runs (max_failures_per_config=%d): marked failed",
                record.config_id, record.failures, self.settings.max_failures_per_config,
            )
            self._finish(record, "failed")
            self._after_stop(record)
            if record.phase == "initial" and not (self.pool is not None and self._used_pool_rows().all()):
                self._add_initial_config()

    # ------------------------------------------------------------------ budget
    def _charged_completed(self) -> int:
        """Charged runs that are over (§2.2: ``tau`` counts completed, charged runs)."""
        if self.settings.budget_unit == "samples":
            return self.n_used
        return len(self.runs) - len(self.in_flight_runs())

    def _budget_left(self) -> int | None:
        """Budget for BO rounds: not yet charged, reserved by in-flight runs or kept for intensification."""
        left = self._raw_budget_left()
        return None if left is None else left - self._reserve_left()

    def _reserve_left(self) -> int:
        if self.intensification_done:
            return 0
        return max(0, self.settings.intensify - self.intensification_runs)

    def _raw_budget_left(self) -> int | None:
        """Budget not yet charged or reserved by in-flight runs (``None``: unbounded)."""
        if self.settings.budget is None:
            return None
        if self.settings.budget_unit == "runs":
            return self.settings.budget - len(self.runs)
        reserved = sum(
            1 for run in self.runs.values()
            if run.status in (RunStatus.IN_FLIGHT, RunStatus.BUFFERED)
            and (self.records[run.config_id].phase == "bo" or self.settings.charge_initial)
        )
        return self.settings.budget - self.n_used - reserved

    def _budget_allows_launch(self, record: ConfigRecord) -> bool:
        budget_left = self._budget_left()
        if budget_left is None:
            return True
        charged = self.settings.budget_unit == "runs" or record.phase == "bo" or self.settings.charge_initial
        return budget_left > 0 or not charged

    def _budget_exhausted_for(self, record: ConfigRecord) -> bool:
        """No further replicate of ``record`` can ever launch and none of its runs is pending:
        neither in flight nor already arrived out of order (buffered results are within budget
        and are incorporated next, exactly as the sequential run would, §2.6)."""
        budget_left = self._budget_left()
        if budget_left is None or budget_left > 0:
            return False
        return all(s.state is SlotState.QUEUED for s in record.slots[record.n_incorporated:])

    # ------------------------------------------------------------------ GP data
    def _processed(self, values: list[float], warp: FrozenWarp | None) -> np.ndarray:
        array = np.asarray(values, dtype=np.float64)
        return array if warp is None else np.asarray(warp(array), dtype=np.float64)

    def _statistics_row(self, record: ConfigRecord, warp_index: int | None) -> tuple:
        key = (record.config_id, record.n_incorporated, warp_index)
        row = self._row_cache.get(key)
        if row is None:
            warp = None if warp_index is None else self.warps[warp_index]
            mean, variance = sample_statistics(self._processed(record.incorporated_values(), warp))
            row = self._row_cache[key] = (record.x, mean, variance, record.n_incorporated)
        return row

    def _snapshot_rows(self, snapshot: int) -> list[tuple]:
        """Data rows of every configuration with data, under snapshot ``snapshot``'s warp."""
        return self.data_rows([r for r in self.records if self.has_data(r)], self.snapshots[snapshot])

    def _data_model(self, snapshot: int) -> RiskModel:
        """Both GPs of snapshot ``snapshot`` on the data alone (no fantasy). The last one is kept: a
        round's last stop check, its recommendation and the next round's ``B_t`` share it."""
        rows = self._snapshot_rows(snapshot)
        key = (snapshot, tuple(rows))
        if self._model_memo is None or self._model_memo[0] != key:
            self._model_memo = (key, self.build_model(rows, self.snapshots[snapshot]))
        return self._model_memo[1]

    def _fantasy_rows(self, snapshot: int, data_model: RiskModel) -> list[tuple]:
        """Kriging-believer rows ``(x, mu_f(x), max(mu_var(x), 0), k_min)`` of the running BO
        configurations below ``k_min`` (§2.5): they steer the choice of ``x_t`` away from pending
        configurations, and nothing else (never ``B_t`` or a stop check)."""
        pending = [r for r in self.records if r.running and r.phase == "bo" and not self.has_data(r)]
        if not pending or not self._snapshot_rows(snapshot):
            return []
        mu_f, _, mu_var, _ = data_model.predict(self.x_tensor(pending))
        return [(record.x, m, max(v, 0.0), self.settings.k_min)
                for record, m, v in zip(pending, mu_f.tolist(), mu_var.tolist(), strict=True)]

    def _used_pool_rows(self) -> np.ndarray:
        used = np.zeros(0 if self.pool is None else self.pool.shape[0], dtype=bool)
        for record in self.records:
            if record.pool_index is not None:
                used[record.pool_index] = True
        return used

    def _run(self, run_id: int) -> Run:
        try:
            return self.runs[run_id]
        except (KeyError, TypeError):
            raise ValueError(f"unknown run_id={run_id!r}: it was never returned by ask()") from None

    def _log_finished(self, record: ConfigRecord) -> None:
        stats = self.statistics(record)
        mean, variance = stats if stats is not None else (float("nan"), float("nan"))
        why = {
            "certified": f"UCB_MV={record.trace[-1][1]:.4g} <= B_t={record.incumbent_lcb:.4g}" if record.trace else "",
            "k_max": f"reached k_max={self.settings.k_max}",
            "budget": "budget exhausted",
            "failed": f"{record.failures} failed runs",
            "stopped": "a replicate was stopped early by the scheduler (censored)",
        }.get(record.status, "")
        logger.info(
            "config %d (round %d) finished: k=%d mean=%.4g var=%.4g MV=%.4g — %s (%s)",
            record.config_id, record.round, record.n_incorporated, mean, variance,
            mean - self.settings.alpha * variance, record.status, why,
        )

    def iter_records(self) -> Iterator[ConfigRecord]:
        """Configurations in the order they were proposed."""
        return iter(self.records)


def _check_engine_settings(settings: EngineSettings, warp: FrozenWarp | None) -> None:
    """Settings that are valid on their own but not for an engine with this warp and budget."""
    if warp is None and settings.warp == "none" and settings.rho_bar_sq is None:
        raise ValueError(
            "warp='none' uses returns as given, but no variance bound is known for them: give "
            "rho_bar_sq (an upper bound on the variance of one configuration's returns, eq. 19's clip; "
            "0.25 if returns lie in [-0.5, 0.5]), or a fitted warp (Engine(warp=...)), or warp='online'"
        )
    if settings.beta_stop_schedule != "constant" and settings.budget is None:
        raise ValueError(
            f"beta_stop_schedule={settings.beta_stop_schedule!r} is a function of tau = N_used / N_max and "
            "needs a budget; without one kappa_stop would stay 0 for the whole run. Give budget=..., or "
            "use beta_stop_schedule='constant'"
        )
