"""tune-risk replay: benchmark HPO methods on offline tables of RL returns, like the ERAHBO paper.

    tune-risk replay --table ppo_cartpole --methods erahbo,rahbo-k2,rahbo-k20,gp-ucb \\
        --repeats 20 --budget 1500 --workers 1 --seed 0 --out results/replay [--via tune] \\
        [--warp pooled|online] [--k-init K] [--alpha A] ...
    tune-risk replay --table datasets/ppo_cartpole.parquet --methods tune-risk,tpe-rep3,random-rep5 \\
        --budget 300 --test-seeds 20 --warp online --out results/peers [--searcher mine=pkg.mod:factory]

--table takes a shipped table's name (dqn_acrobot, dqn_cartpole, ppo_acrobot, ppo_brax_fast,
ppo_cartpole, sac_pendulum: tune_risk.datasets) or the path of a table file.

Peers (tpe-rep3, random-rep5, optuna-gp-rep3, hebo-rep3, mine-rep3, ...) are Ray Tune Searchers wrapped
in Ray's Repeater(k), driven in-process through the Searcher API; their suggestions snap to the nearest
table row, and --budget counts their seed-runs. --test-seeds N holds the last N seed columns of every
table out: no method reads them, and every method's recommended configuration is scored on them.

Writes runs.csv (one row per table, method, repeat, evaluation), rounds.csv (one row per BO round),
summary.md, summary.json (the same numbers, unrounded) and figures (PNG and SVG) into --out. Repetition r uses seed --seed + r for the initial design and
the seed permutations, shared by all methods. --warp pooled (the paper's protocol) gives every
method the warp fitted on the whole table; --warp online lets the engine fit its own on the initial
design and re-fit it as data arrive, as in live use. Regret is measured on the pooled warp either way.

Resumable: each (table, method, repeat) is written to --out/units/ as soon as it finishes; Ctrl-C
keeps them (exit code 130), and rerunning the same command replays only the missing ones and writes
the same final files as an uninterrupted run. Bad arguments, tables or methods fail at once, before
anything runs (exit code 2).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from tune_risk.offline.knobs import add_engine_arguments
from tune_risk.offline.methods import METHOD_HELP
from tune_risk.offline.shipped import resolve_table

DEFAULT_METHODS = "erahbo,rahbo-k2,rahbo-k20,gp-ucb"
MISSING_CHOICES = ("error", "drop")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the description's layout and show every option's default (or that it is required)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default:" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if action.required:
            return f"{text} (required)"
        if action.default is None:
            return text
        return f"{text} (default: %(default)s)"


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``replay`` subcommand."""
    parser = subparsers.add_parser(
        "replay", help="replay offline tables of RL returns to benchmark HPO methods",
        description=__doc__, formatter_class=HelpFormatter,
    )
    parser.add_argument("--table", action="append", required=True, type=_table, metavar="NAME|FILE",
                        help="a shipped table's name (e.g. ppo_cartpole) or a table file, parquet or CSV "
                             "(repeat the flag for several tables)")
    parser.add_argument("--methods", default=DEFAULT_METHODS, metavar="LIST", help=f"comma-separated: {METHOD_HELP}")
    parser.add_argument("--repeats", type=_positive, default=20, metavar="N",
                        help="repetitions per (table, method); repetition r uses seed --seed + r")
    parser.add_argument("--budget", type=_positive, default=1500, metavar="N",
                        help="BO replicate evaluations per replay (N_max; the initial design is not charged)")
    parser.add_argument("--workers", type=_positive, default=1, metavar="W",
                        help="parallel workers (replicates at once)")
    parser.add_argument("--seed", type=_non_negative, default=0, metavar="S",
                        help="seed of repetition 0 (initial design and seed permutations, shared by all methods)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="output directory: runs.csv, rounds.csv, summary.md, summary.json, figures (PNG, SVG), "
                             "and units/ for resuming")
    parser.add_argument("--via", choices=("direct", "tune"), default="direct",
                        help="direct simulated loop (fast) or a real Ray Tune run")
    parser.add_argument("--warp", choices=("pooled", "online"), default="pooled",
                        help="output warp the methods see: pooled over the table (paper) or fitted online (live use)")
    parser.add_argument("--missing", choices=MISSING_CHOICES, default="error",
                        help="a configuration without a finite return for every seed (no row, empty, NaN, inf): "
                             "an error, or drop it (ERAHBO App. C.1)")
    parser.add_argument("--test-seeds", type=_non_negative, default=20, metavar="N",
                        help="seed columns held out of every table (the last N): no method reads them; each "
                             "method's recommendation is scored on them (0: the paper's protocol, all seeds)")
    parser.add_argument("--searcher", action="append", default=[], metavar="NAME=MODULE:CALLABLE",
                        help="a Ray Tune Searcher of your own, replayed as NAME-rep<k> in --methods: CALLABLE(seed=S) "
                             "(or CALLABLE()) returns a fresh ray.tune.search.Searcher (repeat the flag for several)")
    parser.add_argument("--hebo-python", type=Path, default=None, metavar="PATH",
                        help="Python of a venv with hebo and ray[tune] for hebo-rep<k> (default: HEBO in this "
                             "environment, else .venv-hebo/bin/python as `make bench` builds it)")
    parser.add_argument("--seed-key", default="seed", metavar="KEY",
                        help="with --via tune: the Tune config key holding the training seed")
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log every finished configuration")
    add_engine_arguments(parser)
    parser.set_defaults(func=run_replay)
    return parser


