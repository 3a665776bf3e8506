"""``RiskAwareSearch``: the ERAHBO engine as a Ray Tune ``Searcher`` (one Tune trial = one replicate).

Each suggestion is one seed of one configuration: the config carries the seed under ``seed_key``.
Replicates of a configuration run as parallel trials; when the engine certifies the configuration
worse than the incumbent (ERAHBO eq. 12) its remaining replicates are marked for cancellation and
the companion ``ReplicateScheduler`` stops them (a ``Searcher`` cannot stop trials). All
cooperative state lives here, because Tune checkpoints searchers but not schedulers.

Budget: Tune's ``num_samples`` is the budget of replicate runs; every trial counts, the initial
design, cancelled and failed replicates included (``budget_unit="runs"``). The initial design uses
``k_init = k_min`` replicates per configuration unless ``k_init`` is given.

Observation: a replicate's observation is its *final* reported metric; intermediate results are
received (so the scheduler can stop it) but never used. Errors and NaN/inf metrics go to the
engine's failure policy (retry with a fresh seed, then mark the configuration failed).
"""

from __future__ import annotations

import logging
import math
import numbers
import pickle
from typing import Any

import numpy as np
import pandas as pd
from ray.tune.search import UNDEFINED_METRIC_MODE, UNDEFINED_SEARCH_SPACE, Searcher

from tune_risk.engine import Engine
from tune_risk.records import DONE, WAIT, ConfigRecord, RunStatus
from tune_risk.reporting import config_rows
from tune_risk.settings import EngineSettings
from tune_risk.tune_space import TuneSpaceCodec, copy_dicts
from tune_risk.warping import FrozenWarp

logger = logging.getLogger(__name__)

_MODES = ("min", "max")


