"""Where a live replicate's seconds go: training chunks against greedy evaluations.

A live trial (``rl_tasks.make_trainable`` or the warm pool) trains one seed in chunks of ``--eval-every``
steps and evaluates the greedy policy after each chunk on ``--eval-episodes`` episodes; each evaluation runs
its episodes to their end, so a policy that balances longer costs more to evaluate. This script trains one
seed of each given configuration (default: ARLBench's defaults) with ``SeedRun``'s chunks and keys and
prints, per chunk, the training seconds, the evaluation seconds and the return (programs are compiled before
timing starts), so that a difference in seconds per replicate between configurations or runs
(``experiments/studies/live_hpo.py``) can be put down to training or to evaluation.

    python experiments/benchmarks/replicate_cost.py --algo ppo --env CartPole-v1 --steps 100000 --eval-every 20000 \\
        --eval-episodes 32 [--config '{"learning_rate": 0.001}'] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time

import jax

from rl_tasks.seed_run import chunk_lengths
from rl_tasks.training import prepare


def chunk_costs(algo: str, env: str, config: dict, steps: int, eval_every: int, episodes: int,
                seed: int) -> list[tuple[int, float, float, float]]:
    """``(timesteps, train s, eval s, return)`` per chunk of one seed (``SeedRun``'s keys and chunks)."""
    program, traced = prepare(algo, env, config, steps, episodes)
    key_train, key_eval = jax.random.split(jax.random.PRNGKey(seed))
    state = program.init(traced, key_train)
    lengths = chunk_lengths(program.iteration_steps, program.n_iterations, eval_every)
    for n in lengths:  # compile every chunk length and the evaluation before timing
        jax.block_until_ready(program.evaluate(traced, program.advance(traced, state, n), key_eval))
    chunk = lengths[0]
    rows, done = [], 0
    while done < program.n_iterations:
        n = min(chunk, program.n_iterations - done)
        done += n
        # SeedRun's keys: fresh ones for intermediate evaluations, the table generator's for the final one.
        key = key_eval if done >= program.n_iterations else jax.random.fold_in(key_eval, len(rows))
        started = time.perf_counter()
        state = jax.block_until_ready(program.advance(traced, state, n))
        trained = time.perf_counter()
        value = float(program.evaluate(traced, state, key).mean())
        rows.append((done * program.iteration_steps, trained - started, time.perf_counter() - trained, value))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algo", default="ppo")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--eval-every", type=int, default=20_000)
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", action="append", type=json.loads, default=None,
                        help="a configuration as JSON (repeatable); default: the task's defaults")
    args = parser.parse_args()
    for config in args.config or [{}]:
        rows = chunk_costs(args.algo, args.env, config, args.steps, args.eval_every, args.eval_episodes, args.seed)
        print(f"\n{args.algo} on {args.env}, config {config or 'defaults'}, seed {args.seed}, "
              f"{args.eval_episodes} evaluation episodes per chunk\n")
        print("| timesteps | train s | eval s | return |\n|---:|---:|---:|---:|")
        for timesteps, train, evaluate, value in rows:
            print(f"| {timesteps:,} | {train:.2f} | {evaluate:.2f} | {value:.1f} |")
        train_s, eval_s = sum(r[1] for r in rows), sum(r[2] for r in rows)
        print(f"\ntotal: train {train_s:.2f} s, evaluate {eval_s:.2f} s ({eval_s / (train_s + eval_s):.0%} of the "
              "replicate)")


if __name__ == "__main__":
    main()