def run_replay(args: argparse.Namespace) -> int:
    """Validate the call (before heavy imports), replay the missing units, write the outputs."""
    from tune_risk.offline.preflight import plan_replay
    from tune_risk.offline.units import UNITS, Unit, UnitStore

    plan = plan_replay(args)
    units = [Unit(t.name, m, r) for t in plan.tables for m in plan.methods for r in range(args.repeats)]
    store = UnitStore(args.out)
    store.prepare(_protocol(args, plan), {t.name: t.fingerprint() for t in plan.tables}, _resolved_methods(plan))
    for table in plan.tables:
        if table.n_dropped:
            print(f"{table.path}: dropped {table.n_dropped} configuration(s) with missing or non-finite returns "
                  "(--missing drop)", file=sys.stderr)
    todo = [unit for unit in units if not store.is_done(unit)]
    try:
        if todo:
            _replay_units(args, plan, store, todo, len(units))
    except KeyboardInterrupt:
        done = sum(store.is_done(unit) for unit in units)
        print(f"interrupted: {done} of {len(units)} replays finished and kept in {args.out / UNITS}; "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    _write_outputs(args, plan, store, units, reused=len(units) - len(todo))
    return 0


def _protocol(args: argparse.Namespace, plan: Any) -> dict[str, Any]:
    """The settings that decide a unit's result (recorded in the manifest; methods and repeats pick units)."""
    return {"budget": args.budget, "workers": args.workers, "seed": args.seed, "via": args.via, "warp": args.warp,
            "missing": args.missing, "seed_key": args.seed_key, "engine": plan.overrides, "test_seeds": args.test_seeds,
            "searchers": dict(sorted(plan.searchers.items()))}


def _resolved_methods(plan: Any) -> dict[str, dict[str, Any]]:
    """What each method name resolves to: the own methods' full settings, the peers' searcher and libraries."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    libraries = {name: installed(name) for name in ("ray", "optuna")}
    own = {name: settings.to_dict() for name, settings in plan.settings.items()}
    peers = {name: {"family": peer.family, "repeat": peer.repeat, **libraries} for name, peer in plan.peers.items()}
    return {**own, **peers}


def _replay_units(args: argparse.Namespace, plan: Any, store: Any, todo: list, total: int) -> None:
    """Replay ``todo`` in order, writing each unit as it finishes, under a progress bar on stderr."""
    from tqdm import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    from tune_risk.offline.replay import ReplayTask, rounds_rows, runs_rows
    from tune_risk.offline.table import OfflineTable

    needed = {unit.table for unit in todo}
    tables = {t.name: OfflineTable.from_parsed(t.parsed, t.path, t.metadata, missing=args.missing)
              for t in plan.tables if t.name in needed}
    tasks = {name: ReplayTask.from_table(table, test_seeds=args.test_seeds) for name, table in tables.items()}
    if args.via == "tune":
        _init_ray(args.workers)
    with logging_redirect_tqdm(), tqdm(total=total, initial=total - len(todo), unit="replay", file=sys.stderr,
                                       dynamic_ncols=True) as bar:
        for unit in todo:
            bar.set_postfix_str(unit.label(), refresh=True)
            task = tasks[unit.table]
            if unit.method in plan.peers:
                rows = _replay_peer(args, plan, tables[unit.table], task, unit)
            else:
                result = _replay_one(args, tables[unit.table], task, unit.method, args.seed + unit.repeat,
                                     plan.overrides)
                result.repeat = unit.repeat
                rows = {"runs": runs_rows(result, task), "rounds": rounds_rows(result, task)}
            store.write(unit, rows)
            bar.update()


def _replay_peer(args: argparse.Namespace, plan: Any, table: Any, task: Any, unit: Any) -> dict[str, list]:
    """A peer's unit: its Searcher in Ray's Repeater on the table's rows (tune_risk.offline.peers)."""
    from tune_risk.engine.design import design_rows
    from tune_risk.offline.peers import make_searcher, replay_peer
    from tune_risk.offline.replay import peer_rounds_rows, peer_runs_rows
    from tune_risk.settings import EngineSettings
    from tune_risk.tune.space import TuneSpaceCodec

    peer, seed = plan.peers[unit.method], args.seed + unit.repeat
    searcher = make_searcher(peer, seed, plan.searchers, args.hebo_python)
    try:
        run = replay_peer(task, TuneSpaceCodec.from_param_space(table.space), table.space, peer, searcher,
                          seed, args.budget)  # the seed permutations of repetition `seed`, as for the engine
    finally:
        getattr(searcher, "close", lambda: None)()  # a RemoteSearcher's child process
    n_initial = plan.overrides.get("n_initial", EngineSettings().n_initial)
    initial = design_rows(task.points, n_initial, seed)  # the engine methods' shared design: r0's scale
    run.repeat = unit.repeat
    return {"runs": peer_runs_rows(run, task, initial), "rounds": peer_rounds_rows(run, task, peer.repeat)}


def _replay_one(args: argparse.Namespace, table: Any, task: Any, method: str, seed: int, overrides: dict[str, Any]):
    from tune_risk.offline.replay import replay_direct, replay_tune

    if args.via == "direct":
        return replay_direct(task, method, seed, args.budget, workers=args.workers, warp=args.warp, **overrides)
    configs = [table.config(row) for row in range(len(table.configs))]
    return replay_tune(task, table.space, configs, method, seed, args.budget, workers=args.workers,
                       storage_path=str((args.out / "ray").resolve()), warp=args.warp, seed_key=args.seed_key,
                       **overrides)


def _write_outputs(args: argparse.Namespace, plan: Any, store: Any, units: list, reused: int) -> None:
    """``runs.csv`` and ``rounds.csv`` from the unit files (job order), then the summary and figures."""
    from tune_risk.offline.summary import degenerate_tables, write_summary

    for kind in ("runs", "rounds"):
        store.assemble(units, kind, args.out / f"{kind}.csv")
    runs, rounds = _read_csv(args.out / "runs.csv"), _read_csv(args.out / "rounds.csv")
    written = write_summary(runs, rounds, args.out, title="Offline replay: " + ", ".join(t.name for t in plan.tables),
                            test_seeds=args.test_seeds)
    for table in degenerate_tables(runs):
        print(f"warning: table {table!r}: every method has regret 0 at every evaluation (a best configuration "
              "is in the initial design, or all have the same MV); it cannot separate methods", file=sys.stderr)
    note = f" ({reused} of {len(units)} replays reused from an earlier run)" if reused else ""
    print(f"wrote {args.out / 'runs.csv'}, {args.out / 'rounds.csv'} and {len(written)} summary files to "
          f"{args.out}{note}")


def _read_csv(path: Path):
    import pandas as pd

    if path.stat().st_size == 0:
        return pd.DataFrame()
    return pd.read_csv(path)  # fresh or resumed, the summary reads the same file: the same bytes out


def _init_ray(workers: int) -> None:
    import ray

    # Ctrl-C must reach us as KeyboardInterrupt: Tune's own handler would end the run "successfully"
    # and a partial replay would be written as finished.
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    if not ray.is_initialized():
        ray.init(num_cpus=max(2, workers), include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)


def _table(text: str) -> Path:
    """``--table``: a shipped table's name or a path (checked later by the preflight)."""
    try:
        return resolve_table(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{error}; or the path of a .parquet or .csv file") from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value
