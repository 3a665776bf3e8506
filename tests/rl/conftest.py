"""Shared fixtures of the rl_tasks tests: a small Ray instance per module, JAX pinned to one CPU device."""

from __future__ import annotations

import os
import tempfile

import pytest

# One host device for every JAX program these tests start (in this process and in Ray workers), and a
# persistent compilation cache shared by the Ray workers of successive Tune runs (compiling dominates the
# runtime of these tiny budgets). Ray workers inherit this environment.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="rl_tasks_jax_cache_"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


@pytest.fixture(scope="module")
def ray_cluster():
    """``ray.init(address="local", num_cpus=2)`` for the module, shut down afterwards (unless Ray was already running)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        # address="local": always a fresh instance, never a cluster another process started on this machine.
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()