class RiskAwareSearch(Searcher):
    """Risk-aware Bayesian optimisation over seed replicates (ERAHBO, RAHBO, GP-UCB).

    Optimises ``MV(x) = E[return] - alpha * Var[return]`` across training seeds (on warped
    returns, ALGORITHMS.md §1.2) and spends seeds adaptively: ``k_min`` replicates first, more in
    doubling waves up to ``k_max`` while the configuration may still beat the incumbent.

    Args:
        space: Tune search space (a ``param_space`` dict); or give it to ``tune.Tuner``.
        metric, mode: the reported metric and ``"min"``/``"max"``; or give them to ``TuneConfig``.
        method: ``"erahbo"`` (adaptive replicates), ``"rahbo"`` (fixed ``k = k_max``) or
            ``"gp-ucb"`` (risk neutral, ``alpha = 0``, fixed ``k = k_max``).
        alpha: risk aversion. k_min, k_max: replicate bounds (``2 <= k_min <= k_max``).
        beta: acquisition ``beta`` (``kappa = sqrt(beta)``). beta_stop, beta_stop_schedule: stop rule.
        n_initial: configurations of the Sobol initial design.
        lengthscale: the mean GP's lengthscale strategy: ``"mll"`` (MAP fit), ``"oscbo"``,
            ``"oscbo-l1"`` (online sharp-calibrated, OSCBO), ``"a-gp-ucb"`` or ``"lb-gp-ucb"``.
        seed_key: config key that receives the replicate's training seed.
        points_to_evaluate: configurations to evaluate first (they open the initial design).
        evaluated_rewards: returns already observed for ``points_to_evaluate``: a number (one
            replicate) or a list of numbers (several seeds) per point.
        random_state_seed: fixes every random choice (design, acquisition, replicate seeds).
        k_init: replicates per initial configuration (default ``k_min``: all of them are charged).
        common_random_numbers: replicate ``i`` of every configuration gets seed ``i``.
        candidates: a finite list of configurations to choose from (exact argmax over them).
        max_active_configs: configurations sampled at once (default ``ceil(W / k_min)`` with ``W``
            the trial concurrency, 2 if unknown); 1 reproduces the sequential algorithm's decisions.
            Above 1, pending configurations steer only the choice of the next one (fantasies);
            every certificate rests on data, under its own round's model (``tune_risk.engine``).
        budget: replicate-run budget when Tune does not pass ``num_samples`` (space given here).
        warp: a pre-fitted output warp (e.g. pooled over an offline table), used as is; default:
            fitted on the initial design and re-fitted at a round start once returns leave its range.
        **engine_options: further ``EngineSettings`` fields (e.g. ``launch_policy``, ``refit``,
            ``budget_unit="samples"`` to charge only incorporated replicates as in the paper).
    """

    def __init__(
        self,
        space: dict | None = None,
        metric: str | None = None,
        mode: str | None = None,
        *,
        method: str = "erahbo",
        alpha: float = 1.0,
        k_min: int = 2,
        k_max: int = 20,
        beta: float = 2.5,
        beta_stop: float = 1.0,
        beta_stop_schedule: str = "constant",
        n_initial: int = 5,
        lengthscale: str = "mll",
        seed_key: str = "seed",
        points_to_evaluate: list[dict] | None = None,
        evaluated_rewards: list | None = None,
        random_state_seed: int | None = None,
        k_init: int | None = None,
        common_random_numbers: bool = False,
        candidates: list[dict] | None = None,
        max_active_configs: int | None = None,
        budget: int | None = None,
        warp: FrozenWarp | None = None,
        **engine_options: Any,
    ) -> None:
        if mode is not None and mode not in _MODES:
            raise ValueError(f"mode must be 'min' or 'max', got mode={mode!r}")
        if not isinstance(seed_key, str) or not seed_key:
            raise ValueError(f"seed_key must be a non-empty string, got {seed_key!r}")
        if random_state_seed is None:
            random_state_seed = int(np.random.SeedSequence().generate_state(1)[0] & 0x7FFFFFFF)
        overrides = dict(
            alpha=alpha, beta=beta, beta_stop=beta_stop, beta_stop_schedule=beta_stop_schedule,
            n_initial=n_initial, lengthscale=lengthscale, seed=random_state_seed,
            k_init=k_init if k_init is not None else k_min if method == "erahbo" else None,
            common_random_numbers=common_random_numbers, budget_unit="runs",
        )
        overrides.update(engine_options)
        if method == "erahbo":
            overrides.update(k_min=k_min, k_max=k_max)
        elif method == "rahbo":
            overrides.update(k=k_max)
        else:
            overrides.update(k=k_max)
            overrides.pop("alpha")
        # Validate now, so that bad arguments fail at construction with a clear message.
        self._settings = EngineSettings.for_method(method, **overrides)
        if evaluated_rewards is not None and points_to_evaluate is None:
            raise ValueError("evaluated_rewards needs points_to_evaluate (one reward entry per point)")
        if evaluated_rewards is not None and len(evaluated_rewards) != len(points_to_evaluate):
            raise ValueError(
                f"evaluated_rewards has {len(evaluated_rewards)} entries for "
                f"{len(points_to_evaluate)} points_to_evaluate"
            )
        _check_arguments(candidates, points_to_evaluate, evaluated_rewards, max_active_configs, budget, warp)
        super().__init__(metric=metric, mode=mode)
        self._seed_key = seed_key
        self._points_to_evaluate = points_to_evaluate
        self._evaluated_rewards = evaluated_rewards
        self._candidates = candidates
        self._max_active_configs = max_active_configs
        self._budget = budget
        self._warp = warp
        self._max_concurrent: int | None = None
        self._codec: TuneSpaceCodec | None = None
        self._engine: Engine | None = None
        self._trial_to_run: dict[str, int] = {}
        self._run_to_trial: dict[int, str] = {}
        if space:
            self._codec = TuneSpaceCodec.from_param_space(_check_seed_key(space, seed_key))

    # ------------------------------------------------------------------ Ray Searcher API
    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        if self._engine is not None or (self._codec is not None and config):
            return False
        if config:
            self._codec = TuneSpaceCodec.from_param_space(_check_seed_key(config, self._seed_key))
        if self._metric is None and metric:
            self._metric = metric
        if self._mode is None and mode:
            if mode not in _MODES:
                raise ValueError(f"mode must be 'min' or 'max', got mode={mode!r}")
            self._mode = mode
        if spec.get("num_samples") is not None and self._budget is None:
            self._budget = int(spec["num_samples"])  # an explicit `budget` argument takes precedence
        return True

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        """Remember the trial concurrency (it sizes the asynchronous mode); the
        ``ConcurrencyLimiter`` still enforces it."""
        self._max_concurrent = max_concurrent
        return False

    def suggest(self, trial_id: str) -> dict | str | None:
        if self._codec is None:
            raise RuntimeError(UNDEFINED_SEARCH_SPACE.format(cls=type(self).__name__, space="space"))
        if not self._metric or not self._mode:
            raise RuntimeError(
                UNDEFINED_METRIC_MODE.format(cls=type(self).__name__, metric=self._metric, mode=self._mode)
            )
        request = self._ensure_engine().ask()
        if request is DONE:
            return Searcher.FINISHED
        if request is WAIT:
            return None
        self._trial_to_run[trial_id] = request.run_id
        self._run_to_trial[request.run_id] = trial_id
        config = self._config_of(request.config_id)
        config[self._seed_key] = request.seed
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Intermediate results are never observations (the scheduler may stop the trial)."""

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        run_id = self._trial_to_run.get(trial_id)
        if run_id is None or self._engine is None:
            return
        run = self._engine.runs[run_id]
        cost = float((result or {}).get("time_total_s", 0.0) or 0.0)
        if run.status is RunStatus.CANCEL_REQUESTED:
            self._engine.tell_cancelled(run_id, cost)
            return
        if run.status is not RunStatus.IN_FLIGHT:
            return  # a duplicate notification (e.g. after a restore)
        self._engine.tell(run_id, None if error else self._observation(result), cost)

    # ------------------------------------------------------------------ scheduler cooperation
    def should_stop(self, trial_id: str) -> bool:
        """``True`` if the trial's replicate was cancelled (its configuration stopped sampling)."""
        run_id = self._trial_to_run.get(trial_id)
        if run_id is None or self._engine is None:
            return False
        return self._engine.runs[run_id].status is RunStatus.CANCEL_REQUESTED

    # ------------------------------------------------------------------ results
    def results(self) -> pd.DataFrame:
        """One row per configuration: parameters, replicate counts, statistics, bounds, status.

        ``mean``/``variance`` are in the metric's units (sample statistics of the final returns);
        ``mv``, ``lcb_mv`` and ``ucb_mv`` are on the warped scale the engine optimises
        (maximisation; ``mode="min"`` returns are negated before warping).
        """
        if self._engine is None:
            return pd.DataFrame()
        rows = config_rows(self._engine, sign=self._sign())
        for row, record in zip(rows, self._engine.records, strict=True):
            row.update({f"config/{k}": v for k, v in self._flat_params(record).items()})
        return pd.DataFrame(rows)

    @property
    def best_config(self) -> dict | None:
        """The evaluated configuration with the highest ``LCB^MV`` (CODE-RAHBO's reporting rule)."""
        record = None if self._engine is None else self._engine.recommend()
        return None if record is None else self._config_of(record.config_id)

    @property
    def engine(self) -> Engine | None:
        """The underlying ask/tell engine (created at the first suggestion)."""
        return self._engine

    # ------------------------------------------------------------------ persistence (Ray style)
    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.get_state(), file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.set_state(pickle.load(file))

    def get_state(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k != "_engine"}
        state["_engine_state"] = None if self._engine is None else self._engine.state_dict()
        return state

    def set_state(self, state: dict) -> None:
        state = dict(state)
        engine_state = state.pop("_engine_state", None)
        self.__dict__.update(state)
        self._engine = None if engine_state is None else Engine.from_state_dict(engine_state)

    def __getstate__(self) -> dict:
        return self.get_state()

    def __setstate__(self, state: dict) -> None:
        self.set_state(state)

    # ------------------------------------------------------------------ helpers
    def _ensure_engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._build_engine()
        return self._engine

    def _build_engine(self) -> Engine:
        settings = self._settings
        active = self._max_active_configs or max(1, math.ceil((self._max_concurrent or 2 * settings.k_min) / settings.k_min))
        settings = EngineSettings(**{**settings.to_dict(), "budget": self._budget, "max_active_configs": active})
        codec = self._codec
        pool = None if self._candidates is None else np.stack([codec.encode(c) for c in self._candidates])
        points, values = self._initial_points()
        return Engine(
            settings, dim=None if pool is not None else codec.space.dim, pool=pool, warp=self._warp,
            initial_points=points, initial_values=values,
        )

    def _initial_points(self) -> tuple[np.ndarray | None, list[list[float]] | None]:
        if not self._points_to_evaluate:
            return None, None
        points = np.stack([self._codec.encode(p) for p in self._points_to_evaluate])
        if self._evaluated_rewards is None:
            return points, None
        values = [
            [self._sign() * float(v) for v in (r if isinstance(r, list | tuple | np.ndarray) else [r])]
            for r in self._evaluated_rewards
        ]
        return points, values

    def _observation(self, result: dict | None) -> float | None:
        if not result or self._metric not in result:
            logger.warning("trial result has no metric %r: counted as a failed replicate", self._metric)
            return None
        try:
            value = float(result[self._metric])
        except (TypeError, ValueError):
            return None
        return self._sign() * value if math.isfinite(value) else None

    def _sign(self) -> float:
        return -1.0 if self._mode == "min" else 1.0

    def _config_of(self, config_id: int) -> dict:
        """The user-facing config of an engine configuration: a ``points_to_evaluate`` entry or a
        candidate verbatim, else the decoded unit-cube point."""
        record = self._engine.records[config_id]
        if self._points_to_evaluate and config_id < len(self._points_to_evaluate):
            return copy_dicts(self._points_to_evaluate[config_id])
        if record.pool_index is not None and self._candidates is not None:
            return copy_dicts(self._candidates[record.pool_index])
        return self._codec.decode(np.asarray(record.x))

    def _flat_params(self, record: ConfigRecord) -> dict[str, Any]:
        return self._codec.space.from_unit(np.asarray(record.x))


