"""The tables shipped with tune-risk: found by name in the package (``datasets/`` of the repository).

``tune_risk/offline/tables`` is a link to the repository's ``datasets/`` folder (the one copy of the files in
git); building the wheel copies its ``*.parquet``, their ``*.parquet.json`` metadata and the dataset card
``README.md`` into the package, so an installed tune-risk has the tables without the clone. Pandas-free, so
that ``tune-risk replay --table NAME`` resolves the name before anything heavy loads.

Example:
    >>> from tune_risk.offline.shipped import names, table_path
    >>> "ppo_cartpole" in names()
    True
    >>> table_path("ppo_cartpole").name
    'ppo_cartpole.parquet'
"""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tune_risk.offline.table import OfflineTable

SUFFIX = ".parquet"


def tables_dir() -> Path:
    """The folder of the shipped tables (inside the installed package)."""
    return Path(str(resources.files("tune_risk.offline") / "tables"))


def names() -> tuple[str, ...]:
    """The names of the shipped tables, sorted (``("dqn_acrobot", ..., "sac_pendulum")``)."""
    return tuple(sorted(path.name.removesuffix(SUFFIX) for path in tables_dir().glob(f"*{SUFFIX}")))


def unknown_name_message(name: str) -> str:
    """One line naming the valid tables (and the closest one) for a name that is not shipped."""
    valid = names()
    if not valid:
        return f"unknown table {name!r}: this installation ships no tables (missing {tables_dir()})"
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown table {name!r}{hint}; shipped tables: {', '.join(valid)}"


def table_path(name: str) -> Path:
    """The file of the shipped table ``name``; ``ValueError`` naming the valid names for any other name.

    Example:
        >>> table_path("dqn_acrobot").exists()
        True
    """
    if name not in names():
        raise ValueError(unknown_name_message(name))
    return tables_dir() / f"{name}{SUFFIX}"


def is_table_name(text: str) -> bool:
    """Whether ``text`` reads as a bare table name rather than a path: no folder, no file suffix."""
    return Path(text).name == text and not Path(text).suffix


def resolve_table(text: str) -> Path:
    """A ``--table`` argument as a file: an existing file, a path (with a folder or suffix), else a shipped name.

    Example:
        >>> resolve_table("ppo_cartpole") == table_path("ppo_cartpole")
        True
        >>> resolve_table("my_runs.csv")
        PosixPath('my_runs.csv')
    """
    if Path(text).exists() or not is_table_name(text):
        return Path(text)
    return table_path(text)


def load(name: str, missing: str = "error") -> OfflineTable:
    """The shipped table ``name`` as an :class:`~tune_risk.offline.table.OfflineTable` (imports Ray Tune).

    Args:
        name: a shipped table's name (``tune_risk.datasets.names()``); any other name raises a
            ``ValueError`` naming the valid ones.
        missing: passed to :meth:`OfflineTable.load` (the shipped tables have no missing returns).

    Example:
        >>> import tune_risk.datasets
        >>> table = tune_risk.datasets.load("ppo_cartpole")
        >>> table.returns.shape
        (512, 50)
        >>> (tune_risk.datasets.load("dqn_acrobot").n_configs, table.n_seeds)
        (128, 50)
        >>> tune_risk.datasets.load("ppo_cartpol")
        Traceback (most recent call last):
            ...
        ValueError: unknown table 'ppo_cartpol' (did you mean 'ppo_cartpole'?); shipped tables: dqn_acrobot, ...
    """
    from tune_risk.offline.table import OfflineTable

    return OfflineTable.load(table_path(name), missing=missing)
