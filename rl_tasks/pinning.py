"""Pin a training process to CPU cores of its own, node-wide, before JAX starts.

Why: Ray reserves ``num_cpus`` for an actor but does not pin it, and XLA:CPU sizes its thread pools from the
process's affinity mask. Two pool workers on a 2-core node therefore each run as many compute threads as the
node has cores, and the four threads contend: measured on PPO CartPole (100k steps, ``minibatch_size`` 512),
a replicate took 1.90-1.95 s with two unpinned workers training at once and 1.44 s with each worker pinned
to a core of its own (1.52 s alone). Pinning gives each worker what its Ray slot promised and nothing more.

Cores are claimed with an exclusive ``flock`` on one lock file per core in a node-wide directory, held
for the life of the process: the kernel drops the lock when the process dies however it dies, so a
replacement worker (the pool replaces dead ones) claims the dead one's cores, and the workers of
several pools on one node, and the trial processes of ``make_trainable`` beside them, never share a core. No
coordinator is needed and nothing is left to clean up. It assumes the node's cores are Ray's: a process that
is not a claimant (e.g. a job started with ``taskset`` on core 1) is not seen, and a training process pinned to
that core shares it, where the OS scheduler would have moved it to an idle one.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Collection
from pathlib import Path

from rl_tasks.locks import try_lock

logger = logging.getLogger(__name__)

CORE_LOCKS = Path(tempfile.gettempdir()) / "rl_tasks_core_locks"  # node-wide: one lock file per core
# A replacement worker can start while the process it replaces is still exiting (its locks go with its exit):
# a worker waits this long for a core before it runs unpinned.
REPLACEMENT_WAIT_S = 5.0

_process_pin: tuple[list[int], list[int]] | None = None  # pin_once's claim: its locks stay open for the process


def claim_cores(available: Collection[int], count: int, directory: Path = CORE_LOCKS,
                wait_s: float = 0.0) -> tuple[list[int], list[int]]:
    """Claim ``count`` of the ``available`` cores that no live process holds; ``(cores, descriptors)``.

    Each claimed core's lock file (``directory/core<N>``) stays locked while its descriptor is open (close it,
    or let the process end, to give the core back). Fewer than ``count`` free cores, also after trying again
    for ``wait_s`` seconds: nothing is claimed and ``([], [])`` is returned (the caller runs unpinned).
    """
    if count < 1:
        raise ValueError(f"claim_cores: count must be >= 1, got count={count!r}")
    directory.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        claimed = _try_claim(available, count, directory)
        if claimed[0] or time.monotonic() >= deadline:
            return claimed
        time.sleep(0.1)


def _try_claim(available: Collection[int], count: int, directory: Path) -> tuple[list[int], list[int]]:
    cores: list[int] = []
    descriptors: list[int] = []
    for core in sorted(available):
        try:
            descriptor = try_lock(directory / f"core{core}")
        except PermissionError:
            continue  # another user's lock file: that user's workers may hold the core; take another
        if descriptor is None:
            continue  # another live process holds this core
        cores.append(core)
        descriptors.append(descriptor)
        if len(cores) == count:
            return cores, descriptors
    for descriptor in descriptors:
        os.close(descriptor)
    return [], []


def pin_process(count: int, directory: Path = CORE_LOCKS) -> tuple[list[int], list[int]]:
    """Pin every thread of this process (and so every thread it starts later) to ``count`` free cores of
    its affinity mask; ``(cores, descriptors)`` as ``claim_cores``, ``([], [])`` where it cannot pin
    (no free cores left: more workers than cores on the node; or no ``sched_setaffinity``, e.g. macOS)."""
    if not hasattr(os, "sched_setaffinity"):
        return [], []
    cores, descriptors = claim_cores(os.sched_getaffinity(0), count, directory, REPLACEMENT_WAIT_S)
    if not cores:
        logger.warning("pid %d: fewer than %d free cores on this node (more training processes than cores: Ray "
                       "given more CPUs than the node has?); running unpinned", os.getpid(), count)
        return [], []
    for thread in os.listdir("/proc/self/task"):  # Linux affinity is per thread: Ray's threads already run
        try:
            os.sched_setaffinity(int(thread), cores)
        except (ProcessLookupError, PermissionError):
            pass  # a thread that just ended, or one that may not be moved: the compute threads come later
    return cores, descriptors


def pin_once(count: int, directory: Path = CORE_LOCKS) -> list[int]:
    """``pin_process(count)`` the first time it is called in this process; the cores it pinned, every time.

    For processes that run many jobs, such as a Tune trial actor reused for trial after trial: the first job
    claims the cores (before its JAX import) and keeps them, with their locks, for the life of the process.
    """
    global _process_pin
    if _process_pin is None:
        _process_pin = pin_process(count, directory)
    return _process_pin[0]
