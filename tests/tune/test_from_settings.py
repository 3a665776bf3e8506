"""``RiskAwareSearch.from_settings``: the engine runs with exactly the given ``EngineSettings``."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from ray import tune

from tune_risk import EngineSettings, RiskAwareSearch
from tune_risk.tune.searcher import TUNE_ARGUMENTS

SPACE = {"x": tune.uniform(0.0, 1.0), "y": tune.loguniform(1e-3, 1.0)}

NON_DEFAULT = dict(
    alpha=0.5, k_min=3, k_max=9, k_init=4, n_initial=4, beta=3.0, beta_stop=0.5, beta_stop_schedule="exponential",
    schedule_param=20.0, budget=90, budget_unit="runs", charge_initial=True, rho_bar_sq=0.2, warp="none",
    warp_refit="never", warp_bound=0.75, mean_noise="plugin", var_noise="theory", var_posterior="nonnegative", recommend="posterior",
    kernel="matern52",
    refit="every_round", standardization="per_build", beta_convention="multiplier", launch_policy="window", window=3,
    max_active_configs=2, late_results="append", max_failures_per_config=1, common_random_numbers=True,
    lengthscale="oscbo", intensify=5, oscbo_lambda_init=0.3, oscbo_omega=0.01, oscbo_form="literal", num_restarts=2,
    raw_samples=50, seed=11, torch_threads=0,
)


def defaults_kept(settings: EngineSettings) -> list[str]:
    return [f.name for f in dataclasses.fields(EngineSettings) if getattr(settings, f.name) == f.default]


def engine_settings(searcher: RiskAwareSearch) -> EngineSettings:
    assert isinstance(searcher.suggest("t0"), dict)  # the engine is built at the first suggestion
    return searcher.engine.settings


@pytest.mark.parametrize("settings", [
    EngineSettings(**NON_DEFAULT),
    EngineSettings.for_method("rahbo", **{**NON_DEFAULT, "k_min": 5, "k_max": 5, "k_init": None, "budget": 60,
                                          "budget_unit": "samples", "lengthscale": "a-gp-ucb", "oscbo_lambda_init": None,
                                          "oscbo_omega": EngineSettings.oscbo_omega, "oscbo_form": "prefix"}),
], ids=["erahbo", "rahbo"])
def test_the_engine_gets_exactly_the_settings(settings):
    assert set(defaults_kept(settings)) <= {"method", "k_init", "budget_unit", "oscbo_lambda_init", "oscbo_omega",
                                            "oscbo_form"}
    searcher = RiskAwareSearch.from_settings(settings, SPACE, metric="score", mode="max", seed_key="s")
    assert engine_settings(searcher) == settings


def test_every_field_of_the_first_case_is_not_its_default():
    assert defaults_kept(EngineSettings(**NON_DEFAULT)) == ["method"]  # the second case covers method


def test_without_a_budget_tune_num_samples_is_the_budget():
    searcher = RiskAwareSearch.from_settings(EngineSettings(seed=3), SPACE)
    searcher.set_search_properties("score", "max", {}, num_samples=40)
    assert engine_settings(searcher) == EngineSettings(seed=3, budget=40)


def test_settings_are_not_given_twice():
    settings = EngineSettings()
    with pytest.raises(TypeError, match="'k_max'.*engine settings come from settings"):
        RiskAwareSearch.from_settings(settings, SPACE, k_max=5)
    with pytest.raises(TypeError, match="'random_state_seed'"):
        RiskAwareSearch.from_settings(settings, SPACE, random_state_seed=1)
    with pytest.raises(TypeError, match="must be EngineSettings"):
        RiskAwareSearch.from_settings({"k_max": 5}, SPACE)


def test_each_constructor_argument_is_a_tune_argument_or_an_engine_setting():
    """A new constructor argument must be placed: from_settings passes the Tune ones and refuses the rest."""
    fields = {f.name for f in dataclasses.fields(EngineSettings)}
    arguments = set(inspect.signature(RiskAwareSearch).parameters) - {"engine_options"}
    # the one name in both: the constructor's warp is a fitted FrozenWarp, EngineSettings.warp a mode ("online"/"none")
    assert set(TUNE_ARGUMENTS) <= arguments and set(TUNE_ARGUMENTS) & fields == {"warp"}
    assert arguments - set(TUNE_ARGUMENTS) <= fields | {"random_state_seed"}
