"""The cells of an offline table file: returns (numbers, NaN tokens, per-seed lists), ids and hyperparameters.

Every reader of :mod:`tune_risk.offline.formats` turns cells into values here: ``to_float`` (a column of
returns or times; ``"nan"``, ``"None"``, ``""`` and ``np.float64(...)`` spellings understood),
``parse_list_cell`` (a bracketed list of per-seed values), ``check_keys`` / ``clean_id`` / ``sorted_ids``
(configuration and seed ids, in natural order) and ``check_hyperparameters`` (present, scalar, finite). A bad
cell is a ``ValueError`` that starts with the file and names the column and the value.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np
import pandas as pd

from tune_risk.offline.paths import table_error

_NUMPY_SCALAR = re.compile(r"^(?:np\.|numpy\.)?float(?:16|32|64)?\((.*)\)$")
_NAN_TOKENS = {"nan", "none", "null", "na", ""}


def _scalar_to_float(value: Any) -> float | None:
    """A return value as float (NaN for missing), or ``None`` if it is not a number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.nan
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        token = value.strip()
        match = _NUMPY_SCALAR.match(token)
        token = match.group(1).strip() if match else token
        if token.lower() in _NAN_TOKENS:
            return math.nan
        try:
            return float(token)
        except ValueError:
            return None
    return None


def to_float(values: pd.Series, column: str, source: str) -> np.ndarray:
    """A column of returns (or times) as float64; ``ValueError`` naming the column and a bad value."""
    dtype = values.dtype
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    out = np.empty(len(values), dtype=np.float64)
    for i, value in enumerate(values.tolist()):
        converted = _scalar_to_float(value)
        if converted is None:
            raise table_error(source, f"column {column!r} holds a non-numeric value {value!r} (row {values.index[i]})")
        out[i] = converted
    return out


def parse_list_cell(cell: Any, column: str, where: str, source: str) -> np.ndarray:
    """One bracketed list of per-seed values (a list/array, or a string like ``"[1.0, nan]"``)."""
    if isinstance(cell, str):
        text = cell.strip()
        if not (text.startswith("[") and text.endswith("]")):
            raise table_error(source, f"column {column!r} at {where}: expected a bracketed list, got {cell!r}")
        tokens = [t for t in re.split(r"[,\s]+", text[1:-1]) if t]
    elif isinstance(cell, (list, tuple, np.ndarray)):
        tokens = list(np.asarray(cell, dtype=object).ravel())
    else:
        raise table_error(source, f"column {column!r} at {where}: expected a list of per-seed values, got {cell!r}")
    out = np.empty(len(tokens), dtype=np.float64)
    for j, token in enumerate(tokens):
        converted = _scalar_to_float(token)
        if converted is None:
            raise table_error(source, f"column {column!r} at {where} holds a non-numeric value {token!r}")
        out[j] = converted
    return out


def clean_id(value: Any) -> Any:
    """A seed or configuration id as a plain Python value (integral floats become ints)."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sort_key(value: Any) -> tuple:
    return (type(value).__name__, value)


def _id_key(value: Any) -> tuple:
    """Numbers first, numerically; then strings in natural order (``s2`` before ``s10``), text breaking ties."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return (0, value, ())
    text = str(value)
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)
    return (1, 0, parts, text)


def sorted_ids(values: list[Any]) -> list[Any]:
    """Distinct configuration or seed ids in natural order (see :func:`_id_key`)."""
    return sorted(dict.fromkeys(values), key=_id_key)


def sorted_unique(values: list[Any], typed: bool = False) -> list[Any]:
    """Sorted distinct values (mixed types grouped by type name); ``typed``: ``1``, ``1.0``, ``True`` differ."""
    distinct = [v for _, v in dict.fromkeys((type(v), v) for v in values)] if typed else list(dict.fromkeys(values))
    try:
        return sorted(distinct)
    except TypeError:
        return sorted(distinct, key=_sort_key)


def check_keys(values: pd.Series, column: str, source: str) -> list[Any]:
    """Ids of one key column as Python values; ``ValueError`` for missing or non-scalar ids."""
    if pd.api.types.is_integer_dtype(values.dtype) and not values.isna().any():
        return values.tolist()
    out = []
    for i, value in enumerate(values.tolist()):
        if not pd.api.types.is_scalar(value) or pd.isna(value):
            raise table_error(source, f"column {column!r} holds an invalid id {value!r} (row {values.index[i]})")
        out.append(clean_id(value))
    return out


def check_hyperparameters(frame: pd.DataFrame, columns: list[str], source: str) -> None:
    """Hyperparameter values must be present, scalar and (for numbers) finite."""
    for column in columns:
        dtype = frame[column].dtype
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_object_dtype(dtype):
            numbers_ok = np.isfinite(frame[column].to_numpy(dtype=np.float64, na_value=np.nan))
            if numbers_ok.all():
                continue
        for i, value in enumerate(frame[column].tolist()):
            bad = not pd.api.types.is_scalar(value) or pd.isna(value)
            if not bad and isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
                bad = not math.isfinite(value)
            if bad:
                raise table_error(source, f"hyperparameter column {column!r} holds an invalid value {value!r} "
                                          f"(row {frame.index[i]})")
