"""The warm pool's Ray actors: the manager (free workers, leases, prefetched replicates) and the workers.

``PoolManager`` is the pool's bookkeeping actor (asynchronous, on the driver's node); it starts the
``PoolWorker`` actors, replaces dead ones, hands out leases, reclaims the leases of dead trial processes
and trains prefetched replicates ahead of their trials. ``PoolWorker`` is a training process: one replicate
at a time, JAX and its compiled programs kept across replicates. ``PoolWorkerLost`` is the error a
replicate's caller gets when its worker died. The driver side (``WorkerPool``, ``Lease``) and the whole
design (resources, pinning, failures, restores) are in ``rl_tasks.pool``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import ObjectLostError, RayActorError

from rl_tasks.pinning import pin_once
from rl_tasks.seed_run import Chunk, RunState

logger = logging.getLogger(__name__)

_OWNER_PROBE_S = 2.0  # an owner check that neither answers nor fails in this time counts as alive


class PoolWorkerLost(RuntimeError):
    """The pool worker training a replicate died (the trial fails; the pool replaces the worker)."""


@dataclass(eq=False)
class _Slot:
    """A worker actor, the future of its process id (from its warm-up) and of its ``watch`` call (which only
    its death answers)."""

    worker: Any
    pid: Any
    watch: Any
    dead: bool = False


@dataclass
class _Held:
    """A lease out: its worker and the lessee's liveness token."""

    slot: _Slot
    token: Any


@dataclass(eq=False)
class _Prefetched:
    """A replicate the manager trains ahead of its trial; ``changed`` is set at every new chunk and at the end."""

    slot: _Slot
    changed: asyncio.Event
    chunks: list = field(default_factory=list)
    pid: int | None = None
    error: BaseException | None = None
    done: bool = False
    cancelled: bool = False
    claimed: bool = False

    async def wait(self) -> None:
        self.changed.clear()
        await self.changed.wait()


