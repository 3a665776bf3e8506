"""Table files on disk: their kind from the suffix, and the checks a path must pass before it is read.

Pandas-free, so that ``tune-risk replay`` reports a missing file, a folder or an unknown extension
before loading pandas (part of the "bad calls fail at once" contract of :mod:`tune_risk.offline.preflight`).
"""

from __future__ import annotations

from pathlib import Path

SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def table_error(source: str, message: str) -> ValueError:
    """A ``ValueError`` whose message starts with the table's file (or name)."""
    return ValueError(f"{source}: {message}")


def file_kind(path: Path) -> str:
    """``"parquet"`` or ``"csv"`` from the suffix; ``ValueError`` for anything else."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise table_error(str(path), f"unknown extension {path.suffix!r}; expected one of {sorted(SUFFIXES)}")
    return kind


def check_table_path(path: Path) -> str:
    """The file kind (``"parquet"`` or ``"csv"``) of an existing table file; ``ValueError`` otherwise."""
    if path.is_dir():
        raise table_error(str(path), "is a directory, not a table file")
    kind = file_kind(path)
    if not path.is_file():
        raise table_error(str(path), "file not found")
    return kind
