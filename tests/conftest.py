"""Shared fixtures: one local Ray instance per test session (ray.init costs 3-6 s)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# Never join a Ray cluster already running on the machine (ray.init() without an address connects to
# one): a test run must not submit work to, or be slowed by, a user's cluster.
os.environ.setdefault("RAY_ADDRESS", "local")


@pytest.fixture(scope="session")
def ray_session():
    """A 2-CPU local Ray instance shared by every test that needs Ray."""
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
