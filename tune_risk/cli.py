"""The ``tune-risk`` command line.

Subcommands are registered by the modules that implement them; heavy imports (Ray, BoTorch, JAX)
happen only when a subcommand runs, so ``tune-risk --help`` is instant.

* ``tune-risk replay ...``: replay offline tables with ERAHBO, RAHBO, GP-UCB (``tune_risk.offline``).
* ``tune-risk generate ...``: train RL configurations x seeds into an offline table (``rl_tasks``).
* ``tune-risk prewarm ...``: compile a search space's programs into a JAX cache (``rl_tasks``).

``python -m tune_risk`` runs the same command. Every subcommand inherits, from here, one-line errors
with a "did you mean" for mistyped flags, subcommands and choices, its options' defaults in its help,
and, when an optional dependency is missing, the extra to install instead of an ``ImportError``.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import re
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, entry_points, requires
from typing import Any

COMMAND_GROUP = "tune_risk.commands"
"""Entry-point group of ``register(subparsers)`` functions; each adds its subcommands with
``set_defaults(func=...)``. The project registers ``tune_risk.offline.cli:register`` (replay) and
``rl_tasks.cli:register`` (generate, prewarm) in ``pyproject.toml``; another package can add its own."""


DISTRIBUTION = "tune-risk"
"""The distribution whose extras (``pip install 'tune-risk[rl]'``) provide the optional dependencies."""


class _Parser(argparse.ArgumentParser):
    """Bad arguments give one line on stderr (``prog: error: ...``) and exit code 2, no usage dump; a
    mistyped flag, subcommand or choice gets the closest valid one ("did you mean"), at every level."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: Any = None  # the subparsers action, if this parser has subcommands

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def add_subparsers(self, **kwargs: Any) -> Any:
        self.subcommands = super().add_subparsers(**kwargs)  # subparsers are _Parser too (parser_class)
        return self.subcommands

    def option_names(self) -> list[str]:
        """Every option string of this parser (``--budget``, ``-v``, ...)."""
        return [name for action in self._actions for name in action.option_strings]

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:  # reported by the subcommand that got them, with the flags it and its parents know
            chain = self._chosen(namespace)
            known = [name for parser in chain for name in parser.option_names()]
            chain[-1].error(f"unrecognized arguments: {' '.join(extras)}{_did_you_mean(extras, known)}")
        return namespace

    def _chosen(self, namespace: argparse.Namespace) -> list[_Parser]:
        """This parser and the subcommand parsers ``namespace`` selected, outermost first."""
        chain, parser = [self], self
        while parser.subcommands is not None:
            chosen = parser.subcommands.choices.get(getattr(namespace, parser.subcommands.dest, None))
            if not isinstance(chosen, _Parser):
                break
            chain.append(chosen)
            parser = chosen
        return chain

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's invalid-choice error, with the closest choice (subcommand names included)."""
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:
            close = difflib.get_close_matches(str(value), [str(c) for c in action.choices or ()], n=1)
            if not close:
                raise
            raise argparse.ArgumentError(action, f"{error.message}; did you mean {close[0]!r}?") from None


class DefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the description's layout; end each option's help with its default, or say it is required.

    Flags (``store_true``), options without a default and help that already states one are left as they are.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or action.default is argparse.SUPPRESS or "(default" in text or "default:" in text:
            return text
        if action.required:
            return f"{text} (required)"
        if action.nargs == 0 or action.default is None or action.default == []:
            return text
        return f"{text} (default: %(default)s)"


def _did_you_mean(extras: Sequence[str], known: Sequence[str]) -> str:
    """``"; did you mean --budget?"`` for the unknown flags among ``extras`` that are close to a known one."""
    flags = [extra.split("=", 1)[0] for extra in extras if extra.startswith("-")]
    hints = []
    for flag in flags:
        close = difflib.get_close_matches(flag, known, n=1)
        if close:
            hints.append(f"{close[0]} for {flag}" if len(flags) > 1 else close[0])
    return f"; did you mean {', '.join(hints)}?" if hints else ""


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
        if subparser.formatter_class is argparse.HelpFormatter:  # a subcommand's own formatter is kept
            subparser.formatter_class = DefaultsHelpFormatter
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
    except ModuleNotFoundError as error:  # an optional dependency: say which extra installs it
        hint = missing_dependency_hint(error)
        if hint is None:
            raise
        print(f"tune-risk {args.command}: error: {hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for SIGINT, no traceback
        print(f"tune-risk {args.command}: interrupted", file=sys.stderr)
        return 130


def missing_dependency_hint(error: ModuleNotFoundError) -> str | None:
    """The extra to install for a module a command could not import; ``None`` if no extra provides it (a
    broken installation or a bug: the traceback is then the useful report).

    The extra is read from the distribution's metadata: the one that requires a distribution of the
    module's name (``jax`` -> ``rl``).
    """
    module = (error.name or "").split(".")[0]
    extra = _extra_requiring(module) if module else None
    if extra is None:
        return None
    return (f"this command needs the {extra!r} extra ({module!r} is not installed): "
            f"pip install '{DISTRIBUTION}[{extra}]' (from a checkout: pip install -e '.[{extra}]')")


def _extra_requiring(module: str) -> str | None:
    """The extra of ``DISTRIBUTION`` that requires a distribution named like ``module``, if any."""
    try:
        requirements = requires(DISTRIBUTION) or []
    except PackageNotFoundError:
        return None
    wanted = _normalise(module)
    for requirement in requirements:
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        if name and extra and _normalise(name.group(1)) == wanted:
            return extra.group(1)
    return None


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _version() -> str:
    from tune_risk import __version__

    return __version__


if __name__ == "__main__":
    sys.exit(main())
