"""ARLBench search spaces as Ray Tune ``param_space`` dictionaries (JAX-free).

The spaces follow ARLBench (Becktepe et al., 2024; ``examples/configs/search_space/{ppo_cc, ppo_mujoco,
dqn_cc, sac_cc}.yaml`` and ``runscripts/configs/search_space/sac_brax.yaml``): the same hyperparameter names and
ranges wherever rejax exposes the hyperparameter. ARLBench's prioritised-replay hyperparameters have no rejax
counterpart and are dropped; every deviation is listed in ``rl_tasks/README.md``. Only the domain kinds the
searcher's codec supports are used: ``tune.uniform``, ``tune.loguniform``, ``tune.randint`` and
``tune.choice``. ARLBench's integer bounds are inclusive, Tune's ``randint`` upper bound is exclusive, hence
the ``+ 1``.

Besides the tuned hyperparameters each space has fixed values (ARLBench's defaults for the hyperparameters
that the space does not tune) and defaults for the tuned ones, so that a trainable given a partial
configuration still runs. ``config_from_unit`` maps a point of ``[0, 1)^d`` (a Sobol point) into a space.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from ray import tune
from ray.tune.search import sample

from rl_tasks.envs import check_task

_PPO_CC: dict[str, sample.Domain] = {
    "learning_rate": tune.loguniform(1e-6, 0.1),
    "ent_coef": tune.uniform(0.0, 0.5),
    "minibatch_size": tune.choice([128, 256, 512]),
    "gae_lambda": tune.uniform(0.8, 0.9999),
    "clip_eps": tune.uniform(0.0, 0.5),
    "vf_clip_eps": tune.uniform(0.0, 0.5),
    "normalize_advantage": tune.choice([True, False]),
    # Barely acts here: rejax gives actor and critic separate Adam optimisers, which are invariant to a
    # constant loss scale, so vf_coef only moves the critic's gradient-clipping point (rl_tasks/README.md).
    "vf_coef": tune.uniform(0.0, 1.0),
    "max_grad_norm": tune.uniform(0.0, 1.0),
}

_SPACES: dict[str, dict[str, sample.Domain]] = {
    "ppo_cc": _PPO_CC,
    # ARLBench's ppo_mujoco space, used by ARLBench for its brax tasks: ppo_cc with smaller minibatches.
    "ppo_brax": {**_PPO_CC, "minibatch_size": tune.choice([32, 64, 128])},
    "dqn_cc": {
        "buffer_batch_size": tune.choice([64, 128, 256]),
        "buffer_size": tune.randint(1024, 120_000 + 1),
        "initial_epsilon": tune.uniform(0.5, 1.0),
        "target_epsilon": tune.uniform(0.001, 0.2),
        "learning_rate": tune.loguniform(1e-6, 0.1),
        "learning_starts": tune.randint(0, 2048 + 1),
        "use_target_network": tune.choice([True, False]),
        "target_update_interval": tune.randint(1, 100 + 1),
    },
    "sac_cc": {
        "buffer_batch_size": tune.choice([256, 512, 1024]),
        "learning_rate": tune.loguniform(1e-6, 0.1),
        "learning_starts": tune.randint(0, 2048 + 1),
        "tau": tune.uniform(0.01, 1.0),
    },
    "sac_brax": {
        "buffer_batch_size": tune.choice([512, 1024, 2048]),
        "buffer_size": tune.randint(2048, 2_000_000 + 1),
        "learning_rate": tune.loguniform(1e-6, 0.1),
        "learning_starts": tune.randint(0, 16384 + 1),
        "use_target_network": tune.choice([True, False]),
        "tau": tune.uniform(0.01, 1.0),
        "reward_scale": tune.loguniform(0.1, 10.0),
    },
}

# ARLBench's defaults (get_hpo_config_space / get_nas_config_space) for what a space does not tune.
_FIXED: dict[str, dict[str, Any]] = {
    "ppo": {
        "n_steps": 128, "update_epochs": 10, "gamma": 0.99, "normalize_observations": False,
        "activation": "tanh", "hidden_size": 64,
    },
    "dqn": {
        "gamma": 0.99, "train_freq": 4, "gradient_steps": 1, "exploration_fraction": 0.1, "tau": 1.0,
        "normalize_observations": False, "activation": "tanh", "hidden_size": 64,
    },
    "sac": {
        "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "target_update_interval": 1000,
        "use_target_network": True, "buffer_size": 1_000_000, "reward_scale": 1.0, "alpha_auto": True,
        "normalize_observations": False, "activation": "tanh", "hidden_size": 256,
    },
}

# Defaults of the tuned hyperparameters (ARLBench's defaults, or the nearest valid choice).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "ppo_cc": {
        "learning_rate": 3e-4, "ent_coef": 0.0, "minibatch_size": 128, "gae_lambda": 0.95, "clip_eps": 0.2,
        "vf_clip_eps": 0.2, "normalize_advantage": True, "vf_coef": 0.5, "max_grad_norm": 0.5,
    },
    "dqn_cc": {
        "buffer_batch_size": 128, "buffer_size": 120_000, "initial_epsilon": 1.0, "target_epsilon": 0.05,
        "learning_rate": 3e-4, "learning_starts": 128, "use_target_network": True, "target_update_interval": 10,
    },
    "sac_cc": {"buffer_batch_size": 512, "learning_rate": 3e-4, "learning_starts": 128, "tau": 1.0},
    "sac_brax": {
        "buffer_batch_size": 1024, "buffer_size": 1_000_000, "learning_rate": 3e-4, "learning_starts": 8192,
        "use_target_network": True, "tau": 1.0, "reward_scale": 1.0,
    },
}
_DEFAULTS["ppo_brax"] = {**_DEFAULTS["ppo_cc"], "minibatch_size": 64}

SPACE_NAMES: tuple[str, ...] = tuple(_SPACES)


def space_name(algo: str, env: str) -> str:
    """ARLBench's name of the space for a task: ``<algo>_<domain>`` (``ppo_cc``, ``sac_brax``)."""
    spec = check_task(algo, env)
    return f"{algo}_{spec.domain}"


