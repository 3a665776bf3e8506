"""Cluster-scale projection: ERAHBO against RAHBO(k=20) in wall time, for W = 2 ... 128 workers.

The real engine decides (``tune_risk.engine.core.Engine`` over a shipped table, as ``tune-risk replay``
does); only the clock is simulated, with a cost model measured on this project's 2-core CPU machine.
Three ways of running replicates on a Ray cluster are compared:

* ``per-seed, cold``: one Tune trial per replicate, as with Ray Tune 2.60's actor cache today: a
  worker that finds no replicate to run when it frees (a synchronisation point: the engine waits
  for results) loses its process, and the next replicate it runs pays a cold start (a Ray actor
  importing JAX + rl_tasks, then the PPO programs loaded from the persistent compilation cache);
  a worker that gets its next replicate at once keeps its process and pays a bare trial start;
* ``per-seed, warm``: one trial per replicate on long-lived warm workers (``rl_tasks`` worker
  pool): every replicate pays only a bare trial start;
* ``batch``: one trial trains up to ``--batch`` replicates of one configuration in one vmapped
  program on a warm worker (a lane of a vmapped program cannot stop early, so a cancelled replicate
  saves nothing unless its whole batch is cancelled), on two cost curves ``T(k)`` for ``k`` seeds:
  the CPU curve measured here (``k`` seeds cost ``0.81–0.96 x`` of ``k`` separate runs; modelled as
  ``T(k) = t1 · k · (c∞ + (1 − c∞)/k)`` with ``c∞ = 0.81``), and a latency-bound GPU curve
  (``T(k) = t1_gpu · max(1, k / k_sat)``: the same time for any batch up to the device's
  saturation). **The GPU curve is an assumption, not a measurement** (no GPU was available; flags
  set it), the CPU numbers are measured.

Both methods follow the replay protocol (``tune-risk replay``: the same Sobol initial design of 5
configurations x 20 seeds, then ``--budget`` BO replicates), with the searcher's
asynchronous mode (``max_active_configs = ceil(W / k_min)``, as ``RiskAwareSearch`` sets it with
``W`` workers). Printed: the mean simulated wall time (seconds) per method and mode over
``--repeats`` replays, and the ratio ERAHBO / RAHBO(k=20) per mode.

    python experiments/benchmarks/cluster_projection.py [--table datasets/ppo_cartpole.parquet] [--budget 300]
        [--repeats 3] [--workers 2,8,32,128]

Cost model defaults (seconds; flags override): ``t1 = 0.95`` (one PPO CartPole 100k-step seed on one
CPU core: 50 seeds in one vmapped program take 37–40 s, i.e. 0.77 s per seed at the 0.81 ratio),
cold start ``10.2`` (actor importing JAX + rl_tasks 6.5 s + programs from a warm persistent cache
3.7 s), bare trial start ``0.65``.
"""

from __future__ import annotations

import argparse
import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE, WAIT, Replicate
from tune_risk.offline.replay import ReplayTask, method_settings
from tune_risk.offline.table import OfflineTable

ROOT = Path(__file__).resolve().parents[2]
METHODS = ("erahbo", "rahbo-k20")
MODES = ("per-seed, cold", "per-seed, warm", "batch, CPU curve", "batch, GPU curve (assumed)")


@dataclass(frozen=True)
class CostModel:
    """Seconds: one seed's training, a cold worker start, a bare trial start; batch cost curves."""

    t1: float = 0.95
    cold_start: float = 10.2
    bare_start: float = 0.65
    cpu_batch_ratio: float = 0.81
    t1_gpu: float = 0.95
    gpu_saturation: int = 128

    def batch_time(self, k: int, gpu: bool) -> float:
        """Training time of ``k`` seeds in one vmapped program."""
        if gpu:
            return self.t1_gpu * max(1.0, k / self.gpu_saturation)
        return self.t1 * k * (self.cpu_batch_ratio + (1.0 - self.cpu_batch_ratio) / k)


@dataclass
class Batch:
    """Replicates running together on one worker; ``finish`` is when all of them report."""

    worker: int
    start: float
    finish: float
    runs: list[int]


