"""Readers for offline tables on disk: ARLBench long, Hypersweeper wide and bracketed-list formats.

A table is one (algorithm, environment) task: hyperparameter columns plus per-seed returns for every
configuration (ERAHBO App. C.1). This module turns a file
(parquet or CSV) into a :class:`ParsedTable`: one row per configuration, a ``(n_configs, n_seeds)``
float64 return matrix and the seed ids. It validates structure only (columns, keys, numbers); NaN
handling, the search space and the ground truth live in :mod:`tune_risk.offline.table`.

Format rules (detected from the columns, in this order):

* **long** (ARLBench): columns ``config_id``, ``seed``, ``performance`` and ``hp_config.<name>...``;
  one row per (configuration, seed). With a ``training_steps`` column only the row with the largest
  ``training_steps`` of each (config_id, seed) is kept. Optional ``wall_time`` (seconds per run).
  Other columns are ignored. Configurations and seeds are sorted by id (numbers numerically, strings
  in natural order: ``s0, s1, s2, ..., s10``).
* **wide** (Hypersweeper): one row per configuration, ``performance_seed_<s>`` columns (seed id ``s``,
  an int when it is one); optional ``wall_time_seed_<s>`` columns or one ``wall_time`` column
  (broadcast to all seeds).
* **list**: one row per configuration, ``performance`` holds a list of per-seed values (a list in
  parquet, a string such as ``"[1.0, 2.5, nan]"`` in CSV); seed ids from the metadata's ``seeds``
  when it has the right length, else ``0..n_seeds-1``. ``wall_time`` may be a number or a list.

In the wide and list formats every column that is not reserved (``config_id``, ``performance*``,
``wall_time*``, ``training_steps``, pandas' ``Unnamed: <i>`` index columns) is a hyperparameter, and a
``hp_config.`` prefix is stripped; configurations keep file order, ``config_id`` defaults to the row
number. Every error is a ``ValueError`` that starts with the file and names the column or value (row
numbers in messages count the file's data rows from 0). The cells themselves (returns, lists, ids,
hyperparameter values) are parsed by :mod:`tune_risk.offline.cells`.

Missing values, one rule for every format (:func:`missing_mask`): every configuration needs a finite
return for every seed. A long-format (configuration, seed) without a row, an empty, ``NaN`` or ``None``
cell of a wide seed column or of a list, and ``±inf`` (reported as non-finite) all make the
configuration incomplete; by default that is an error naming the file, the column, the configuration
and the seeds. ``missing="drop"`` drops incomplete configurations instead (ERAHBO App. C.1, A-19).

CSV files may be separated by commas, semicolons, tabs or pipes: the separator is the one the header
line uses most (a comma on ties), since hyperparameter names practically never contain one.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tune_risk.offline.cells import (
    check_hyperparameters,
    check_keys,
    clean_id,
    parse_list_cell,
    sorted_ids,
    to_float,
)
from tune_risk.offline.paths import check_table_path, table_error

logger = logging.getLogger(__name__)

HP_PREFIX = "hp_config."
_SEED_COLUMN = re.compile(r"^performance_seed_(.+)$")
_WALL_SEED_COLUMN = re.compile(r"^wall_time_seed_(.+)$")
_RESERVED = re.compile(r"^(config_id|performance|wall_time|training_steps|seed|Unnamed: \d+)$")
CSV_SEPARATORS = (",", ";", "\t", "|")
MISSING_POLICIES = ("error", "drop", "keep")


@dataclass
class ParsedTable:
    """A table read from disk: configurations (rows) x seeds (columns), before NaN handling."""

    configs: pd.DataFrame
    """``config_id`` then the hyperparameter columns (original names), one row per configuration."""
    returns: np.ndarray
    """``(n_configs, n_seeds)`` float64 raw returns (NaN/inf kept)."""
    seeds: list[Any]
    """Seed ids in column order."""
    wall_time: np.ndarray | None
    """``(n_configs, n_seeds)`` seconds per run, or ``None``."""
    format: str
    """``"long"``, ``"wide"`` or ``"list"``."""
    return_columns: list[str] | None = None
    """The file column holding each seed's returns (``None``: ``"performance"`` for every seed)."""
    absent: np.ndarray | None = None
    """``(n_configs, n_seeds)`` mask of cells without a row in the file (long format), or ``None``."""


