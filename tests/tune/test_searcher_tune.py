"""RiskAwareSearch + ReplicateScheduler under real Ray Tune runs (local Ray, 2 CPUs)."""

from __future__ import annotations

import logging
import math
import os
import signal

import numpy as np
import pytest
from ray import tune
from ray.tune.logger import JsonLoggerCallback
from ray.tune.search import ConcurrencyLimiter

from tests.tune.trainables import make_noisy_trainable
from tune_risk import Engine, EngineSettings, ReplicateScheduler, RiskAwareSearch
from tune_risk.engine.records import DONE, RunStatus

SPACE = {"x": tune.uniform(0.0, 1.0), "opt": tune.choice(["a", "b"]), "const": 3}


def expected_return(config: dict) -> float:
    """The final return the noisy trainable reports for ``(config, seed)``."""
    rng = np.random.default_rng(int(config["seed"]))
    bonus = 1.0 if config["opt"] == "a" else 0.0
    return math.sin(6.0 * config["x"]) + bonus + (0.1 + 0.8 * config["x"]) * rng.standard_normal()


def run_tuner(searcher, trainable, tmp_path, num_samples, max_concurrent=4, scheduler=True, **tune_kwargs):
    tuner = tune.Tuner(
        trainable,
        param_space=tune_kwargs.pop("param_space", SPACE),
        tune_config=tune.TuneConfig(
            search_alg=searcher, scheduler=ReplicateScheduler(searcher) if scheduler else None,
            metric=tune_kwargs.pop("metric", "return"), mode=tune_kwargs.pop("mode", "max"),
            num_samples=num_samples, max_concurrent_trials=max_concurrent, reuse_actors=True,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0, name=tune_kwargs.pop("name", "exp")),
    )
    return tuner.fit()


def test_certified_configs_have_pending_dropped_and_running_stopped(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=3, k_max=6, n_initial=3, launch_policy="all")
    results = run_tuner(searcher, make_noisy_trainable(iterations=5, sleep=0.05), tmp_path, num_samples=40)
    engine = searcher.engine
    table = searcher.results()
    certified = table[(table.stop_reason == "certified") & (table.cancelled > 0)]
    assert len(certified) >= 1, table
    assert (certified.k == 2).any()  # certified after k_min replicates
    trials = {r.metrics["trial_id"]: r for r in results if r.metrics}
    stopped = dropped = 0
    for trial_id, run_id in searcher._trial_to_run.items():
        run = engine.runs[run_id]
        if run.status is RunStatus.CANCELLED:
            last = trials.get(trial_id)
            if last is None or not last.metrics or "step" not in last.metrics:
                dropped += 1  # PENDING: never started
            else:
                assert last.metrics["step"] < 4  # RUNNING: stopped before its last iteration
                stopped += 1
    assert dropped + stopped == int(table.cancelled.sum()) > 0
    assert len(results) == 40 and engine.counts()["runs_launched"] == 40
    # With 4 workers and k_min=2, a second configuration starts while the first is still sampled.
    bo = [r for r in engine.records if r.phase == "bo"]
    overlaps = [
        (a.config_id, b.config_id) for a, b in zip(bo, bo[1:], strict=False)
        if a.closed_after_runs is not None and min(s.run_id for s in b.slots if s.run_id is not None) < a.closed_after_runs
    ]
    assert overlaps, "no two configurations were ever in flight together"
    # No observation came from a stopped trial: every incorporated value is a final return.
    for record in engine.records:
        for slot in record.slots[: record.n_incorporated]:
            run = engine.runs[slot.run_id]
            assert run.status is RunStatus.USED
            config = {**searcher._config_of(record.config_id), "seed": engine.replicate_seed(record.config_id, run.seed_index)}
            assert slot.value == pytest.approx(expected_return(config), abs=1e-12)


