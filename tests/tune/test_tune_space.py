"""Tests for :mod:`tune_risk.tune.space`: Tune domain conversion, errors, and agreement with Ray's samplers.

No ``ray.init``: only Ray's domain objects and their ``.sample()`` are used.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ray import tune

from tune_risk.space import CategoricalParam, FloatParam, IntParam
from tune_risk.tune.space import TuneSpaceCodec

FAST = settings(max_examples=100, deadline=None)
OBJ = object()

# (domain, expected parameter for name "p") — Ray's bound conventions made explicit.
CONVERSIONS = [
    (tune.uniform(-1, 2), FloatParam("p", -1.0, 2.0)),
    (tune.loguniform(1e-5, 1e-1), FloatParam("p", 1e-5, 1e-1, log=True)),
    (tune.quniform(0.0, 0.9, 0.1), FloatParam("p", 0.0, 0.9, q=0.1)),
    (tune.qloguniform(1e-4, 1e-1, 5e-5), FloatParam("p", 1e-4, 1e-1, log=True, q=5e-5)),
    (tune.randint(1, 5), IntParam("p", 1, 4)),  # upper exclusive
    (tune.randint(-3, 3), IntParam("p", -3, 2)),
    (tune.lograndint(1, 1024), IntParam("p", 1, 1023, log=True)),  # upper exclusive
    (tune.qrandint(0, 10, 5), IntParam("p", 0, 10, q=5)),  # upper inclusive for q != 1
    (tune.qrandint(1, 10, 3), IntParam("p", 3, 9, q=3)),  # bounds snapped inwards to the grid
    (tune.qrandint(0, 10, 1), IntParam("p", 0, 9)),  # q == 1: upper exclusive
    (tune.qlograndint(1, 20, 5), IntParam("p", 5, 20, log=True, q=5)),
    (tune.qlograndint(1, 20, 1), IntParam("p", 1, 19, log=True)),
    (tune.choice(["a", None, [1, 2], OBJ]), CategoricalParam("p", ("a", None, [1, 2], OBJ))),
]


@pytest.mark.parametrize(("domain", "expected"), CONVERSIONS, ids=lambda v: repr(v)[:40])
def test_domain_conversion(domain, expected):
    codec = TuneSpaceCodec.from_param_space({"p": domain})
    assert codec.space.params == (expected,)


@pytest.mark.parametrize(
    ("domain", "value"),
    [
        (tune.choice(["only"]), "only"),
        (tune.randint(3, 4), 3),
        (tune.qrandint(3, 7, 5), 5),
        (tune.lograndint(7, 8), 7),
    ],
)
def test_single_valued_domains_are_constants(domain, value):
    codec = TuneSpaceCodec.from_param_space({"p": domain, "x": tune.uniform(0, 1)})
    assert codec.flat_names == ("x",)
    assert codec.decode(np.array([0.25]))["p"] == value


def test_nested_space_decodes_with_constants_verbatim():
    const_list, const_obj = [1, 2], object()
    space = {
        "optimizer": {
            "lr": tune.loguniform(1e-4, 1e-1),
            "name": "adam",
            "betas": {"b1": tune.uniform(0.8, 0.99)},
        },
        "layers": const_list,
        "callback": const_obj,
        "empty": {},
        3: "int key constant",
        "act": tune.choice(["relu", "tanh"]),
    }
    codec = TuneSpaceCodec.from_param_space(space)
    assert codec.flat_names == ("optimizer/lr", "optimizer/betas/b1", "act")
    cfg = codec.decode(np.array([0.0, 1.0, 1.0]))
    assert cfg == {
        "optimizer": {"lr": 1e-4, "name": "adam", "betas": {"b1": 0.99}},
        "layers": [1, 2],
        "callback": const_obj,
        "empty": {},
        3: "int key constant",
        "act": "tanh",
    }
    assert cfg["layers"] is const_list and cfg["callback"] is const_obj
    assert isinstance(space["optimizer"]["lr"], tune.search.sample.Domain)  # input untouched
    np.testing.assert_array_equal(codec.encode({**cfg, "seed": 7}), [0.0, 1.0, 1.0])
    assert pickle.loads(pickle.dumps(codec)).decode(np.array([0.0, 1.0, 1.0]))["optimizer"]["lr"] == 1e-4


@pytest.mark.parametrize(
    ("space", "match"),
    [
        (
            {"optimizer": {"lr": tune.grid_search([0.1, 0.01])}},
            r"Parameter 'optimizer/lr': grid_search is not supported by RiskAwareSearch; use tune\.choice",
        ),
        ({"f": tune.sample_from(lambda cfg: 1)}, r"Parameter 'f': tune\.sample_from .* not supported"),
        ({"a": {"e": {"eval": "1 + 1"}}}, r"Parameter 'a/e': tune\.sample_from .* not supported"),
        ({"w": tune.randn(0, 1)}, r"Parameter 'w': tune\.randn/qrandn .* not supported"),
        ({"w": tune.qrandn(0, 1, 0.1)}, r"Parameter 'w': tune\.randn/qrandn .* not supported"),
        ({"layers": [tune.randint(1, 4), 64]}, r"Parameter 'layers/0': a search domain inside a list"),
        ({"layers": (64, tune.uniform(0, 1))}, r"Parameter 'layers/1': a search domain inside a list"),
        ({"a/b": tune.uniform(0, 1)}, r"Parameter 'a/b': key 'a/b' must be a string without '/'"),
        ({"a": {1: tune.uniform(0, 1)}}, r"Parameter 'a/1': key 1 must be a string"),
        ({"n": tune.randint(5, 5)}, r"Parameter 'n': Ray domain \(5, 5\) .* has no values"),
        ({"n": tune.qrandint(1, 4, 5)}, r"Parameter 'n': .* has no values"),
        ({"n": tune.qrandint(0, 10, 2.5)}, r"Parameter 'n': q must be an integer, got 2\.5"),
        ({"lr": tune.uniform(1, 1)}, r"Parameter 'lr': lower bound 1\.0 must be smaller"),
        ({"c": tune.choice([])}, r"Parameter 'c': categorical has no choices"),
        ({"c": tune.choice(["a", "b", "a"])}, r"Parameter 'c': duplicate choice 'a'"),
        ({"lr": 0.1, "net": {"units": 64}}, r"search space is empty"),
        ({"c": tune.choice(["only"]), "n": tune.randint(0, 1)}, r"search space is empty"),
        ({}, r"search space is empty"),
    ],
)
def test_unsupported_spaces_raise_with_path(space, match):
    with pytest.raises(ValueError, match=match):
        TuneSpaceCodec.from_param_space(space)


def test_non_dict_space_and_bad_configs_raise():
    with pytest.raises(ValueError, match="param_space must be a dict"):
        TuneSpaceCodec.from_param_space([tune.uniform(0, 1)])
    codec = TuneSpaceCodec.from_param_space({"opt": {"lr": tune.uniform(0, 1)}})
    with pytest.raises(ValueError, match=r"Parameter 'opt/lr': missing from config"):
        codec.encode({"opt": {}})
    with pytest.raises(ValueError, match=r"Parameter 'opt/lr': missing from config"):
        codec.encode({"opt": 0.5})
    with pytest.raises(ValueError, match=r"Parameter 'opt/lr': value 2\.0 is outside"):
        codec.encode({"opt": {"lr": 2.0}})


# --------------------------------------------------------------------------------------------------
# agreement with Ray's own samplers
# --------------------------------------------------------------------------------------------------
RAY_DOMAINS = [domain for domain, _ in CONVERSIONS] + [
    tune.quniform(0.0, 0.3, 0.1),
    tune.qloguniform(0.5, 8.0, 0.5),
    tune.qrandint(-10, 10, 4),
    tune.qlograndint(3, 30, 4),
    tune.choice([True, False]),
]


def _is_valid_for_ray(domain, value) -> bool:
    """Ray's own validity (bounds / membership) plus being a multiple of the domain's q."""
    if isinstance(domain, tune.search.sample.Categorical):
        return any(value is c for c in domain.categories)
    sampler = domain.get_sampler()
    q = getattr(sampler, "q", None)
    on_grid = q is None or math.isclose(value / q, round(value / q), rel_tol=1e-9, abs_tol=1e-12)
    return domain.is_valid(value) and on_grid


@pytest.mark.parametrize("domain", RAY_DOMAINS, ids=lambda d: f"{type(d).__name__}{d.domain_str[:20]}")
def test_roundtrip_of_rays_samples(domain):
    codec = TuneSpaceCodec.from_param_space({"p": domain})
    (param,) = codec.space.params
    for sample in domain.sample(size=300, random_state=np.random.default_rng(0)):
        got = codec.decode(codec.encode({"p": sample}))["p"]
        if isinstance(param, CategoricalParam):
            assert got is sample
        elif isinstance(param, FloatParam) and param.q is None:
            assert got == pytest.approx(
                sample, rel=1e-14, abs=1e-15 * max(abs(param.lower), abs(param.upper))
            )
        else:  # integers and quantized floats: exact (a float grid value drifting past a bound is clipped)
            assert got == min(max(sample, param.lower), param.upper)
            assert type(got) is type(param.lower)


@pytest.mark.parametrize("domain", RAY_DOMAINS, ids=lambda d: f"{type(d).__name__}{d.domain_str[:20]}")
def test_decoded_values_are_valid_for_ray(domain):
    codec = TuneSpaceCodec.from_param_space({"p": domain})
    for x in np.random.default_rng(1).random(300).tolist() + [0.0, 1.0]:
        assert _is_valid_for_ray(domain, codec.decode(np.array([x]))["p"])


DISCRETE = [
    tune.randint(0, 3),
    tune.randint(-2, 2),
    tune.lograndint(1, 6),
    tune.qrandint(0, 10, 5),
    tune.qrandint(1, 10, 3),
    tune.qrandint(0, 4, 1),
    tune.qlograndint(1, 20, 5),
    tune.qlograndint(2, 6, 1),
    tune.quniform(0.0, 1.0, 0.25),
    tune.quniform(0.0, 0.3, 0.1),
    tune.qloguniform(0.5, 3.0, 0.5),
    tune.choice(["a", "b", "c"]),
]


@pytest.mark.parametrize("domain", DISCRETE, ids=lambda d: f"{type(d).__name__}{d.domain_str}")
def test_discrete_support_equals_rays(domain):
    """Every value Ray can sample is decodable and vice versa (catches off-by-one upper bounds)."""
    codec = TuneSpaceCodec.from_param_space({"p": domain})
    ours = {codec.decode(np.array([x]))["p"] for x in np.linspace(0.0, 1.0, 2001)}
    rays = set(domain.sample(size=4000, random_state=np.random.default_rng(2)))
    if isinstance(domain, tune.search.sample.Float):
        rays = {min(max(v, domain.lower), domain.upper) for v in rays}  # 3 * 0.1 > 0.3: clipped by us
    assert ours == rays


@FAST
@given(st.lists(st.floats(-0.5, 1.5, allow_nan=False), min_size=6, max_size=6))
def test_decode_encode_decode_is_stable(xs):
    space = {
        "lr": tune.loguniform(1e-5, 1e-1),
        "net": {"units": tune.qlograndint(16, 512, 16), "drop": tune.uniform(0.0, 0.5), "kind": "mlp"},
        "gamma": tune.quniform(0.9, 0.999, 0.001),
        "batch": tune.randint(8, 257),
        "act": tune.choice(["relu", None, ("tanh", 1)]),
    }
    codec = TuneSpaceCodec.from_param_space(space)
    cfg = codec.decode(np.array(xs))
    assert codec.decode(codec.encode(cfg)) == cfg
    assert cfg["net"]["kind"] == "mlp"
    for path, domain in [
        (("lr",), space["lr"]),
        (("net", "units"), space["net"]["units"]),
        (("gamma",), space["gamma"]),
    ]:
        value = cfg[path[0]] if len(path) == 1 else cfg[path[0]][path[1]]
        assert _is_valid_for_ray(domain, value)
