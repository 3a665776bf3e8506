"""Restore a Ray Tune experiment after a crash, even one during Tune's copy of a snapshot.

    from tune_risk.tune.restore import restore_tuner
    tuner = restore_tuner("/results/my_run", trainable=train)   # instead of tune.Tuner.restore
    tuner.fit()

**The problem (ray 2.60).** Tune snapshots an experiment into three files per driver session
``S``: ``experiment_state-S.json`` (the trial list), ``searcher-state-S.pkl`` (``RiskAwareSearch``:
the whole ask/tell engine) and ``search_gen_state-S.json`` (Tune's search wrappers, e.g. the
``ConcurrencyLimiter``'s live trials), plus ``callback-states-S.pkl`` when callbacks keep state. It
writes them to a staging directory on the driver (``/tmp/ray/session_*/.../driver_artifacts``) and a
background thread copies that directory to ``storage_path``, file by file, overwriting in place, in
parallel threads (``pyarrow.fs.copy_files``; ~10 ms here). After a restore the staging directory also
holds ``tuner.pkl`` and the earlier sessions' files, which every copy rewrites too. A driver killed
during a copy leaves some of these files torn, and the others from two different snapshots. Then
``Tuner.restore`` either logs "Failed to restore the run state" and silently starts again from
scratch (torn ``experiment_state``), or raises (torn ``tuner.pkl``), or, worst, restores a searcher
and a trial list that disagree: replicates lost, counted twice, or waited for forever.

**What tune_risk does.**

1. *Restore points.* At each snapshot, ``RiskAwareSearch.save_to_dir`` (called by Tune after it has
   written ``experiment_state`` and before it writes the searcher and wrapper files) records the
   SHA-256 of the new ``experiment_state`` in the searcher's own state (so a searcher file says
   which trial list it belongs to), and writes the *previous* snapshot, now complete in staging, as
   one zip file ``tune_risk-restore-S-{0,1}.zip`` (all of that snapshot's files, ``tuner.pkl`` when
   staged, a manifest with SHA-256s). One snapshot late, because the wrapper file of the current
   snapshot is written only after the searcher's. Only the newest restore point stays in staging
   (the other slot is deleted there), so Tune's copies never rewrite the older one: in storage, the
   previous restore point survives any crash intact. Zip files are not ``.json``/``.pkl``, so Tune
   never downloads them into a new session's staging (where every copy would rewrite them).
2. *Repair* (``repair_experiment``, run by ``restore_tuner`` before ``tune.Tuner.restore``). It checks
   the snapshot Tune would load (each file parses; the searcher's digest matches
   ``experiment_state``; the wrapper state counts the trial list's trials and, under a limiting
   ``ConcurrencyLimiter`` (not ``RiskAwareSearch``'s, which enforces the limit itself), lists exactly its
   unfinished trials; the same session everywhere). If that
   fails, it takes the newest snapshot that passes the same checks among the storage's restore
   points and the earlier sessions' files, writes it back (replaced files are moved to
   ``tune_risk-discarded/<time>/``, never deleted), and restores ``tuner.pkl`` from a restore point
   if it was torn. The snapshot handed to Tune is then sealed as ``tune_risk-restore-S-sealed.zip``,
   so a crash early in the next session can fall back to it. If no consistent snapshot exists,
   ``SnapshotError`` says so; nothing restarts from scratch silently.

**Why this design.** Falling back to an older *consistent* snapshot is safe: the replicates completed
after it are run again under the same configuration and seed (the searcher's bookkeeping is that
snapshot's), so none is lost or counted twice, and in the decision-equivalent mode the decisions
equal an uninterrupted run's. It costs the compute since that snapshot, one or two snapshot periods
(``TUNE_GLOBAL_CHECKPOINT_S``). The dead driver's staging directory would hold a newer snapshot, but
it is on the dead driver's machine and under ``/tmp``: gone after a node loss, a reboot or a
different restore machine, and absent for cloud storage; restore points live in ``storage_path``
with Tune's own files, so the repair is the same everywhere. A restore point costs one compressed
copy of the snapshot per snapshot (measured on the reliability tests' run: see
``tests/reliability/test_kill_restore.py``).

Restore points are written at most every ``MIN_RESTORE_POINT_INTERVAL_S``: deleting the older slot
while a copy that listed it is still running makes that copy fail (Tune logs a warning and the
next copy repeats it), which can only happen if a copy outlasts that interval.

The pieces: ``tune_risk.tune.snapshot_files`` reads Tune's files, ``tune_risk.tune.restore_points`` writes
and reads the restore points; this module checks a snapshot (``check_snapshot``), repairs the experiment
(``repair_experiment``) and restores it (``restore_tuner``).
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow.fs as pafs

from tune_risk.tune.restore_points import (
    PREFIX,
    SEALED,
    RestorePoints,
    pack_restore_point,
    restore_point_name,
    searcher_marks,
    unpack_restore_point,
)
from tune_risk.tune.snapshot_files import (
    TUNER_PKL,
    Snapshot,
    digest,
    load_pickle,
    read_experiment_state,
    read_search_gen_state,
    tune_files,
)

__all__ = [  # RestorePoints: re-exported, as pickled searcher states of earlier versions name it here
    "RepairReport",
    "RestorePoints",
    "SnapshotError",
    "check_snapshot",
    "experiment_filesystem",
    "repair_experiment",
    "restore_tuner",
]

logger = logging.getLogger(__name__)

DISCARDED = "tune_risk-discarded"
_FINISHED = ("TERMINATED", "ERROR")


class SnapshotError(RuntimeError):
    """No consistent snapshot of the experiment could be found (the message says what was checked)."""


# ---------------------------------------------------------------------------------------------- checks
def check_snapshot(snapshot: Snapshot) -> list[str]:
    """What makes ``snapshot`` unusable (empty list: its files are complete and belong together).

    Fills in ``snapshot.seq`` from the searcher's marks when it was unknown (current files).
    """
    names = tune_files(snapshot.session)
    missing = [n for n in names.required if n not in snapshot.files]
    if missing:
        return [f"missing {', '.join(missing)}"]
    problems = []
    try:
        session, trials = read_experiment_state(snapshot.files[names.experiment])
    except Exception as error:  # a torn file fails in json, a foreign one in the keys
        return [f"{names.experiment} does not parse ({type(error).__name__}: {str(error)[:80]})"]
    if session != snapshot.session:
        problems.append(f"{names.experiment} belongs to session {session}")
    try:
        marks = searcher_marks(load_pickle(snapshot.files[names.searcher]))
    except Exception as error:
        return [*problems, f"{names.searcher} does not load ({type(error).__name__}: {str(error)[:80]})"]
    if marks is None or marks.experiment_digest is None:
        problems.append(f"{names.searcher} is not a RiskAwareSearch snapshot with restore marks")
    elif marks.experiment_digest != digest(snapshot.files[names.experiment]) or marks.session != snapshot.session:
        problems.append(f"{names.searcher} belongs to another snapshot than {names.experiment}")
    elif snapshot.seq is None:
        snapshot.seq = marks.seq  # the current files' position in the session
    elif snapshot.seq != marks.seq:
        problems.append(f"the restore point's sequence number {snapshot.seq} is not its searcher's {marks.seq}")
    try:
        counter, live = read_search_gen_state(snapshot.files[names.search_gen])
    except Exception as error:
        return [*problems, f"{names.search_gen} does not load ({type(error).__name__}: {str(error)[:80]})"]
    unfinished = {t for t, status in trials.items() if status not in _FINISHED}
    if counter != len(trials):
        problems.append(f"{names.search_gen} counts {counter} trials, {names.experiment} has {len(trials)}")
    elif live is not None and live != unfinished:
        problems.append(f"{names.search_gen} has live trials {sorted(live ^ unfinished)} that "
                        f"{names.experiment} does not (or the reverse)")
    return problems


# ---------------------------------------------------------------------------------------------- storage access
def experiment_filesystem(path: str | os.PathLike,
                          storage_filesystem: pafs.FileSystem | None = None) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, path)`` of an experiment directory: a local path, a URI or a path on ``storage_filesystem``."""
    path = str(path)
    if storage_filesystem is not None:
        return storage_filesystem, path
    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(path))


