"""Replay an offline table of RL returns through the engine: the ERAHBO paper's benchmark protocol.

docs/algorithms.md §1.11-1.13. A *table* holds the returns of every configuration on every seed.
A replay of method ``m``, repetition ``r``:

* acquisition over the table's rows (exact argmax over unevaluated rows, A-10);
* output warp fitted once on the pooled table (§1.2), so every method optimises the same MV;
* initial design: scrambled Sobol (seed ``r``) snapped to the rows, shared by all methods (A-9);
* seeds without replacement: configuration ``c`` of repetition ``r`` uses the seed permutation
  ``perm_{r,c}``, replicate ``i`` reading seed ``perm_{r,c}[i]`` for every method (common random
  numbers across methods);
* budget: ``N_max`` incorporated BO replicates, the initial design not charged (A-16).

Two paths make the same decisions for the same seed (a test checks):

* ``replay_direct``: a discrete-event loop with ``W`` simulated workers (``tune_risk.engine.simulate``);
  run times come from the table's ``wall_time`` when present, else a log-normal(0, 0.5) per
  (configuration, seed) draw (deterministic): long enough tails to reorder results;
* ``replay_tune``: a real Ray Tune run of ``RiskAwareSearch`` + ``ReplicateScheduler`` whose
  trainable returns the table's return for (row, seed).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tune_risk.engine.core import Engine
from tune_risk.engine.records import Replicate, sample_mean_variance
from tune_risk.engine.simulate import simulate
from tune_risk.offline.methods import PAPER_METHODS, WARPS, check_replayable, method_settings, parse_methods
from tune_risk.risk.warping import FrozenWarp, fit_warp
from tune_risk.settings import EngineSettings

if TYPE_CHECKING:
    from tune_risk.tune.searcher import RiskAwareSearch

ROW_KEY = "table_row"
__all__ = ["PAPER_METHODS", "ROW_KEY", "WARPS", "ReplayResult", "ReplayTask", "bo_runs_launched", "check_budget",
           "method_settings", "parse_methods", "replay_direct", "replay_searcher", "replay_trainable", "replay_tune",
           "rounds_rows", "runs_rows", "seed_permutation"]  # method names live in tune_risk.offline.methods (torch-free)


def seed_permutation(repeat: int, row: int, n_seeds: int) -> np.ndarray:
    """``perm_{r,c}``: the seed order of configuration ``row`` in repetition ``repeat`` (§1.11)."""
    return np.random.default_rng([repeat, row, 0x5EED]).permutation(n_seeds)


@dataclass
class ReplayTask:
    """What a replay needs from a table: unit points, returns, run times and the pooled warp.

    ``test_seeds = N > 0`` reserves the last ``N`` seed columns of the table as *held-out* seeds
    (§1.15): no method reads them (:meth:`search_return` serves the other columns only, and the
    methods' pooled warp :attr:`search_warp` is fitted without them); the recommended configuration of
    every method is scored on them (:attr:`heldout_mv`, :attr:`heldout_mean`). ``warp`` and ``true_mv``,
    the scoring of the best configuration evaluated, always use every seed.
    """

    name: str
    points: np.ndarray  # (n_configs, d) unit cube
    returns: np.ndarray  # (n_configs, n_seeds) raw returns
    wall_time: np.ndarray | None = None  # (n_configs, n_seeds) seconds
    warp: FrozenWarp | None = None  # None: fitted here on the whole table
    true_mv: np.ndarray | None = None  # None: computed here from the warp
    test_seeds: int = 0

    def __post_init__(self) -> None:
        n_seeds = self.returns.shape[1]
        if isinstance(self.test_seeds, bool) or not isinstance(self.test_seeds, int | np.integer) \
                or not 0 <= self.test_seeds <= n_seeds - 2:
            raise ValueError(f"test_seeds={self.test_seeds!r}: table {self.name!r} has {n_seeds} seeds; hold out "
                             f"0..{n_seeds - 2} of them (at least 2 must remain to search with)")
        if self.warp is None:
            self.warp = fit_warp(self.returns)  # pooled over the whole table (§1.2, A-13)
        if self.true_mv is None:
            self.true_mv = sample_mean_variance(self.warp(self.returns))  # §1.12, alpha = 1
        self.search_columns = np.arange(n_seeds - self.test_seeds)
        self.test_columns = np.arange(n_seeds - self.test_seeds, n_seeds)
        search = np.array(self.returns[:, self.search_columns], dtype=np.float64)
        search.setflags(write=False)
        self._search_returns = search  # the only returns a method ever reads
        self.search_warp = self.warp if self.test_seeds == 0 else fit_warp(search)
        if self.test_seeds:
            held_out = np.asarray(self.warp(self.returns[:, self.test_columns]), dtype=np.float64)
            self.heldout_mean = held_out.mean(axis=1)
            self.heldout_mv = sample_mean_variance(held_out)  # alpha = 1, as true_mv

    @classmethod
    def from_table(cls, table: Any, test_seeds: int = 0) -> ReplayTask:
        """From a ``tune_risk.offline.OfflineTable``, reusing the table's pooled warp and true MV."""
        return cls(table.name, table.unit_points(), table.returns, table.wall_time, warp=table.warp(),
                   true_mv=table.true_mv(), test_seeds=test_seeds)

    @property
    def n_seeds(self) -> int:
        return self.returns.shape[1]

    @property
    def n_search_seeds(self) -> int:
        """Seed columns the methods may read (all but the held-out ones)."""
        return len(self.search_columns)

    def seed_of(self, repeat: int, row: int, seed_index: int) -> int:
        """Column of the table read by replicate ``seed_index`` of ``row``: ``perm_{r,c}`` over the search seeds."""
        if seed_index >= self.n_search_seeds:
            held = f" ({self.test_seeds} more are held out)" if self.test_seeds else ""
            raise ValueError(f"table {self.name!r} has {self.n_search_seeds} seeds to search with{held}; "
                             f"replicate {seed_index} of row {row} needs more")
        return int(self.search_columns[seed_permutation(repeat, row, self.n_search_seeds)[seed_index]])

    def search_return(self, repeat: int, row: int, seed_index: int) -> tuple[int, float]:
        """``(column, return)`` of replicate ``seed_index`` of ``row``, read from the search seeds only."""
        column = self.seed_of(repeat, row, seed_index)
        return column, float(self._search_returns[row, column])  # search columns are 0..n_search-1

    def run_time(self, repeat: int, row: int, column: int) -> float:
        if self.wall_time is not None:
            return float(self.wall_time[row, column])
        return float(np.random.default_rng([row, column, 0xC0FFEE]).lognormal(0.0, 0.5))


@dataclass
class ReplayResult:
    """One replay: the final engine and the compute spent when each evaluation was incorporated."""

    task: str
    method: str
    repeat: int
    engine: Engine
    compute_at_eval: list[float]
    wall_time: float


def check_budget(task: ReplayTask, settings: EngineSettings) -> None:
    """Bad input: enough seeds and configurations in the table, and a budget of at least one round."""
    check_replayable(task.name, task.returns.shape[0], task.n_seeds, settings)


def replay_direct(task: ReplayTask, method: str, repeat: int, budget: int, workers: int = 1,
                  warp: str = "pooled", **overrides: Any) -> ReplayResult:
    """Replay ``method`` on ``task`` with ``workers`` simulated workers (decision-equivalent mode).

    ``warp``: ``"pooled"`` (the table's warp, the paper's protocol) or ``"online"`` (fitted by the
    engine on the initial design, as in live use); regret is always measured on the pooled warp.
    """
    settings = method_settings(method, budget, seed=repeat, warp=warp, **overrides)
    check_budget(task, settings)
    engine = Engine(settings, pool=task.points, warp=task.search_warp if warp == "pooled" else None)
    compute: list[float] = []

    def evaluate(replicate: Replicate) -> tuple[float, float]:
        column, value = task.search_return(repeat, replicate.pool_index, replicate.seed)  # type: ignore[arg-type]
        return value, task.run_time(repeat, replicate.pool_index, column)

    def on_result(engine: Engine) -> None:
        while len(compute) < engine.n_used:
            compute.append(bo_runs_launched(engine))

    result = simulate(engine, evaluate, workers=workers, on_result=on_result)
    return ReplayResult(task.name, method, repeat, engine, compute, result.wall_time)


def bo_runs_launched(engine: Engine) -> float:
    """Replicate runs launched for BO configurations (cancelled ones included)."""
    return float(sum(1 for run in engine.runs.values() if engine.records[run.config_id].phase == "bo"))


def replay_trainable(task: ReplayTask, repeat: int, metric: str = "return", seed_key: str = "seed"):
    """A Tune function trainable returning the table's return for ``(config[ROW_KEY], config[seed_key])``.

    Under common random numbers the searcher's seed is the replicate's seed index; the trainable maps
    it through the repetition's seed permutation, exactly as ``replay_direct`` does.
    """
    def trainable(config: dict) -> None:
        from ray import tune

        column, value = task.search_return(repeat, int(config[ROW_KEY]), int(config[seed_key]))
        tune.report({metric: value, "table_seed": column})

    return trainable


def replay_tune(task: ReplayTask, space: dict, configs: list[dict], method: str, repeat: int, budget: int,
                workers: int = 1, storage_path: str | None = None, warp: str = "pooled",
                seed_key: str = "seed", **overrides: Any) -> ReplayResult:
    """Replay through Ray Tune (``RiskAwareSearch`` + ``ReplicateScheduler``) on the task's rows.

    ``space`` is the table's Tune search space and ``configs[i]`` row ``i``'s hyperparameters (they
    must encode to ``task.points``); the searcher proposes rows (candidates) and each trial reads its
    return from the table; ``seed_key`` is the config key of the training seed. Ray must be
    initialised by the caller.
    """
    from ray import tune

    from tune_risk.tune.scheduler import ReplicateScheduler

    settings = method_settings(method, budget, seed=repeat, warp=warp, **overrides)
    check_budget(task, settings)
    searcher = replay_searcher(task, space, configs, settings, warp, seed_key)
    max_runs = settings.n_initial * settings.replicates_initial + budget * 4  # generous; FINISHED ends it
    tuner = tune.Tuner(
        replay_trainable(task, repeat, seed_key=seed_key),
        tune_config=tune.TuneConfig(
            search_alg=searcher, scheduler=ReplicateScheduler(searcher), num_samples=max_runs,
            max_concurrent_trials=workers, reuse_actors=True,
        ),
        run_config=tune.RunConfig(storage_path=storage_path, verbose=0, name=f"replay-{task.name}-{method}-{repeat}"),
    )
    tuner.fit()
    engine = searcher.engine
    compute = [float("nan")] * engine.n_used  # Tune's timing is not the simulated clock
    return ReplayResult(task.name, method, repeat, engine, compute, float("nan"))


def replay_searcher(task: ReplayTask, space: dict, configs: list[dict], settings: EngineSettings, warp: str = "pooled",
                    seed_key: str = "seed") -> RiskAwareSearch:
    """The ``RiskAwareSearch`` of ``replay_tune``: its engine runs with exactly ``settings`` (those of
    ``replay_direct``), proposes the table's rows (candidates, ``config[ROW_KEY]`` = row) and gets the
    table's pooled warp (``warp="pooled"``) or fits its own (``"online"``)."""
    from tune_risk.tune.searcher import RiskAwareSearch

    candidates = [{**config, ROW_KEY: i} for i, config in enumerate(configs)]
    return RiskAwareSearch.from_settings(settings, space, metric="return", mode="max", candidates=candidates,
                                         warp=task.search_warp if warp == "pooled" else None, seed_key=seed_key)


def runs_rows(result: ReplayResult, task: ReplayTask) -> list[dict[str, Any]]:
    """Rows of ``runs.csv``: one per evaluation ``n_eval = 1..N_used`` (§1.12, A-15).

    ``regret`` is the simple MV regret of the best configuration evaluated so far, the initial
    design included, a configuration counting from its first BO replicate;
    ``normalised_regret = regret / r0`` with ``r0 = MV* - mean MV(initial design)``;
    ``recommended_regret`` (and ``normalised_recommended_regret``) is the regret of ``recommend(D)``
    (``argmax LCB^MV``, CODE-RAHBO's reporting rule) of the last round completed by ``n_eval``, the
    initial design's before the first; ``cumulative_regret = sum_i (MV* - MV(x_i))`` over BO
    evaluations (eq. 6, sample count) and ``cumulative_regret_with_initial`` adds the initial
    design's replicates; ``compute`` = BO replicate runs launched so far, cancelled ones included;
    ``config_row`` is the configuration evaluated at ``n_eval``. Rows follow proposal order, which is
    the order of evaluations with one active configuration (the replay's mode). With held-out seeds
    (``task.test_seeds > 0``) each row also has the :func:`heldout_columns`.
    """
    engine = result.engine
    initial = [r for r in engine.records if r.phase == "initial" and r.status == "initial"]
    recommended = _recommended_by_evaluation(engine)
    initial_runs = sum(1 for run in engine.runs.values() if engine.records[run.config_id].phase == "initial")
    seeds = {r.config_id: r.n_incorporated for r in initial}
    trace = EvaluationTrace([r.pool_index for r in initial],
                            sum(r.n_incorporated * (task.true_mv.max() - task.true_mv[r.pool_index]) for r in initial))
    for record in engine.records:
        if record.phase != "bo":
            continue
        for i in range(record.n_incorporated):
            n = len(trace.rows) + 1
            seeds[record.config_id] = seeds.get(record.config_id, 0) + 1
            chosen = engine.records[recommended(n)]
            compute = result.compute_at_eval[n - 1] if n <= len(result.compute_at_eval) else float("nan")
            trace.add(record.pool_index, i == 0, chosen.pool_index, seeds.get(chosen.config_id, 0),
                      compute, initial_runs + compute)
    return trace.rows_for(result.task, result.method, result.repeat, task)


@dataclass
class EvaluationTrace:
    """A replay's evaluations in order, whatever ran them (the engine or a peer), for ``runs.csv``.

    ``initial_rows``: the shared initial design's rows (they set ``r0`` and count towards the best
    evaluated from the start when ``initial_counts``); ``initial_cumulative``: its cumulative regret.
    """

    initial_rows: list[int]
    initial_cumulative: float = 0.0
    initial_counts: bool = True
    rows: list[int] = field(default_factory=list)
    first: list[bool] = field(default_factory=list)
    recommended: list[int] = field(default_factory=list)
    recommended_seeds: list[int] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)
    seed_runs: list[float] = field(default_factory=list)

    def add(self, row: int, first: bool, recommended: int, recommended_seeds: int, compute: float,
            seed_runs: float) -> None:
        """One evaluation of ``row`` (``first``: the configuration's first), and the recommendation after it."""
        for name, value in (("rows", row), ("first", first), ("recommended", recommended),
                            ("recommended_seeds", recommended_seeds), ("compute", compute),
                            ("seed_runs", seed_runs)):
            getattr(self, name).append(value)

    def rows_for(self, table: str, method: str, repeat: int, task: ReplayTask) -> list[dict[str, Any]]:
        """The ``runs.csv`` rows (columns in :func:`runs_rows`)."""
        mv = task.true_mv
        mv_star = float(mv.max())
        r0 = mv_star - float(mv[self.initial_rows].mean())
        best = float(mv[self.initial_rows].max()) if self.initial_counts else -np.inf
        cumulative, out = 0.0, []
        for n, (row, first, chosen) in enumerate(zip(self.rows, self.first, self.recommended, strict=True), start=1):
            mv_row = float(mv[row])
            if first:
                best = max(best, mv_row)
            cumulative += mv_star - mv_row
            recommended_regret = mv_star - float(mv[chosen])
            entry = {
                "table": table, "method": method, "repeat": repeat, "n_eval": n, "config_row": row,
                "regret": mv_star - best, "normalised_regret": (mv_star - best) / r0 if r0 > 0 else 0.0,
                "recommended_regret": recommended_regret,
                "normalised_recommended_regret": recommended_regret / r0 if r0 > 0 else 0.0,
                "cumulative_regret": cumulative,
                "cumulative_regret_with_initial": self.initial_cumulative + cumulative,
                "compute": self.compute[n - 1],
            }
            if task.test_seeds:
                entry.update(heldout_columns(task, chosen, self.recommended_seeds[n - 1], self.seed_runs[n - 1]))
            out.append(entry)
        return out


