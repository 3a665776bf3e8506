"""Benchmark of the rl_tasks table generator: seconds per configuration x seeds, compile vs run, peak memory.

Each task runs in its own subprocess (so its peak resident memory is its own): one configuration (ARLBench's
defaults) is compiled ahead of time and then trained for all seeds in one vmapped call, exactly as
``tune-risk generate`` does. Prints a markdown table and writes ``results/bench_rl.csv`` and
``results/bench_rl.md``.

    XLA_FLAGS=--xla_force_host_platform_device_count=1 taskset -c 1 \\
        .venv/bin/python experiments/benchmarks/bench_rl.py --seeds 50

Defaults reproduce the shipped tables' settings (``--tasks`` picks a subset, ``--steps`` overrides budgets).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

# (algorithm, environment, training steps) of the shipped tables and of the other offered tasks.
TASKS = {
    "ppo_cartpole": ("ppo", "CartPole-v1", 100_000),
    "ppo_acrobot": ("ppo", "Acrobot-v1", 100_000),
    "dqn_cartpole": ("dqn", "CartPole-v1", 100_000),
    "sac_pendulum": ("sac", "Pendulum-v1", 10_000),
    "ppo_brax_fast": ("ppo", "brax/fast", 100_000),
}


def run_one(algo: str, env: str, steps: int, seeds: int, eval_episodes: int) -> dict:
    """Compile and run one configuration x ``seeds``; returns timings and peak memory (this process)."""
    import jax

    from rl_tasks.training import prepare, seed_keys

    t0 = time.perf_counter()
    program, traced = prepare(algo, env, {}, steps, eval_episodes)
    keys = seed_keys(list(range(seeds)))
    executable = program.train_batch.lower(traced, keys).compile()
    t1 = time.perf_counter()
    returns = jax.block_until_ready(executable(traced, keys))
    t2 = time.perf_counter()
    return {
        "algo": algo, "env": env, "steps": steps, "seeds": seeds,
        "compile_s": round(t1 - t0, 2), "run_s": round(t2 - t1, 2), "per_seed_s": round((t2 - t1) / seeds, 3),
        "mean_return": round(float(returns.mean()), 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "backend": jax.default_backend(),
    }


def markdown(rows: list[dict]) -> str:
    """A markdown table of benchmark rows."""
    head = "| task | steps | seeds | compile s | run s (all seeds) | s per seed | peak RSS MiB | mean return |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['steps']} | {r['seeds']} | {r['compile_s']} | {r['run_s']} | "
                     f"{r['per_seed_s']} | {r['peak_rss_mib']} | {r['mean_return']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--steps", type=int, default=None, help="override every task's training steps")
    parser.add_argument("--eval-episodes", type=int, default=128)
    parser.add_argument("--out", default="results")
    parser.add_argument("--one", nargs=3, metavar=("ALGO", "ENV", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        algo, env, steps = args.one
        print(json.dumps(run_one(algo, env, int(steps), args.seeds, args.eval_episodes)))
        return

    rows = []
    for task in args.tasks:
        algo, env, steps = TASKS[task]
        steps = args.steps or steps
        cmd = [sys.executable, __file__, "--one", algo, env, str(steps), "--seeds", str(args.seeds),
               "--eval-episodes", str(args.eval_episodes)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        if proc.returncode != 0:
            print(f"{task}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        row = {"task": task, **json.loads(proc.stdout.strip().splitlines()[-1])}
        rows.append(row)
        print(f"{task}: {row}", file=sys.stderr, flush=True)

    table = markdown(rows)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_rl.md").write_text(table + "\n")
    import csv

    with open(out / "bench_rl.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["task"])
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
