"""Check a ``tune-risk replay`` call before any heavy import or run: methods, engine flags, tables.

A bad call should fail in well under a second with one line, not after torch and Ray have loaded
(seconds) or after hours of replay. :func:`plan_replay` validates, in order of cost: the method
names and every engine flag (pure Python), then each table's file, structure, missing values, seeds
and configurations against every method (pandas only). It never imports torch or Ray; the search
space, which needs Ray Tune, is checked when :class:`~tune_risk.offline.table.OfflineTable` is built
from the parsed file, still before the first replay.
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tune_risk.offline.knobs import engine_overrides
from tune_risk.offline.methods import (
    PeerMethod,
    check_replayable,
    method_settings,
    parse_methods,
    peer_method,
)
from tune_risk.offline.paths import check_table_path
from tune_risk.settings import EngineSettings

RESERVED_KEYS = ("table_row", "config_id")  # the replay's row key (replay.ROW_KEY), the searcher's config id key


@dataclass
class TableInput:
    """A table file read and checked by the preflight (``parsed`` is a ``formats.ParsedTable``)."""

    path: Path
    parsed: Any
    metadata: dict[str, Any]
    n_dropped: int

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def n_configs(self) -> int:
        """Configurations left after the missing-value rule."""
        return int(self.parsed.returns.shape[0]) - self.n_dropped

    @property
    def n_seeds(self) -> int:
        return int(self.parsed.returns.shape[1])

    def fingerprint(self) -> str:
        """SHA-256 of the file: a resumed replay must read the same table."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass
class ReplayPlan:
    """A validated replay call: methods, their settings, engine overrides and the tables."""

    methods: list[str]
    settings: dict[str, EngineSettings]  # the own methods'
    overrides: dict[str, Any]
    tables: list[TableInput] = field(default_factory=list)
    peers: dict[str, PeerMethod] = field(default_factory=dict)
    searchers: dict[str, str] = field(default_factory=dict)  # --searcher NAME -> module:callable


def plan_replay(args: argparse.Namespace) -> ReplayPlan:
    """Validate a parsed ``replay`` call; ``ValueError`` (one line, naming the flag, file or method) if bad."""
    from tune_risk.offline.peers import parse_searcher_flags

    searchers = parse_searcher_flags(getattr(args, "searcher", []))
    methods = parse_methods(args.methods, tuple(searchers))
    overrides = engine_overrides(args)
    peers = {m: p for m in methods if (p := peer_method(m, tuple(searchers))) is not None}
    settings = {method: _settings(method, args, overrides) for method in methods if method not in peers}
    _check_seed_key(args.seed_key)
    test_seeds = getattr(args, "test_seeds", 0)
    if peers:
        _check_peers(args, peers, searchers)
    plan = ReplayPlan(methods, settings, overrides, peers=peers, searchers=searchers)
    plan.tables = read_tables(args.table, args.missing)
    for table in plan.tables:
        n_search = _search_seeds(table, test_seeds)
        for method, method_setting in settings.items():
            check_replayable(str(table.path), table.n_configs, n_search, method_setting, method, test_seeds)
        for peer in peers.values():
            if peer.repeat > n_search:
                raise ValueError(f"{peer.name}: Repeater({peer.repeat}) needs {peer.repeat} distinct seeds per "
                                 f"suggestion; table {str(table.path)!r} has {n_search} to search with")
        _check_key_not_a_hyperparameter(args.seed_key, table)
    return plan


def _search_seeds(table: TableInput, test_seeds: int) -> int:
    """Seeds the methods may read once ``--test-seeds`` are held out; ``ValueError`` when too few remain."""
    if table.n_seeds - test_seeds < 2:
        raise ValueError(f"--test-seeds {test_seeds}: table {str(table.path)!r} has {table.n_seeds} seeds, so at most "
                         f"{max(0, table.n_seeds - 2)} can be held out (2 must remain to search with)")
    return table.n_seeds - test_seeds


def _check_peers(args: argparse.Namespace, peers: dict[str, PeerMethod], searchers: dict[str, str]) -> None:
    """Peers replay in-process, one seed-run at a time; their libraries and factories must work now."""
    from tune_risk.offline.peers import call_factory, check_peer_available, load_factory

    names = ", ".join(peers)
    if args.via != "direct":
        raise ValueError(f"--via {args.via}: peers ({names}) are replayed through the Searcher API in-process; "
                         "--via tune replays the engine's own methods through Ray Tune; drop one of the two")
    if args.workers != 1:
        raise ValueError(f"--workers {args.workers}: peers ({names}) replay one seed-run at a time, as a "
                         "sequential Tune run would; use --workers 1 (the default) with peers")
    for peer in peers.values():
        if peer.family in searchers:
            target = searchers[peer.family]
            call_factory(peer.family, target, load_factory(peer.family, target), seed=0)  # fails now, not later
        else:
            check_peer_available(peer, getattr(args, "hebo_python", None))


def _settings(method: str, args: argparse.Namespace, overrides: dict[str, Any]) -> EngineSettings:
    try:
        return method_settings(method, budget=args.budget, seed=args.seed, warp=args.warp, **overrides)
    except ValueError as err:
        raise ValueError(f"{method}: {err}") from None


def _check_seed_key(key: str) -> None:
    if not key or key in RESERVED_KEYS:
        raise ValueError(f"--seed-key {key!r}: must be a non-empty config key other than {RESERVED_KEYS}")


def _check_key_not_a_hyperparameter(key: str, table: TableInput) -> None:
    if key in table.parsed.configs.columns:
        raise ValueError(f"--seed-key {key!r} is a hyperparameter of table {str(table.path)!r}; choose another key")


def read_tables(paths: list[Path], missing: str) -> list[TableInput]:
    """Read and check every ``--table`` (distinct names, readable, no missing value unless dropped)."""
    names: dict[str, Path] = {}
    for path in paths:
        if path.stem in names:
            raise ValueError(f"--table {path} and --table {names[path.stem]} have the same name {path.stem!r}; "
                             "results are keyed by table name")
        names[path.stem] = path
    for path in paths:  # every path before reading any, and before importing pandas
        check_table_path(path)
    from tune_risk.offline.formats import missing_mask, parse_frame, read_frame, read_metadata

    tables = []
    for path in paths:
        metadata = read_metadata(path, None)
        parsed = parse_frame(read_frame(path), str(path), metadata)
        keep = missing_mask(parsed, str(path), missing)
        tables.append(TableInput(path, parsed, metadata, int(len(keep) - keep.sum())))
    return tables