class _Store:
    """The experiment directory through a ``pyarrow`` filesystem (local or remote)."""

    def __init__(self, fs: pafs.FileSystem, root: str) -> None:
        self.fs, self.root = fs, root.rstrip("/")

    def names(self) -> list[str]:
        info = self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True, recursive=False))
        return sorted(i.base_name for i in info if i.type == pafs.FileType.File)

    def read(self, name: str) -> bytes:
        with self.fs.open_input_stream(f"{self.root}/{name}") as stream:
            return stream.readall()

    def write(self, name: str, blob: bytes) -> None:
        """Write atomically (a temporary file, then a rename), so a crash here tears nothing."""
        tmp = f"{self.root}/.{name}.{uuid.uuid4().hex}.tmp"
        with self.fs.open_output_stream(tmp) as stream:
            stream.write(blob)
        self.fs.move(tmp, f"{self.root}/{name}")

    def discard(self, name: str, folder: str) -> str:
        """Move ``name`` to ``tune_risk-discarded/<folder>/`` (kept for inspection, invisible to Tune)."""
        target = f"{DISCARDED}/{folder}/{name}"
        self.fs.create_dir(f"{self.root}/{DISCARDED}/{folder}", recursive=True)
        self.fs.move(f"{self.root}/{name}", f"{self.root}/{target}")
        return target


