"""ARLBench search spaces: supported domain kinds, valid samples, Sobol mapping, codec round trip."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from ray.tune.search import sample

from rl_tasks.envs import ENVIRONMENTS, check_task, tasks
from rl_tasks.spaces import (
    SPACE_NAMES,
    config_from_unit,
    default_config,
    describe_space,
    full_config,
    get_space,
    is_valid,
    space_name,
    value_from_unit,
)

ALLOWED_SAMPLERS = (sample.Uniform, sample.LogUniform)


def _assert_supported(domain: sample.Domain) -> None:
    """Only uniform/loguniform/randint/lograndint/qrandint/choice: what the searcher's codec takes."""
    if isinstance(domain, sample.Categorical):
        assert len(domain.categories) >= 2
        return
    assert isinstance(domain, (sample.Float, sample.Integer)), domain
    inner = domain.get_sampler()
    if isinstance(inner, sample.Quantized):
        assert isinstance(domain, sample.Integer), "quantized floats are not used"
        inner = inner.get_sampler()
    assert isinstance(inner, ALLOWED_SAMPLERS), inner


@pytest.mark.parametrize(("algo", "env"), tasks())
def test_every_task_has_a_supported_space(algo: str, env: str) -> None:
    space = get_space(algo, env)
    assert space_name(algo, env) in SPACE_NAMES
    assert space, "empty space"
    for domain in space.values():
        _assert_supported(domain)
    defaults = default_config(algo, env)
    assert set(defaults) == set(space)
    assert all(is_valid(space[k], v) for k, v in defaults.items()), defaults


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_tune_samples_and_sobol_points_are_valid(name: str) -> None:
    algo, env = next((a, e) for a, e in tasks() if space_name(a, e) == name)
    space = get_space(algo, env)
    rng = random.Random(0)
    for _ in range(200):
        config = {k: d.sample() for k, d in space.items()}
        assert all(is_valid(space[k], v) for k, v in config.items()), config
        point = [rng.random() for _ in space]
        config = config_from_unit(space, point)
        assert all(is_valid(space[k], v) for k, v in config.items()), config
        full_config(algo, env, config)  # accepted


def test_unit_mapping_covers_bounds_and_choices() -> None:
    space = get_space("dqn", "CartPole-v1")
    assert value_from_unit(space["buffer_size"], 0.0) == 1024
    assert value_from_unit(space["buffer_size"], 1.0) == 120_000
    assert value_from_unit(space["learning_rate"], 0.0) == pytest.approx(1e-6)
    assert value_from_unit(space["learning_rate"], 0.5) == pytest.approx(np.sqrt(1e-6 * 0.1))
    picks = {value_from_unit(space["buffer_batch_size"], u) for u in np.linspace(0, 1, 30)}
    assert picks == {64, 128, 256}
    with pytest.raises(ValueError, match="coordinates"):
        config_from_unit(space, [0.5])


def test_invalid_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="minibatch_size"):
        full_config("ppo", "CartPole-v1", {"minibatch_size": 100})
    with pytest.raises(ValueError, match="learning_rate"):
        full_config("ppo", "CartPole-v1", {"learning_rate": 1.0})
    with pytest.raises(ValueError, match="continuous"):
        check_task("dqn", "Pendulum-v1")
    with pytest.raises(ValueError, match="valid"):
        check_task("a2c", "CartPole-v1")


def test_describe_space_is_json_ready() -> None:
    desc = describe_space(get_space("ppo", "CartPole-v1"))
    assert desc["learning_rate"] == {"type": "float", "lower": 1e-6, "upper": 0.1, "log": True, "q": None}
    assert desc["minibatch_size"] == {"type": "categorical", "choices": [128, 256, 512]}
    desc = describe_space(get_space("dqn", "CartPole-v1"))
    assert desc["buffer_size"] == {"type": "int", "lower": 1024, "upper": 120_000, "log": False, "q": None}


@pytest.mark.parametrize("name", SPACE_NAMES)
def test_spaces_round_trip_through_the_searchers_codec(name: str) -> None:
    tune_space = pytest.importorskip("tune_risk.tune.space")
    algo, env = next((a, e) for a, e in tasks() if space_name(a, e) == name)
    space = get_space(algo, env)
    codec = tune_space.TuneSpaceCodec.from_param_space(space)
    assert len(codec.flat_names) == len(space)
    rng = np.random.default_rng(1)
    for _ in range(50):
        config = config_from_unit(space, rng.random(len(space)))
        x = codec.encode({**config, "seed": 3})
        assert x.shape == (len(space),) and np.all((0 <= x) & (x <= 1))
        decoded = codec.decode(x)
        for key, value in config.items():
            if isinstance(value, float):
                assert decoded[key] == pytest.approx(value, rel=1e-9)
            else:
                assert decoded[key] == value and type(decoded[key]) is type(value)


def test_import_is_jax_free() -> None:
    code = "import sys, rl_tasks, rl_tasks.cli, rl_tasks.spaces; assert 'jax' not in sys.modules, 'jax imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_environment_registry_is_consistent() -> None:
    for name, spec in ENVIRONMENTS.items():
        assert spec.name == name and spec.domain in ("cc", "brax") and spec.num_envs > 0
    assert {env for algo, env in tasks() if algo == "sac"} == {n for n, s in ENVIRONMENTS.items() if not s.discrete}


def test_fixed_hyperparameters_can_be_overridden_and_are_validated() -> None:
    from rl_tasks.cli import fixed_pair

    config = full_config("sac", "Pendulum-v1", {"hidden_size": 64, "gamma": np.float64(0.9), "seed": 3})
    assert config["hidden_size"] == 64 and config["gamma"] == 0.9 and "seed" not in config
    with pytest.raises(ValueError, match="hidden_size=0 of sac must be a positive int"):
        full_config("sac", "Pendulum-v1", {"hidden_size": 0})
    with pytest.raises(ValueError, match="activation='gelu'"):
        full_config("ppo", "CartPole-v1", {"activation": "gelu"})
    assert fixed_pair("hidden_size=64") == ("hidden_size", 64)
    assert fixed_pair("normalize_observations=true") == ("normalize_observations", True)
    assert fixed_pair("activation=relu") == ("activation", "relu")


def test_generate_refuses_an_unknown_fixed_override_before_training(tmp_path) -> None:
    from rl_tasks.generate import generate_table

    with pytest.raises(ValueError, match="'depth' is not a fixed hyperparameter of sac"):
        generate_table("sac", "Pendulum-v1", 2, 2, 64, tmp_path / "t.parquet", fixed={"depth": 3})
    assert not (tmp_path / "_parts").exists()
