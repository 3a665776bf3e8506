"""Ray Tune 2.60's snapshot files, read without running any of their code.

Tune snapshots an experiment into ``experiment_state-S.json``, ``searcher-state-S.pkl``,
``search_gen_state-S.json`` and ``callback-states-S.pkl`` per driver session ``S`` (``tune_files``), plus
``tuner.pkl``. This module holds what tune_risk knows of that layout: the file names, the reads of the
trial list (``read_experiment_state``) and of the search wrappers' state (``read_search_gen_state``),
``load_pickle`` (a pickle read into ``Opaque`` stand-ins, so a snapshot can be checked where its
trainable's or filesystem's modules are missing), a file's ``digest``, and ``Snapshot``, one candidate
set of these files. The restore points (``tune_risk.tune.restore_points``) and the check and repair
(``tune_risk.tune.restore``, whose docstring tells the whole design) build on it.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from dataclasses import dataclass
from typing import Any

TUNER_PKL = "tuner.pkl"


# Everything tune_risk knows about Ray Tune 2.60's snapshot files is in the next three functions:
# Ray has no public API to read or check a snapshot, so they read its on-disk layout
# (tests/reliability/test_restore_points.py checks them against real Tune runs).
@dataclass(frozen=True)
class TuneFiles:
    """The names of one session's snapshot files (Ray's own name templates)."""

    experiment: str
    searcher: str
    search_gen: str
    callbacks: str

    @property
    def required(self) -> tuple[str, str, str]:
        return self.experiment, self.searcher, self.search_gen


def tune_files(session: str) -> TuneFiles:
    """Names Tune gives the snapshot files of session ``session`` (its ``CKPT_FILE_TMPL`` class attributes)."""
    from ray.tune.callback import CallbackList
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.search import Searcher, SearchGenerator

    return TuneFiles(TuneController.CKPT_FILE_TMPL.format(session), Searcher.CKPT_FILE_TMPL.format(session),
                     SearchGenerator.CKPT_FILE_TMPL.format(session), CallbackList.CKPT_FILE_TMPL.format(session))


def read_experiment_state(blob: bytes) -> tuple[str, dict[str, str]]:
    """``(session, {trial_id: status})`` of an ``experiment_state`` file; raises if it does not parse.

    Layout: JSON ``{"runner_data": {"_session_str": ...}, "trial_data": [[trial_json, metadata_json], ...]}``
    where ``trial_json`` is itself a JSON document with ``trial_id`` and ``status``. Only JSON is
    decoded (the embedded cloudpickle payloads are not executed).
    """
    state = json.loads(blob)
    trials = {}
    for trial_json, _metadata in state["trial_data"]:
        trial = json.loads(trial_json)
        trials[trial["trial_id"]] = trial["status"]
    return state["runner_data"]["_session_str"], trials


def read_search_gen_state(blob: bytes) -> tuple[int, set[str] | None]:
    """``(trials created, live trials of the ConcurrencyLimiter or None)`` of a ``search_gen_state`` file.

    Layout: a cloudpickled dict (``SearchGenerator.get_state``) with ``counter`` and, for each search
    wrapper, ``"name:<Class>"`` -> its state (``ConcurrencyLimiter``: ``live_trials``). A limiter whose
    searcher enforces the limit itself (``_limit_concurrency`` false: ``RiskAwareSearch``) tracks no live
    trials: ``None`` then (the searcher's live trials are its engine's unresolved runs, checked with it).
    """
    state = load_pickle(blob)
    limiter = state.get("name:ConcurrencyLimiter")
    if limiter is None or not limiter.get("_limit_concurrency", True):
        return int(state["counter"]), None
    return int(state["counter"]), set(limiter["live_trials"])


class Opaque:
    """Stands for any object of a snapshot file (see ``load_pickle``): records its class and state."""

    origin: tuple[str, str] = ("", "")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.state, self.items = args, None, []

    def __new__(cls, *args: Any, **kwargs: Any) -> Opaque:
        instance = super().__new__(cls)
        instance.args, instance.state, instance.items = args, None, []
        return instance

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def append(self, item: Any) -> None:  # list and set subclasses, dict-like objects: kept, not interpreted
        self.items.append(item)

    add = append

    def extend(self, items: Any) -> None:
        self.items.extend(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items.append((key, value))


class _OpaqueUnpickler(pickle.Unpickler):
    """Rebuilds plain containers and scalars; every class or function becomes an ``Opaque`` subclass."""

    _safe = {("builtins", n) for n in ("set", "frozenset", "dict", "list", "tuple", "int", "float", "str", "bytes")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._safe:
            return super().find_class(module, name)
        return type(name, (Opaque,), {"origin": (module, name)})


def load_pickle(blob: bytes) -> Any:
    """Read a (cloud)pickled snapshot file without running any of its code: the checks need only plain
    fields (counters, trial ids, the searcher's marks), and the objects around them (the trainable, a
    custom storage filesystem, callbacks...) may need modules this process lacks. A torn file fails."""
    return _OpaqueUnpickler(io.BytesIO(blob)).load()


def digest(blob: bytes) -> str:
    """The SHA-256 of a snapshot file (hex): what ties a searcher file to its trial list."""
    return hashlib.sha256(blob).hexdigest()


@dataclass
class Snapshot:
    """One candidate snapshot: its session, sequence number (if known) and files (name -> bytes)."""

    session: str
    seq: int | None
    files: dict[str, bytes]
    source: str  # "current files" or the restore point's file name