# ---------------------------------------------------------------------------------------------- repair
@dataclass
class RepairReport:
    """What ``repair_experiment`` found and did."""

    path: str
    session: str
    seq: int | None
    source: str  # "current files" (nothing to repair) or the restore point / session it came from
    repaired: bool
    written: list[str] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    rejected: dict[str, list[str]] = field(default_factory=dict)  # candidate -> its problems
    sealed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _session_of(name: str) -> str | None:
    """The session of a Tune snapshot file or a restore point, from its name (``None`` for other files)."""
    from fnmatch import fnmatch

    if name.startswith(PREFIX) and name.endswith(".zip"):
        return name[len(PREFIX): -len(".zip")].rsplit("-", 1)[0]
    star = tune_files("*")
    for pattern in (*star.required, star.callbacks):
        if fnmatch(name, pattern):
            prefix, suffix = pattern.split("*")
            return name[len(prefix): len(name) - len(suffix)]
    return None


def _sessions(names: list[str]) -> list[str]:
    """Sessions with Tune snapshot files, newest first (Tune too takes the greatest name)."""
    return sorted({_session_of(n) for n in names if _session_of(n) and not n.startswith(PREFIX)}, reverse=True)


def _candidates(store: _Store, names: list[str], rejected: dict[str, list[str]]) -> list[Snapshot]:
    """Every snapshot in storage: each session's current files and each readable restore point."""
    snapshots = []
    for session in _sessions(names):
        files = {n: store.read(n) for n in (*tune_files(session).required, tune_files(session).callbacks)
                 if n in names}
        snapshots.append(Snapshot(session, None, files, f"current files of session {session}"))
    for name in names:
        if name.startswith(PREFIX) and name.endswith(".zip"):
            try:
                snapshots.append(unpack_restore_point(store.read(name), name))
            except ValueError as error:
                rejected[name] = [str(error)]
    return snapshots


def _newness(snapshot: Snapshot) -> tuple:
    """Newest session first, then highest sequence number; current files before a restore point of the
    same snapshot (they need no rewrite)."""
    return snapshot.session, snapshot.seq if snapshot.seq is not None else -1, not snapshot.source.startswith(PREFIX)


def _choose(snapshots: list[Snapshot], rejected: dict[str, list[str]]) -> Snapshot | None:
    """The newest consistent snapshot: sessions are checked newest first, and the first session with a
    consistent snapshot gives its newest one."""
    for session in sorted({s.session for s in snapshots}, reverse=True):
        valid = []
        for snapshot in (s for s in snapshots if s.session == session):
            problems = check_snapshot(snapshot)
            if problems:
                rejected[snapshot.source] = problems
            else:
                valid.append(snapshot)
        if valid:
            return max(valid, key=_newness)
    return None


def repair_experiment(path: str | os.PathLike, storage_filesystem: pafs.FileSystem | None = None) -> RepairReport:
    """Make the snapshot that ``tune.Tuner.restore(path)`` loads the newest consistent one (module docstring).

    Returns what was found and done; raises ``SnapshotError`` if there is no experiment snapshot at
    ``path`` or none is consistent. Safe to call on a healthy experiment (it then only seals the
    current snapshot as a restore point) and to call again.
    """
    fs, root = experiment_filesystem(path, storage_filesystem)
    store = _Store(fs, root)
    names = store.names()
    rejected: dict[str, list[str]] = {}
    snapshots = _candidates(store, names, rejected)
    if not snapshots and not rejected:
        raise SnapshotError(f"no Ray Tune experiment snapshot in {root} (no experiment_state-*.json, "
                            f"searcher-state-*.pkl or {PREFIX}*.zip): check the path, or start a new tune.Tuner")
    chosen = _choose(snapshots, rejected)
    if chosen is None:
        details = "; ".join(f"{source}: {', '.join(problems)}" for source, problems in rejected.items())
        raise SnapshotError(
            f"no consistent snapshot of the experiment in {root}: {details}. Tune would restart it from "
            f"scratch; start it again with a new tune.Tuner (or restore by hand from the dead driver's "
            f"staging directory /tmp/ray/session_*/artifacts/*/<experiment>/driver_artifacts)")
    report = RepairReport(root, chosen.session, chosen.seq, chosen.source, False, rejected=rejected)
    _apply(store, names, chosen, snapshots, report)
    if report.repaired:
        logger.warning("repaired the experiment snapshot in %s: restored %s (session %s, snapshot %s); "
                       "rejected: %s; moved aside: %s", root, chosen.source, chosen.session, chosen.seq,
                       rejected, report.discarded)
    return report