def heldout_columns(task: ReplayTask, row: int, seeds: int, seed_runs: float) -> dict[str, Any]:
    """The held-out columns of a ``runs.csv`` row whose recommendation is ``row`` (§1.15).

    ``recommended_row`` and ``recommended_seeds`` (the seeds the method has seen of it);
    ``heldout_mv_regret = max_c MV_test(c) - MV_test(row)`` and ``heldout_mean_regret`` likewise on the
    mean alone (the risk-neutral view), both on the pooled warp of the whole table over the held-out
    seeds; ``normalised_...``: divided by the gap between the best and the median configuration on the
    same seeds (0 = the best configuration, 1 = the median one); ``seed_runs``: every seed-run spent
    so far, the initial design and cancelled runs included.
    """
    out: dict[str, Any] = {"recommended_row": int(row), "recommended_seeds": int(seeds), "seed_runs": seed_runs}
    for view, values in (("mv", task.heldout_mv), ("mean", task.heldout_mean)):
        gap = float(values.max() - values[int(row)])
        scale = float(values.max() - np.median(values))
        out[f"heldout_{view}_regret"] = gap
        out[f"normalised_heldout_{view}_regret"] = gap / scale if scale > 0 else 0.0
    return out


def peer_runs_rows(run: Any, task: ReplayTask, initial_rows: list[int]) -> list[dict[str, Any]]:
    """``runs.csv`` rows of a peer replay (:class:`~tune_risk.offline.peers.PeerRun`): one per seed-run.

    A peer has no initial design: its best evaluated configuration counts from its first seed-run and
    ``cumulative_regret_with_initial = cumulative_regret``; ``initial_rows`` (the shared design of the
    repetition) only set ``r0``, so normalised regrets share one scale across methods; ``compute`` =
    seed-runs so far.
    """
    trace = EvaluationTrace(initial_rows, 0.0, initial_counts=False)
    seen: set[int] = set()
    for n, (row, chosen, seeds) in enumerate(zip(run.rows, run.recommended, run.seeds_of_recommended, strict=True),
                                              start=1):
        trace.add(row, row not in seen, chosen, seeds, float(n), float(n))
        seen.add(row)
    return trace.rows_for(task.name, run.method, run.repeat, task)


