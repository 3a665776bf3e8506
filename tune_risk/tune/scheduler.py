"""``ReplicateScheduler``: stops the Tune trials of replicates that ``RiskAwareSearch`` cancelled.

A Ray Tune ``Searcher`` cannot stop trials, so this companion ``TrialScheduler`` asks the searcher
(which owns all state, because Tune does not checkpoint schedulers) and

* returns ``STOP`` for a RUNNING cancelled replicate at its next reported result;
* drops PENDING cancelled replicates (``tune_controller.stop_trial``) before they start. Such a trial
  never reports: its last result says so (``CANCELLED_RESULT``) and its folder gets an empty
  ``result.json``, Tune's record of a trial without results, so that neither Tune's console ("Trial ...
  completed. Last result: ") nor ``ResultGrid`` ("Could not fetch metrics ...") reports it as lost data.

Every other decision is the ``base`` scheduler's (FIFO by default). An early-stopping base
(``ASHAScheduler``, ``HyperBandScheduler``, ``MedianStoppingRule``) keeps working: when it stops a
replicate, the searcher censors it (its intermediate value is never an observation) and stops the
whole configuration, whose other replicates this scheduler then cancels. Initial-design replicates
are never stopped by the base (it still sees their results): the warp and the GPs are fitted on them. Schedulers that change a
trial's configuration (PBT, PB2) cannot be combined with seed replicates and are refused.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from ray.tune.experiment import Trial
from ray.tune.result import EXPR_RESULT_FILE
from ray.tune.schedulers import FIFOScheduler, PopulationBasedTraining, TrialScheduler

from tune_risk.tune.run_context import refuse_repeater

if TYPE_CHECKING:
    from ray.tune.execution.tune_controller import TuneController

    from tune_risk.tune.searcher import RiskAwareSearch


logger = logging.getLogger(__name__)

CANCELLED_RESULT = {"replicate": "cancelled before it started", "done": True}
"""The last result of a replicate dropped while PENDING (``ResultGrid``'s ``metrics`` for its trial)."""


class ReplicateScheduler(TrialScheduler):
    """Cancels the replicates that ``searcher`` certified as no longer needed (ERAHBO §2.4).

    Args:
        searcher: the ``RiskAwareSearch`` passed as ``search_alg`` (the same object).
        base: the scheduler that makes every other decision (default ``FIFOScheduler()``), e.g.
            ``ASHAScheduler(time_attr="training_iteration", max_t=...)`` to stop whole configurations
            early. Give ASHA a ``max_t`` above the trainable's last report: a trial it stops at
            ``max_t`` has been stopped, not finished, and is censored.

    Example:
        >>> from ray import tune
        >>> from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining
        >>> from tune_risk import ReplicateScheduler, RiskAwareSearch
        >>> searcher = RiskAwareSearch(random_state_seed=0)
        >>> scheduler = ReplicateScheduler(searcher, base=ASHAScheduler(time_attr="training_iteration", max_t=100))
        >>> scheduler.debug_string()
        'Using ReplicateScheduler (stops cancelled seed replicates; otherwise AsyncHyperBandScheduler).'
        >>> tune_config = tune.TuneConfig(search_alg=searcher, scheduler=scheduler,  # the same searcher object
        ...                               metric="return", mode="max", num_samples=200)
        >>> ReplicateScheduler(searcher, base=PopulationBasedTraining(hyperparam_mutations={"lr": [1e-3, 1e-2]}))
        Traceback (most recent call last):
            ...
        ValueError: ReplicateScheduler cannot wrap PopulationBasedTraining: it copies and mutates trial ...
    """

    def __init__(self, searcher: RiskAwareSearch, base: TrialScheduler | None = None) -> None:
        from tune_risk.tune.searcher import RiskAwareSearch

        if not isinstance(searcher, RiskAwareSearch):
            raise TypeError(
                f"ReplicateScheduler needs the RiskAwareSearch used as search_alg, got {type(searcher).__name__}"
            )
        _check_base(base)
        super().__init__()
        self.searcher = searcher
        self.base = base if base is not None else FIFOScheduler()
        self._bound = False

    @property
    def metric(self) -> str | None:  # Tune's strict metric check reads the scheduler's metric
        return self.base.metric

    @property
    def supports_buffered_results(self) -> bool:
        return self.base.supports_buffered_results

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return self.base.set_search_properties(metric, mode, **spec)

    def on_trial_add(self, tune_controller: TuneController, trial: Trial) -> None:
        self._check_bound(tune_controller, trial)
        self.base.on_trial_add(tune_controller, trial)

    def on_trial_error(self, tune_controller: TuneController, trial: Trial) -> None:
        self.base.on_trial_error(tune_controller, trial)

    def on_trial_result(self, tune_controller: TuneController, trial: Trial, result: dict) -> str:
        self._drop_cancelled_pending(tune_controller)
        if self.searcher.should_stop(trial.trial_id):
            return TrialScheduler.STOP
        decision = self.base.on_trial_result(tune_controller, trial, result)
        if decision == TrialScheduler.STOP and self.searcher.in_initial_design(trial.trial_id):
            # The base still records the result (e.g. ASHA's rungs), but the initial design, on which the
            # warp and the GP hyperparameters are fitted, runs to its end: a censored design is no design.
            return TrialScheduler.CONTINUE
        return decision

    def on_trial_complete(self, tune_controller: TuneController, trial: Trial, result: dict) -> None:
        self.base.on_trial_complete(tune_controller, trial, result)
        self._drop_cancelled_pending(tune_controller)

    def on_trial_remove(self, tune_controller: TuneController, trial: Trial) -> None:
        self.base.on_trial_remove(tune_controller, trial)

    def choose_trial_to_run(self, tune_controller: TuneController) -> Trial | None:
        self._drop_cancelled_pending(tune_controller)
        return self.base.choose_trial_to_run(tune_controller)

    def _drop_cancelled_pending(self, tune_controller: TuneController) -> None:
        for trial in list(tune_controller.get_trials()):
            if trial.status == Trial.PENDING and self.searcher.should_stop(trial.trial_id):
                _record_never_started(trial)
                tune_controller.stop_trial(trial)

    def _check_bound(self, tune_controller: TuneController, trial: Trial) -> None:
        """The first trial of a run must come from our searcher: else it is another ``search_alg``; and no
        ``Repeater`` may wrap it (``tune_risk.tune.run_context``)."""
        if self._bound:
            return
        refuse_repeater(tune_controller.search_alg, self.searcher)
        if not self.searcher.has_suggested and not self.searcher.suggested(trial.trial_id):
            raise ValueError(
                "ReplicateScheduler was built with a RiskAwareSearch that is not this run's search_alg (it "
                f"suggested no trial, yet trial {trial.trial_id} was added), so no cancellation would ever be "
                "enforced; pass the same object: ReplicateScheduler(searcher) with TuneConfig(search_alg=searcher)"
            )
        self._bound = True

    def debug_string(self) -> str:
        return f"Using ReplicateScheduler (stops cancelled seed replicates; otherwise {type(self.base).__name__})."

    def save(self, checkpoint_path: str) -> None:
        self.base.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.base.restore(checkpoint_path)


def _check_base(base: Any) -> None:
    if base is None:
        return
    if isinstance(base, ReplicateScheduler):
        raise ValueError("ReplicateScheduler(base=...) got another ReplicateScheduler; pass the base scheduler itself")
    if isinstance(base, PopulationBasedTraining):
        raise ValueError(
            f"ReplicateScheduler cannot wrap {type(base).__name__}: it copies and mutates trial configurations, so a "
            "trial would no longer be one seed of one configuration; use ASHA, HyperBand or median stopping"
        )
    if not isinstance(base, TrialScheduler):
        raise TypeError(f"ReplicateScheduler(base=...) needs a Tune TrialScheduler, got {type(base).__name__}")


def _record_never_started(trial: Trial) -> None:
    """Give a trial dropped before it started the records of a trial that reported nothing.

    Tune prints ``Trial ... completed. Last result: `` at every verbosity for a trial whose last result is
    empty, and ``ResultGrid`` logs ``FileNotFoundError`` for a trial folder without ``result.json``: both
    read as lost data for a replicate that was cancelled on purpose.
    """
    trial.update_last_result(dict(CANCELLED_RESULT))
    trial.init_local_path()  # names the trial's folder if Tune had not staged the trial yet
    storage = trial.storage
    folder = storage.trial_fs_path
    try:
        storage.storage_filesystem.create_dir(folder, recursive=True)
        with storage.storage_filesystem.open_output_stream(str(PurePosixPath(folder) / EXPR_RESULT_FILE)):
            pass  # empty: no result was ever reported
    except OSError as error:  # only Tune's end-of-run summary misses it: never fail the run for it
        logger.warning("could not write %s for the cancelled trial %s: %s", EXPR_RESULT_FILE, trial, error)
