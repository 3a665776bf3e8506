"""Offline tables of RL returns (configurations x seeds) with their search space and ground-truth MV.

An :class:`OfflineTable` is one (algorithm, environment) task as the ERAHBO paper benchmarks it
(ERAHBO Sec. 5, App. C.1; docs/algorithms.md §1.11-§1.12): the pool of configurations, every seed's raw
return, the Ray Tune ``param_space`` the configurations come from, the pooled Vizier warp of all
returns (§1.2) and the ground-truth mean-variance objective ``MV(c) = mean(ỹ) − α var(ỹ)`` (ERAHBO
eq. 1, A-17). Files are read by :mod:`tune_risk.offline.formats` (ARLBench long, Hypersweeper wide and
bracketed-list formats, parquet or CSV) and written back in the long format by :meth:`OfflineTable.to_long`.

Missing values, one rule for every format (:func:`tune_risk.offline.formats.missing_mask`): every
configuration needs a finite return for every seed; an absent long-format row, an empty / NaN / None
cell and ±inf all make a configuration incomplete. ``missing="error"`` (default) raises a ``ValueError``
naming the file, column, configuration and seeds; ``"drop"`` drops incomplete configurations (ERAHBO
App. C.1, A-19) and counts them in ``dropped_nan``; ``"keep"`` keeps them so that a table can be
inspected (``warped()`` and ``true_mv()`` then raise, since the warp needs finite returns).

Search space: the metadata's ``search_space`` (JSON descriptions as ``rl_tasks`` writes them:
``{"type": "float"|"int"|"categorical", "lower", "upper" (inclusive), "log", "q", "choices"}``) or, when
absent, inferred from the columns: a column with a single value is a constant; integers give
``randint(min, max + 1)``; floats ``uniform(min, max)``, or ``loguniform`` when ``min > 0`` and
``max / min >= 100``; bool, string and other columns ``choice`` of their sorted distinct values.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from ray import tune
from ray.tune.search.sample import Categorical, Domain, Float, Integer, LogUniform, Quantized

from tune_risk.engine.records import sample_mean_variance
from tune_risk.offline.cells import check_hyperparameters, check_keys, sorted_unique
from tune_risk.offline.formats import (
    HP_PREFIX,
    MISSING_POLICIES,
    ParsedTable,
    missing_mask,
    parse_frame,
    read_frame,
    read_metadata,
    table_error,
)
from tune_risk.offline.paths import file_kind
from tune_risk.risk.warping import FrozenWarp, fit_warp
from tune_risk.tune.space import TuneSpaceCodec

__all__ = ["OfflineTable", "describe_domain", "domain_from_description", "infer_space"]

logger = logging.getLogger(__name__)

LOG_RATIO = 100.0
"""A positive float column spanning at least this ratio (max / min) is inferred as ``loguniform``."""


def _py(value: Any) -> Any:
    """A numpy scalar as the equivalent Python scalar."""
    return value.item() if isinstance(value, np.generic) else value


# --- search spaces --------------------------------------------------------------------------------
def domain_from_description(name: str, description: Any, source: str) -> Any:
    """A Tune domain from its JSON description (a Tune domain or a plain constant passes through)."""
    if isinstance(description, Domain) or not isinstance(description, Mapping):
        return description
    kind = description.get("type")
    if kind not in ("float", "int", "categorical"):
        raise table_error(source, f"search_space entry {name!r} has type {kind!r}; expected float, int or categorical")
    try:
        if kind == "categorical":
            return tune.choice(list(description["choices"]))
        lower, upper, q = description["lower"], description["upper"], description.get("q")
        log = bool(description.get("log", False))
        if kind == "float":
            if q:
                return (tune.qloguniform if log else tune.quniform)(lower, upper, q)
            return (tune.loguniform if log else tune.uniform)(lower, upper)
        if q not in (None, 1):
            return (tune.qlograndint if log else tune.qrandint)(lower, upper, q)
        return (tune.lograndint if log else tune.randint)(lower, upper + 1)  # "upper" is inclusive
    except (KeyError, TypeError, ValueError, AssertionError) as err:
        raise table_error(source, f"search_space entry {name!r} = {dict(description)!r} is invalid: {err!r}") from err


def describe_domain(domain: Any) -> dict[str, Any]:
    """JSON description of a Tune domain (the inverse of :func:`domain_from_description`).

    A plain constant is described as a categorical with a single choice.
    """
    if not isinstance(domain, Domain):
        return {"type": "categorical", "choices": [_py(domain)]}
    if isinstance(domain, Categorical):
        return {"type": "categorical", "choices": [_py(c) for c in domain.categories]}
    sampler = domain.get_sampler()
    q = sampler.q if isinstance(sampler, Quantized) else None
    base = sampler.get_sampler() if isinstance(sampler, Quantized) else sampler
    log = isinstance(base, LogUniform)
    if isinstance(domain, Float):
        return {"type": "float", "lower": domain.lower, "upper": domain.upper, "log": log, "q": q}
    if isinstance(domain, Integer):
        upper = domain.upper if q not in (None, 1) else domain.upper - 1
        return {"type": "int", "lower": domain.lower, "upper": upper, "log": log, "q": q}
    raise ValueError(f"cannot describe Tune domain {domain!r}; use uniform, loguniform, randint or choice")


def infer_space(configs: pd.DataFrame, names: list[str]) -> dict[str, Any]:
    """A Tune ``param_space`` inferred from hyperparameter columns (rule in the module docstring)."""
    space: dict[str, Any] = {}
    for name in names:
        column = configs[name]
        values = sorted_unique([_py(v) for v in column.tolist()], typed=True)
        if len(values) == 1:
            space[name] = values[0]
        elif pd.api.types.is_bool_dtype(column.dtype) or not pd.api.types.is_numeric_dtype(column.dtype):
            space[name] = tune.choice(values)
        elif pd.api.types.is_integer_dtype(column.dtype):
            space[name] = tune.randint(int(values[0]), int(values[-1]) + 1)
        else:
            lower, upper = float(values[0]), float(values[-1])
            log = lower > 0 and upper / lower >= LOG_RATIO
            space[name] = (tune.loguniform if log else tune.uniform)(lower, upper)
    return space


def _resolve_space(given: Any, names: list[str], source: str) -> dict[str, Any]:
    """Convert a given space (Tune domains or descriptions) and check it matches the columns."""
    if not isinstance(given, Mapping) or not given:
        raise table_error(source, f"search_space must be a non-empty dict of parameters, got {given!r}")
    space = {name: domain_from_description(name, d, source) for name, d in given.items()}
    for name in space:
        if name not in names:
            raise table_error(source, f"search_space parameter {name!r} has no hyperparameter column "
                                      f"('{HP_PREFIX}{name}' or {name!r}); columns: {names}")
    for name in names:
        if name not in space:
            raise table_error(source, f"hyperparameter column {name!r} is not in the search_space {list(space)}")
    return {name: space[name] for name in names}


# --- typed configurations -------------------------------------------------------------------------
def _match_choice(choices: list[Any], value: Any) -> Any:
    """The choice object equal to ``value``: same type first, then equal with the same bool-ness."""
    for choice in choices:
        if type(choice) is type(value) and choice == value:
            return choice
    is_bool = isinstance(value, bool)
    for choice in choices:
        if isinstance(choice, bool) == is_bool and choice == value:
            return choice
    raise ValueError(f"value {value!r} is not one of the choices {choices}")


def _typed_value(domain: Any, value: Any) -> Any:
    """``value`` as the Python type Tune would produce for ``domain`` (``ValueError`` if impossible)."""
    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if isinstance(domain, Categorical):
        return _match_choice(list(domain.categories), value)
    if isinstance(domain, Float):
        if not is_real:
            raise ValueError(f"value {value!r} is not a number")
        return float(value)
    if isinstance(domain, Integer):
        if not (is_real and float(value).is_integer()):
            raise ValueError(f"value {value!r} is not an integer")
        return int(value)
    if isinstance(domain, Domain):
        raise ValueError(f"unsupported Tune domain {domain!r}")
    return _match_choice([domain], value)  # a constant


def _typed_configs(configs: pd.DataFrame, space: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """One dict per configuration row with values typed as Tune would produce them."""
    columns: dict[str, list[Any]] = {}
    for name, domain in space.items():
        values = []
        for i, value in enumerate(configs[name].tolist()):
            try:
                values.append(_typed_value(domain, _py(value)))
            except ValueError as err:
                raise table_error(source, f"hyperparameter column {name!r} (config_id "
                                          f"{configs['config_id'].iloc[i]!r}): {err}") from err
        columns[name] = values
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _encode(space: dict[str, Any], typed: list[dict[str, Any]], source: str) -> np.ndarray:
    """Unit-cube points of the configurations (``(n, 0)`` when the space has only constants)."""
    try:
        codec = TuneSpaceCodec.from_param_space(space)
    except ValueError as err:
        if "search space is empty" in str(err):
            return np.zeros((len(typed), 0))
        raise table_error(source, f"search space not usable: {err}") from err
    try:
        return np.stack([codec.encode(config) for config in typed])
    except ValueError as err:
        raise table_error(source, f"a configuration does not fit the search space: {err}") from err


def _seed_array(seeds: list[Any]) -> np.ndarray:
    """Seed ids as int64 when all are integers, else as an object array of the original values."""
    if all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds):
        return np.asarray(seeds, dtype=np.int64)
    return np.asarray(seeds, dtype=object)


def _readonly(array: np.ndarray | None) -> np.ndarray | None:
    if array is not None:
        array.setflags(write=False)
    return array


# --- the table ------------------------------------------------------------------------------------
class OfflineTable:
    """A task's pool of configurations x seeds of raw returns, with its Tune search space.

    Build it with :meth:`load` (a file) or :meth:`from_arrays` (synthetic data). Configuration rows are
    ``0..n_configs-1`` (``configs.index``); ``configs["config_id"]`` keeps the file's id. Arrays are
    read-only.

    Args:
        parsed: the table as :mod:`tune_risk.offline.formats` parsed it (configurations, returns, seeds).
        source: the name error messages give (the file's path).
        name: the table's name (the file's stem).
        metadata: the sidecar metadata (``search_space``, ``seeds``, ...).
        space: a Tune ``param_space`` (domains or JSON descriptions); ``None``: the metadata's, else inferred.
        missing: ``"error"``, ``"drop"`` or ``"keep"`` configurations without a finite return per seed.
        path: the file read, ``None`` for a table built in memory.

    Example:
        >>> import numpy as np
        >>> import pandas as pd
        >>> import tune_risk.datasets
        >>> from tune_risk.offline.table import OfflineTable
        >>> table = tune_risk.datasets.load("ppo_cartpole")
        >>> table.returns.shape  # configurations x seeds
        (512, 50)
        >>> sorted(table.space)[:3]
        ['clip_eps', 'ent_coef', 'gae_lambda']
        >>> table.true_mv().shape  # the ground-truth MV of every configuration
        (512,)
        >>> small = OfflineTable.from_arrays(pd.DataFrame({"lr": [0.001, 0.01, 0.1]}),
        ...                                  np.array([[1.0, 2.0], [3.0, 5.0], [0.0, 4.0]]))
        >>> small
        OfflineTable(name='table', format='arrays', n_configs=3, n_seeds=2, dropped_nan=0)
        >>> small.config(1)
        {'lr': 0.01}
    """

    def __init__(self, parsed: ParsedTable, *, source: str, name: str, metadata: dict[str, Any],
                 space: Any, missing: str, path: Path | None) -> None:
        """Validate a parsed table; use :meth:`load` or :meth:`from_arrays` instead of calling this."""
        n_configs, n_seeds = parsed.returns.shape
        if n_configs == 0:
            raise table_error(source, "the table has no configurations")
        if n_seeds < 2:
            raise table_error(source, f"fewer than 2 seeds ({n_seeds}, ids {parsed.seeds}): the ground-truth "
                                      "variance needs at least 2 returns per configuration")
        keep = self._missing_filter(parsed, missing, source)
        self.name, self.path, self.format, self.metadata = name, path, parsed.format, metadata
        self._source = source
        self.dropped_nan = int(n_configs - keep.sum())  # configurations dropped for missing / non-finite returns
        self.configs = parsed.configs.loc[keep].reset_index(drop=True)
        self.returns = _readonly(np.array(parsed.returns[keep], dtype=np.float64))
        self.seeds = _readonly(_seed_array(list(parsed.seeds)))
        self.wall_time = _readonly(None if parsed.wall_time is None else np.array(parsed.wall_time[keep], float))
        names = [c for c in self.configs.columns if c != "config_id"]
        given = space if space is not None else metadata.get("search_space")
        self._space = infer_space(self.configs, names) if given is None else _resolve_space(given, names, source)
        self._typed = _typed_configs(self.configs, self._space, source)
        self._unit = _readonly(_encode(self._space, self._typed, source))
        self._warp: FrozenWarp | None = None
        self._warped: np.ndarray | None = None
        self._check_metadata_seeds()

    # --- constructors -----------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, metadata: dict | str | Path | None = None, missing: str = "error") -> OfflineTable:
        """Read a table (parquet or CSV; long, wide or list format, see :mod:`tune_risk.offline.formats`).

        Args:
            path: the table file (``.parquet``, ``.pq`` or ``.csv``).
            metadata: a dict, a JSON file, or ``None`` for the sidecar ``<path>.json`` /
                ``<path minus suffix>.json`` when present (else ``{}``).
            missing: configurations without a finite return for every seed: ``"error"`` (default),
                ``"drop"`` them (ERAHBO App. C.1) or ``"keep"`` them (inspection only).

        Raises:
            ValueError: naming the file and the offending column or value, for any malformed input.
        """
        path = Path(path)
        frame = read_frame(path)
        meta = read_metadata(path, metadata)
        return cls.from_parsed(parse_frame(frame, str(path), meta), path, meta, missing=missing)

    @classmethod
    def from_parsed(cls, parsed: ParsedTable, path: str | Path, metadata: dict[str, Any],
                    missing: str = "error") -> OfflineTable:
        """A table from a file already read by :mod:`tune_risk.offline.formats` (the CLI's preflight)."""
        path = Path(path)
        return cls(parsed, source=str(path), name=path.stem, metadata=metadata, space=None, missing=missing,
                   path=path)

    @classmethod
    def from_arrays(cls, configs_df: pd.DataFrame, returns: np.ndarray, seeds: Any = None, space: Any = None,
                    name: str = "table", wall_time: np.ndarray | None = None,
                    metadata: dict[str, Any] | None = None, missing: str = "error") -> OfflineTable:
        """A table from memory: ``configs_df`` (one row per configuration, hyperparameter columns and an
        optional ``config_id``), ``returns`` ``(n_configs, n_seeds)``, seed ids (default ``0..n_seeds-1``),
        an optional Tune ``param_space`` (domains or JSON descriptions; default inferred) and wall times."""
        if not isinstance(configs_df, pd.DataFrame):
            raise table_error(name, f"configs_df must be a pandas DataFrame, got {type(configs_df).__name__}")
        returns = cls._as_matrix(returns, "returns", len(configs_df), name)
        wall = None if wall_time is None else cls._as_matrix(wall_time, "wall_time", len(configs_df), name)
        if wall is not None and wall.shape != returns.shape:
            raise table_error(name, f"wall_time has shape {wall.shape}, returns {returns.shape}")
        seeds = list(range(returns.shape[1])) if seeds is None else [_py(s) for s in seeds]
        if len(seeds) != returns.shape[1] or len(set(seeds)) != len(seeds):
            raise table_error(name, f"seeds {seeds} must be {returns.shape[1]} distinct ids (one per column)")
        configs = cls._configs_frame(configs_df, name)
        parsed = ParsedTable(configs, returns, seeds, wall, "arrays")
        return cls(parsed, source=name, name=name, metadata=dict(metadata or {}), space=space,
                   missing=missing, path=None)

    @staticmethod
    def _as_matrix(values: Any, what: str, n_rows: int, source: str) -> np.ndarray:
        try:
            matrix = np.array(values, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise table_error(source, f"{what} must be numeric: {err}") from err
        if matrix.ndim != 2 or matrix.shape[0] != n_rows:
            raise table_error(source, f"{what} must have shape ({n_rows}, n_seeds), got {matrix.shape}")
        return matrix

    @staticmethod
    def _configs_frame(configs_df: pd.DataFrame, source: str) -> pd.DataFrame:
        configs = configs_df.reset_index(drop=True)
        bad = [c for c in configs.columns if not isinstance(c, str)]
        if bad:
            raise table_error(source, f"hyperparameter column names must be strings, got {bad}")
        ids = list(range(len(configs))) if "config_id" not in configs else check_keys(
            configs["config_id"], "config_id", source)
        if len(set(ids)) != len(ids):
            raise table_error(source, "column 'config_id' has duplicate ids")
        configs = configs.drop(columns="config_id", errors="ignore")
        if configs.shape[1] == 0:
            raise table_error(source, "missing hyperparameter columns: configs_df has none")
        check_hyperparameters(configs, list(configs.columns), source)
        configs.insert(0, "config_id", ids)
        return configs

    # --- validation helpers -----------------------------------------------------------------------
    @staticmethod
    def _missing_filter(parsed: ParsedTable, missing: str, source: str) -> np.ndarray:
        """Mask of the configurations to keep under ``missing`` (see the module docstring)."""
        if missing not in MISSING_POLICIES:
            raise ValueError(f"unknown missing={missing!r}; valid values are {', '.join(map(repr, MISSING_POLICIES))}")
        keep = missing_mask(parsed, source, missing)
        incomplete = int((~np.isfinite(parsed.returns).all(axis=1)).sum())
        if missing == "keep" and incomplete:
            logger.warning("%s: kept %d configuration(s) with missing or non-finite returns (missing='keep')",
                           source, incomplete)
        elif incomplete:
            logger.info("%s: dropped %d of %d configurations with missing or non-finite returns (ERAHBO App. C.1)",
                        source, incomplete, len(keep))
        return keep

    def _check_metadata_seeds(self) -> None:
        seeds = self.metadata.get("seeds")
        if isinstance(seeds, list) and seeds != self.seeds.tolist():
            logger.warning("%s: metadata seeds %s differ from the table's seeds %s", self._source, seeds[:10],
                           self.seeds.tolist()[:10])

    # --- views ------------------------------------------------------------------------------------
    @property
    def n_configs(self) -> int:
        """Number of configuration rows."""
        return int(self.returns.shape[0])

    @property
    def n_seeds(self) -> int:
        """Number of seeds (columns of :attr:`returns`)."""
        return int(self.returns.shape[1])

    @property
    def space(self) -> dict[str, Any]:
        """The Ray Tune ``param_space`` of the table (a fresh dict; domains are shared)."""
        return dict(self._space)

    def unit_points(self) -> np.ndarray:
        """``(n_configs, d)`` configurations encoded with ``TuneSpaceCodec(space)`` (read-only)."""
        return self._unit

    def config(self, row: int) -> dict[str, Any]:
        """Hyperparameters of configuration ``row`` as Python scalars of the types Tune would produce."""
        if isinstance(row, bool) or not isinstance(row, numbers.Integral) or not 0 <= row < self.n_configs:
            raise IndexError(f"{self._source}: row {row!r} is not in 0..{self.n_configs - 1}")
        return dict(self._typed[int(row)])

    def warp(self) -> FrozenWarp:
        """The pooled Vizier warp, fitted once on every return of the table (docs/algorithms.md §1.2); the
        replay gives it to every method, so all optimise the same MV."""
        if self._warp is None:
            bad = int((~np.isfinite(self.returns).all(axis=1)).sum())
            if bad:
                raise table_error(self._source, f"{bad} configuration(s) have missing or non-finite returns "
                                                "(loaded with missing='keep'); the warp needs finite returns")
            self._warp = fit_warp(self.returns)
        return self._warp

    def warped(self) -> np.ndarray:
        """All returns through :meth:`warp` (on its own fitting sample: ``warp_values(returns)``, bit for bit)."""
        if self._warped is None:
            self._warped = _readonly(self.warp()(self.returns))
        return self._warped

    def true_mv(self, alpha: float = 1.0) -> np.ndarray:
        """Ground-truth ``MV(c) = mean(ỹ) − α var(ỹ, ddof=1)`` over all seeds of warped returns.

        ERAHBO eq. 1 on processed returns; docs/algorithms.md §1.12, A-17. Shape ``(n_configs,)``.
        """
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
        return sample_mean_variance(self.warped(), float(alpha))

    def summary(self) -> dict[str, Any]:
        """Sizes, dropped count and the spread of per-configuration return std (raw units, ddof=1)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            std = self.returns.std(axis=1, ddof=1)
        std = std[np.isfinite(std)]
        spread = (float(std.mean()), float(std.min()), float(std.max())) if std.size else (math.nan,) * 3
        return {
            "name": self.name, "format": self.format, "n_configs": self.n_configs, "n_seeds": self.n_seeds,
            "dropped_nan": self.dropped_nan, "mean_std": spread[0], "min_std": spread[1], "max_std": spread[2],
            "has_wall_time": self.wall_time is not None,
        }

    # --- writing ----------------------------------------------------------------------------------
    def to_long(self, path: str | Path) -> Path:
        """Write the ARLBench long format (parquet or CSV by suffix) and ``<path>.json`` metadata."""
        path = Path(path)
        kind = file_kind(path)
        frame = self._long_frame()
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
        meta = {**self.metadata, "format": "arlbench-long", "seeds": self.seeds.tolist(),
                "n_configs": self.n_configs, "search_space": {k: describe_domain(v) for k, v in self._space.items()}}
        Path(f"{path}.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
        return path

    def _long_frame(self) -> pd.DataFrame:
        n, s = self.returns.shape
        columns: dict[str, Any] = {
            "config_id": np.repeat(self.configs["config_id"].to_numpy(), s),
            "seed": np.tile(self.seeds, n),
            "performance": self.returns.ravel(),
        }
        for name in self.configs.columns.drop("config_id"):
            columns[f"{HP_PREFIX}{name}"] = np.repeat(self.configs[name].to_numpy(), s)
        if self.wall_time is not None:
            columns["wall_time"] = self.wall_time.ravel()
        return pd.DataFrame(columns)

    def __repr__(self) -> str:
        return (f"OfflineTable(name={self.name!r}, format={self.format!r}, n_configs={self.n_configs}, "
                f"n_seeds={self.n_seeds}, dropped_nan={self.dropped_nan})")