def test_replicates_dropped_before_they_started_report_no_error(ray_session, tmp_path, capfd, caplog):
    """A replicate cancelled while PENDING never ran: Tune used to print "Trial ... completed. Last result: "
    for it and ResultGrid to log FileNotFoundError('Could not fetch metrics ...'), which reads as lost data."""
    searcher = RiskAwareSearch(random_state_seed=3, k_max=6, n_initial=3, launch_policy="all")
    tuner = tune.Tuner(
        make_noisy_trainable(iterations=3, sleep=0.05), param_space=SPACE,
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), metric="return",
                                    mode="max", num_samples=30, max_concurrent_trials=4, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0, name="exp",
                                  callbacks=[JsonLoggerCallback()]),  # result.json of the trials that ran
    )
    with caplog.at_level(logging.WARNING):
        results = tuner.fit()
    out, err = capfd.readouterr()
    for text in (out, err, caplog.text):
        assert "Could not fetch metrics" not in text and "Failed to fetch metrics" not in text
        assert "Last result:" not in text
    assert results.errors == []
    status = {t: searcher.engine.runs[r].status for t, r in searcher._trial_to_run.items()}
    dropped = [r for r in results if "training_iteration" not in r.metrics and status[r.metrics["trial_id"]] is
               RunStatus.CANCELLED]
    assert dropped, "no replicate was dropped while PENDING: the run does not test what it should"
    assert all(r.metrics["replicate"] == "cancelled before it started" and r.metrics_dataframe.empty for r in dropped)
    assert searcher.results().cancelled.sum() >= len(dropped)


class LiveRecordingSearch(RiskAwareSearch):
    """Records its number of live trials (unresolved runs) after every suggestion."""

    def suggest(self, trial_id):
        config = super().suggest(trial_id)
        self.__dict__.setdefault("live_seen", []).append(len(self.engine.in_flight_runs()))
        return config


def test_the_searcher_enforces_max_concurrent_trials_itself(ray_session, tmp_path):
    searcher = LiveRecordingSearch(random_state_seed=4, k_max=4, n_initial=3)
    results = run_tuner(searcher, make_noisy_trainable(iterations=2, sleep=0.02, jitter=0.05), tmp_path,
                        num_samples=16, max_concurrent=2)
    assert searcher._max_concurrent == 2 and len(results) == 16 and not results.errors
    assert max(searcher.live_seen) == 2, searcher.live_seen  # used, never exceeded


def test_out_of_order_completion_gives_the_sequential_decisions(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=11, k_max=8, n_initial=3, max_active_configs=1)
    run_tuner(searcher, make_noisy_trainable(iterations=1, sleep=0.0, jitter=0.15), tmp_path, num_samples=36)
    tuned = [(r.x, r.n_incorporated) for r in searcher.engine.records]
    # The same decisions from a direct sequential loop on the same (config, seed) returns.
    settings = EngineSettings(**{**searcher.engine.settings.to_dict()})
    engine = Engine(settings, dim=searcher.engine.dim)
    while (replicate := engine.ask()) is not DONE:
        config = {**searcher._codec.decode(np.asarray(replicate.x)), "seed": replicate.seed}
        engine.tell(replicate.run_id, expected_return(config))
    sequential = [(r.x, r.n_incorporated) for r in engine.records]
    rounds = min(len(tuned), len(sequential)) - 1  # the last round may be cut by the run budget
    assert rounds >= 6
    assert tuned[:rounds] == sequential[:rounds]


def test_failures_nan_and_missing_metric_never_crash(ray_session, tmp_path, monkeypatch):
    # Tune itself rejects results without the metric unless strict checking is off.
    monkeypatch.setenv("TUNE_DISABLE_STRICT_METRIC_CHECKING", "1")
    searcher = RiskAwareSearch(random_state_seed=5, k_max=4, n_initial=3, max_failures_per_config=3)
    trainable = make_noisy_trainable(iterations=2, fail_every=5, nan_every=7, silent_every=11)
    results = run_tuner(searcher, trainable, tmp_path, num_samples=30)
    table = searcher.results()
    counts = searcher.engine.counts()
    assert counts["runs_failed"] >= 3 and table.failed.sum() == counts["runs_failed"]
    assert counts["runs_launched"] == 30 == len(results)
    assert searcher.best_config is not None
    for record in searcher.engine.records:
        assert all(math.isfinite(v) for v in record.incorporated_values())


