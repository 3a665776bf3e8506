"""``tune-risk replay``: benchmark HPO methods on offline tables, like the ERAHBO paper.

    tune-risk replay --table datasets/ppo_cartpole.parquet --methods erahbo,rahbo-k2,rahbo-k20,gp-ucb \\
        --repeats 20 --budget 1500 --workers 1 --seed 0 --out results/replay [--via tune] \\
        [--warp pooled|online] [--k-init K]

Writes ``runs.csv`` (one row per table, method, repeat, evaluation), ``rounds.csv`` (one row per BO
round), ``summary.md`` and PNG figures into ``--out``. Repetition ``r`` uses seed ``--seed + r``
for the initial design and the seed permutations, shared by all methods. ``--warp pooled`` (the
paper's protocol) gives every method the warp fitted on the whole table; ``--warp online`` lets the
engine fit its own on the initial design and re-fit it as data arrive, as in live use. Regret is
measured on the pooled warp either way.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``replay`` subcommand."""
    parser = subparsers.add_parser(
        "replay", help="replay offline tables of RL returns to benchmark HPO methods",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--table", action="append", required=True, type=Path,
                        help="table file (parquet or CSV; repeat the flag for several tables)")
    parser.add_argument("--methods", default="erahbo,rahbo-k2,rahbo-k20,gp-ucb",
                        help="comma-separated: erahbo, erahbo-exp, erahbo-sigmoid, rahbo-k<k>, gp-ucb")
    parser.add_argument("--repeats", type=_positive, default=20)
    parser.add_argument("--budget", type=_positive, default=1500, help="BO replicate evaluations (N_max)")
    parser.add_argument("--workers", type=_positive, default=1, help="parallel workers (replicates at once)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--via", choices=("direct", "tune"), default="direct",
                        help="direct simulated loop (fast) or a real Ray Tune run")
    parser.add_argument("--warp", choices=("pooled", "online"), default="pooled",
                        help="output warp the methods see: pooled over the table (paper) or fitted online (live use)")
    parser.add_argument("--k-init", type=_positive, default=None,
                        help="replicates per initial configuration (default: each method's, k_max for ERAHBO)")
    parser.set_defaults(func=run_replay)
    return parser


def run_replay(args: argparse.Namespace) -> int:
    from tune_risk.offline.replay import ReplayTask, method_settings, parse_methods, rounds_rows, runs_rows
    from tune_risk.offline.summary import write_summary
    from tune_risk.offline.table import OfflineTable

    methods = parse_methods(args.methods)
    if args.k_init is not None:  # now, not after the first replays
        for method in methods:
            method_settings(method, budget=args.budget, seed=0, k_init=args.k_init)
    try:  # now, not after hours of replay
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"--out {args.out}: cannot create the output directory ({err.strerror})") from err
    tables = [OfflineTable.load(path) for path in args.table]
    for table in tables:
        if table.dropped_nan:
            print(f"{table.name}: dropped {table.dropped_nan} configurations with NaN returns", file=sys.stderr)
    jobs = [(t, m, r) for t in tables for m in methods for r in range(args.repeats)]
    run_rows: list[dict] = []
    round_rows: list[dict] = []
    if args.via == "tune":
        _init_ray(args.workers)
    progress = Progress(len(jobs))
    tasks = {table.name: ReplayTask.from_table(table) for table in tables}
    for table, method, repeat in jobs:
        task = tasks[table.name]
        result = _replay_one(args, table, task, method, args.seed + repeat)
        result.repeat = repeat
        run_rows.extend(runs_rows(result, task))
        round_rows.extend(rounds_rows(result, task))
        progress.step(f"{table.name} {method} repeat {repeat}")
    runs, rounds = pd.DataFrame(run_rows), pd.DataFrame(round_rows)
    runs.to_csv(args.out / "runs.csv", index=False)
    rounds.to_csv(args.out / "rounds.csv", index=False)
    written = write_summary(runs, rounds, args.out, title="Offline replay: " + ", ".join(t.name for t in tables))
    print(f"wrote {args.out / 'runs.csv'}, {args.out / 'rounds.csv'} and {len(written)} summary files to {args.out}")
    return 0


def _replay_one(args, table, task, method: str, seed: int):
    from tune_risk.offline.replay import replay_direct, replay_tune

    overrides = {} if args.k_init is None else {"k_init": args.k_init}
    if args.via == "direct":
        return replay_direct(task, method, seed, args.budget, workers=args.workers, warp=args.warp, **overrides)
    configs = [table.config(row) for row in range(len(table.configs))]
    return replay_tune(task, table.space, configs, method, seed, args.budget, workers=args.workers,
                       storage_path=str((args.out / "ray").resolve()), warp=args.warp, **overrides)


def _init_ray(workers: int) -> None:
    import logging

    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=max(2, workers), include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


class Progress:
    """A one-line progress bar with ETA on stderr."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.perf_counter()

    def step(self, label: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.started
        eta = elapsed / self.done * (self.total - self.done)
        filled = int(30 * self.done / self.total)
        bar = "#" * filled + "." * (30 - filled)
        end = "\n" if self.done == self.total else ""
        print(f"\r[{bar}] {self.done}/{self.total} {label:<40.40} elapsed {elapsed:5.0f}s ETA {eta:5.0f}s",
              end=end, file=sys.stderr, flush=True)
