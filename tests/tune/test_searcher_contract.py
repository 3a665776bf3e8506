"""Ray's generic Searcher contract, exercised without starting Ray (suggest/complete by hand)."""

from __future__ import annotations

import math
import pickle

import cloudpickle
import numpy as np
import pytest
from ray import tune
from ray.tune.search import ConcurrencyLimiter, Searcher
from ray.tune.search.search_generator import SearchGenerator

from tune_risk import ReplicateScheduler, RiskAwareSearch

SPACE = {"x": tune.uniform(0.0, 1.0), "nested": {"lr": tune.loguniform(1e-4, 1e-1), "opt": tune.choice(["adam", "sgd"])},
         "units": tune.qrandint(16, 256, 16), "const": "keep-me"}


def objective(config: dict) -> float:
    rng = np.random.default_rng(config["seed"])
    return math.sin(6 * config["x"]) - 0.1 * math.log10(config["nested"]["lr"]) + (0.1 + config["x"]) * rng.standard_normal()


def drive(searcher: RiskAwareSearch, n: int, start: int = 0, value=objective) -> list[dict]:
    """Suggest/complete ``n`` trials one at a time; return the suggested configs."""
    configs = []
    for i in range(start, start + n):
        config = searcher.suggest(f"t{i}")
        assert isinstance(config, dict), config
        configs.append(config)
        searcher.on_trial_complete(f"t{i}", {"return": value(config), "done": True, "time_total_s": 1.0})
    return configs


def make(**kwargs) -> RiskAwareSearch:
    kwargs = {"metric": "return", "mode": "max", "random_state_seed": 0, "k_max": 4, "n_initial": 3, "budget": 40, **kwargs}
    return RiskAwareSearch(SPACE, **kwargs)


def test_configs_carry_distinct_reproducible_seeds_and_constants():
    a, b = make(), make()
    configs_a, configs_b = drive(a, 12), drive(b, 12)
    assert configs_a == configs_b  # random_state_seed fixes everything
    assert all(c["const"] == "keep-me" and c["units"] % 16 == 0 for c in configs_a)
    seeds_per_config: dict = {}
    for c in configs_a:
        seeds_per_config.setdefault((c["x"], c["nested"]["lr"]), []).append(c["seed"])
    assert all(len(set(s)) == len(s) for s in seeds_per_config.values())
    assert drive(make(random_state_seed=1), 12) != configs_a


def test_common_random_numbers_give_replicate_index_seeds():
    configs = drive(make(common_random_numbers=True), 6)
    assert [c["seed"] for c in configs] == [0, 1, 0, 1, 0, 1]  # n_initial=3 configs x k_init=2


def test_save_restore_into_a_default_searcher_continues_identically(tmp_path):
    original = make()
    drive(original, 10)
    original.save(str(tmp_path / "ckpt.pkl"))
    reference = drive(original, 8, start=10)
    restored = RiskAwareSearch()  # default-constructed; set_search_properties is NOT called on restore
    restored.restore(str(tmp_path / "ckpt.pkl"))
    assert drive(restored, 8, start=10) == reference
    assert restored.results().equals(original.results())


def test_searcher_is_cloudpicklable_mid_run():
    searcher = make()
    drive(searcher, 7)
    clone = cloudpickle.loads(cloudpickle.dumps(searcher))
    assert clone.engine.state_dict() == searcher.engine.state_dict()
    assert drive(clone, 5, start=7) == drive(searcher, 5, start=7)


def test_search_generator_save_to_dir_and_concurrency_limiter(tmp_path):
    searcher = make()
    generator = SearchGenerator(ConcurrencyLimiter(searcher, max_concurrent=3))
    for i in range(4):
        searcher.suggest(f"t{i}")
    generator.save_to_dir(str(tmp_path), session_str="s")
    assert any(p.name.startswith("searcher-state") for p in tmp_path.iterdir())
    fresh = RiskAwareSearch()
    fresh.restore_from_dir(str(tmp_path))
    assert fresh.engine.state_dict() == searcher.engine.state_dict()
    assert fresh._trial_to_run == searcher._trial_to_run


