"""Tune usages that used to give silent wrong answers: each is now a clear error or a correct run.

Covered: the quickstart scripts and the Tune guide's diff between them; early-stopping schedulers (never an
intermediate value as an observation, with and without ``ReplicateScheduler(base=...)``); metric/mode
conflicts; a scheduler bound to another searcher; a ``Repeater`` around the searcher; a non-numeric metric; invalid constructor
arguments; the configuration id in every trial's config, grouped by Tune's own logger callbacks.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from ray import tune
from ray.tune.error import TuneError
from ray.tune.logger import JsonLoggerCallback, TBXLoggerCallback
from ray.tune.schedulers import ASHAScheduler, PopulationBasedTraining
from ray.tune.search import ConcurrencyLimiter, Repeater, SearchGenerator

from tune_risk import ReplicateScheduler, RiskAwareSearch
from tune_risk.engine.records import RunStatus

ROOT = Path(__file__).parents[2]
SPACE = {"x": tune.uniform(0.0, 1.0)}


def final_return(x: float, seed: int) -> float:
    return math.sin(6.0 * x) + (0.1 + 0.8 * x) * np.random.default_rng(seed).standard_normal()


def make_trainable(iterations: int = 8):
    """Reports ``final * i / iterations``: every intermediate value differs from the final one."""

    def trainable(config):
        import math
        import time

        import numpy as np
        from ray import tune

        x, seed = float(config["x"]), int(config["seed"])
        final = math.sin(6.0 * x) + (0.1 + 0.8 * x) * np.random.default_rng(seed).standard_normal()
        for i in range(1, iterations + 1):
            time.sleep(0.01)
            tune.report({"return": final * i / iterations})

    return trainable


def fit(searcher, tmp_path, scheduler, num_samples=24, callbacks=None, **config):
    tuner = tune.Tuner(
        make_trainable(),
        param_space=config.pop("param_space", SPACE),
        tune_config=tune.TuneConfig(search_alg=searcher, scheduler=scheduler, metric="return",
                                    mode=config.pop("mode", "max"), num_samples=num_samples,
                                    max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="exp", verbose=0, callbacks=callbacks),
    )
    return tuner.fit()


def observations_are_final_returns(searcher) -> int:
    """Every incorporated value equals the replicate's final return; returns how many were checked."""
    engine, checked = searcher.engine, 0
    for run in engine.runs.values():
        if run.status is RunStatus.USED:
            slot = engine.records[run.config_id].slots[run.replicate_index]
            x = searcher._config_of(run.config_id)["x"]
            assert slot.value == pytest.approx(final_return(x, engine.replicate_seed(run.config_id, run.seed_index)), abs=1e-12), (run, slot.value)
            checked += 1
    return checked


# ---------------------------------------------------------------------------------------------- quickstart
def _readme_diff() -> list[str]:
    text = (ROOT / "docs" / "guides" / "tune.md").read_text()
    block = re.search(r"```diff\n(.*?)```", text, re.S)
    assert block, "the Tune guide has no diff block"
    return block.group(1).splitlines()


def apply_unified_diff(old: list[str], diff: list[str]) -> list[str]:
    """``old`` patched by a unified diff; every context and removed line must match ``old`` exactly."""
    out, i = [], 0
    for line in diff:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            start = int(re.match(r"@@ -(\d+)", line).group(1)) - 1
            out.extend(old[i:start])
            i = start
        elif line[:1] in (" ", "-"):
            assert old[i] == line[1:], (i, old[i], line)
            if line[0] == " ":
                out.append(old[i])
            i += 1
        elif line[:1] == "+":
            out.append(line[1:])
    return out + old[i:]


def test_readme_diff_is_exactly_the_change_from_the_plain_quickstart() -> None:
    plain = (ROOT / "experiments" / "examples" / "tune_quickstart_plain.py").read_text().splitlines()
    risk = (ROOT / "experiments" / "examples" / "tune_quickstart.py").read_text().splitlines()
    assert apply_unified_diff(plain, _readme_diff()) == risk


@pytest.mark.parametrize("script", ["tune_quickstart_plain.py", "tune_quickstart.py"])
def test_quickstart_scripts_run(script: str) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "experiments" / "examples" / script), "--num-samples", "12"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "best configuration: {'lr'" in proc.stdout


# ---------------------------------------------------------------------------------------------- schedulers
def test_asha_as_the_scheduler_never_turns_an_intermediate_value_into_an_observation(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=0, k_max=4, n_initial=3)
    asha = ASHAScheduler(time_attr="training_iteration", max_t=100, grace_period=1, reduction_factor=2)
    fit(searcher, tmp_path, asha)
    counts = searcher.engine.counts()
    assert counts["runs_censored"] > 0, counts  # ASHA did stop replicates
    assert observations_are_final_returns(searcher) >= 4
    table = searcher.results()
    assert (table.stop_reason == "stopped").sum() > 0 and table.censored.sum() == counts["runs_censored"]