# --- files ----------------------------------------------------------------------------------------
def csv_separator(path: Path) -> str:
    """The separator the header line of a CSV file uses most (a comma when it uses none)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        header = handle.readline()
    counts = {sep: header.count(sep) for sep in CSV_SEPARATORS}
    best = max(counts, key=counts.__getitem__)  # the first (a comma) on ties
    return best if counts[best] else ","


def read_frame(path: Path) -> pd.DataFrame:
    """Read a parquet or CSV file into a DataFrame, turning every read failure into a ``ValueError``."""
    kind = check_table_path(path)
    try:
        return pd.read_parquet(path) if kind == "parquet" else pd.read_csv(path, sep=csv_separator(path))
    except Exception as err:  # noqa: BLE001 - pyarrow/pandas raise many types; all mean "unreadable"
        raise table_error(str(path), f"cannot read as {kind}: {type(err).__name__}: {err}") from err


def sidecar_path(path: Path) -> Path | None:
    """The metadata file of a table: ``<path>.json``, else ``<path minus suffix>.json``, else ``None``."""
    for candidate in (Path(f"{path}.json"), path.with_suffix(".json")):
        if candidate.is_file():
            return candidate
    return None


def read_metadata(path: Path, metadata: dict | str | Path | None) -> dict[str, Any]:
    """Metadata given as a dict, read from a JSON file, or from the sidecar of ``path`` (``{}`` if none)."""
    if isinstance(metadata, dict):
        return dict(metadata)
    if metadata is not None and not isinstance(metadata, str | os.PathLike):
        raise table_error(str(path), f"metadata must be a dict, a JSON file path or None, got {metadata!r:.100}")
    json_path = Path(metadata) if metadata is not None else sidecar_path(path)
    if json_path is None:
        return {}
    try:
        loaded = json.loads(json_path.read_text())
    except (OSError, ValueError) as err:
        raise table_error(str(path), f"cannot read metadata {json_path}: {err}") from err
    if not isinstance(loaded, dict):
        raise table_error(str(path), f"metadata {json_path} must hold a JSON object, got {type(loaded).__name__}")
    return loaded


def _seed_from_suffix(suffix: str) -> Any:
    return int(suffix) if re.fullmatch(r"-?\d+", suffix) else suffix


# --- formats --------------------------------------------------------------------------------------
def detect_format(frame: pd.DataFrame, source: str) -> str:
    """``"long"``, ``"wide"`` or ``"list"`` from the column names (see the module docstring)."""
    columns = [str(c) for c in frame.columns]
    if "seed" in columns and "performance" in columns:
        return "long"
    if any(_SEED_COLUMN.match(c) for c in columns):
        return "wide"
    if "performance" in columns:
        if pd.api.types.is_numeric_dtype(frame["performance"].dtype):
            raise table_error(source, "column 'performance' holds single numbers but there is no 'seed' column: "
                                      "expected 'config_id, seed, performance' (long) or per-seed lists (list)")
        return "list"
    raise table_error(
        source,
        f"no recognisable return columns among {columns}: expected 'config_id, seed, performance' (long), "
        "'performance_seed_<s>' (wide) or a 'performance' column of per-seed lists",
    )


def parse_frame(frame: pd.DataFrame, source: str, metadata: dict[str, Any]) -> ParsedTable:
    """Parse a DataFrame read from a table file into configurations x seeds."""
    frame = frame.rename(columns=str)
    if frame.empty:
        raise table_error(source, f"the table has no rows (columns: {list(frame.columns)})")
    if frame.columns.duplicated().any():
        raise table_error(source, f"duplicate column names {sorted(set(frame.columns[frame.columns.duplicated()]))}")
    kind = detect_format(frame, source)
    if kind == "long":
        return _parse_long(frame, source)
    return _parse_per_config(frame, source, kind, metadata)


def _keep_last_training_steps(frame: pd.DataFrame, keys: list[str], source: str) -> pd.DataFrame:
    """Keep the row with the largest ``training_steps`` per key (the final budget); file row labels kept."""
    if "training_steps" not in frame.columns:
        return frame
    steps = to_float(frame["training_steps"], "training_steps", source)
    if np.isnan(steps).any():
        raise table_error(source, "column 'training_steps' has missing values")
    group = frame.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    last = pd.Series(steps).groupby(group).transform("max").to_numpy()
    if len(np.unique(steps[steps == last])) > 1:
        logger.warning("%s: kept rows end at different training_steps %s", source,
                       sorted(set(steps[steps == last].tolist())))
    return frame.loc[steps == last]


def _hp_columns_long(frame: pd.DataFrame, source: str) -> list[str]:
    columns = [c for c in frame.columns if c.startswith(HP_PREFIX)]
    if f"{HP_PREFIX}config_id" in columns:
        raise table_error(source, f"column '{HP_PREFIX}config_id' clashes with the configuration id column")
    if not columns:
        raise table_error(source, f"missing hyperparameter columns: the long format needs '{HP_PREFIX}<name>' columns")
    if "config_id" not in frame.columns:
        raise table_error(source, "missing column 'config_id' (long format: config_id, seed, performance, hp_config.*)")
    return columns


def _parse_long(frame: pd.DataFrame, source: str) -> ParsedTable:
    """ARLBench long format: one row per (config_id, seed)."""
    hp_columns = _hp_columns_long(frame, source)
    frame = frame.assign(config_id=check_keys(frame["config_id"], "config_id", source),
                         seed=check_keys(frame["seed"], "seed", source))
    frame = _keep_last_training_steps(frame, ["config_id", "seed"], source)
    dup = frame.duplicated(["config_id", "seed"])
    if dup.any():
        config_id, seed = frame.loc[dup, ["config_id", "seed"]].iloc[0].tolist()
        raise table_error(source, f"duplicate rows for (config_id, seed) = ({config_id!r}, {seed!r})")
    check_hyperparameters(frame, hp_columns, source)
    config_ids = sorted_ids(frame["config_id"].tolist())
    seeds = sorted_ids(frame["seed"].tolist())
    rows = frame["config_id"].map({c: i for i, c in enumerate(config_ids)}).to_numpy()
    cols = frame["seed"].map({s: j for j, s in enumerate(seeds)}).to_numpy()
    absent = np.ones((len(config_ids), len(seeds)), dtype=bool)
    absent[rows, cols] = False
    _check_constant_within(frame, rows, hp_columns, config_ids, source)
    returns = _pivot(to_float(frame["performance"], "performance", source), rows, cols, len(config_ids), len(seeds))
    wall_time = None
    if "wall_time" in frame.columns:
        wall_time = _pivot(to_float(frame["wall_time"], "wall_time", source), rows, cols, len(config_ids), len(seeds))
    first = np.full(len(config_ids), -1)
    first[rows[::-1]] = np.arange(len(rows))[::-1]
    configs = frame.iloc[first][hp_columns].rename(columns=lambda c: c[len(HP_PREFIX):]).reset_index(drop=True)
    configs.insert(0, "config_id", config_ids)
    return ParsedTable(configs, returns, seeds, wall_time, "long", absent=absent)


def _pivot(values: np.ndarray, rows: np.ndarray, cols: np.ndarray, n: int, s: int) -> np.ndarray:
    out = np.full((n, s), np.nan)
    out[rows, cols] = values
    return out


def _check_constant_within(frame: pd.DataFrame, rows: np.ndarray, columns: list[str], config_ids: list,
                           source: str) -> None:
    """All rows of one configuration must carry the same hyperparameter values."""
    for column in columns:
        counts = frame[column].groupby(rows).nunique()
        varying = counts.index[counts.to_numpy() > 1]
        if len(varying):
            i = int(varying[0])
            values = frame.loc[rows == i, column].unique().tolist()[:5]
            raise table_error(source, f"column {column!r} differs within config_id {config_ids[i]!r}: {values}")


def _hp_columns_per_config(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns
            if not (_RESERVED.match(c) or _SEED_COLUMN.match(c) or _WALL_SEED_COLUMN.match(c))]


def _parse_per_config(frame: pd.DataFrame, source: str, kind: str, metadata: dict[str, Any]) -> ParsedTable:
    """Wide or list format: one row per configuration."""
    hp_columns = _hp_columns_per_config(frame)
    if not hp_columns:
        raise table_error(source, f"missing hyperparameter columns: only reserved columns {list(frame.columns)}")
    if "config_id" not in frame.columns:
        frame = frame.assign(config_id=np.arange(len(frame)))
    frame = frame.assign(config_id=check_keys(frame["config_id"], "config_id", source))
    frame = _keep_last_training_steps(frame, ["config_id"], source)
    dup = frame["config_id"].duplicated()
    if dup.any():
        raise table_error(source, f"duplicate rows for config_id {frame.loc[dup, 'config_id'].tolist()[0]!r}")
    check_hyperparameters(frame, hp_columns, source)
    if kind == "wide":
        seeds, returns, wall_time, return_columns = _wide_returns(frame, source)
    else:
        seeds, returns, wall_time = _list_returns(frame, source, metadata)
        return_columns = None
    names = {c: c[len(HP_PREFIX):] if c.startswith(HP_PREFIX) else c for c in hp_columns}
    if len(set(names.values())) < len(names) or "config_id" in names.values():
        raise table_error(source, f"hyperparameter names clash after removing '{HP_PREFIX}': {hp_columns}")
    configs = frame[["config_id", *hp_columns]].rename(columns=names).reset_index(drop=True)
    return ParsedTable(configs, returns, seeds, wall_time, kind, return_columns=return_columns)


def _seed_columns(frame: pd.DataFrame, pattern: re.Pattern, source: str) -> dict[Any, str]:
    out: dict[Any, str] = {}
    for column in frame.columns:
        match = pattern.match(column)
        if match:
            seed = _seed_from_suffix(match.group(1))
            if seed in out:
                raise table_error(source, f"columns {out[seed]!r} and {column!r} name the same seed {seed!r}")
            out[seed] = column
    return out


def _wide_returns(frame: pd.DataFrame, source: str) -> tuple[list, np.ndarray, np.ndarray | None, list[str]]:
    """Seeds, returns, wall times and the column of each seed, in seed order."""
    by_seed = _seed_columns(frame, _SEED_COLUMN, source)
    seeds = sorted_ids(list(by_seed))
    columns = [by_seed[s] for s in seeds]
    returns = np.column_stack([to_float(frame[by_seed[s]], by_seed[s], source) for s in seeds])
    wall_by_seed = _seed_columns(frame, _WALL_SEED_COLUMN, source)
    if wall_by_seed:
        missing = [f"wall_time_seed_{s}" for s in seeds if s not in wall_by_seed]
        extra = [c for s, c in wall_by_seed.items() if s not in by_seed]
        if missing or extra:
            raise table_error(source, f"wall_time_seed_<s> columns do not match the seeds: missing {missing}, "
                                      f"unexpected {extra}")
        wall = np.column_stack([to_float(frame[wall_by_seed[s]], wall_by_seed[s], source) for s in seeds])
        return seeds, returns, wall, columns
    return seeds, returns, _broadcast_wall_time(frame, len(seeds), source), columns


def _broadcast_wall_time(frame: pd.DataFrame, n_seeds: int, source: str) -> np.ndarray | None:
    if "wall_time" not in frame.columns:
        return None
    return np.repeat(to_float(frame["wall_time"], "wall_time", source)[:, None], n_seeds, axis=1)


def _list_column(frame: pd.DataFrame, column: str, source: str) -> np.ndarray:
    """A column of per-seed lists as a ``(n_configs, n_seeds)`` array; ragged lists raise."""
    cells = [parse_list_cell(cell, column, f"config_id {cid!r}", source)
             for cell, cid in zip(frame[column].tolist(), frame["config_id"].tolist(), strict=True)]
    if not cells:
        return np.empty((0, 0))
    for cell, cid in zip(cells, frame["config_id"].tolist(), strict=True):
        if cell.size != cells[0].size:
            raise table_error(source, f"ragged table: column {column!r} has {cell.size} values for config_id "
                                      f"{cid!r} but {cells[0].size} for the first configuration")
    return np.stack(cells)


def _list_returns(frame: pd.DataFrame, source: str, metadata: dict[str, Any]) -> tuple[list, np.ndarray, Any]:
    returns = _list_column(frame, "performance", source)
    n_seeds = returns.shape[1]
    seeds = metadata.get("seeds")
    if not (isinstance(seeds, list) and len(seeds) == n_seeds and len(set(map(repr, seeds))) == n_seeds):
        if seeds is not None:
            logger.warning("%s: metadata seeds do not match the %d values per list; using 0..%d", source,
                           n_seeds, n_seeds - 1)
        seeds = list(range(n_seeds))
    wall_time = None
    if "wall_time" in frame.columns:
        is_list = frame["wall_time"].map(lambda v: isinstance(v, (str, list, tuple, np.ndarray))).all()
        wall_time = _list_column(frame, "wall_time", source) if is_list and len(frame) else \
            _broadcast_wall_time(frame, n_seeds, source)
        if wall_time is not None and wall_time.shape != returns.shape:
            raise table_error(source, f"column 'wall_time' has shape {wall_time.shape}, returns {returns.shape}")
    return [clean_id(s) for s in seeds], returns, wall_time


# --- missing values -------------------------------------------------------------------------------
def missing_mask(parsed: ParsedTable, source: str, policy: str = "error") -> np.ndarray:
    """Configurations to keep under the missing-value rule of the module docstring.

    ``policy``: ``"error"`` raises a ``ValueError`` naming the file, the column, the first incomplete
    configuration and its seeds; ``"drop"`` keeps the complete configurations (an error when none is);
    ``"keep"`` keeps every configuration (for inspection: the warp then refuses the table).
    """
    if policy not in MISSING_POLICIES:
        raise ValueError(f"unknown missing={policy!r}; valid values are {', '.join(map(repr, MISSING_POLICIES))}")
    bad = ~np.isfinite(parsed.returns)
    incomplete = bad.any(axis=1)
    if policy == "keep" or not incomplete.any():
        return np.ones(len(incomplete), dtype=bool)
    if policy == "error":
        raise table_error(source, describe_missing(parsed, bad))
    if incomplete.all():
        raise table_error(source, f"all {len(incomplete)} configurations lack a finite return for some seed; "
                                  f"nothing is left after dropping them ({describe_missing(parsed, bad, hint=False)})")
    return ~incomplete


def describe_missing(parsed: ParsedTable, bad: np.ndarray, hint: bool = True) -> str:
    """One line naming the first incomplete configuration, its seeds, column and values."""
    incomplete = bad.any(axis=1)
    row = int(np.flatnonzero(incomplete)[0])
    cols = np.flatnonzero(bad[row])
    config_id = clean_id(parsed.configs["config_id"].iloc[row])
    seeds = [clean_id(parsed.seeds[j]) for j in cols]
    cells = [_cell_text(parsed, row, j) for j in cols]
    names = parsed.return_columns or ["performance"] * len(parsed.seeds)
    where = ", ".join(f"column {names[j]!r}: {cell}" for j, cell in list(zip(cols, cells, strict=True))[:5])
    if all(cell in ("inf", "-inf") for cell in cells):
        head = f"non-finite returns: config_id {config_id!r} has non-finite returns for seed(s) {seeds[:10]}"
    else:
        head = f"missing values: config_id {config_id!r} is missing seed(s) {seeds[:10]}"
    text = (f"{head} ({where}); {int(incomplete.sum())} of {len(incomplete)} configuration(s) lack a finite "
            f"return for some of the {len(parsed.seeds)} seeds")
    if hint:
        text += (" (every configuration needs a finite return for every seed; --missing drop, or "
                 "missing='drop' in Python, drops incomplete configurations as ERAHBO App. C.1 does)")
    return text


def _cell_text(parsed: ParsedTable, row: int, col: int) -> str:
    if parsed.absent is not None and parsed.absent[row, col]:
        return "no row"
    value = float(parsed.returns[row, col])
    return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
