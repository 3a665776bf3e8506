"""Speed of the offline replay direct loop: one paper-style run and a paper-scale extrapolation.

One ERAHBO replay (budget 1500 BO evaluations, a 512-configuration x 50-seed table, one worker,
one torch thread) is timed for each method, with replicate evaluations per second, and the cost
of the ERAHBO paper's study (19 tables x 20 repetitions x 4 methods) is extrapolated. ``--profile``
prints where the time goes (cProfile, top functions by own time).

    python experiments/benchmarks/bench_replay.py [--budget 1500] [--configs 512] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import time

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.offline.replay import PAPER_METHODS, ReplayTask, replay_direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--configs", type=int, default=512)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--methods", default=",".join(PAPER_METHODS))
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    X, Y = make_pool_table(get_objective("hartmann6"), args.configs, args.seeds, seed=0)
    task = ReplayTask("hartmann6", X, Y)
    print(f"Machine: {platform.machine()} {platform.python_implementation()} {platform.python_version()}; "
          f"table {args.configs} x {args.seeds}; budget {args.budget}; 1 worker; 1 torch thread\n")
    print("| method | seconds per run | BO evaluations | evaluations / s | rounds |")
    print("|---|---:|---:|---:|---:|")
    total = 0.0
    methods = args.methods.split(",")
    for method in methods:
        started = time.perf_counter()
        result = replay_direct(task, method, 0, args.budget)
        seconds = time.perf_counter() - started
        total += seconds
        n = result.engine.n_used
        print(f"| {method} | {seconds:.1f} | {n} | {n / seconds:.0f} | {result.engine.rounds} |")
    study = total / len(methods) * 19 * 20 * 4
    print(f"\nPaper-scale study (19 tables x 20 repetitions x 4 methods): about {study / 3600:.1f} CPU-hours "
          f"({study / 3600 / 2:.1f} h on 2 cores).")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        replay_direct(task, "erahbo", 0, args.budget)
        profiler.disable()
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(12)
        print("\nWhere one ERAHBO run spends its time (own time):\n" + stream.getvalue())


if __name__ == "__main__":
    main()