def _apply(store: _Store, names: list[str], chosen: Snapshot, snapshots: list[Snapshot],
           report: RepairReport) -> None:
    """Write ``chosen`` back as its session's files, move newer sessions' files aside, fix ``tuner.pkl``, seal."""
    folder = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S-%fZ")
    for name in names:  # a newer session's files would be loaded instead of the chosen ones
        session = _session_of(name)
        if session is not None and session > chosen.session:
            report.discarded.append(store.discard(name, folder))
    own = tune_files(chosen.session)
    for name in (*own.required, own.callbacks):
        wanted = chosen.files.get(name)
        if name in names:
            if wanted is not None and store.read(name) == wanted:
                continue
            report.discarded.append(store.discard(name, folder))
        if wanted is not None:
            store.write(name, wanted)
            report.written.append(name)
    _fix_tuner_pkl(store, names, chosen, snapshots, report, folder)
    report.repaired = bool(report.written or report.discarded)
    _seal(store, chosen, snapshots, report)


def _fix_tuner_pkl(store: _Store, names: list[str], chosen: Snapshot, snapshots: list[Snapshot],
                   report: RepairReport, folder: str) -> None:
    """``tuner.pkl`` never changes after the run starts, but after a restore every copy rewrites it: if a
    restore point holds it and the storage's copy differs, the storage's copy was torn."""
    holders = sorted((s for s in snapshots if TUNER_PKL in s.files), key=_newness, reverse=True)
    if not holders:
        return  # no restore point holds it: it was never staged, so never rewritten
    current = store.read(TUNER_PKL) if TUNER_PKL in names else None
    if current != holders[0].files[TUNER_PKL]:
        if current is not None:
            report.discarded.append(store.discard(TUNER_PKL, folder))
        store.write(TUNER_PKL, holders[0].files[TUNER_PKL])
        report.written.append(TUNER_PKL)


def _seal(store: _Store, chosen: Snapshot, snapshots: list[Snapshot], report: RepairReport) -> None:
    """Keep the snapshot handed to Tune as a restore point: the next session's copies rewrite its files."""
    if any(s.source.startswith(PREFIX) and s.session == chosen.session and s.seq == chosen.seq
           and all(s.files.get(n) == b for n, b in chosen.files.items()) for s in snapshots):
        return
    files = dict(chosen.files)
    try:
        files.setdefault(TUNER_PKL, store.read(TUNER_PKL))
    except OSError:
        pass  # no tuner.pkl: Tune will say so
    report.sealed = restore_point_name(chosen.session, SEALED)
    store.write(report.sealed, pack_restore_point(chosen.session, chosen.seq or 0, files))


def restore_tuner(path: str | os.PathLike, trainable: Any, *, storage_filesystem: pafs.FileSystem | None = None,
                  **restore_kwargs: Any):
    """``repair_experiment(path)``, then ``tune.Tuner.restore(path, trainable, ...)``: use it instead of
    ``Tuner.restore`` for experiments run with ``RiskAwareSearch``. Raises ``SnapshotError`` rather than
    restarting from scratch when no consistent snapshot exists.

    Args:
        path: the experiment folder (``<storage_path>/<name>``, ``ResultGrid.experiment_path``), a local
            path or a URI.
        trainable: the interrupted run's trainable (a pooled one made on a new ``rl_tasks.WorkerPool``).
        storage_filesystem: the ``pyarrow.fs.FileSystem`` that holds ``path``, as given to
            ``tune.RunConfig``; ``None``: inferred from ``path``.
        **restore_kwargs: further arguments of ``tune.Tuner.restore`` (e.g. ``resume_errored=True``).

    Example:
        >>> import tempfile
        >>> from tune_risk import restore_tuner
        >>> def train(config): pass
        >>> tuner = restore_tuner("/results/my_run", trainable=train)  # doctest: +SKIP
        >>> grid = tuner.fit()  # doctest: +SKIP
        >>> with tempfile.TemporaryDirectory() as empty:  # a folder without an experiment
        ...     restore_tuner(empty, trainable=train)
        Traceback (most recent call last):
            ...
        tune_risk.tune.restore.SnapshotError: no Ray Tune experiment snapshot in ...
    """
    from ray import tune

    report = repair_experiment(path, storage_filesystem)
    if not report.repaired:
        logger.info("experiment snapshot in %s is consistent (session %s, snapshot %s)", report.path,
                    report.session, report.seq)
    restore_path = str(path) if storage_filesystem is not None or "://" in str(path) else report.path
    return tune.Tuner.restore(restore_path, trainable=trainable, storage_filesystem=storage_filesystem,
                              **restore_kwargs)
