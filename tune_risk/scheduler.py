"""``ReplicateScheduler``: stops the Tune trials of replicates that ``RiskAwareSearch`` cancelled.

A Ray Tune ``Searcher`` cannot stop trials, so this companion ``TrialScheduler`` asks the searcher
(which owns all state, because Tune does not checkpoint schedulers) and

* returns ``STOP`` for a RUNNING cancelled replicate at its next reported result;
* drops PENDING cancelled replicates (``tune_controller.stop_trial``) before they start.

Trials are otherwise run first-in first-out, like ``FIFOScheduler``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

if TYPE_CHECKING:
    from ray.tune.execution.tune_controller import TuneController

    from tune_risk.searcher import RiskAwareSearch


class ReplicateScheduler(FIFOScheduler):
    """Cancels the replicates that ``searcher`` certified as no longer needed (ERAHBO §2.4).

    Args:
        searcher: the ``RiskAwareSearch`` passed as ``search_alg`` (the same object).
    """

    def __init__(self, searcher: RiskAwareSearch) -> None:
        from tune_risk.searcher import RiskAwareSearch

        if not isinstance(searcher, RiskAwareSearch):
            raise TypeError(
                f"ReplicateScheduler needs the RiskAwareSearch used as search_alg, got {type(searcher).__name__}"
            )
        super().__init__()
        self.searcher = searcher

    def set_search_properties(self, metric: str | None, mode: str | None, **spec) -> bool:
        return True  # decisions come from the searcher; metric and mode are its business

    def on_trial_result(self, tune_controller: TuneController, trial: Trial, result: dict) -> str:
        self._drop_cancelled_pending(tune_controller)
        if self.searcher.should_stop(trial.trial_id):
            return TrialScheduler.STOP
        return TrialScheduler.CONTINUE

    def on_trial_complete(self, tune_controller: TuneController, trial: Trial, result: dict) -> None:
        self._drop_cancelled_pending(tune_controller)

    def choose_trial_to_run(self, tune_controller: TuneController) -> Trial | None:
        self._drop_cancelled_pending(tune_controller)
        return super().choose_trial_to_run(tune_controller)

    def _drop_cancelled_pending(self, tune_controller: TuneController) -> None:
        for trial in list(tune_controller.get_trials()):
            if trial.status == Trial.PENDING and self.searcher.should_stop(trial.trial_id):
                tune_controller.stop_trial(trial)

    def debug_string(self) -> str:
        return "Using ReplicateScheduler (FIFO; stops cancelled seed replicates)."