def get_space(algo: str, env: str) -> dict[str, sample.Domain]:
    """The Tune ``param_space`` (tuned hyperparameters only, no seed) of a task; a fresh copy."""
    return dict(_SPACES[space_name(algo, env)])


def fixed_hyperparameters(algo: str, env: str) -> dict[str, Any]:
    """The hyperparameters a task keeps fixed (ARLBench's defaults), in ARLBench's names."""
    check_task(algo, env)
    return dict(_FIXED[algo])


def default_config(algo: str, env: str) -> dict[str, Any]:
    """Defaults for the tuned hyperparameters of a task (ARLBench's defaults or nearest valid choice)."""
    return dict(_DEFAULTS[space_name(algo, env)])


_ACTIVATIONS = ("tanh", "relu")


def check_fixed_override(algo: str, name: str, value: Any) -> Any:
    """Validate a new value for a hyperparameter the space keeps fixed and return it as a Python scalar.

    Integers (network width, rollout length, ...) must be positive, floats (``gamma``, ``tau``,
    ``exploration_fraction``) lie in ``[0, 1]``, flags are booleans, ``activation`` is tanh or relu.

    Raises:
        ValueError: ``name`` is not fixed for ``algo`` or ``value`` is out of range.
    """
    fixed = _FIXED[algo]
    if name not in fixed:
        raise ValueError(f"{name!r} is not a fixed hyperparameter of {algo}; fixed ones: {sorted(fixed)}")
    value, default = python_scalar(value), fixed[name]
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0
    else:
        ok = value in _ACTIVATIONS
    if not ok:
        expected = {bool: "a bool", int: "a positive int", float: "a float in [0, 1]"}.get(type(default),
                                                                                          f"one of {_ACTIVATIONS}")
        raise ValueError(f"fixed hyperparameter {name}={value!r} of {algo} must be {expected}")
    return float(value) if isinstance(default, float) else value


