"""A warm worker pool: long-lived Ray actors that train the replicates of thin Tune trials.

Why: Ray Tune 2.60 keeps a finished trial actor only while another trial is staged, else at most one
idle actor, so a search whose rounds synchronise (ERAHBO's waves) starts fresh trial processes over and
over; each one imports JAX (1.4-1.9 s) and ``rl_tasks.training`` (4-5 s) and recompiles its programs
(3.7 s from a warm persistent cache, 21 s cold). The pool pays that once per worker and run: its workers
live for the whole run and keep JAX, ``rl_tasks`` and the per-process program cache
(``rl_tasks.training``) across replicates.

Pieces:

* ``WorkerPool(workers=W)`` (driver side, this module) starts a manager actor (no CPU) that starts ``W``
  worker actors (one CPU slot each, optionally a GPU fraction); they import JAX and ``rl_tasks`` at once. The
  actors are ``rl_tasks.pool_actors``.
* A thin trial (``rl_tasks.make_pooled_trainable``) calls ``pool.lease()`` for a ``Lease`` on a free
  worker (waiting if none is free), ``start``s its replicate there, ``advance``s it chunk by chunk and
  ``release``s the lease in a ``finally``. Thin trials never import JAX.
* Or the replicate is *prefetched*: ``rl_tasks.PoolPrefetch`` (a driver-side Tune callback) calls
  ``prefetch`` for a pending trial while a worker is free; the manager trains it chunk by chunk and keeps the
  chunks, gives the worker back after the last one, and the trial, once Tune runs it, ``claim``s the
  replicate and relays its chunks (``next_chunk``); ``detach`` stops one still training after its current
  chunk (a trial stopped while pending, or Tune's STOP in the relay).

Cores: each worker pins itself to ``floor(cpus_per_worker)`` cores of its own on its node before JAX starts
(``pin_cpus``, default on; ``rl_tasks.pinning`` says why: XLA sizes its thread pools from the affinity mask,
and unpinned workers contend); a worker that finds no free core (more workers than cores) runs unpinned.

Resources: a slot of ``cpus_per_worker`` CPUs is split between the worker (all but ``TRIAL_CPUS``) and the
thin trial (``TRIAL_CPUS``, ``pool.trial_resources``), so ``W`` slots hold ``W`` CPUs and no more than ``W``
thin trials fit where the pool fills the cluster. That bound matters: Ray Tune reuses a finished trial's
actor only for a trial that is waiting for resources; thin trials that fit at once (no CPU at all) make
Tune start a fresh trial process for nearly every trial and discard it when a cached actor frees up
(measured: 26 extra processes in one ``live_hpo.py --quick --pool`` run, twice the wall time).

Failures:

* an exception in a replicate (in ``start`` or ``advance``) fails that trial only; the worker drops
  that run's state and stays in the pool;
* a worker that dies (``ray.kill``, a crash, its node lost) while it trains a replicate makes the trial's
  current call raise ``PoolWorkerLost``: the replicate fails through the searcher's failure policy (Tune's
  ``FailureConfig(max_failures=N)`` re-runs it, else ``RiskAwareSearch`` counts a failed replicate and
  retries the slot with a fresh seed); the release reports the worker broken and the manager replaces it;
* a worker that dies while free is replaced as soon as Ray reports its death (each worker answers a
  ``watch`` call only by dying); one that dies between its lease and the start of the replicate is
  replaced and another worker leased (``start_replicate``): no replicate fails for a worker it never ran on;
* the manager runs on the driver's node (the pool lives as long as its driver), so losing any other
  node costs only the workers placed there; their replacements go wherever Ray finds a free slot;
* a lease whose trial process died without running its ``finally`` (Tune kills trial actors, and a
  stopped actor may exit before its training thread finished) is reclaimed: each lease carries a token
  object owned by the trial's process, and when no worker is free the manager checks the tokens; Ray
  reports a dead owner's objects as lost (``OwnerDiedError``, within about a second).

Restoring a run (``tune_risk.restore_tuner`` or ``Tuner.restore``): a pool ends with its driver, and a
trainable pickled into the experiment names the dead driver's pool, so build a new pool in the new driver
and pass a trainable made on it (same task and budgets)::

    pool = WorkerPool(workers=2, compilation_cache_dir=cache)
    tuner = restore_tuner(path, trainable=make_pooled_trainable(pool, "ppo", "CartPole-v1", 100_000, 20_000))
    tuner.fit()

Trials restored from the snapshot and replicates re-run after the restore then train on the new pool (a
leftover trainable naming an old pool fails every trial with a ``RuntimeError`` that says so).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from rl_tasks.pool_actors import PoolManager, PoolWorkerLost
from rl_tasks.seed_run import Chunk, RunState

logger = logging.getLogger(__name__)

TRIAL_CPUS = 0.01  # a thin trial's share of its slot's CPU (see the module docstring)
_RELEASE_TIMEOUT_S = 30.0  # a release that cannot reach the manager gives up (the lease is reclaimed later)


class WorkerPool:
    """Long-lived training workers shared by the thin trials of one run.

    Start it after ``ray.init`` and before ``Tuner.fit``; give Tune ``max_concurrent_trials=workers`` (more
    concurrent trials would only wait for a free worker). Pickling it (into the trainable) keeps only the
    manager's name: trials look it up. The pool ends with ``shutdown()``, a ``with`` block, or the driver.

    Args:
        workers: worker actors (training processes), usually the number of CPUs (or GPU slots) to use.
        cpus_per_worker: CPUs per slot (1: JAX on one core per worker); the worker holds all but the thin
            trial's ``TRIAL_CPUS``.
        gpus_per_worker: GPU fraction per worker (e.g. 0.25: four workers per GPU; set
            ``XLA_PYTHON_CLIENT_PREALLOCATE=false``); 0: CPU workers.
        compilation_cache_dir: JAX's persistent compilation cache for the workers (a replacement worker
            then loads instead of compiling); ``None``: JAX's own setting.
        owner_check_s: how often a trial waiting for a worker has the manager look for leases of dead trials.
        pin_cpus: pin each worker to ``floor(cpus_per_worker)`` cores that no other pool worker on its node
            holds (``rl_tasks.pinning``); no pinning for ``cpus_per_worker < 1`` (workers sharing cores).

    Raises:
        ValueError: a non-positive ``workers``/``owner_check_s``, ``cpus_per_worker <= TRIAL_CPUS`` or a
            negative ``gpus_per_worker``.

    Example:
        >>> import ray
        >>> from ray import tune
        >>> import rl_tasks
        >>> from rl_tasks import WorkerPool
        >>> from tune_risk import ReplicateScheduler, RiskAwareSearch
        >>> WorkerPool(workers=0)
        Traceback (most recent call last):
            ...
        ValueError: WorkerPool: workers must be a positive integer, got workers=0
        >>> ray.init(num_cpus=2)  # doctest: +SKIP
        >>> with WorkerPool(workers=2, compilation_cache_dir="/tmp/jax_cache") as pool:  # doctest: +SKIP
        ...     trainable = rl_tasks.make_pooled_trainable(pool, "ppo", "CartPole-v1", total_timesteps=100_000,
        ...                                                eval_every=20_000)
        ...     searcher = RiskAwareSearch(random_state_seed=0, final_key="final")
        ...     grid = tune.Tuner(trainable, param_space=rl_tasks.get_space("ppo", "CartPole-v1"),
        ...                       tune_config=tune.TuneConfig(
        ...                           search_alg=searcher, scheduler=ReplicateScheduler(searcher), metric="return",
        ...                           mode="max", num_samples=60, max_concurrent_trials=pool.size,
        ...                           reuse_actors=True)).fit()
    """

    def __init__(self, workers: int, *, cpus_per_worker: float = 1.0, gpus_per_worker: float = 0.0,
                 compilation_cache_dir: str | None = None, owner_check_s: float = 1.0, pin_cpus: bool = True) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"WorkerPool: workers must be a positive integer, got workers={workers!r}")
        if not cpus_per_worker > TRIAL_CPUS:
            raise ValueError(f"WorkerPool: cpus_per_worker must exceed TRIAL_CPUS={TRIAL_CPUS} (the thin trial's "
                             f"share of a slot), got cpus_per_worker={cpus_per_worker!r}")
        if not gpus_per_worker >= 0:
            raise ValueError(f"WorkerPool: gpus_per_worker must be >= 0, got gpus_per_worker={gpus_per_worker!r}")
        if not owner_check_s > 0:
            raise ValueError(f"WorkerPool: owner_check_s must be positive, got owner_check_s={owner_check_s!r}")
        if not ray.is_initialized():
            ray.init()
        self._size = workers
        self._name = f"rl_tasks_pool_{uuid.uuid4().hex[:12]}"
        self._namespace = ray.get_runtime_context().namespace
        options = {"num_cpus": cpus_per_worker - TRIAL_CPUS, "num_gpus": gpus_per_worker, "max_restarts": 0}
        # On the driver's node: Ray would place a CPU-less actor on any node, and a lost node would take the
        # whole pool with it; the driver's node ends the run anyway.
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self._manager = ray.remote(PoolManager).options(
            name=self._name, namespace=self._namespace, num_cpus=0, max_concurrency=1000, scheduling_strategy=here,
        ).remote(workers, options, compilation_cache_dir, owner_check_s, int(cpus_per_worker) if pin_cpus else 0)

    @property
    def size(self) -> int:
        """The number of workers (dead ones are replaced)."""
        return self._size

    @property
    def trial_resources(self) -> dict[str, float]:
        """What a thin trial requests from Tune: its slot's ``TRIAL_CPUS``."""
        return {"cpu": TRIAL_CPUS}

    def lease(self) -> Lease:
        """A lease on a free worker, waiting until one is free (call ``release`` in a ``finally``)."""
        token = ray.put(None)  # owned by this process: its loss tells the manager this lessee died
        lease_id, worker = ray.get(self._handle().lease.remote([token]))
        return Lease(self._handle(), lease_id, worker, token)

    def start_replicate(self, algo: str, env: str, config: Mapping[str, Any], seed: int, total_timesteps: int,
                        eval_every: int, eval_episodes: int, resume: RunState | None = None) -> tuple[Lease, int]:
        """Lease a worker and ``start`` the replicate there (from ``resume``, a ``SeedRun.snapshot``, if given):
        the lease and the worker's pid.

        A worker found dead before the replicate started on it (it died while free, before the manager
        heard of it) is replaced and another one leased, up to ``size + 1`` times: nothing of the replicate
        ran there. The caller ``release``s the lease in a ``finally``.

        Raises:
            PoolWorkerLost: every worker tried was dead; the replicate's own errors as ``Lease.start``.
        """
        for attempt in itertools.count(1):
            lease = self.lease()
            try:
                return lease, lease.start(algo, env, config, seed, total_timesteps, eval_every, eval_episodes, resume)
            except PoolWorkerLost:
                lease.release()
                if attempt > self._size:
                    raise
                logger.warning("pool worker found dead before replicate (seed %s) started on it; leasing another", seed)
            except BaseException:
                lease.release()
                raise
        raise AssertionError("unreachable")

    def prefetch(self, trial_id: str, algo: str, env: str, config: Mapping[str, Any], seed: int,
                 total_timesteps: int, eval_every: int, eval_episodes: int) -> bool:
        """Start trial ``trial_id``'s replicate on a free worker now, before the trial's process runs; whether a
        worker was free (``False``: nothing started, the trial leases a worker when it runs).

        The manager trains it chunk by chunk and keeps the chunks; the trial ``claim``s it and relays them.
        The worker is given back as soon as the replicate's last chunk is trained (or it is ``detach``ed).
        """
        args = (algo, env, dict(config), int(seed), total_timesteps, eval_every, eval_episodes)
        return ray.get(self._handle().prefetch.remote(trial_id, args))

    def claim(self, trial_id: str) -> int | None:
        """The worker pid of trial ``trial_id``'s prefetched replicate, once it started there (``None``: none was
        prefetched, or it was claimed before: the trial trains through a lease).

        Raises:
            PoolWorkerLost: the worker died before the replicate started; the replicate's own errors.
        """
        return ray.get(self._handle().claim.remote(trial_id))

    def next_chunk(self, trial_id: str, index: int) -> Chunk:
        """Chunk ``index`` of a claimed replicate, waiting until it is trained.

        Raises:
            PoolWorkerLost: its worker died; the replicate's own errors.
        """
        return ray.get(self._handle().next_chunk.remote(trial_id, index))

    def detach(self, trial_id: str) -> None:
        """Forget trial ``trial_id``'s prefetched replicate; one still training stops after its current chunk.
        Idempotent; never raises (it runs in ``finally`` and in a driver callback)."""
        try:
            ray.get(self._handle().detach.remote(trial_id), timeout=_RELEASE_TIMEOUT_S)
        except Exception as err:  # noqa: BLE001 - must not mask the trial's own outcome
            logger.warning("could not detach prefetched replicate of trial %s (%s)", trial_id, err)

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (waits until they are up)."""
        return ray.get(self._handle().pids.remote())

    def workers(self) -> list[Any]:
        """The current worker actor handles (for inspection and fault injection)."""
        return ray.get(self._handle().workers.remote())

    def leases_out(self) -> int:
        """Leases currently held (a lease of a dead trial counts until it is reclaimed)."""
        return ray.get(self._handle().leases_out.remote())

    def busy_seconds(self) -> float:
        """Seconds the current workers have spent preparing (tracing, compiling or loading programs) and
        training replicates since they started; over ``size x wall`` it is the pool's utilisation. A dead
        worker's seconds are lost with it."""
        return float(sum(ray.get([worker.busy_seconds.remote() for worker in self.workers()])))

    def workers_started(self) -> int:
        """Worker actors started so far, replacements included."""
        return ray.get(self._handle().started.remote())

    def manager_node_id(self) -> str:
        """The Ray node id of the pool's manager (the creating driver's node: losing another node costs
        only the workers placed there)."""
        return ray.get(self._handle().node_id.remote())

    def shutdown(self) -> None:
        """Kill the workers and the manager (leases still out fail at their next call)."""
        manager = self._handle()
        ray.get(manager.shutdown.remote())
        ray.kill(manager)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __getstate__(self) -> dict:
        # The manager is found by name in other processes: an actor handle pickled out of band would
        # tie the manager's lifetime to Ray's reference counting of that copy.
        return {"_size": self._size, "_name": self._name, "_namespace": self._namespace, "_manager": None}

    def _handle(self) -> Any:
        if self._manager is None:
            try:
                self._manager = ray.get_actor(self._name, namespace=self._namespace)
            except ValueError as err:
                raise RuntimeError(
                    f"rl_tasks.WorkerPool {self._name!r} is not running (it was shut down, or its driver ended): "
                    "after tune_risk.restore_tuner / Tuner.restore pass trainable=make_pooled_trainable(<a new "
                    "WorkerPool>, ...)"
                ) from err
        return self._manager


