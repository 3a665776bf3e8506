"""Start a pending trial's replicate on the warm pool before Ray Tune has a process for the trial.

Why: Ray Tune 2.60 keeps at most one idle trial actor when no trial is staged, so at each of ERAHBO's
synchronisation points (a wave's replicates all finished, the next wave not yet suggested) all but one thin
trial actor are discarded. The next wave's other trials then wait for fresh actors, about 1.8 s each here
(0.19 s for a reused one; ``experiments/studies/live_hpo.py`` reports it as idle worker time), and when a
replicate trains in less time than that, the running trial's actor frees first and Tune hands it to the
waiting trial, killing the fresh one: trials run one after another on one actor while the other pool
workers idle (measured: PPO CartPole at 100k steps, ERAHBO's workers busy 71 % of the time against 93 %
for RAHBO(k=20)). ``RiskAwareSearch(final_key="final")`` removes most of that churn (the next replicate is
staged before the finishing trial ends, so its process is handed over); prefetching still starts a replicate
as soon as a worker frees, before Tune has given its trial a process.

``PoolPrefetch`` is a driver-side Tune callback: after every controller step it gives each PENDING trial of a
pooled trainable (``rl_tasks.make_pooled_trainable``) a free pool worker, if there is one, and starts its
replicate there (``WorkerPool.prefetch``: the pool's manager trains it chunk by chunk and keeps the chunks).
When the trial's thin process runs, it claims the replicate and relays its chunks (already trained ones at
once); Tune's STOP detaches it, which stops its training after the chunk in progress, as without prefetching.
A trial that ends without running (stopped while pending) is detached by the callback. Values are those of
the same replicate trained through a lease, bit for bit (same ``SeedRun``, same seed).
"""

from __future__ import annotations

import logging
from typing import Any

from ray import tune
from ray.tune.experiment import Trial

logger = logging.getLogger(__name__)

_ENDED = (Trial.TERMINATED, Trial.ERROR)


class PoolPrefetch(tune.Callback):
    """``tune.RunConfig(callbacks=[rl_tasks.PoolPrefetch(trainable)])`` for a trainable made by
    ``rl_tasks.make_pooled_trainable``.

    Raises:
        TypeError: ``trainable`` is not a pooled trainable.
    """

    def __init__(self, trainable: Any) -> None:
        task = getattr(trainable, "pooled_task", None)
        if task is None:
            raise TypeError("PoolPrefetch: trainable must be made by rl_tasks.make_pooled_trainable, got "
                            f"{getattr(trainable, '__name__', type(trainable).__name__)!r}")
        self._task = task
        self.prefetched = 0  # replicates started before their trial ran
        self._started: set[str] = set()  # trials whose replicate was prefetched and not yet detached here
        self._skipped: set[str] = set()  # trials whose config cannot be prefetched (they fail on their own)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        full = False
        for trial in trials:
            trial_id = trial.trial_id
            if trial_id in self._started:
                if trial.status in _ENDED:
                    self._task.pool.detach(trial_id)
                    self._started.discard(trial_id)
            elif trial.status == Trial.PENDING and not full and trial_id not in self._skipped:
                full = not self._prefetch(trial)

    def _prefetch(self, trial: Trial) -> bool:
        """Whether a worker was free (a config the trial itself will reject is skipped, not prefetched)."""
        try:
            started = self._task.prefetch(trial.trial_id, trial.config)
        except ValueError as err:
            logger.debug("not prefetching trial %s: %s", trial.trial_id, err)
            self._skipped.add(trial.trial_id)
            return True
        if started:
            self._started.add(trial.trial_id)
            self.prefetched += 1
        return started