class PoolManager:
    """The pool's bookkeeping actor (asynchronous: waiting lessees do not block releases)."""

    def __init__(self, size: int, worker_options: dict, compilation_cache_dir: str | None,
                 owner_check_s: float, pin_cores: int) -> None:
        self._worker_class = ray.remote(concurrency_groups={"watch": 1})(PoolWorker).options(**worker_options)
        self._cache_dir = compilation_cache_dir
        self._pin_cores = pin_cores
        self._owner_check_s = owner_check_s
        self._ids = itertools.count()
        self._started = 0
        self._closed = False
        self._watchers: set[asyncio.Task] = set()  # death watches and prefetched replicates' drives
        self._held: dict[int, _Held] = {}
        self._prefetched: dict[str, _Prefetched] = {}  # by trial id, until detached
        self._driving: set[_Prefetched] = set()  # prefetched replicates still training (detached ones too)
        self._released: asyncio.Event | None = None
        self._free = [self._new_slot() for _ in range(size)]  # an async actor's __init__ runs in its event loop

    async def lease(self, token_box: list) -> tuple[int, Any]:
        while not self._free:
            if await self._reclaim_orphans() or self._free:
                continue  # a worker came back, possibly while the owners were checked
            try:  # the current generation's event: every release sets it and starts a new one
                await asyncio.wait_for(self._event().wait(), self._owner_check_s)
            except TimeoutError:
                pass
        slot = self._free.pop(0)
        lease_id = next(self._ids)
        self._held[lease_id] = _Held(slot, token_box[0])
        return lease_id, slot.worker

    async def release(self, lease_id: int, broken: bool) -> None:
        held = self._held.pop(lease_id, None)
        if held is None:
            return  # released twice, or reclaimed after its lessee died
        self._give_back(held.slot, broken)

    async def prefetch(self, trial_id: str, args: tuple) -> bool:
        if self._closed or not self._free or trial_id in self._prefetched:
            return False
        entry = _Prefetched(self._free.pop(0), asyncio.Event())
        self._prefetched[trial_id] = entry
        self._driving.add(entry)
        self._spawn(self._drive(next(self._ids), entry, args))
        return True

    async def claim(self, trial_id: str) -> int | None:
        entry = self._prefetched.get(trial_id)
        if entry is None or entry.claimed or entry.cancelled:
            return None  # a second claim (a re-run of the trial) trains afresh through a lease
        entry.claimed = True
        while entry.pid is None and not entry.done:
            await entry.wait()
        if entry.pid is None:
            raise entry.error or RuntimeError(f"prefetched replicate of trial {trial_id} ended before it started")
        return entry.pid

    async def next_chunk(self, trial_id: str, index: int) -> Chunk:
        entry = self._prefetched.get(trial_id)
        if entry is None:
            raise RuntimeError(f"trial {trial_id} has no prefetched replicate (detached?)")
        while len(entry.chunks) <= index:
            if entry.done:
                raise entry.error or RuntimeError(f"prefetched replicate of trial {trial_id} stopped early")
            await entry.wait()
        return entry.chunks[index]

    async def detach(self, trial_id: str) -> None:
        entry = self._prefetched.pop(trial_id, None)
        if entry is not None:
            entry.cancelled = True  # _drive stops after the chunk in progress and gives the worker back

    async def _drive(self, lease_id: int, entry: _Prefetched, args: tuple) -> None:
        """Train a prefetched replicate to its end (or its cancellation) and give its worker back at once."""
        worker, broken = entry.slot.worker, False
        try:
            entry.pid = await worker.start.remote(lease_id, *args)
            entry.changed.set()
            while not entry.cancelled:
                chunk = await worker.advance.remote(lease_id)
                entry.chunks.append(chunk)
                entry.changed.set()
                if chunk.final:
                    break
        except RayActorError as err:
            broken = True
            entry.error = PoolWorkerLost(f"pool worker died while training prefetched lease {lease_id}: {err}")
        except Exception as err:  # noqa: BLE001 - the replicate's own error, raised to its trial
            entry.error = err
        finally:
            entry.done = True
            self._driving.discard(entry)
            entry.changed.set()
            if not broken:
                worker.drop.remote(lease_id)
            if not self._closed:
                self._give_back(entry.slot, broken)

    async def pids(self) -> list[int]:
        while True:  # a worker that dies before its warm-up answers is replaced: ask the new set again
            pids = await asyncio.gather(*(slot.pid for slot in self._slots()), return_exceptions=True)
            errors = [pid for pid in pids if isinstance(pid, BaseException)]
            if not errors:
                return list(pids)
            if not all(isinstance(error, RayActorError) for error in errors):
                raise errors[0]  # a warm-up that failed (e.g. JAX does not import) is no death
            await asyncio.sleep(0.1)

    async def workers(self) -> list[Any]:
        return [slot.worker for slot in self._slots()]

    async def leases_out(self) -> int:
        return len(self._held)

    async def started(self) -> int:
        return self._started

    async def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()

    async def shutdown(self) -> None:
        self._closed = True
        for task in self._watchers:
            task.cancel()
        for slot in self._slots():
            ray.kill(slot.worker)
        self._free, self._held = [], {}

    def _slots(self) -> list[_Slot]:
        """Every worker slot, free, leased or training a prefetched replicate."""
        return self._free + [held.slot for held in self._held.values()] + [entry.slot for entry in self._driving]

    def _event(self) -> asyncio.Event:
        """The event the next release sets. A broadcast without ``clear()``: a waiter that cleared a shared
        event could swallow another waiter's wake-up (which then slept until its owner check, up to 1 s)."""
        if self._released is None:  # created inside the actor's event loop
            self._released = asyncio.Event()
        return self._released

    def _new_slot(self) -> _Slot:
        worker = self._worker_class.remote(self._cache_dir, self._pin_cores)
        self._started += 1
        slot = _Slot(worker, worker.warm.remote(), worker.watch.remote())
        self._spawn(self._watch(slot))
        return slot

    def _spawn(self, coroutine: Any) -> None:
        """Run ``coroutine`` in the actor's event loop, held until it ends (``shutdown`` cancels it)."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _watch(self, slot: _Slot) -> None:
        """Wait for the worker's death; replace it at once if it was free (a leased one at its release)."""
        try:
            await slot.watch
        except Exception:  # noqa: BLE001 - RayActorError and kin: the worker is gone
            pass
        slot.dead = True
        if self._closed or slot not in self._free:
            return  # leased: its lessee's call fails, or the lease is reclaimed; either replaces it
        logger.warning("pool worker died while free; replacing it")
        self._free.remove(slot)
        self._give_back(slot, broken=True)

    def _give_back(self, slot: _Slot, broken: bool) -> None:
        if broken or slot.dead:
            ray.kill(slot.worker)  # in case it is alive but unreachable
            slot = self._new_slot()
        self._free.append(slot)
        self._event().set()
        self._released = None  # waiters hold the set event; later ones wait for the next release

    async def _reclaim_orphans(self) -> bool:
        """Give back the workers of leases whose lessee process died; whether any was reclaimed.

        Checked only when a lessee waits for a worker: a live lessee always releases its lease itself,
        and only a missing worker makes a lost lease matter.
        """
        reclaimed = False
        for lease_id, held in list(self._held.items()):
            try:
                await asyncio.wait_for(held.token, _OWNER_PROBE_S)
            except ObjectLostError:
                if self._held.pop(lease_id, None) is not None:
                    logger.warning("pool lease %s: its trial process died without releasing it; reclaimed", lease_id)
                    self._give_back(held.slot, broken=False)
                    reclaimed = True
            except TimeoutError:
                pass  # no answer yet: assume alive, look again at the next check
        return reclaimed