def full_config(algo: str, env: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Fixed values, then defaults, then the given values; keys that are neither tuned nor fixed are ignored.

    A key naming a fixed hyperparameter (``hidden_size``, ``gamma``, ...) overrides ARLBench's fixed value
    (a Tune constant in ``param_space``, or ``tune-risk generate --fixed``).

    Raises:
        ValueError: a tuned value is outside its domain, or a fixed override is invalid.
    """
    space = get_space(algo, env)
    tuned = {name: python_scalar(config[name]) for name in space if name in config}
    for name, value in tuned.items():
        if not is_valid(space[name], value):
            raise ValueError(f"hyperparameter {name}={value!r} is outside its domain {describe_domain(space[name])}")
    fixed = {name: check_fixed_override(algo, name, config[name])
             for name in _FIXED[algo] if name in config and name not in space}
    return {**fixed_hyperparameters(algo, env), **fixed, **default_config(algo, env), **tuned}


def describe_domain(domain: sample.Domain) -> dict[str, Any]:
    """A JSON-ready description of one Tune domain: type, lower, upper (inclusive), log, q, choices.

    Raises:
        TypeError: the domain is of a kind the searcher's codec does not support.
    """
    if isinstance(domain, sample.Categorical):
        return {"type": "categorical", "choices": list(domain.categories)}
    inner = domain.get_sampler()
    q = inner.q if isinstance(inner, sample.Quantized) else None
    base = inner.get_sampler() if isinstance(inner, sample.Quantized) else inner
    log = isinstance(base, sample.LogUniform)
    if isinstance(domain, sample.Float) and isinstance(base, (sample.Uniform, sample.LogUniform)):
        return {"type": "float", "lower": domain.lower, "upper": domain.upper, "log": log, "q": q}
    if isinstance(domain, sample.Integer) and isinstance(base, (sample.Uniform, sample.LogUniform)):
        # Tune's randint/lograndint exclude the upper bound; quantized integers include it.
        upper = domain.upper if q is not None else domain.upper - 1
        return {"type": "int", "lower": domain.lower, "upper": upper, "log": log, "q": q}
    raise TypeError(f"unsupported Tune domain {domain!r}")


def describe_space(space: Mapping[str, sample.Domain]) -> dict[str, dict[str, Any]]:
    """JSON-ready description of a whole space (per parameter, see ``describe_domain``)."""
    return {name: describe_domain(domain) for name, domain in space.items()}


def python_scalar(value: Any) -> Any:
    """A numpy scalar (``np.int64``, ``np.float32``, ``np.bool_``: what third-party searchers suggest) as the
    Python scalar of equal value; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def is_valid(domain: sample.Domain, value: Any) -> bool:
    """Whether ``value`` (a Python or numpy scalar) lies in ``domain`` (type, bounds, grid or choices)."""
    d = describe_domain(domain)
    value = python_scalar(value)
    if d["type"] == "categorical":
        return any(value == c and type(value) is type(c) for c in d["choices"])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    if d["type"] == "int" and int(value) != value:
        return False
    return d["lower"] <= value <= d["upper"]


def value_from_unit(domain: sample.Domain, u: float) -> Any:
    """Map ``u`` in ``[0, 1)`` into a domain: linear or log scale; integers and choices in equal-width cells.

    Integers ``l..u`` take ``l + floor(u * (u - l + 1))`` (log scale: floor of the log-scaled value), so
    every integer is equally likely under a uniform ``u``; a choice among ``n`` takes index ``floor(u * n)``.
    """
    u = min(max(float(u), 0.0), math.nextafter(1.0, 0.0))
    d = describe_domain(domain)
    if d["type"] == "categorical":
        return d["choices"][int(u * len(d["choices"]))]
    lower, upper = d["lower"], d["upper"]
    if d["type"] == "int":
        if d["log"]:
            value = math.floor(math.exp(math.log(lower) + u * (math.log(upper + 1) - math.log(lower))))
        else:
            value = lower + math.floor(u * (upper - lower + 1))
        if d["q"]:
            value = round(value / d["q"]) * d["q"]
        return int(min(max(value, lower), upper))
    value = math.exp(math.log(lower) + u * (math.log(upper) - math.log(lower))) if d["log"] else lower + u * (
        upper - lower
    )
    if d["q"]:
        value = round(value / d["q"]) * d["q"]
    return float(min(max(value, lower), upper))


def config_from_unit(space: Mapping[str, sample.Domain], point: Sequence[float]) -> dict[str, Any]:
    """Map one point of ``[0, 1)^d`` to a configuration; coordinates follow the space's key order.

    Raises:
        ValueError: the point's length differs from the number of hyperparameters.
    """
    if len(point) != len(space):
        raise ValueError(f"point has {len(point)} coordinates, the space has {len(space)} hyperparameters")
    return {name: value_from_unit(domain, u) for (name, domain), u in zip(space.items(), point, strict=True)}