class Lease:
    """One replicate's use of one pool worker: ``start``, ``advance`` until ``final``, then ``release``."""

    def __init__(self, manager: Any, lease_id: int, worker: Any, token: Any) -> None:
        self._manager = manager
        self._id = lease_id
        self._worker = worker
        self._token = token  # kept alive as long as the lease: its owner's death is the signal
        self._broken = False
        self._released = False

    def start(self, algo: str, env: str, config: Mapping[str, Any], seed: int, total_timesteps: int,
              eval_every: int, eval_episodes: int, resume: RunState | None = None) -> int:
        """Build the replicate's ``rl_tasks.seed_run.SeedRun`` on the worker (continuing ``resume`` if given);
        returns the worker's pid.

        Raises:
            PoolWorkerLost: the worker died; the replicate's own errors (e.g. ``ValueError``) as raised.
        """
        return self._call("start", algo, env, dict(config), int(seed), total_timesteps, eval_every, eval_episodes,
                          resume)

    def advance(self) -> Chunk:
        """Train and evaluate the next chunk on the worker."""
        return self._call("advance")

    def snapshot(self) -> RunState:
        """The replicate's progress (``SeedRun.snapshot``), e.g. for a checkpoint."""
        return self._call("snapshot")

    def release(self) -> None:
        """Give the worker back (a dead one is replaced). Idempotent; never raises (it runs in ``finally``)."""
        if self._released:
            return
        self._released = True
        try:
            if not self._broken:
                self._worker.drop.remote(self._id)  # frees the run's arrays now, not at the next start
            ray.get(self._manager.release.remote(self._id, self._broken), timeout=_RELEASE_TIMEOUT_S)
        except Exception as err:  # noqa: BLE001 - a release must not mask the trial's own outcome
            logger.warning("could not release pool lease %s (%s); the manager reclaims it when needed", self._id, err)

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return ray.get(getattr(self._worker, method).remote(self._id, *args))
        except RayActorError as err:
            self._broken = True
            raise PoolWorkerLost(f"pool worker died during {method}() of lease {self._id}: {err}") from err