def test_points_to_evaluate_open_the_initial_design():
    points = [{"x": 0.25, "nested": {"lr": 0.01, "opt": "sgd"}, "units": 64, "const": "keep-me"}]
    searcher = make(points_to_evaluate=points)
    first, second = searcher.suggest("a"), searcher.suggest("b")
    for config in (first, second):
        assert {k: v for k, v in config.items() if k not in ("seed", "config_id")} == points[0]
        assert config["config_id"] == 0
    assert first["seed"] != second["seed"]


def test_evaluated_rewards_fill_replicates_without_trials():
    points = [{"x": 0.25, "nested": {"lr": 0.01, "opt": "sgd"}, "units": 64, "const": "keep-me"},
              {"x": 0.75, "nested": {"lr": 0.001, "opt": "adam"}, "units": 32, "const": "keep-me"}]
    searcher = make(points_to_evaluate=points, evaluated_rewards=[[1.0, 1.2], 0.5])
    configs = drive(searcher, 6)
    xs = [c["x"] for c in configs]
    assert 0.25 not in xs  # fully evaluated by its two rewards
    assert xs.count(0.75) == 1  # one given reward, one replicate to run
    table = searcher.results()
    assert table.loc[0, "k"] == 2 and table.loc[0, "completed"] == 0 and table.loc[0, "metric_mean"] == pytest.approx(1.1)


def test_nan_inf_error_and_missing_metric_are_failed_replicates():
    searcher = make(max_failures_per_config=10)
    bad = iter([float("nan"), float("inf"), None, "error", "missing"])
    for i, kind in enumerate(bad):
        searcher.suggest(f"t{i}")
        if kind == "error":
            searcher.on_trial_complete(f"t{i}", None, error=True)
        elif kind == "missing":
            searcher.on_trial_complete(f"t{i}", {"other": 1.0})
        else:
            searcher.on_trial_complete(f"t{i}", {"return": kind})
    assert searcher.engine.counts()["runs_failed"] == 5
    assert int(searcher.results().failed.sum()) == 5


def test_budget_returns_finished():
    searcher = make(budget=14)
    launched = 0
    while (config := searcher.suggest(f"t{launched}")) != Searcher.FINISHED:
        assert isinstance(config, dict)
        searcher.on_trial_complete(f"t{launched}", {"return": objective(config), "done": True})
        launched += 1
    # Every trial counts; a round never starts with fewer than k_min=2 runs left.
    assert 13 <= launched <= 14 and searcher.engine.counts()["runs_launched"] == launched
    assert searcher.suggest("again") == Searcher.FINISHED


def test_mode_min_negates_observations():
    searcher = make(mode="min")
    drive(searcher, 6, value=lambda c: 3.0 + c["x"])
    record = searcher.engine.records[0]
    assert all(v < 0 for v in record.incorporated_values())
    assert searcher.results().loc[0, "metric_mean"] > 0  # reported in the metric's own units


def test_missing_space_and_metric_raise_rays_messages():
    with pytest.raises(RuntimeError, match="search space"):
        RiskAwareSearch(metric="return", mode="max").suggest("t")
    with pytest.raises(RuntimeError, match="metric"):
        RiskAwareSearch(SPACE).suggest("t")


def test_space_both_in_constructor_and_param_space_is_refused():
    searcher = RiskAwareSearch(SPACE, metric="return", mode="max")
    assert searcher.set_search_properties("return", "max", SPACE) is False


@pytest.mark.parametrize("domain, name", [
    (tune.grid_search([1, 2]), "grid_search"),
    (tune.sample_from(lambda spec: 1), "sample_from"),
    (tune.randn(), "randn"),
])
def test_unsupported_domains_name_the_parameter(domain, name):
    with pytest.raises(ValueError, match=r"deep/param.*" + name[:5]):
        RiskAwareSearch({"deep": {"param": domain}, "x": tune.uniform(0, 1)})


