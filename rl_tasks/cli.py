"""``tune-risk generate`` and ``tune-risk prewarm``: rl_tasks' command lines (JAX-free until a command runs).

``tune_risk.cli`` calls :func:`register` to add the subcommand; ``python -m rl_tasks.cli generate ...`` runs it
on its own. Example::

    tune-risk generate --algo ppo --env CartPole-v1 --configs 128 --seeds 50 --steps 100000 \\
        --out datasets/ppo_cartpole.parquet
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rl_tasks.envs import ALGORITHMS, ENVIRONMENTS, check_task

MIN_SEEDS = 2  # rl_tasks.generate.MIN_SEEDS, not imported here: that module loads Ray


def _count(minimum: int, why: str = "") -> Any:
    """An argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            reason = f" ({why})" if why else ""
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}{reason}")
        return value

    return parse


def add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``generate`` options to a parser."""
    parser.add_argument("--algo", required=True, choices=ALGORITHMS, help="RL algorithm")
    parser.add_argument("--env", required=True,
                        help=f"environment, one of {sorted(ENVIRONMENTS)}, an alias (cartpole) or ARLBench's name "
                             "(cc_cartpole)")
    parser.add_argument("--configs", type=_count(1), default=128, help="number of scrambled-Sobol configurations")
    parser.add_argument("--seeds", type=_count(MIN_SEEDS, "a table needs a variance per configuration; tune-risk "
                                                          "replay refuses fewer"),
                        default=50, help="seeds 0..N-1 per configuration (at least 2; replay's default methods "
                                         "need 20)")
    parser.add_argument("--steps", type=_count(1), default=100_000, help="training environment steps per run")
    parser.add_argument("--out", required=True, help="output parquet path (metadata goes to <out>.json)")
    parser.add_argument("--sobol-seed", type=int, default=0, help="seed of the Sobol scrambling")
    parser.add_argument("--eval-episodes", type=int, default=128, help="greedy evaluation episodes at the end")
    parser.add_argument("--devices", type=int, default=1, help="JAX devices per call (pmap over seeds)")
    parser.add_argument("--seeds-per-call", type=int, default=None, help="seeds per JAX call (default: all)")
    parser.add_argument("--ray", action="store_true", help="compute configurations as parallel Ray tasks")
    parser.add_argument("--max-new", type=int, default=None, help="stop after this many new configurations")
    parser.add_argument(
        "--fixed", action="append", default=[], metavar="NAME=VALUE", type=fixed_pair,
        help="override a hyperparameter the space keeps fixed, e.g. --fixed hidden_size=64 (repeatable; recorded "
             "in the metadata)",
    )


def fixed_pair(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` with VALUE parsed as a bool, int, float or string."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--fixed expects NAME=VALUE, got {text!r}")
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return name, lowered == "true"
    for kind in (int, float):
        try:
            return name, kind(raw)
        except ValueError:
            pass
    return name, raw


def run_generate(args: argparse.Namespace) -> int:
    """Run the generator with parsed arguments; returns the process exit code."""
    check_task(args.algo, args.env)  # now, not after importing JAX and Ray
    from rl_tasks.generate import generate_table  # noqa: PLC0415 - imports JAX
    from rl_tasks.parts import parts_done  # noqa: PLC0415

    argv = getattr(args, "argv", None)
    command = "tune-risk generate " + " ".join(shlex.quote(a) for a in (argv or _after(sys.argv[1:], "generate")))
    table = generate_table(
        args.algo, args.env, args.configs, args.seeds, args.steps, args.out, seed=args.sobol_seed,
        ray_parallel=args.ray, eval_episodes=args.eval_episodes, devices=args.devices,
        seeds_per_call=args.seeds_per_call, command=command, max_new=args.max_new, fixed=dict(args.fixed),
    )
    if table is None:
        print(f"{args.out}: {parts_done(Path(args.out))} of {args.configs} configurations done, no table yet (--max-new stopped this run, "
              "or another generator sharing the table is still computing); rerun the same command to resume",
              file=sys.stderr)
        return 0
    per_config = table.groupby("config_id")["performance"].mean()
    print(f"wrote {args.out} ({len(table)} rows); mean return per configuration: best {per_config.max():.2f}, "
          f"worst {per_config.min():.2f}, median {per_config.median():.2f}")
    return 0


def _after(argv: list[str], word: str) -> list[str]:
    return argv[argv.index(word) + 1:] if word in argv else argv


def add_prewarm_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``prewarm`` options to a parser (the budgets are the live trainable's arguments)."""
    parser.add_argument("--algo", required=True, choices=ALGORITHMS, help="RL algorithm")
    parser.add_argument("--env", required=True, help="environment (as for generate)")
    parser.add_argument("--steps", type=_count(1), required=True, help="total_timesteps of the live trainable")
    parser.add_argument("--eval-every", type=_count(1), required=True, help="eval_every of the live trainable")
    parser.add_argument("--eval-episodes", type=_count(1), default=128,
                        help="eval_episodes of the live trainable (default 128, as make_trainable)")
    parser.add_argument("--cache", required=True,
                        help="JAX's persistent compilation cache directory the workers are given")


def run_prewarm(args: argparse.Namespace) -> int:
    """Compile every static shape of the task's search space into ``--cache``; print one line per shape."""
    check_task(args.algo, args.env)  # a bad task fails before JAX loads
    from rl_tasks.prewarm import prewarm  # noqa: PLC0415 - loads JAX

    shapes = prewarm(args.algo, args.env, args.steps, args.eval_every, args.eval_episodes, args.cache)
    for shape in shapes:
        print(f"compiled {shape.seconds:6.1f} s  {shape.static}")
    print(f"{len(shapes)} static shape(s) of {args.algo} {args.env} in {args.cache}")
    return 0


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``generate`` and ``prewarm`` subcommands to an ``argparse`` subparsers object; returns the
    ``generate`` parser.

    Each parser's default ``func`` runs its command (call ``args.func(args)``).
    """
    parser = subparsers.add_parser(
        "generate", help="generate an offline table of RL returns (configurations x seeds)",
        description="Generate an ARLBench-style offline table with rl_tasks (resumable).",
    )
    add_generate_arguments(parser)
    parser.set_defaults(func=run_generate)
    warm = subparsers.add_parser(
        "prewarm", help="compile every static shape of a task's search space into a JAX cache directory",
        description="Pre-warm JAX's persistent compilation cache for a live search (rl_tasks.prewarm): the "
                    "workers then load each program instead of compiling it.",
    )
    add_prewarm_arguments(warm)
    warm.set_defaults(func=run_prewarm)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rl_tasks.cli generate|prewarm ...``."""
    parser = argparse.ArgumentParser(prog="python -m rl_tasks.cli")
    register(parser.add_subparsers(dest="command", required=True))
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = parser.parse_args(argv)
    args.argv = _after(argv, args.command)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
