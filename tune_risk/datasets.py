"""The six offline tables of RL returns that ship with tune-risk, by name (the dataset card: ``datasets/README.md``).

Each table holds the final returns of 128 or 512 configurations x 50 seeds of one algorithm on one environment
(``dqn_acrobot``, ``dqn_cartpole``, ``ppo_acrobot``, ``ppo_brax_fast``, ``ppo_cartpole``, ``sac_pendulum``).
:func:`load` returns the :class:`~tune_risk.offline.table.OfflineTable` that ``tune-risk replay --table NAME``
replays; :func:`path` gives the parquet file (its ``<file>.json`` metadata lies beside it) for pandas or another
tool.

Example:
    >>> import tune_risk.datasets
    >>> tune_risk.datasets.names()
    ('dqn_acrobot', 'dqn_cartpole', 'ppo_acrobot', 'ppo_brax_fast', 'ppo_cartpole', 'sac_pendulum')
    >>> table = tune_risk.datasets.load("ppo_cartpole")
    >>> (table.n_configs, table.n_seeds)
    (512, 50)
"""

from __future__ import annotations

from tune_risk.offline.shipped import load, names
from tune_risk.offline.shipped import table_path as path

__all__ = ["load", "names", "path"]
