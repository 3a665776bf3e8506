"""``cluster.yaml`` must pass Ray's own cluster-config validation (a typo fails CI)."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CLUSTER_YAML = Path(__file__).resolve().parents[2] / "cluster.yaml"


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load(CLUSTER_YAML.read_text())


def ray_up_validation(config: dict) -> None:
    """What ``ray up`` does before touching a cloud: fill the provider's defaults, then validate."""
    validate_config(prepare_config(copy.deepcopy(config)))


def test_cluster_yaml_passes_rays_schema(config):
    ray_up_validation(config)


def test_head_runs_no_trials_and_workers_have_gpus(config):
    nodes = config["available_node_types"]
    assert nodes[config["head_node_type"]]["resources"]["CPU"] == 0
    gpu_workers = [n for name, n in nodes.items() if name != config["head_node_type"]]
    assert gpu_workers and all(n["resources"].get("GPU", 0) >= 1 and n["min_workers"] == 0 for n in gpu_workers)
    setup = " ".join(config["setup_commands"])
    assert "jax[cuda12]" in setup and "[rl]" in setup and "XLA_PYTHON_CLIENT_PREALLOCATE=false" in setup
    assert "~/tune_risk" in config["file_mounts"]


@pytest.mark.parametrize("mutate", [
    lambda c: c.update(max_worker=3),                                   # misspelt key
    lambda c: c["available_node_types"]["ray.worker.gpu"].update(min_workers="zero"),
    lambda c: c.pop("head_node_type"),
])
def test_validation_catches_typos(config, mutate):
    broken = copy.deepcopy(config)
    mutate(broken)
    with pytest.raises((jsonschema.ValidationError, ValueError)):
        ray_up_validation(broken)