def peer_rounds_rows(run: Any, task: ReplayTask, repeat_k: int) -> list[dict[str, Any]]:
    """``rounds.csv`` rows of a peer: one per suggestion, ``k`` its seed-runs; ``stop_reason`` is ``k_max``
    when all ``repeat_k`` repeats of ``Repeater`` ran, ``budget`` when the budget cut the group short;
    ``B_t`` is empty and ``snap_distance`` is the suggestion's distance to its table row (unit cube)."""
    return [{"table": task.name, "method": run.method, "repeat": run.repeat, "round": index, "config_row": row,
             "k": k, "stop_reason": "k_max" if k >= repeat_k else "budget", "B_t": float("nan"),
             "mv_true": float(task.true_mv[row]), "snap_distance": distance}
            for index, (row, k, distance) in enumerate(run.groups)]


def _recommended_by_evaluation(engine: Engine):
    """``n -> config id`` of the recommendation logged last with at most ``n`` BO evaluations made."""
    charged_initial = engine.settings.charge_initial and engine.settings.budget_unit == "samples"
    offset = sum(r.n_incorporated for r in engine.records if r.phase == "initial") if charged_initial else 0
    evaluations = [n_used - offset for n_used, _ in engine.recommendations]  # non-decreasing

    def recommended(n: int) -> int:
        return engine.recommendations[bisect.bisect_right(evaluations, n) - 1][1]

    return recommended


def rounds_rows(result: ReplayResult, task: ReplayTask) -> list[dict[str, Any]]:
    """Rows of ``rounds.csv``: one per BO round (configuration), with its ``k`` and stop reason."""
    return [
        {
            "table": result.task, "method": result.method, "repeat": result.repeat, "round": record.round,
            "config_row": record.pool_index, "k": record.n_incorporated, "stop_reason": record.status,
            "B_t": record.incumbent_lcb, "mv_true": float(task.true_mv[record.pool_index]),
            "snap_distance": 0.0,  # the engine proposes table rows exactly
        }
        for record in result.engine.records
        if record.phase == "bo"
    ]