def project(task: ReplayTask, method: str, repeat: int, budget: int, workers: int, mode: str,
            cost: CostModel, batch: int) -> float:
    """Simulated wall time (s) of one replay of ``method`` with ``workers`` workers under ``mode``."""
    k_min = 2
    settings = method_settings(method, budget, seed=repeat, max_active_configs=max(1, math.ceil(workers / k_min)))
    engine = Engine(settings, pool=task.points, warp=task.warp)
    values: dict[int, float] = {}

    def value(replicate: Replicate) -> float:
        return float(task.returns[replicate.pool_index, task.seed_of(repeat, replicate.pool_index, replicate.seed)])

    batching = mode.startswith("batch")
    size = batch if batching else 1
    duration: Callable[[int], float] = (lambda k: cost.batch_time(k, gpu="GPU" in mode)) if batching else (lambda k: cost.t1)
    clock, heap, running = 0.0, [], {}  # heap: (finish, batch id); running: batch id -> Batch
    idle = list(range(workers))
    warm = [mode != "per-seed, cold"] * workers  # a cold-mode worker is warm only while it is kept busy
    held: Replicate | None = None  # asked but not yet placed (another configuration than the batch's)
    next_id = 0
    while True:
        # Fill idle workers; a batch takes consecutive replicates of one configuration.
        while idle:
            first = held or engine.ask()
            held = None
            if first is WAIT or first is DONE:
                break
            lane = [first]
            while len(lane) < size:
                more = engine.ask()
                if more is WAIT or more is DONE:
                    break
                if more.config_id != first.config_id:
                    held = more
                    break
                lane.append(more)
            worker = idle.pop()
            start = cost.bare_start if warm[worker] else cost.cold_start
            warm[worker] = True
            for replicate in lane:
                values[replicate.run_id] = value(replicate)
            job = Batch(worker, clock, clock + start + duration(len(lane)), [r.run_id for r in lane])
            running[next_id] = job
            heapq.heappush(heap, (job.finish, next_id))
            next_id += 1
        if not running:
            if held is None and engine.ask() is DONE:
                return clock
            raise RuntimeError("the engine waits but nothing runs")
        finish, job_id = heapq.heappop(heap)
        if job_id not in running:
            continue
        clock = finish
        job = running.pop(job_id)
        for run_id in job.runs:
            if run_id in values:
                engine.tell(run_id, values.pop(run_id), cost=clock - job.start)
        _cancel(engine, running, values, clock, idle)
        idle.append(job.worker)
        if mode == "per-seed, cold" and held is None:
            # Tune decides the freed actor's fate before it asks the searcher again: kept only if a
            # trial is already staged, i.e. the engine has a replicate to offer now.
            nxt = engine.ask()
            if nxt is WAIT or nxt is DONE:
                warm[job.worker] = False
                if nxt is DONE and not running:
                    return clock
            else:
                held = nxt


def _cancel(engine: Engine, running: dict[int, Batch], values: dict[int, float], clock: float,
            idle: list[int]) -> None:
    """Apply the engine's cancellations; a batch stops (and frees its worker) only when all its lanes are cancelled."""
    cancelled = set(engine.pending_cancellations())
    for job_id, job in list(running.items()):
        hit = [r for r in job.runs if r in cancelled]
        if not hit:
            continue
        if len(hit) == len([r for r in job.runs if r in values]):
            for run_id in hit:
                values.pop(run_id, None)
                engine.tell_cancelled(run_id, cost=clock - job.start)
            del running[job_id]
            idle.append(job.worker)
        else:
            for run_id in hit:  # the lane keeps running inside the vmapped program; its result is discarded
                values.pop(run_id, None)
                engine.tell_cancelled(run_id, cost=clock - job.start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=ROOT / "datasets" / "ppo_cartpole.parquet")
    parser.add_argument("--budget", type=int, default=300, help="BO replicate evaluations (N_max)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default="2,8,32,128")
    parser.add_argument("--batch", type=int, default=20, help="replicates per trial in the batch modes")
    for name, default in vars(CostModel()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = parser.parse_args()
    cost = CostModel(**{name: getattr(args, name) for name in vars(CostModel())})
    task = ReplayTask.from_table(OfflineTable.load(args.table))
    print(f"table {task.name}, budget {args.budget}, {args.repeats} repeats, batch {args.batch}; cost model {cost}")
    print("\n| W | mode | ERAHBO wall s | RAHBO(k=20) wall s | ERAHBO / RAHBO(k=20) |\n|---:|---|---:|---:|---:|")
    started = time.perf_counter()
    for workers in (int(w) for w in args.workers.split(",")):
        for mode in MODES:
            walls = {m: np.mean([project(task, m, r, args.budget, workers, mode, cost, args.batch)
                                 for r in range(args.repeats)]) for m in METHODS}
            print(f"| {workers} | {mode} | {walls['erahbo']:.0f} | {walls['rahbo-k20']:.0f} | "
                  f"{walls['erahbo'] / walls['rahbo-k20']:.2f} |", flush=True)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
