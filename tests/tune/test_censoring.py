"""Censoring that leaves no initial design (issue #37): every replicate stopped before its final report.

A run whose early-stopping scheduler (unwrapped) or ``stop`` criterion stops every replicate used to
spend its whole budget and end with no observation, no error and no warning. It now fails as soon as
the initial design can no longer complete, naming what stopped the trials and the remedy; partial
censoring goes on as before (``test_misuse.py``'s ASHA runs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from ray import tune
from ray.tune.schedulers import HyperBandScheduler

from tests.tune.trainables import make_noisy_trainable
from tune_risk import ReplicateScheduler, RiskAwareSearch
from tune_risk.engine.records import RunStatus

SPACE = {"x": tune.uniform(0.0, 1.0)}


def searcher_for(space: bool = True, **kwargs) -> RiskAwareSearch:
    if space:
        kwargs.update(space=SPACE, metric="return", mode="max")
    return RiskAwareSearch(random_state_seed=0, n_initial=2, k_max=4, **kwargs)


def drive(searcher: RiskAwareSearch, workers: int, finish: Callable[[str], None], outlook: list[bool]) -> None:
    """Suggest up to ``workers`` trials at a time and complete the oldest with ``finish(trial_id)`` (cancelled
    ones are acknowledged) until the searcher is done or raises; ``outlook`` gets, before every suggestion,
    whether the initial design could still complete."""
    in_flight: list[str] = []
    count = 0
    while True:
        while len(in_flight) < workers:
            engine = searcher.engine
            outlook.append(engine is None or engine.initial_design_can_complete())
            config = searcher.suggest(f"t{count}")
            if config is None or config == "FINISHED":
                break
            in_flight.append(f"t{count}")
            count += 1
        if not in_flight:
            return
        trial_id = in_flight.pop(0)
        if searcher.should_stop(trial_id):
            searcher.on_trial_complete(trial_id, None)
        else:
            finish(trial_id)


def censor(searcher: RiskAwareSearch):
    """Complete a trial the way Tune does when a scheduler stops it at its second report."""

    def finish(trial_id: str) -> None:
        searcher.on_trial_result(trial_id, {"return": 0.1, "training_iteration": 1})
        searcher.on_trial_complete(trial_id, {"return": 0.2, "training_iteration": 2})

    return finish


@pytest.mark.parametrize("intensify", [0.1, 0])
def test_an_all_censored_run_fails_at_the_first_suggestion_after_its_design_became_impossible(intensify):
    searcher = searcher_for(budget=14, intensify=intensify)
    outlook: list[bool] = []
    with pytest.raises(RuntimeError) as raised:
        drive(searcher, workers=2, finish=censor(searcher), outlook=outlook)
    engine = searcher.engine
    assert engine.counts()["runs_completed"] == 0
    assert outlook[-1] is False and all(outlook[:-1])  # the first suggestion with the design lost raised
    message = str(raised.value)
    assert "the initial design cannot complete" in message
    assert f"{engine.counts()['runs_censored']} were stopped before their trainable returned" in message
    assert "an early-stopping scheduler or a stop criterion" in message  # no Tune run: the cause is unknown
    assert "ReplicateScheduler(searcher, base=...)" in message and "RunConfig(stop=...)" in message


def test_the_budgets_last_run_waits_for_the_runs_in_flight_so_that_a_lost_design_still_fails():
    """Tune asks nothing more once its last trial exists: with no intensification reserve, the last run is held
    while the initial design's fate is open, so that the failure is raised at a suggestion, not lost."""
    searcher = searcher_for(budget=8, intensify=0)
    finish = censor(searcher)
    for i in range(4):
        assert isinstance(searcher.suggest(f"t{i}"), dict)
    finish("t0")  # config 0 stopped: t1 cancelled, a replacement joins the design
    searcher.on_trial_complete("t1", None)
    finish("t2")  # config 1 stopped as well: t3 cancelled
    searcher.on_trial_complete("t3", None)
    for i in range(4, 7):
        assert isinstance(searcher.suggest(f"t{i}"), dict)
    assert searcher.engine.settings.budget - len(searcher.engine.runs) == 1
    assert searcher.suggest("t7") is None  # the last run waits: t4..t6 may still complete the design
    finish("t4")
    with pytest.raises(RuntimeError, match="the initial design cannot complete"):
        searcher.suggest("t7")


