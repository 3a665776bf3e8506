"""Replay any Ray Tune ``Searcher`` on an offline table, as a user runs it: wrapped in Ray's ``Repeater(k)``.

docs/algorithms.md §1.15. A peer (:class:`~tune_risk.offline.methods.PeerMethod`) is driven through the
Searcher API in-process (``set_search_properties``, ``suggest``, ``on_trial_complete``), with no Ray
cluster: one trial is one seed-run of the table.

* **Search space**: the table's Tune ``param_space``; the searcher optimises the raw return (``mode="max"``),
  as a user's Tune script would; ``Repeater(k)`` averages the ``k`` seeds of a suggestion for it.
* **Snapping**: a suggestion is encoded into the unit cube with the table's codec and replaced by the
  nearest table row (Euclidean, the lowest row on ties); its distance is recorded (``snap_distance``).
* **Seeds**: the ``i``-th seed-run of row ``c`` in repetition ``r`` reads the ``i``-th search seed of the
  replay's permutation ``perm_{r,c}`` (the order the engine's methods use), counting across every
  suggestion that snapped to ``c``; after all search seeds the order starts again.
* **Budget**: ``budget`` seed-runs in all (a peer has no separate initial design).
* **Recommendation**: the row with the best mean return over the seeds observed for it (first reached on
  ties): what a user reads off ``ResultGrid.get_best_result()`` with a ``Repeater``.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tune_risk.offline.methods import SEARCHER_NAME, SMAC, PeerMethod

logger = logging.getLogger(__name__)

METRIC = "return"
HEBO_VENV_PYTHON = Path(".venv-hebo") / "bin" / "python"
"""The HEBO interpreter that ``make bench`` builds (HEBO 0.3.6 needs numpy < 1.25, which JAX cannot use)."""


@dataclass
class PeerRun:
    """One peer replay: every seed-run in order, the suggestions (groups) and the recommendation per seed-run.

    ``rows[n]`` / ``columns[n]``: table row and seed column of seed-run ``n``; ``groups``: ``(row, k_done,
    snap_distance)`` per suggestion; ``recommended[n]``: the recommended row after seed-run ``n``.
    """

    method: str
    repeat: int
    rows: list[int] = field(default_factory=list)
    columns: list[int] = field(default_factory=list)
    groups: list[list[float]] = field(default_factory=list)
    recommended: list[int] = field(default_factory=list)
    seeds_of_recommended: list[int] = field(default_factory=list)


def parse_searcher_flags(flags: list[str] | None) -> dict[str, str]:
    """``["mine=pkg.mod:factory", ...]`` -> ``{"mine": "pkg.mod:factory"}``; ``ValueError`` naming the flag."""
    specs: dict[str, str] = {}
    for flag in flags or []:
        name, sep, target = flag.partition("=")
        if not sep or not SEARCHER_NAME.match(name) or ":" not in target:
            raise ValueError(f"--searcher {flag!r}: expected NAME=module:callable (NAME letters, digits and "
                             "underscores), e.g. --searcher mine=my_package.searchers:make_searcher")
        if name in specs:
            raise ValueError(f"--searcher {flag!r}: the name {name!r} is given twice")
        specs[name] = target
    return specs


def load_factory(name: str, target: str) -> Callable[..., Any]:
    """The callable of ``--searcher NAME=module:callable``; ``ValueError`` (one line) when it cannot be loaded."""
    module_name, _, attribute = target.partition(":")
    flag = f"--searcher {name}={target}"
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - any import failure of user code is the flag's problem
        raise ValueError(f"{flag}: cannot import module {module_name!r} ({type(err).__name__}: {err})") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{flag}: module {module_name!r} has no callable {attribute!r}")
    return factory


def call_factory(name: str, target: str, factory: Callable[..., Any], seed: int) -> Any:
    """``factory(seed=seed)`` (or ``factory()`` when it takes no ``seed``), checked to be a Ray ``Searcher``."""
    from ray.tune.search import Searcher

    try:
        parameters = inspect.signature(factory).parameters
        takes_seed = "seed" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    except (TypeError, ValueError):
        takes_seed = False
    flag = f"--searcher {name}={target}"
    try:
        searcher = factory(seed=seed) if takes_seed else factory()
    except Exception as err:  # noqa: BLE001 - user code: report it as the flag's problem, in one line
        raise ValueError(f"{flag}: calling it raised {type(err).__name__}: {err}") from None
    if not isinstance(searcher, Searcher):
        raise ValueError(f"{flag}: returned {type(searcher).__name__}, not a ray.tune.search.Searcher "
                         "(Repeater wraps Searchers; a SearchAlgorithm such as BasicVariantGenerator cannot be)")
    return searcher


def builtin_searcher(family: str, seed: int, hebo_python: Path | None = None) -> Any:
    """A fresh Ray ``Searcher`` of a built-in peer family, seeded with ``seed``."""
    if family in ("random", "tpe", "optuna-gp"):
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        samplers = {"random": optuna.samplers.RandomSampler, "tpe": optuna.samplers.TPESampler,
                    "optuna-gp": optuna.samplers.GPSampler}
        return OptunaSearch(sampler=samplers[family](seed=seed))
    if family == "hebo":
        if hebo_importable():
            from ray.tune.search.hebo import HEBOSearch

            return HEBOSearch(random_state_seed=seed)
        from tune_risk.offline.remote import RemoteSearcher

        return RemoteSearcher(hebo_python or HEBO_VENV_PYTHON, "ray.tune.search.hebo:HEBOSearch",
                              {"random_state_seed": seed})
    if family == "bohb":
        from ray.tune.search.bohb import TuneBOHB

        return TuneBOHB(seed=seed)
    raise ValueError(f"no built-in peer family {family!r}")


def make_searcher(peer: PeerMethod, seed: int, searchers: dict[str, str], hebo_python: Path | None = None) -> Any:
    """A fresh Ray ``Searcher`` for one replay of ``peer``: built in, or ``--searcher NAME=module:callable``."""
    if peer.family in searchers:
        target = searchers[peer.family]
        return call_factory(peer.family, target, load_factory(peer.family, target), seed)
    return builtin_searcher(peer.family, seed, hebo_python)


def hebo_importable() -> bool:
    """Whether HEBO imports in this interpreter (it needs numpy < 1.25)."""
    try:
        import hebo  # noqa: F401
    except Exception:  # noqa: BLE001 - an ImportError or numpy's ABI error both mean "not here"
        return False
    return True


def check_peer_available(peer: PeerMethod, hebo_python: Path | None = None) -> None:
    """Refuse, before any replay, a peer whose library is not installed here, saying how to get it."""
    if peer.family == SMAC:
        raise ValueError(
            f"{peer.name}: SMAC3 is not available with this stack: smac 2.4.1 needs pyrfr, which ships only as "
            "a source package (a C++/SWIG build); install it yourself (`pip install smac`) to try, "
            "but tune-risk replay does not run it yet")
    if peer.family == "bohb":
        try:
            import ConfigSpace  # noqa: F401
            import hpbandster  # noqa: F401
        except ImportError:
            raise ValueError(f"{peer.name}: TuneBOHB needs hpbandster and ConfigSpace, which are not installed "
                             "(`pip install hpbandster ConfigSpace`)") from None
    if peer.family == "hebo" and not hebo_importable():
        from tune_risk.offline.remote import check_interpreter

        python = hebo_python or HEBO_VENV_PYTHON
        check_interpreter(python, ("hebo", "ray.tune"), what=(
            f"{peer.name}: HEBO needs numpy < 1.25 (not this environment's); build its venv once with "
            f"`make bench` ({HEBO_VENV_PYTHON}) or pass --hebo-python PATH to a Python with hebo and ray[tune]"))


def nearest_row(pool: np.ndarray, point: np.ndarray) -> tuple[int, float]:
    """Row of ``pool`` nearest to ``point`` (Euclidean, unit cube; the lowest index on ties) and its distance."""
    distances = np.linalg.norm(pool - point, axis=1)
    row = int(np.argmin(distances))
    return row, float(distances[row])


def replay_peer(task: Any, codec: Any, space: dict[str, Any], peer: PeerMethod, searcher: Any, repeat: int,
                budget: int) -> PeerRun:
    """Replay ``searcher`` (a fresh Ray ``Searcher``) in ``Repeater(peer.repeat)`` for ``budget`` seed-runs.

    ``task`` is the :class:`~tune_risk.offline.replay.ReplayTask` (its search seeds only are read),
    ``codec`` the table's ``TuneSpaceCodec`` and ``space`` its Tune ``param_space``.
    """
    from ray.tune.search import Repeater, Searcher

    alg = Repeater(searcher, repeat=peer.repeat, set_index=True) if peer.repeat > 1 else searcher
    if not alg.set_search_properties(METRIC, "max", dict(space)):
        raise ValueError(f"{peer.name}: the searcher refused the table's search space (set_search_properties "
                         "returned False: was it built with a space of its own?)")
    run = PeerRun(peer.name, repeat)
    n_rows = task.points.shape[0]
    sums, counts = np.zeros(n_rows), np.zeros(n_rows, dtype=np.int64)
    first_seen = np.full(n_rows, np.iinfo(np.int64).max)  # the seed-run that first observed each row
    for n in range(budget):
        trial_id = f"{peer.name}_{repeat}_{n:05d}"
        config = alg.suggest(trial_id)
        if config == Searcher.FINISHED:
            break
        if config is None:
            raise RuntimeError(f"{peer.name}: suggest() returned None with no trial running (after {n} seed-runs)")
        row, distance = nearest_row(task.points, codec.encode(config))
        _add_to_group(run, n // peer.repeat, row, distance)  # Repeater groups k consecutive trials
        column, value = task.search_return(repeat, row, int(counts[row]) % task.n_search_seeds)
        alg.on_trial_complete(trial_id, result={METRIC: value})
        first_seen[row] = min(first_seen[row], n)
        sums[row] += value
        counts[row] += 1
        recommended = recommend_by_mean(sums, counts, first_seen)
        run.rows.append(row)
        run.columns.append(column)
        run.recommended.append(recommended)
        run.seeds_of_recommended.append(int(counts[recommended]))
    return run


def _add_to_group(run: PeerRun, group: int, row: int, distance: float) -> None:
    if group == len(run.groups):
        run.groups.append([row, 0, distance])
    elif run.groups[group][0] != row:  # Repeater repeats one suggestion k times; anything else is a bug
        raise RuntimeError(f"{run.method}: trial group {group} mixes table rows {run.groups[group][0]} and {row}")
    run.groups[group][1] += 1


def recommend_by_mean(sums: np.ndarray, counts: np.ndarray, first_seen: np.ndarray) -> int:
    """``argmax_c mean(y_c)`` over the rows observed so far; the row observed first on ties.

    Example:
        >>> recommend_by_mean(np.array([1.0, 4.0, 2.0]), np.array([1, 2, 1]), np.array([0, 1, 3]))  # means 1, 2, 2
        1
    """
    seen = counts > 0
    means = np.where(seen, sums / np.maximum(counts, 1), -np.inf)
    tied = np.flatnonzero(means == means.max())
    return int(tied[np.argmin(first_seen[tied])])
