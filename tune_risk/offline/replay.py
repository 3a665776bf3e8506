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
from dataclasses import dataclass
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
    """What a replay needs from a table: unit points, returns, run times and the pooled warp."""

    name: str
    points: np.ndarray  # (n_configs, d) unit cube
    returns: np.ndarray  # (n_configs, n_seeds) raw returns
    wall_time: np.ndarray | None = None  # (n_configs, n_seeds) seconds
    warp: FrozenWarp | None = None  # None: fitted here on the whole table
    true_mv: np.ndarray | None = None  # None: computed here from the warp

    def __post_init__(self) -> None:
        if self.warp is None:
            self.warp = fit_warp(self.returns)  # pooled over the whole table (§1.2, A-13)
        if self.true_mv is None:
            self.true_mv = sample_mean_variance(self.warp(self.returns))  # §1.12, alpha = 1

    @classmethod
    def from_table(cls, table: Any) -> ReplayTask:
        """From a ``tune_risk.offline.OfflineTable``, reusing the table's pooled warp and true MV."""
        return cls(table.name, table.unit_points(), table.returns, table.wall_time, warp=table.warp(),
                   true_mv=table.true_mv())

    @property
    def n_seeds(self) -> int:
        return self.returns.shape[1]

    def seed_of(self, repeat: int, row: int, seed_index: int) -> int:
        """Column of the table read by replicate ``seed_index`` of ``row``."""
        if seed_index >= self.n_seeds:
            raise ValueError(
                f"table {self.name!r} has {self.n_seeds} seeds; replicate {seed_index} of row {row} needs more"
            )
        return int(seed_permutation(repeat, row, self.n_seeds)[seed_index])

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
    engine = Engine(settings, pool=task.points, warp=task.warp if warp == "pooled" else None)
    compute: list[float] = []

    def evaluate(replicate: Replicate) -> tuple[float, float]:
        column = task.seed_of(repeat, replicate.pool_index, replicate.seed)  # type: ignore[arg-type]
        return float(task.returns[replicate.pool_index, column]), task.run_time(repeat, replicate.pool_index, column)

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
    returns = task.returns
    n_seeds = task.n_seeds

    def trainable(config: dict) -> None:
        from ray import tune

        row, seed_index = int(config[ROW_KEY]), int(config[seed_key])
        column = int(np.random.default_rng([repeat, row, 0x5EED]).permutation(n_seeds)[seed_index])
        tune.report({metric: float(returns[row, column]), "table_seed": column})

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
                                         warp=task.warp if warp == "pooled" else None, seed_key=seed_key)


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
    the order of evaluations with one active configuration (the replay's mode).
    """
    engine, mv = result.engine, task.true_mv
    mv_star = float(mv.max())
    initial = [r for r in engine.records if r.phase == "initial" and r.status == "initial"]
    rows_initial = [r.pool_index for r in initial]
    best = float(mv[rows_initial].max())
    r0 = mv_star - float(mv[rows_initial].mean())
    initial_cumulative = sum(r.n_incorporated * (mv_star - float(mv[r.pool_index])) for r in initial)
    recommended = _recommended_by_evaluation(engine)
    rows, cumulative, n = [], 0.0, 0
    for record in engine.records:
        if record.phase != "bo":
            continue
        for i in range(record.n_incorporated):
            n += 1
            mv_row = float(mv[record.pool_index])
            if i == 0:
                best = max(best, mv_row)
            cumulative += mv_star - mv_row
            recommended_regret = mv_star - float(mv[engine.records[recommended(n)].pool_index])
            rows.append({
                "table": result.task, "method": result.method, "repeat": result.repeat, "n_eval": n,
                "config_row": record.pool_index, "regret": mv_star - best,
                "normalised_regret": (mv_star - best) / r0 if r0 > 0 else 0.0,
                "recommended_regret": recommended_regret,
                "normalised_recommended_regret": recommended_regret / r0 if r0 > 0 else 0.0,
                "cumulative_regret": cumulative,
                "cumulative_regret_with_initial": initial_cumulative + cumulative,
                "compute": result.compute_at_eval[n - 1] if n <= len(result.compute_at_eval) else float("nan"),
            })
    return rows


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
        }
        for record in result.engine.records
        if record.phase == "bo"
    ]