def test_replicate_scheduler_wraps_asha_with_cancellation_and_censoring(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=1, k_max=6, n_initial=3, launch_policy="all")
    asha = ASHAScheduler(time_attr="training_iteration", max_t=100, grace_period=2, reduction_factor=3)
    fit(searcher, tmp_path, ReplicateScheduler(searcher, base=asha), num_samples=30)
    counts = searcher.engine.counts()
    assert counts["runs_censored"] > 0 and counts["runs_in_flight"] == 0, counts
    assert observations_are_final_returns(searcher) >= 4
    table = searcher.results()
    stopped = table.query("stop_reason == 'stopped'")
    assert len(stopped) > 0 and (stopped.k < 6).all() and (stopped.phase == "bo").all()
    assert (table.query("phase == 'initial'").stop_reason == "initial design").all()


def test_replicate_scheduler_refuses_bases_it_cannot_wrap() -> None:
    searcher = RiskAwareSearch(random_state_seed=0)
    with pytest.raises(ValueError, match="cannot wrap PopulationBasedTraining: it copies and mutates"):
        ReplicateScheduler(searcher, base=PopulationBasedTraining(time_attr="training_iteration", hyperparam_mutations={"x": [0.1, 0.2]}))
    with pytest.raises(ValueError, match="another ReplicateScheduler"):
        ReplicateScheduler(searcher, base=ReplicateScheduler(searcher))
    with pytest.raises(TypeError, match="needs a Tune TrialScheduler, got str"):
        ReplicateScheduler(searcher, base="asha")


# ---------------------------------------------------------------------------------------------- conflicts
def test_searcher_mode_conflicting_with_tuneconfig_fails_at_the_start(ray_session, tmp_path):
    searcher = RiskAwareSearch(mode="min", random_state_seed=0)
    with pytest.raises(ValueError, match=r"RiskAwareSearch\(mode='min'\) conflicts with TuneConfig\(mode='max'\)"):
        fit(searcher, tmp_path, ReplicateScheduler(searcher))
    assert searcher.engine is None  # nothing ran


def test_searcher_metric_conflicting_with_tuneconfig_fails_at_the_start(ray_session, tmp_path):
    searcher = RiskAwareSearch(metric="reward", random_state_seed=0)
    with pytest.raises(ValueError, match=r"RiskAwareSearch\(metric='reward'\) conflicts with TuneConfig"):
        fit(searcher, tmp_path, ReplicateScheduler(searcher))


def test_scheduler_bound_to_another_searcher_fails_at_the_first_trial(ray_session, tmp_path):
    searcher, other = RiskAwareSearch(random_state_seed=0), RiskAwareSearch(random_state_seed=1)
    with pytest.raises(ValueError, match="not this run's search_alg"):
        fit(searcher, tmp_path, ReplicateScheduler(other))
    assert searcher.engine.counts()["runs_completed"] == 0


def test_non_numeric_metric_stops_the_run_at_its_first_report_naming_it(ray_session, tmp_path):
    def trainable(config):
        from ray import tune

        tune.report({"return": "n/a"})

    searcher = RiskAwareSearch(random_state_seed=0)
    tuner = tune.Tuner(trainable, param_space=SPACE, tune_config=tune.TuneConfig(
        search_alg=searcher, scheduler=ReplicateScheduler(searcher), metric="return", mode="max", num_samples=10),
        run_config=tune.RunConfig(storage_path=str(tmp_path), name="exp", verbose=0))
    with pytest.raises(TuneError, match=r"reported return='n/a' \(str\), which is not a number"):
        tuner.fit()
    assert searcher.engine.counts()["runs_completed"] == 0


@pytest.mark.parametrize("wrapped", [False, True], ids=["fifo", "replicate-scheduler"])
def test_repeater_around_the_searcher_is_refused_at_the_start(ray_session, tmp_path, wrapped):
    searcher = RiskAwareSearch(random_state_seed=0)
    scheduler = ReplicateScheduler(searcher) if wrapped else None
    with pytest.raises(ValueError, match=r"cannot run inside Repeater\(repeat=2\): every replicate is already one Tune "
                                         r"trial.*pass RiskAwareSearch itself as search_alg.*k_min/k_max"):
        fit(Repeater(searcher, repeat=2), tmp_path, scheduler)
    assert searcher.engine is None  # refused before the first replicate


def test_replicate_scheduler_refuses_a_repeater_in_the_search_chain() -> None:
    """The scheduler's own check, on the search_alg chain Tune hands it (no stack inspection)."""
    searcher = RiskAwareSearch(random_state_seed=0)
    controller = SimpleNamespace(search_alg=SearchGenerator(ConcurrencyLimiter(Repeater(searcher, repeat=3), 2)))
    with pytest.raises(ValueError, match=r"inside Repeater\(repeat=3\)"):
        ReplicateScheduler(searcher).on_trial_add(controller, trial=None)


