"""Speed of a peer's replay through the Searcher interface, beside the engine's own replay of the same table.

Times, on the 512 x 50 ``ppo_cartpole`` table with 20 held-out seeds, one replay of each peer (a Ray Tune
Searcher in Ray's ``Repeater(k)``, driven in-process: no Ray cluster) and of ``tune-risk`` at the same
budget of seed-runs; median of ``--runs`` runs, the process's own CPU time beside the wall time. The
target of the peer replay is one TPE + Repeater(3) replay of 300 seed-runs in under 5 s on one core.

    taskset -c 0 python experiments/benchmarks/bench_peer_replay.py [--budget 300] [--runs 5] [--methods tpe-rep3,...]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

from tune_risk.offline.methods import peer_method
from tune_risk.offline.peers import builtin_searcher, replay_peer
from tune_risk.offline.replay import ReplayTask, replay_direct
from tune_risk.offline.table import OfflineTable
from tune_risk.tune.space import TuneSpaceCodec

ROOT = Path(__file__).resolve().parents[2]


def one_run(table: OfflineTable, task: ReplayTask, method: str, budget: int, repeat: int) -> None:
    peer = peer_method(method)
    if peer is None:
        replay_direct(task, method, repeat, budget, warp="online")
        return
    codec = TuneSpaceCodec.from_param_space(table.space)
    replay_peer(task, codec, table.space, peer, builtin_searcher(peer.family, repeat), repeat, budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--table", type=Path, default=ROOT / "datasets" / "ppo_cartpole.parquet")
    parser.add_argument("--methods", default="tpe-rep3,tpe-rep1,random-rep5,optuna-gp-rep3,tune-risk")
    args = parser.parse_args()
    table = OfflineTable.load(args.table)
    task = ReplayTask.from_table(table, test_seeds=20)
    one_run(table, task, "tpe-rep3", 30, 0)  # imports and first-call costs out of the timings
    print(f"Machine: {platform.machine()} {platform.processor() or ''} Python {platform.python_version()}; "
          f"table {table.name} {table.n_configs} x {table.n_seeds} (20 held out); budget {args.budget} seed-runs; "
          f"median of {args.runs} runs\n")
    print("| method | wall s (median) | CPU s (median) | min | max |")
    print("|---|---:|---:|---:|---:|")
    for method in args.methods.split(","):
        walls, cpus = [], []
        for repeat in range(args.runs):
            wall, cpu = time.perf_counter(), time.process_time()
            one_run(table, task, method, args.budget, repeat)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        print(f"| {method} | {statistics.median(walls):.2f} | {statistics.median(cpus):.2f} | {min(walls):.2f} | "
              f"{max(walls):.2f} |", flush=True)


if __name__ == "__main__":
    main()