class PoolWorker:
    """A training process: one replicate at a time, JAX and compiled programs kept across replicates."""

    def __init__(self, compilation_cache_dir: str | None, pin_cores: int) -> None:
        self._cache_dir = compilation_cache_dir
        self._pin_cores = pin_cores
        self._lease: int | None = None
        self._run: Any = None
        self._warm = False
        self._busy = 0.0  # seconds inside start() and advance()

    def warm(self) -> int:
        """Pin the process to its cores, then import JAX and the training code (and point JAX at the cache);
        returns the process id."""
        if not self._warm:
            if self._pin_cores:  # before JAX starts: XLA sizes its thread pools from the affinity mask
                pin_once(self._pin_cores)  # its core locks stay open for the process's life
            from rl_tasks.training import use_compilation_cache  # noqa: PLC0415 - JAX loads in workers only

            if self._cache_dir is not None:
                use_compilation_cache(self._cache_dir)
            self._warm = True
        return os.getpid()

    def start(self, lease_id: int, algo: str, env: str, config: dict, seed: int, total_timesteps: int,
              eval_every: int, eval_episodes: int, resume: RunState | None = None) -> int:
        from rl_tasks.seed_run import SeedRun  # noqa: PLC0415

        self.warm()  # the manager's warm-up call and this one come from different callers: either may run first
        self._lease, self._run = lease_id, None  # a previous (released or orphaned) run is dropped first
        started = time.perf_counter()
        try:
            self._run = SeedRun(algo, env, config, seed, total_timesteps, eval_every, eval_episodes, resume)
        finally:
            self._busy += time.perf_counter() - started
        return os.getpid()

    def advance(self, lease_id: int) -> Chunk:
        if self._lease != lease_id or self._run is None:
            raise RuntimeError(f"pool worker {os.getpid()}: lease {lease_id} has no started run here")
        started = time.perf_counter()
        try:
            return self._run.advance()
        except BaseException:
            self._run = None  # a failed run's state is not reused
            raise
        finally:
            self._busy += time.perf_counter() - started

    def snapshot(self, lease_id: int) -> RunState:
        if self._lease != lease_id or self._run is None:
            raise RuntimeError(f"pool worker {os.getpid()}: lease {lease_id} has no started run here")
        return self._run.snapshot()

    def busy_seconds(self) -> float:
        return self._busy

    def drop(self, lease_id: int) -> None:
        if self._lease == lease_id:
            self._run = None

    @ray.method(concurrency_group="watch")
    def watch(self) -> None:
        """Never returns: the manager learns of this worker's death from this call's error."""
        threading.Event().wait()