# ---------------------------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"kmin": 3}, TypeError, r"RiskAwareSearch\(\) got an unexpected keyword argument 'kmin'; did you mean 'k_min'\?"),
    ({"method": "rahbo", "k_min": 7, "k_max": 3}, ValueError,
     r"RiskAwareSearch: method='rahbo' runs a fixed k = k_max .* k_min=7 would be ignored"),
    ({"alpha": 1e308}, ValueError, r"RiskAwareSearch: alpha must be a number in \[0, 1e\+06\], got alpha=1e\+308"),
    ({"alpha": -1.0}, ValueError, r"RiskAwareSearch: alpha must be a number in \[0, 1e\+06\]"),
    ({"common_random_numbers": "yes"}, ValueError,
     r"RiskAwareSearch: common_random_numbers must be True or False, got 'yes'"),
    ({"method": "gp-ucb", "alpha": 0.5}, ValueError, r"RiskAwareSearch: method='gp-ucb' is risk neutral"),
    ({"k_max": 1}, ValueError, r"RiskAwareSearch: k_max must be >= 2, got k_max=1"),
    ({"method": "hyperband"}, ValueError, r"RiskAwareSearch: unknown method='hyperband'"),
    ({"seed": 3}, TypeError, r"unexpected keyword argument 'seed'; did you mean 'random_state_seed'\?"),
    ({"config_id_key": "seed"}, ValueError, r"seed_key and config_id_key are both 'seed'"),
])
def test_invalid_arguments_fail_at_construction_naming_the_argument(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        RiskAwareSearch(**kwargs)


def test_fixed_k_methods_use_k_max_and_erahbo_defaults_hold() -> None:
    assert RiskAwareSearch(method="rahbo", k_max=3)._settings.k_min == 3
    settings = RiskAwareSearch(method="gp-ucb", k_max=4)._settings
    assert (settings.k_min, settings.k_max, settings.alpha) == (4, 4, 0.0)
    settings = RiskAwareSearch()._settings
    assert (settings.k_min, settings.k_max, settings.k_init, settings.alpha) == (2, 20, 2, 1.0)


def test_a_space_parameter_named_like_the_config_id_key_is_refused() -> None:
    with pytest.raises(ValueError, match="has a parameter 'config_id'.*config_id_key"):
        RiskAwareSearch({"config_id": tune.uniform(0, 1)}, metric="return", mode="max")
    RiskAwareSearch({"config_id": tune.uniform(0, 1)}, metric="return", mode="max", config_id_key=None)


# ---------------------------------------------------------------------------------------------- logging
def test_every_trial_carries_its_configuration_id_and_tune_loggers_group_replicates(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=2, k_max=4, n_initial=3)
    fit(searcher, tmp_path, ReplicateScheduler(searcher), num_samples=14,
        callbacks=[JsonLoggerCallback(), TBXLoggerCallback()])
    started = list((tmp_path / "exp").glob("*/params.json"))  # a replicate dropped while PENDING never starts
    assert len(started) >= 10 and len(list((tmp_path / "exp").glob("*/events.out.tfevents.*"))) == len(started)
    by_config: dict[int, set[int]] = {}
    for params in (tmp_path / "exp").glob("*/params.json"):
        config = json.loads(params.read_text())
        by_config.setdefault(config["config_id"], set()).add(config["seed"])
    engine = searcher.engine
    expected: dict[int, set[int]] = {}
    for run_id in searcher._trial_to_run.values():
        run = engine.runs[run_id]
        expected.setdefault(run.config_id, set()).add(engine.replicate_seed(run.config_id, run.seed_index))
    assert by_config == expected and len(by_config) >= 4
    table = searcher.results()
    for config_id, seeds in by_config.items():
        row = table.set_index("config_id").loc[config_id]
        assert row.completed + row.cancelled + row.censored + row.failed == len(seeds)


def test_results_name_their_units_and_stop_reasons(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=4, k_max=4, n_initial=3)
    fit(searcher, tmp_path, ReplicateScheduler(searcher), num_samples=14, mode="min")
    table = searcher.results()
    for column in ("status", "stop_reason", "k", "metric_mean", "metric_std", "metric_variance", "warped_mean",
                   "warped_variance", "warped_mv", "warped_lcb_mv", "warped_ucb_mv", "censored"):
        assert column in table, column
    done = table[table.k >= 2].iloc[0]
    values = searcher.engine.records[int(done.config_id)].incorporated_values()
    # the engine maximises -return under mode="min"; metric_* columns are in the metric's own units
    assert done.metric_mean == pytest.approx(-np.mean(values))
    assert done.metric_std == pytest.approx(np.std(values, ddof=1))
    assert set(table.stop_reason) <= {"initial design", "certified", "k_max", "budget", "failed", "stopped", ""}


def test_a_searcher_file_naming_classes_this_version_lacks_fails_with_a_clear_message(tmp_path):
    path = tmp_path / "searcher-state.pkl"
    path.write_bytes(b"ctune_risk.no_such_module\nThing\n.")  # a pickle that names tune_risk.no_such_module.Thing
    with pytest.raises(ValueError, match="cannot restore .*no_such_module.*another version of tune_risk"):
        RiskAwareSearch().restore(str(path))
