"""Latency of one ERAHBO suggestion against the number of evaluated configurations.

A *suggestion* is the ``ask()`` that opens a round: condition both GPs on every evaluated
configuration, maximise ``UCB^MV`` (exact argmax over a 512-row pool, or ``optimize_acqf`` on the
continuous 6-D cube) and fix ``B_t``. For each n in ``--sizes`` the engine is first filled with n
configurations (fixed k = 2 replicates of a synthetic heteroscedastic objective), then
``--repeats`` suggestions are timed, each followed by its replicates' results. Prints a markdown
table (p50 / p95 in ms) and the process's peak resident memory.

    python experiments/benchmarks/bench_engine.py [--sizes 50 200 500] [--repeats 20]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import resource
import time

import numpy as np

from tune_risk.benchmarks.objectives import get_objective
from tune_risk.engine.core import Engine
from tune_risk.engine.records import DONE, WAIT, Replicate
from tune_risk.settings import EngineSettings


def filled_engine(objective, n_configs: int, pool: np.ndarray, seed: int) -> Engine:
    """An engine over ``pool`` with ``n_configs`` evaluated configurations (k = 2 each)."""
    settings = EngineSettings.for_method("rahbo", k=2, seed=seed, common_random_numbers=True)
    engine = Engine(settings, pool=pool)
    while sum(r.n_incorporated >= 2 for r in engine.records) < n_configs:
        tell(engine, objective, engine.ask())
    return engine


def tell(engine: Engine, objective, request) -> None:
    if isinstance(request, Replicate):
        engine.tell(request.run_id, objective.sample(np.asarray(request.x), request.seed))
    elif request is WAIT or request is DONE:
        raise RuntimeError(f"unexpected {request!r} while filling the engine")


def to_continuous(engine: Engine) -> Engine:
    """The same evaluated data, but the next suggestion optimises over the continuous cube."""
    state = copy.deepcopy(engine.state_dict())
    state["pool"] = None
    for record in state["records"]:
        record["pool_index"] = None
    return Engine.from_state_dict(state)


def time_suggestions(engine: Engine, objective, repeats: int) -> list[float]:
    latencies = []
    for _ in range(repeats):
        started = time.perf_counter()
        request = engine.ask()  # opens a round: acquisition + B_t
        latencies.append(time.perf_counter() - started)
        while isinstance(request, Replicate):
            tell(engine, objective, request)
            request = engine.ask() if engine.records[-1].running else None
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--pool-size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    objective = get_objective("hartmann6")
    pool = np.random.default_rng(args.seed).random((args.pool_size, objective.dim))
    rows = []
    for n in args.sizes:
        engine = filled_engine(objective, n, pool, args.seed)
        continuous = to_continuous(engine)
        # pool: the acquisition ranks the 512 (here pool_size) rows not evaluated yet
        pool_ms = np.array(time_suggestions(engine, objective, args.repeats)) * 1e3
        cont_ms = np.array(time_suggestions(continuous, objective, max(3, args.repeats // 4))) * 1e3
        rows.append((n, pool_ms, cont_ms))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    threads = EngineSettings().torch_threads
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, engine torch threads {threads}, "
          f"pool of {args.pool_size} rows (6-D), continuous 6-D cube\n")
    print("| evaluated configs | pool p50 (ms) | pool p95 (ms) | continuous p50 (ms) | continuous p95 (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for n, pool_ms, cont_ms in rows:
        print(f"| {n} | {np.percentile(pool_ms, 50):.1f} | {np.percentile(pool_ms, 95):.1f} | "
              f"{np.percentile(cont_ms, 50):.0f} | {np.percentile(cont_ms, 95):.0f} |")
    print(f"\nPeak resident memory of the process: {rss_mb:.0f} MiB (torch + BoTorch import included)")


if __name__ == "__main__":
    main()