@pytest.mark.parametrize("kwargs, pattern", [
    ({"k_min": 1}, "k_min"),
    ({"k_min": 4, "k_max": 3}, "k_max"),
    ({"alpha": -0.5}, "alpha"),
    ({"beta": 0.0}, "beta"),
    ({"method": "bohb"}, "method"),
    ({"beta_stop_schedule": "cosine"}, "beta_stop_schedule"),
    ({"lengthscale": "magic"}, "lengthscale"),
    ({"mode": "maximise"}, "mode"),
    ({"seed_key": ""}, "seed_key"),
    ({"final_key": ""}, "final_key"),
    ({"final_key": 1}, "final_key"),
    ({"evaluated_rewards": [1.0]}, "points_to_evaluate"),
])
def test_bad_constructor_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        RiskAwareSearch(SPACE, **kwargs)


def test_scheduler_needs_the_searcher():
    with pytest.raises(TypeError, match="RiskAwareSearch"):
        ReplicateScheduler(object())


def test_pickled_state_is_versioned():
    searcher = make()
    drive(searcher, 3)
    state = pickle.loads(pickle.dumps(searcher.get_state()))
    assert state["_engine_state"]["version"] == 2


def test_set_max_concurrency_caps_live_trials_and_is_restored(tmp_path):
    searcher = make()
    assert searcher.set_max_concurrency(2) is True  # Tune's ConcurrencyLimiter becomes a pass-through
    assert isinstance(searcher.suggest("a"), dict) and isinstance(searcher.suggest("b"), dict)
    assert searcher.suggest("c") is None
    searcher.on_trial_complete("a", {"return": 0.5, "done": True, "time_total_s": 1.0})
    assert isinstance(searcher.suggest("c"), dict) and searcher.suggest("d") is None
    searcher.save(str(tmp_path / "ckpt.pkl"))
    restored = RiskAwareSearch()  # Tuner.restore does not call set_max_concurrency before restoring
    restored.restore(str(tmp_path / "ckpt.pkl"))
    assert restored.suggest("d") is None
    restored.on_trial_complete("b", {"return": 0.4, "done": True, "time_total_s": 1.0})
    assert isinstance(restored.suggest("d"), dict)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_concurrent"):
            make().set_max_concurrency(bad)


def test_final_key_observes_the_last_report_at_once_and_ignores_the_completion():
    """With ``final_key`` the last report frees the trial's concurrency slot before the trial completes (so Tune
    can stage the next replicate while the finishing process lives); the completion is not counted twice."""
    def step(searcher):
        searcher.set_max_concurrency(2)
        first, _ = searcher.suggest("a"), searcher.suggest("b")
        assert searcher.suggest("c") is None
        searcher.on_trial_result("a", {"return": 0.1, "final": False, "training_iteration": 1})
        searcher.on_trial_result("a", {"return": 0.2, "final": 1, "training_iteration": 2})  # a number is no flag
        assert searcher.suggest("c") is None
        searcher.on_trial_result("a", {"return": 0.5, "final": np.True_, "training_iteration": 3, "time_total_s": 2.0})
        return first

    plain = make()
    step(plain)
    assert plain.suggest("c") is None  # without final_key only the completion frees the slot
    early = make(final_key="final")
    config = step(early)
    assert isinstance(early.suggest("c"), dict)
    run = early.engine.runs[early._trial_to_run["a"]]
    slot = early.engine.records[run.config_id].slots[run.replicate_index]
    assert slot.value == 0.5 and run.cost == 2.0
    early.on_trial_result("a", {"return": 0.5, "final": True, "training_iteration": 3, "done": True})  # Tune's repeat
    early.on_trial_complete("a", {"return": 9.0, "final": True, "training_iteration": 3, "done": True})
    assert early.engine.counts()["runs_completed"] == 1 and slot.value == 0.5
    assert config == plain._config_of(0) | {"seed": config["seed"], "config_id": 0}