def test_mode_min_minimises(ray_session, tmp_path):
    def negated(config):
        import math as _math

        import numpy as _np
        from ray import tune as _tune

        rng = _np.random.default_rng(int(config["seed"]))
        x = config["x"]
        value = _math.sin(6.0 * x) + (1.0 if config["opt"] == "a" else 0.0) + (0.1 + 0.8 * x) * rng.standard_normal()
        _tune.report({"loss": -value})

    searcher = RiskAwareSearch(random_state_seed=2, k_max=4, n_initial=4)
    # no max_concurrent_trials: no ConcurrencyLimiter around the searcher
    run_tuner(searcher, negated, tmp_path, num_samples=40, metric="loss", mode="min", max_concurrent=None)
    table = searcher.results()
    best = searcher.best_config
    assert best["opt"] == "a"  # the +1 bonus, i.e. the lower loss
    assert table.loc[table["config/opt"] == "a", "metric_mean"].mean() < table.loc[table["config/opt"] == "b", "metric_mean"].mean()


def test_concurrency_limiter_wrapping_and_restore_after_sigusr1(ray_session, tmp_path):
    """A real interruption (SIGUSR1, Tune's graceful stop) then Tuner.restore: nothing is lost."""
    searcher = RiskAwareSearch(random_state_seed=9, k_max=4, n_initial=3)
    completed_before: list[str] = []
    fired = tmp_path / "interrupted.flag"

    class Interrupt(tune.Callback):
        """Sends SIGUSR1 once (the callback is pickled into the experiment and restored with it)."""

        def on_trial_complete(self, iteration, trials, trial, **info):
            completed_before.append(trial.trial_id)
            if len(completed_before) == 12 and not fired.exists():
                fired.touch()
                os.kill(os.getpid(), signal.SIGUSR1)

    tuner = tune.Tuner(
        make_noisy_trainable(iterations=2, sleep=0.05),
        param_space=SPACE,
        tune_config=tune.TuneConfig(
            search_alg=ConcurrencyLimiter(searcher, max_concurrent=2), scheduler=ReplicateScheduler(searcher),
            metric="return", mode="max", num_samples=30, reuse_actors=True,
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="interrupted", verbose=0, callbacks=[Interrupt()]),
    )
    first = tuner.fit()
    before = {tid: searcher.engine.runs[rid].status for tid, rid in searcher._trial_to_run.items()}
    assert len(first) < 30  # the run really was interrupted
    restored = tune.Tuner.restore(str(tmp_path / "interrupted"), trainable=make_noisy_trainable(iterations=2, sleep=0.05))
    results = restored.fit()
    assert len(results) == 30 and not results.errors
    final = restored._local_tuner._tune_config.search_alg.searcher  # the restored RiskAwareSearch
    engine = final.engine
    assert engine.counts()["runs_launched"] == 30 and not engine.in_flight_runs()
    # Every replicate resolved before the interruption is still resolved the same way.
    resolved = {tid: status for tid, status in before.items() if status is not RunStatus.IN_FLIGHT}
    assert len(resolved) >= 12
    for trial_id, status in resolved.items():
        assert engine.runs[final._trial_to_run[trial_id]].status is status
    counts = engine.counts()
    assert counts["runs_completed"] + counts["runs_cancelled"] + counts["runs_failed"] == 30


def test_space_in_constructor_and_param_space_gives_rays_error(ray_session, tmp_path):
    searcher = RiskAwareSearch(SPACE, metric="return", mode="max")
    with pytest.raises(ValueError, match="already instantiated with a search space"):
        run_tuner(searcher, make_noisy_trainable(), tmp_path, num_samples=4)


def test_space_only_in_constructor_runs(ray_session, tmp_path):
    searcher = RiskAwareSearch(SPACE, metric="return", mode="max", random_state_seed=1, k_max=3, budget=12)
    tuner = tune.Tuner(
        make_noisy_trainable(iterations=1),
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=ReplicateScheduler(searcher), num_samples=12),
        run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0),
    )
    assert len(tuner.fit()) == 12 and searcher.engine.counts()["runs_launched"] == 12
