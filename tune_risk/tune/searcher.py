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
engine's failure policy (retry with a fresh seed, then mark the configuration failed). By default the
final metric is the one Tune passes to ``on_trial_complete``; with ``final_key`` (a result key the
trainable sets on its last report, as ``rl_tasks``' trainables set ``final``) it is taken from that
report, one Tune step earlier: the next replicate is then suggested, and staged by Tune, while the
finishing trial's process is still alive, so Tune hands that process to it (``reuse_actors``) instead
of ending it at every synchronisation point of the search and starting another.

Censoring: a trial that ends on a result its trainable did not finish with (an early-stopping
scheduler such as ASHA, or a ``stop`` criterion, stopped it) is *censored*: Tune gives such a last
result to the searcher only in ``on_trial_complete``, never in ``on_trial_result``, which is how it
is recognised; a trial Tune removes while PENDING or PAUSED (HyperBand's halving) completes with no
result at all and is censored too. Its value is never an observation; it costs one run of the budget,
and its configuration stops sampling (``Engine.tell_censored``). Once censoring leaves the initial
design unable to complete (``Engine.initial_design_can_complete``), the run fails at the next
suggestion, naming what stopped the trials (``tune_risk.tune.run_context``) and the remedy.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import logging
import math
import numbers
import pickle
from typing import Any

import numpy as np
import pandas as pd
from ray.tune.search import UNDEFINED_METRIC_MODE, UNDEFINED_SEARCH_SPACE, Searcher

from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE, WAIT, ConfigRecord, RunStatus
from tune_risk.engine.reporting import config_rows
from tune_risk.risk.warping import FrozenWarp
from tune_risk.settings import METHODS, SEARCHER_INTENSIFY, EngineSettings, searcher_preset
from tune_risk.tune.restore_points import RestorePoints
from tune_risk.tune.results import write_results
from tune_risk.tune.run_context import (
    UNKNOWN_CAUSE,
    censoring_cause,
    driving_controller,
    is_stop_criterion,
    refuse_repeater,
)
from tune_risk.tune.space import TuneSpaceCodec, copy_dicts

logger = logging.getLogger(__name__)

_MODES = ("min", "max")
_MAX_ALPHA = 1e6
# EngineSettings fields that RiskAwareSearch sets from its own arguments (or must not be given twice).
_OWN_FIELDS = frozenset({
    "method", "alpha", "k_min", "k_max", "k_init", "beta", "beta_stop", "beta_stop_schedule", "n_initial",
    "lengthscale", "seed", "common_random_numbers", "budget", "max_active_configs", "intensify",
})
_MAX_INTENSIFY_FRACTION = 0.5
_ITERATION = "training_iteration"
_RENAMED = {"seed": "random_state_seed"}  # EngineSettings names that RiskAwareSearch spells differently
# Arguments of RiskAwareSearch that are not engine settings: what from_settings takes besides the settings.
TUNE_ARGUMENTS = ("space", "metric", "mode", "seed_key", "config_id_key", "points_to_evaluate", "evaluated_rewards",
                  "candidates", "warp", "final_key")


class RiskAwareSearch(Searcher):
    """Risk-aware Bayesian optimisation over seed replicates (ERAHBO, RAHBO, GP-UCB).

    Optimises ``MV(x) = E[return] - alpha * Var[return]`` across training seeds (on warped
    returns, docs/algorithms.md §1.2) and spends seeds adaptively: ``k_min`` replicates first, more in
    doubling waves up to ``k_max`` while the configuration may still beat the incumbent.

    Args:
        space: Tune search space (a ``param_space`` dict); or give it to ``tune.Tuner``.
        metric: the reported metric; or give it to ``TuneConfig``.
        mode: ``"min"`` or ``"max"``; or give it to ``TuneConfig``.
        method: ``"erahbo"`` (adaptive replicates), ``"rahbo"`` (fixed ``k = k_max``) or
            ``"gp-ucb"`` (risk neutral, ``alpha = 0``, fixed ``k = k_max``).
        alpha: risk aversion (default 1; ``gp-ucb`` forces 0).
        k_min: the first wave's replicates (``2 <= k_min <= k_max``); ``rahbo`` and ``gp-ucb`` take none.
        k_max: the most replicates of a configuration; ``rahbo`` and ``gp-ucb`` run a fixed ``k = k_max``.
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
            every certificate rests on data, under its own round's model (``tune_risk.engine.core``).
        budget: replicate-run budget when Tune does not pass ``num_samples`` (space given here).
        config_id_key: config key that receives the configuration's id (the same for all its
            replicates, so Tune's loggers, TensorBoard, W&B or MLflow can group them); ``None``: none.
        intensify: the end of the budget re-evaluates the three configurations with the highest
            ``LCB^MV`` (incumbent intensification, ``EngineSettings.intensify``): a fraction of the
            budget (float in ``[0, 0.5]``, default 0.1) or a number of runs (int); 0 turns it off.
            Measured on the shipped tables with ``k_init = 2`` (this searcher's default): the
            recommended configuration's regret halves (README, "A recommendation worth deploying").
        warp: a pre-fitted output warp (e.g. pooled over an offline table), used as is; default:
            fitted on the initial design and re-fitted at a round start once returns leave its range.
        final_key: a result key that the trainable sets true on its last report (``rl_tasks`` trainables
            report ``final``): that report is the replicate's observation at once, before the trial ends,
            so the next replicate is staged in time to reuse the finishing trial's actor; ``None``
            (default): the observation is the result Tune passes when the trial completes.
        **engine_options: further ``EngineSettings`` fields (e.g. ``launch_policy``, ``refit``,
            ``budget_unit="samples"`` to charge only incorporated replicates as in the paper).

    ``RiskAwareSearch.from_settings(settings, ...)`` builds a searcher whose engine has exactly the
    given ``EngineSettings`` instead (the offline replay's Tune path does).

    Example:
        >>> from ray import tune
        >>> from tune_risk import RiskAwareSearch
        >>> space = {"lr": tune.loguniform(1e-4, 1e-1), "gamma": tune.uniform(0.9, 0.999)}
        >>> searcher = RiskAwareSearch(space, metric="return", mode="max", random_state_seed=0, budget=40)
        >>> first, second = searcher.suggest("trial_1"), searcher.suggest("trial_2")  # as Tune calls it
        >>> sorted(first)
        ['config_id', 'gamma', 'lr', 'seed']
        >>> first["config_id"] == second["config_id"], first["lr"] == second["lr"], first["seed"] == second["seed"]
        (True, True, False)
        >>> RiskAwareSearch(method="bo")
        Traceback (most recent call last):
            ...
        ValueError: RiskAwareSearch: unknown method='bo'; valid values are 'erahbo', 'rahbo', 'gp-ucb'
    """

    def __init__(
        self,
        space: dict | None = None,
        metric: str | None = None,
        mode: str | None = None,
        *,
        method: str = "erahbo",
        alpha: float | None = None,
        k_min: int | None = None,
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
        config_id_key: str | None = "config_id",
        intensify: float | int = SEARCHER_INTENSIFY,
        final_key: str | None = None,
        **engine_options: Any,
    ) -> None:
        if mode is not None and mode not in _MODES:
            raise ValueError(f"RiskAwareSearch: mode must be 'min' or 'max', got mode={mode!r}")
        for name, key in (("seed_key", seed_key), ("config_id_key", config_id_key), ("final_key", final_key)):
            if not (isinstance(key, str) and key) and not (name != "seed_key" and key is None):
                raise ValueError(f"RiskAwareSearch: {name} must be a non-empty string, got {name}={key!r}")
        if seed_key == config_id_key:
            raise ValueError(f"RiskAwareSearch: seed_key and config_id_key are both {seed_key!r}; use two keys")
        if random_state_seed is None:
            random_state_seed = int(np.random.SeedSequence().generate_state(1)[0] & 0x7FFFFFFF)
        self._settings = _engine_settings(method, dict(
            alpha=alpha, k_min=k_min, k_max=k_max, k_init=k_init, beta=beta, beta_stop=beta_stop,
            beta_stop_schedule=beta_stop_schedule, n_initial=n_initial, lengthscale=lengthscale,
            seed=random_state_seed, common_random_numbers=common_random_numbers,
        ), engine_options)
        if evaluated_rewards is not None and points_to_evaluate is None:
            raise ValueError("RiskAwareSearch: evaluated_rewards needs points_to_evaluate (one reward entry per point)")
        if evaluated_rewards is not None and len(evaluated_rewards) != len(points_to_evaluate):
            raise ValueError(
                f"RiskAwareSearch: evaluated_rewards has {len(evaluated_rewards)} entries for "
                f"{len(points_to_evaluate)} points_to_evaluate"
            )
        _check_arguments(candidates, points_to_evaluate, evaluated_rewards, max_active_configs, budget, warp)
        _check_intensify(intensify)
        super().__init__(metric=metric, mode=mode)
        self._intensify = intensify
        self._seed_key = seed_key
        self._config_id_key = config_id_key
        self._final_key = final_key
        self._seen_iteration: dict[str, Any] = {}  # trial id -> last training_iteration seen in on_trial_result
        self._censoring_explained = False
        self._censoring_causes: dict[str, int] = {}  # what stopped censored replicates (run_context) -> count
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
        self._restore_points = RestorePoints()  # Tune snapshot marks + restore points (tune_risk.tune.restore)
        self._run_checked = False  # the driving Tune run was checked (transient: a restored run is checked again)
        if space:
            self._codec = TuneSpaceCodec.from_param_space(self._check_space(space))

    @classmethod
    def from_settings(cls, settings: EngineSettings, space: dict | None = None, metric: str | None = None,
                      mode: str | None = None, **tune_kwargs: Any) -> RiskAwareSearch:
        """A searcher whose engine runs with exactly ``settings``, every field as given.

        The constructor's own defaults do not apply: ``budget_unit`` stays the settings' (``"samples"``
        by default, the paper's unit, where the constructor charges ``"runs"``), and so do ``k_init``,
        ``max_active_configs`` (1 by default: the sequential decisions), ``intensify`` (runs) and ``seed``.
        One exception: with ``settings.budget=None`` the engine's budget is Tune's ``num_samples``, as for a
        searcher built by the constructor.

        ``tune_kwargs`` are the arguments that are not engine settings (``TUNE_ARGUMENTS``): ``seed_key``,
        ``config_id_key``, ``points_to_evaluate``, ``evaluated_rewards``, ``candidates``, ``warp`` (a
        pre-fitted ``FrozenWarp``) and ``final_key``.
        """
        if not isinstance(settings, EngineSettings):
            raise TypeError(f"RiskAwareSearch.from_settings: settings must be EngineSettings, got {settings!r:.100}")
        for name in tune_kwargs:
            if name not in TUNE_ARGUMENTS:
                raise TypeError(f"RiskAwareSearch.from_settings() got the keyword argument {name!r}, which is not a "
                                f"Tune argument ({', '.join(TUNE_ARGUMENTS)}); engine settings come from settings")
        searcher = cls(space, metric, mode, random_state_seed=settings.seed, budget=settings.budget,
                       max_active_configs=settings.max_active_configs, intensify=settings.intensify, **tune_kwargs)
        searcher._settings = settings  # verbatim; the three fields above also size the engine (_build_engine)
        return searcher

    # ------------------------------------------------------------------ Ray Searcher API
    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        for name, own, given in (("metric", self._metric, metric), ("mode", self._mode, mode)):
            if own is not None and given is not None and own != given:
                raise ValueError(
                    f"RiskAwareSearch({name}={own!r}) conflicts with TuneConfig({name}={given!r}): the searcher "
                    f"would optimise {own!r} while Tune reports {given!r}; give {name} once, or the same in both"
                )
        if self._engine is not None or (self._codec is not None and config):
            return False
        if config:
            self._codec = TuneSpaceCodec.from_param_space(self._check_space(config))
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
        """Enforce Tune's ``max_concurrent_trials`` here: ``suggest`` returns ``None`` while that many of this
        searcher's trials are live (suggested, not yet complete). It also sizes the asynchronous mode.

        Returning ``True`` turns the ``ConcurrencyLimiter`` that Tune 2.60 wraps around every searcher into a
        pass-through. The live trials are the engine's unresolved runs, so a restored searcher (``Tuner.restore``
        does not call this method again; ``max_concurrent`` is part of the state) counts exactly the trials of
        its own snapshot: no slot is held by a trial that finished after it.
        """
        if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, numbers.Integral) or max_concurrent < 1:
            raise ValueError(f"RiskAwareSearch: max_concurrent must be a positive integer, got {max_concurrent!r}")
        self._max_concurrent = int(max_concurrent)
        return True

    def suggest(self, trial_id: str) -> dict | str | None:
        if self._codec is None:
            raise RuntimeError(UNDEFINED_SEARCH_SPACE.format(cls=type(self).__name__, space="space"))
        if not self._metric or not self._mode:
            raise RuntimeError(
                UNDEFINED_METRIC_MODE.format(cls=type(self).__name__, metric=self._metric, mode=self._mode)
            )
        if not self.__dict__.get("_run_checked"):
            self._check_run()
        engine = self._ensure_engine()
        self._check_design(engine)
        if self._max_concurrent is not None and len(engine.in_flight_runs()) >= self._max_concurrent:
            return None  # before ask(): asking launches a run
        if self._holds_last_run(engine):
            return None
        request = engine.ask()
        if request is DONE:
            return Searcher.FINISHED
        if request is WAIT:
            return None
        self._trial_to_run[trial_id] = request.run_id
        self._run_to_trial[request.run_id] = trial_id
        config = self._config_of(request.config_id)
        config[self._seed_key] = request.seed
        if self._config_id_key is not None:
            config[self._config_id_key] = request.config_id
        return config

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        """Intermediate results are never observations (the scheduler may stop the trial); a result that
        ``final_key`` marks as the last one is the replicate's observation.

        Tune calls this for every result a trial reports, except the one on which a scheduler or a
        ``stop`` criterion stops it; the last ``training_iteration`` seen here tells a finished trial
        from a stopped one in ``on_trial_complete``. A replicate observed here ignores its trial's
        completion (the engine's run is no longer in flight), whatever happens after its last report.
        """
        self._check_metric_type(trial_id, result)
        if _ITERATION in result:
            self._seen_iteration[trial_id] = result[_ITERATION]
        if self._final_key is not None and _is_true(result.get(self._final_key)):
            self._tell_final(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        run_id = self._trial_to_run.get(trial_id)
        if run_id is None or self._engine is None:
            return
        run = self._engine.runs[run_id]
        cost = _cost(result)
        if run.status is RunStatus.CANCEL_REQUESTED:
            self._engine.tell_cancelled(run_id, cost)
            return
        if run.status is not RunStatus.IN_FLIGHT:
            return  # a duplicate notification (e.g. after a restore)
        if not error and self._stopped_early(trial_id, result):
            self._explain_censoring(trial_id, result)
            cause = censoring_cause(driving_controller(self), trial_id, result)
            self._censoring_causes[cause] = self._censoring_causes.get(cause, 0) + 1
            self._engine.tell_censored(run_id, cost)
            self._log_if_design_lost()
            return
        if not error:
            self._check_metric_type(trial_id, result or {})
        self._engine.tell(run_id, None if error else self._observation(result), cost)

    def _tell_final(self, trial_id: str, result: dict) -> None:
        """Observe a replicate on its last report (``final_key``), if it is still in flight."""
        run_id = self._trial_to_run.get(trial_id)
        if run_id is None or self._engine is None or self._engine.runs[run_id].status is not RunStatus.IN_FLIGHT:
            return  # not ours, cancelled (its completion tells it), or told already (a re-run after a restore)
        self._engine.tell(run_id, self._observation(result), _cost(result))

    # ------------------------------------------------------------------ scheduler cooperation
    def suggested(self, trial_id: str) -> bool:
        """Whether this searcher suggested trial ``trial_id`` (the scheduler checks it is bound to us)."""
        return trial_id in self._trial_to_run

    @property
    def has_suggested(self) -> bool:
        """Whether this searcher has suggested any trial yet."""
        return bool(self._trial_to_run)

    def in_initial_design(self, trial_id: str) -> bool:
        """Whether trial ``trial_id`` is a replicate of an initial-design configuration."""
        run_id = self._trial_to_run.get(trial_id)
        if run_id is None or self._engine is None:
            return False
        return self._engine.records[self._engine.runs[run_id].config_id].phase == "initial"

    def should_stop(self, trial_id: str) -> bool:
        """``True`` if the trial's replicate was cancelled (its configuration stopped sampling)."""
        run_id = self._trial_to_run.get(trial_id)
        if run_id is None or self._engine is None:
            return False
        return self._engine.runs[run_id].status is RunStatus.CANCEL_REQUESTED

    # ------------------------------------------------------------------ results
    def results(self) -> pd.DataFrame:
        """One row per configuration: parameters (``config/<name>``), replicate counts, statistics, bounds.

        Units are in the column names (``tune_risk.engine.reporting``): ``metric_mean``, ``metric_std``,
        ``metric_variance`` in the metric's own units; ``warped_mean``, ``warped_variance``,
        ``warped_mv``, ``warped_lcb_mv``, ``warped_ucb_mv`` on the warped scale the engine maximises
        (``mode="min"`` metrics are negated before warping). ``status`` is running or done, and
        ``stop_reason`` says why a configuration stopped (certified, k_max, budget, failed, stopped).
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
    def save_to_dir(self, checkpoint_dir: str, session_str: str = "default") -> None:
        """Tune's snapshot of the searcher, marked with its trial list's digest; first writes the previous
        snapshot as a restore point (``tune_risk.tune.restore``: ``restore_tuner`` repairs a torn snapshot);
        then the per-configuration table and the recommendation for ``tune_risk.load_results``."""
        self.__dict__.setdefault("_restore_points", RestorePoints())  # states pickled before restore points
        self._restore_points.before_searcher_save(checkpoint_dir, session_str)
        super().save_to_dir(checkpoint_dir, session_str)
        write_results(self, checkpoint_dir)  # tune_risk/results.csv + recommendation.json (load_results)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.get_state(), file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            try:
                state = pickle.load(file)
            except (ModuleNotFoundError, AttributeError) as error:  # a class this tune_risk does not have
                if "tune_risk" not in str(error):
                    raise
                raise ValueError(
                    f"RiskAwareSearch: cannot restore {checkpoint_path}: {error}. The file was written by another "
                    "version of tune_risk, whose classes this one lacks; restore it with the version that wrote it") from error
        self.set_state(state)

    def get_state(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_engine", "_run_checked")}
        state["_engine_state"] = None if self._engine is None else self._engine.state_dict()
        return state

    def set_state(self, state: dict) -> None:
        state = dict(state)
        engine_state = state.pop("_engine_state", None)
        self.__dict__.update(state)
        self.__dict__.setdefault("_censoring_causes", {})  # states pickled before it existed
        self._run_checked = False
        self._engine = None if engine_state is None else Engine.from_state_dict(engine_state)

    def __getstate__(self) -> dict:
        return self.get_state()

    def __setstate__(self, state: dict) -> None:
        self.set_state(state)

    # ------------------------------------------------------------------ helpers
    def _check_run(self) -> None:
        """At the first suggestion of a run: refuse a ``Repeater`` around this searcher (``run_context``)."""
        controller = driving_controller(self)
        if controller is not None:
            refuse_repeater(controller.search_alg, self)
        self._run_checked = True

    def _ensure_engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._build_engine()
        return self._engine

    def _build_engine(self) -> Engine:
        settings = self._settings
        active = self._max_active_configs or max(1, math.ceil((self._max_concurrent or 2 * settings.k_min) / settings.k_min))
        settings = EngineSettings(**{**settings.to_dict(), "budget": self._budget, "max_active_configs": active,
                                     "intensify": self._intensify_runs()})
        codec = self._codec
        pool = None if self._candidates is None else np.stack([codec.encode(c) for c in self._candidates])
        points, values = self._initial_points()
        return Engine(
            settings, dim=None if pool is not None else codec.space.dim, pool=pool, warp=self._warp,
            initial_points=points, initial_values=values,
        )

    def _intensify_runs(self) -> int:
        """Runs reserved for intensification: ``intensify`` runs, or that fraction of the budget (0 unbounded)."""
        if self._budget is None:
            return 0
        if isinstance(self._intensify, float):
            return int(round(self._intensify * self._budget))
        return min(int(self._intensify), self._budget - 1)

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

    def _check_space(self, space: Any) -> Any:
        """The seed (and configuration id) go to reserved config keys: a parameter of that name would be overwritten."""
        space = _check_seed_key(space, self._seed_key)
        if isinstance(space, dict) and self._config_id_key in space:
            raise ValueError(
                f"RiskAwareSearch: the search space has a parameter {self._config_id_key!r}, but each replicate's "
                f"configuration id goes to config[{self._config_id_key!r}]; pass config_id_key='...' or None"
            )
        return space

    def _check_metric_type(self, trial_id: str, result: dict) -> None:
        """A metric that is not a number is a bug in the trainable: say so at its first report."""
        value = result.get(self._metric)
        if value is None or _is_number(value):
            return
        raise ValueError(
            f"RiskAwareSearch: trial {trial_id} reported {self._metric}={value!r} ({type(value).__name__}), which "
            f"is not a number; report a float (NaN or inf counts as a failed replicate)"
        )

    def _stopped_early(self, trial_id: str, result: dict | None) -> bool:
        """Whether a scheduler or a stopper ended the trial: its last result never reached ``on_trial_result``,
        or it completes without any (Tune removed it while PENDING or PAUSED, e.g. HyperBand's halving)."""
        if result is None:
            return True
        if _ITERATION not in result:
            return False
        return self._seen_iteration.get(trial_id) != result[_ITERATION]

    def _explain_censoring(self, trial_id: str, result: dict | None) -> None:
        log = logger.info if self._censoring_explained else logger.warning
        self._censoring_explained = True
        log(
            "trial %s was stopped at %s=%s before its trainable finished (an early-stopping scheduler or a stop "
            "criterion): its last %s is an intermediate value and is not used; the configuration stops sampling. "
            "RiskAwareSearch observes only final results: let the trainable return, and use "
            "ReplicateScheduler(searcher, base=...) to combine early stopping with replicate cancellation.",
            trial_id, _ITERATION, (result or {}).get(_ITERATION, self._seen_iteration.get(trial_id, 0)), self._metric,
        )

    def _check_design(self, engine: Engine) -> None:
        """Fail once censoring has made the initial design impossible (``Engine.initial_design_can_complete``):
        the run could only end without a model. Partial censoring, with a design that can complete, goes on."""
        if not self._censoring_causes or engine.hyperparameters is not None:
            return
        tune_left, _ = self._launches_left(engine)  # the engine applies its own budget
        if not engine.initial_design_can_complete(tune_left):
            raise RuntimeError(self._design_lost_message(engine))

    def _holds_last_run(self, engine: Engine) -> bool:
        """Whether to wait before launching the last run: while the initial design, censored and still short
        of two configurations with data, has runs in flight. Tune asks nothing more once its last trial
        exists, so a design lost with that run's fate open would otherwise go unreported."""
        if not self._censoring_causes or engine.hyperparameters is not None or not engine.in_flight_runs():
            return False
        left = [v for v in self._launches_left(engine) if v is not None]
        return bool(left) and min(left) == 1 and sum(engine.has_data(r) for r in engine.records) < 2

    def _log_if_design_lost(self) -> None:
        """The error, logged, when the run's last trial is what lost the design: no suggestion is left to raise it."""
        engine = self._engine
        tune_left, engine_left = self._launches_left(engine)
        last = tune_left if tune_left is not None else engine_left
        if last == 0 and not engine.initial_design_can_complete(tune_left):  # final, whatever is still in flight
            logger.error("%s", self._design_lost_message(engine))

    def _launches_left(self, engine: Engine) -> tuple[int | None, int | None]:
        """``(Tune's trials left, the engine's run budget left)``, ``None`` where unknown or unbounded: Tune
        creates ``num_samples`` trials whatever the engine's budget (``budget_unit="samples"``, or a space
        given here and no ``budget``), and asks nothing once it has created them."""
        controller = driving_controller(self)
        total = None if controller is None else getattr(controller.search_alg, "total_samples", None)
        tune_left = None if total is None else int(total) - len(controller.get_trials())
        settings = engine.settings
        runs = settings.budget_unit == "runs" and settings.budget is not None
        return tune_left, settings.budget - len(engine.runs) if runs else None

    def _design_lost_message(self, engine: Engine) -> str:
        counts, settings = engine.counts(), engine.settings
        causes = sorted(self._censoring_causes, key=lambda c: -self._censoring_causes[c])
        by = ", ".join(f"{cause} ({self._censoring_causes[cause]})" for cause in causes)
        stop = [c for c in causes if is_stop_criterion(c)]
        schedulers = [c for c in causes if not is_stop_criterion(c) and c != UNKNOWN_CAUSE]
        remedies = []
        if schedulers:
            remedies.append(
                f"wrap the scheduler so that it never stops an initial-design replicate, ReplicateScheduler(searcher, "
                f"base={schedulers[0]}(...)), and give it a max_t above the trainable's last report (a trial stopped at "
                "max_t was stopped, not finished)")
        if stop:
            remedies.append(
                "drop RunConfig(stop=...), or raise it above the trainable's last report: RiskAwareSearch observes "
                "only a replicate's final report, so let the trainable end where a run should end")
        if not remedies:
            remedies.append(
                "let every trial run until its trainable returns: combine early stopping with replicates through "
                "ReplicateScheduler(searcher, base=...) with a max_t above the trainable's last report, and give no "
                "RunConfig(stop=...)")
        known = [v for v in self._launches_left(engine) if v is not None]
        left = f" ({max(min(known), 0)} runs)" if known else ""
        return (
            f"RiskAwareSearch: the initial design cannot complete, so the run would end without a model: of "
            f"{counts['runs_launched']} replicate runs, {counts['runs_censored']} were stopped before their trainable "
            f"returned (censored, never an observation) by {by}, {counts['runs_cancelled']:.0f} were cancelled with "
            f"their configuration, {counts['runs_completed']} finished and {counts['runs_failed']} failed; the rest of "
            f"the budget{left} cannot give two initial configurations k_init={settings.replicates_initial} final "
            f"results each. Remedy: {'; '.join(remedies)}"
        )

    def _observation(self, result: dict | None) -> float | None:
        if not result or result.get(self._metric) is None:
            logger.warning("trial result has no metric %r: counted as a failed replicate", self._metric)
            return None
        value = float(result[self._metric])  # a number: _check_metric_type ran first
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
        raise ValueError(f"warp must be a FrozenWarp (e.g. tune_risk.risk.warping.fit_warp(returns)) or None, got {warp!r:.100}")
    for i, reward in enumerate(evaluated_rewards or []):
        for value in reward if isinstance(reward, list | tuple | np.ndarray) else [reward]:
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"evaluated_rewards[{i}] must hold finite numbers, got {reward!r}")


def _check_intensify(intensify: Any) -> None:
    if isinstance(intensify, bool) or not isinstance(intensify, numbers.Real):
        raise ValueError(f"RiskAwareSearch: intensify must be a fraction of the budget or a run count, got {intensify!r}")
    if isinstance(intensify, numbers.Integral):
        if intensify < 0:
            raise ValueError(f"RiskAwareSearch: intensify must be >= 0 runs, got intensify={intensify!r}")
    elif not 0.0 <= intensify <= _MAX_INTENSIFY_FRACTION:
        raise ValueError(
            f"RiskAwareSearch: intensify as a fraction of the budget must be in [0, {_MAX_INTENSIFY_FRACTION}], "
            f"got intensify={intensify!r}"
        )


def _cost(result: dict | None) -> float:
    """A replicate's compute cost: the trial's ``time_total_s`` (0 when Tune reported none)."""
    return float((result or {}).get("time_total_s", 0.0) or 0.0)


def _is_true(value: Any) -> bool:
    """A boolean ``True`` (Python or NumPy); a number or a string is no ``final_key`` flag."""
    return isinstance(value, (bool, np.bool_)) and bool(value)


def _is_number(value: Any) -> bool:
    """A real number, numpy or JAX scalar included (anything ``float()`` takes), but no string or bool."""
    if isinstance(value, str | bytes | bool | np.bool_):
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _check_seed_key(space: Any, seed_key: str) -> Any:
    """The replicate seed is written to ``config[seed_key]``: a parameter of that name would be overwritten."""
    if isinstance(space, dict) and seed_key in space:
        raise ValueError(
            f"the search space has a parameter {seed_key!r}, but RiskAwareSearch writes each replicate's "
            f"training seed to config[{seed_key!r}]; rename the parameter or pass seed_key='...'"
        )
    return space


def _engine_settings(method: str, given: dict[str, Any], engine_options: dict[str, Any]) -> EngineSettings:
    """Validated engine settings of a ``RiskAwareSearch``; every error names the class, argument and range."""
    if method not in METHODS:
        raise ValueError(f"RiskAwareSearch: unknown method={method!r}; valid values are {', '.join(map(repr, METHODS))}")
    fields = {f.name for f in dataclasses.fields(EngineSettings)}
    for name in engine_options:
        if name not in fields or name in _OWN_FIELDS:
            valid = (fields - _OWN_FIELDS) | set(inspect.signature(RiskAwareSearch).parameters)
            close = [_RENAMED[name]] if name in _RENAMED else difflib.get_close_matches(name, sorted(valid), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"RiskAwareSearch() got an unexpected keyword argument {name!r}{hint}")
    alpha, k_min, crn = given.pop("alpha"), given.pop("k_min"), given["common_random_numbers"]
    if not isinstance(crn, bool | np.bool_):
        raise ValueError(f"RiskAwareSearch: common_random_numbers must be True or False, got {crn!r}")
    if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
                              or not 0.0 <= alpha <= _MAX_ALPHA):
        raise ValueError(
            f"RiskAwareSearch: alpha must be a number in [0, {_MAX_ALPHA:g}], got alpha={alpha!r} (warped returns "
            f"lie in [-1, 1]; beyond {_MAX_ALPHA:g} the mean no longer counts in MV = mean - alpha * variance)"
        )
    if method != "erahbo" and k_min is not None:
        raise ValueError(
            f"RiskAwareSearch: method={method!r} runs a fixed k = k_max replicates per configuration, so "
            f"k_min={k_min!r} would be ignored; drop k_min (k_max={given['k_max']!r} is the k used)"
        )
    if method == "gp-ucb" and alpha not in (None, 0, 0.0):
        raise ValueError(f"RiskAwareSearch: method='gp-ucb' is risk neutral (alpha = 0), got alpha={alpha!r}")
    k_min = 2 if k_min is None else k_min
    overrides = {**given, **searcher_preset(method, k_min, given["k_init"]), **engine_options}
    if method != "erahbo":
        overrides["k"] = overrides.pop("k_max")
    if method != "gp-ucb":
        overrides["alpha"] = 1.0 if alpha is None else float(alpha)
    try:
        return EngineSettings.for_method(method, **overrides)
    except ValueError as err:
        raise ValueError(f"RiskAwareSearch: {err}") from None