def _check_arguments(candidates: Any, points_to_evaluate: Any, evaluated_rewards: Any, max_active_configs: Any,
                     budget: Any, warp: Any) -> None:
    """Constructor checks that ``EngineSettings`` cannot make: without them these arguments fail late
    (inside Tune, with an unrelated message) or are silently ignored (``max_active_configs=0``)."""
    for name, configs in (("candidates", candidates), ("points_to_evaluate", points_to_evaluate)):
        if configs is not None and (not isinstance(configs, list | tuple) or not all(isinstance(c, dict) for c in configs)):
            raise ValueError(f"{name} must be a list of config dicts, got {configs!r:.100}")
    if candidates is not None and not candidates:
        raise ValueError("candidates is empty: give the configurations to choose from")
    for name, value in (("max_active_configs", max_active_configs), ("budget", budget)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")
    if warp is not None and not isinstance(warp, FrozenWarp):
        raise ValueError(f"warp must be a FrozenWarp (e.g. tune_risk.warping.fit_warp(returns)) or None, got {warp!r:.100}")
    for i, reward in enumerate(evaluated_rewards or []):
        for value in reward if isinstance(reward, list | tuple | np.ndarray) else [reward]:
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"evaluated_rewards[{i}] must hold finite numbers, got {reward!r}")


def _check_seed_key(space: Any, seed_key: str) -> Any:
    """The replicate seed is written to ``config[seed_key]``: a parameter of that name would be overwritten."""
    if isinstance(space, dict) and seed_key in space:
        raise ValueError(
            f"the search space has a parameter {seed_key!r}, but RiskAwareSearch writes each replicate's "
            f"training seed to config[{seed_key!r}]; rename the parameter or pass seed_key='...'"
        )
    return space