def test_a_design_lost_by_the_budgets_last_run_is_logged_as_an_error(caplog):
    """Nothing is asked after the last run, so nothing can raise: the error is logged where it becomes certain."""
    searcher = searcher_for(budget=8, intensify=0)
    censored = censor(searcher)

    def complete(trial_id: str) -> None:
        searcher.on_trial_result(trial_id, {"return": 0.3, "training_iteration": 1})
        searcher.on_trial_complete(trial_id, {"return": 0.3, "training_iteration": 1})

    for i in range(4):
        searcher.suggest(f"t{i}")
    complete("t0"), complete("t1")  # configuration 0 has its data
    censored("t2"), searcher.on_trial_complete("t3", None)
    searcher.suggest("t4"), searcher.suggest("t5")
    censored("t4"), searcher.on_trial_complete("t5", None)
    assert isinstance(searcher.suggest("t6"), dict) and searcher.suggest("t7") is None  # the last run waits
    complete("t6")
    assert isinstance(searcher.suggest("t7"), dict)  # t7 can still complete the design: it is launched
    with caplog.at_level(logging.ERROR, logger="tune_risk.tune.searcher"):
        censored("t7")
    assert "the initial design cannot complete" in caplog.text and "3 finished" in caplog.text


def test_partial_censoring_goes_on():
    searcher = searcher_for(budget=16)
    calls = iter(range(1000))

    def finish(trial_id: str) -> None:
        if next(calls) % 3 == 0:
            censor(searcher)(trial_id)
        else:
            searcher.on_trial_result(trial_id, {"return": 0.3, "training_iteration": 1})
            searcher.on_trial_complete(trial_id, {"return": 0.3, "training_iteration": 1})

    drive(searcher, workers=2, finish=finish, outlook=[])
    counts = searcher.engine.counts()
    assert counts["runs_censored"] > 0 and counts["runs_completed"] >= 4 and searcher.engine.hyperparameters is not None


def test_a_trial_removed_before_it_finished_is_censored_not_failed():
    """Tune calls on_trial_complete(trial_id) with no result for a trial removed while PENDING or PAUSED
    (HyperBand stops paused trials of a halving that way): stopped by someone else, so censored."""
    searcher = searcher_for(budget=14)
    searcher.suggest("t0")
    searcher.on_trial_result("t0", {"return": 0.1, "training_iteration": 1})
    searcher.on_trial_complete("t0", None)
    run = searcher.engine.runs[searcher._trial_to_run["t0"]]
    assert run.status is RunStatus.CENSORED and searcher.engine.counts()["runs_failed"] == 0


# ---------------------------------------------------------------------------------------------- real Tune runs
def fit(searcher, tmp_path, scheduler=None, stop=None, iterations=3, num_samples=12):
    tuner = tune.Tuner(
        make_noisy_trainable(iterations=iterations), param_space=SPACE,
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=scheduler, metric="return", mode="max",
                                    num_samples=num_samples, max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="exp", verbose=0, stop=stop),
    )
    return tuner.fit()


def test_hyperband_unwrapped_stopping_every_replicate_fails_naming_it_and_the_remedy(ray_session, tmp_path):
    searcher = searcher_for(space=False)
    with pytest.raises(RuntimeError, match=r"the initial design cannot complete.*censored, never an observation\) by "
                                           r"HyperBandScheduler.*ReplicateScheduler\(searcher, base=HyperBandScheduler"
                                           r"\(\.\.\.\)\), and give it a max_t above the trainable's last report"):
        fit(searcher, tmp_path, scheduler=HyperBandScheduler(time_attr="training_iteration", max_t=3))
    counts = searcher.engine.counts()
    assert counts["runs_completed"] == 0 and counts["runs_censored"] > 0 and counts["runs_failed"] == 0
    assert counts["runs_launched"] < 12  # it failed before the budget was spent


@pytest.mark.parametrize("wrapped", [False, True], ids=["fifo", "replicate-scheduler"])
def test_a_stop_criterion_stopping_every_replicate_fails_naming_it_and_the_remedy(ray_session, tmp_path, wrapped):
    searcher = searcher_for(space=False)
    with pytest.raises(RuntimeError, match=r"by the stop criterion RunConfig\(stop=\{'training_iteration': 2\}\) "
                                           r".*Remedy: drop RunConfig\(stop=\.\.\.\), or raise it above the "
                                           r"trainable's last report"):
        fit(searcher, tmp_path, scheduler=ReplicateScheduler(searcher) if wrapped else None,
            stop={"training_iteration": 2})
    assert searcher.engine.counts()["runs_completed"] == 0
