"""The ``tune-risk`` command line.

Subcommands are registered by the modules that implement them; heavy imports (Ray, BoTorch, JAX)
happen only when a subcommand runs, so ``tune-risk --help`` is instant.

* ``tune-risk replay ...``: replay offline tables with ERAHBO, RAHBO, GP-UCB (``tune_risk.offline``).
* ``tune-risk generate ...``: train RL configurations x seeds into an offline table (``rl_tasks``).
* ``tune-risk prewarm ...``: compile a search space's programs into a JAX cache (``rl_tasks``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import entry_points

COMMAND_GROUP = "tune_risk.commands"
"""Entry-point group of ``register(subparsers)`` functions; each adds its subcommands with
``set_defaults(func=...)``. The project registers ``tune_risk.offline.cli:register`` (replay) and
``rl_tasks.cli:register`` (generate, prewarm) in ``pyproject.toml``; another package can add its own."""


class _Parser(argparse.ArgumentParser):
    """Bad arguments give one line on stderr (``prog: error: ...``) and exit code 2, no usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tune-risk",
        description="Risk-aware, seed-efficient hyperparameter optimisation of RL for Ray Tune "
        "(ERAHBO, RAHBO, GP-UCB, OSCBO).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every finished configuration")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        try:
            register = entry.load()
        except ImportError:  # an optional part of the distribution is unavailable
            continue
        register(subparsers)
    for subparser in subparsers.choices.values():
        _accept_verbose(subparser)
    return parser


def _accept_verbose(parser: argparse.ArgumentParser) -> None:
    """``-v`` after the subcommand too (``tune-risk replay ... -v``); SUPPRESS keeps the global flag's value."""
    try:
        parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                            help="log every finished configuration")
    except argparse.ArgumentError:  # the subcommand defines it already
        pass


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:  # a bare ``tune-risk``: usage and exit code 2, as argparse does
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: a command is required (see {parser.prog} --help)", file=sys.stderr)
        return 2
    args.argv = argv[argv.index(args.command) + 1:]  # recorded in table metadata ("command")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("rl_tasks").setLevel(logging.INFO)  # the generator's progress lines
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as error:  # bad input: one clear line, no traceback
        print(f"tune-risk {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for SIGINT, no traceback
        print(f"tune-risk {args.command}: interrupted", file=sys.stderr)
        return 130


def _version() -> str:
    from tune_risk import __version__

    return __version__


if __name__ == "__main__":
    sys.exit(main())
