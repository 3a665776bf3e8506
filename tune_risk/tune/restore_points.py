"""Restore points: the spare copies of Tune snapshots that ``RiskAwareSearch`` writes as a run goes.

``RestorePoints`` (pickled inside the searcher's state) marks each searcher snapshot with the digest of
its trial list and writes the previous, complete snapshot as one zip file ``tune_risk-restore-S-{0,1}.zip``
into Tune's staging directory; ``pack_restore_point`` / ``unpack_restore_point`` are that zip format
(the files and a manifest of SHA-256s), ``searcher_marks`` finds the marks in a searcher file. Why one
snapshot late, why two slots and why the rate limit: ``tune_risk.tune.restore``'s docstring, point 1.
"""

from __future__ import annotations

import io
import json
import logging
import os
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

from tune_risk.tune.snapshot_files import TUNER_PKL, Opaque, Snapshot, TuneFiles, digest, tune_files

logger = logging.getLogger(__name__)

FORMAT = 1
PREFIX = "tune_risk-restore-"
SEALED = "sealed"
MIN_RESTORE_POINT_INTERVAL_S = 1.0
LEGACY_ORIGINS = {("tune_risk.tune.restore", "RestorePoints")}
"""Where earlier versions defined ``RestorePoints``: the searcher files they wrote name it there."""


def restore_point_name(session: str, slot: str) -> str:
    return f"{PREFIX}{session}-{slot}.zip"


def pack_restore_point(session: str, seq: int, files: dict[str, bytes]) -> bytes:
    """One zip holding a snapshot's files and a manifest (session, sequence number, SHA-256 per file)."""
    manifest = {"format": FORMAT, "session": session, "seq": seq, "files": {n: digest(b) for n, b in files.items()}}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        for name, blob in files.items():
            archive.writestr(name, blob)
    return buffer.getvalue()


def unpack_restore_point(blob: bytes, source: str) -> Snapshot:
    """The snapshot in a restore point; raises ``ValueError`` if it is torn or altered."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            files = {name: archive.read(name) for name in manifest["files"]}
    except Exception as error:  # a torn zip fails in many ways (BadZipFile, zlib.error, EOFError, KeyError...)
        raise ValueError(f"unreadable ({type(error).__name__}: {str(error)[:80]})") from None
    if manifest.get("format") != FORMAT:
        raise ValueError(f"format {manifest.get('format')!r}, this tune_risk reads {FORMAT}")
    bad = [name for name, blob in files.items() if digest(blob) != manifest["files"][name]]
    if bad:
        raise ValueError(f"checksum mismatch for {bad}")
    return Snapshot(manifest["session"], int(manifest["seq"]), files, source)


class RestorePoints:
    """Kept by ``RiskAwareSearch``: marks each searcher snapshot with the digest of its trial list, and
    writes the previous snapshot as a restore point into Tune's staging directory (``tune_risk.tune.restore``'s
    docstring).

    Pickled with the searcher (``session``, ``seq``, ``experiment_digest``); the previous snapshot's
    ``experiment_state`` bytes are held in memory only.
    """

    def __init__(self) -> None:
        self.session: str | None = None
        self.seq = 0
        self.experiment_digest: str | None = None
        self._pending: bytes | None = None
        self._last_written = float("-inf")
        self._slot = 0  # the slot of the next restore point: they alternate, whatever the rate limit skips

    def __getstate__(self) -> dict[str, Any]:
        return {"session": self.session, "seq": self.seq, "experiment_digest": self.experiment_digest}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()
        self.__dict__.update(state)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RestorePoints) and self.__getstate__() == other.__getstate__()

    def __repr__(self) -> str:
        return f"RestorePoints(session={self.session!r}, seq={self.seq})"

    def before_searcher_save(self, staging_dir: str, session: str) -> None:
        """Tune is about to write the searcher's snapshot into ``staging_dir``: mark it, and write the
        previous snapshot (complete in staging now) as a restore point.

        Relies on Tune's order in ``TuneController.save_to_dir`` (ray 2.60): ``experiment_state`` is
        written first, the searcher next, then ``search_gen_state`` and the callbacks' state. Outside
        a Tune snapshot (no ``experiment_state`` for ``session`` in ``staging_dir``) it does nothing.
        """
        names = tune_files(session)
        staging = Path(staging_dir)
        try:
            experiment = (staging / names.experiment).read_bytes()
        except OSError:
            self.experiment_digest = None
            return
        if session != self.session:
            self.session, self.seq, self._pending, self._slot = session, 0, None, 0
        if self._pending is not None and time.monotonic() - self._last_written >= MIN_RESTORE_POINT_INTERVAL_S:
            try:
                self._write_previous(staging, names)
            except OSError as error:  # a restore point is a spare: never fail Tune's own snapshot for it
                logger.warning("could not write a tune_risk restore point in %s: %s", staging, error)
        self.seq += 1
        self._pending = experiment
        self.experiment_digest = digest(experiment)

    def _write_previous(self, staging: Path, names: TuneFiles) -> None:
        """Write snapshot ``seq`` (its ``experiment_state`` from memory, the rest from staging) to its slot,
        atomically, and delete the other slot from staging so that Tune's copies leave it alone."""
        files = {names.experiment: self._pending}
        for name in (names.searcher, names.search_gen, names.callbacks, TUNER_PKL):
            if (staging / name).exists():
                files[name] = (staging / name).read_bytes()
        if names.searcher not in files or names.search_gen not in files:
            return  # the previous save did not complete (no searcher or wrapper file): nothing to keep
        slot, self._slot = self._slot, 1 - self._slot
        target = staging / restore_point_name(self.session, str(slot))
        tmp = staging.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"  # outside what Tune copies
        tmp.write_bytes(pack_restore_point(self.session, self.seq, files))
        os.replace(tmp, target)
        (staging / restore_point_name(self.session, str(1 - slot))).unlink(missing_ok=True)
        self._last_written = time.monotonic()


def searcher_marks(state: Any) -> RestorePoints | None:
    """The ``RestorePoints`` inside a searcher state (``RiskAwareSearch.get_state``, unpickled or read by
    ``load_pickle``), if any."""
    origins = {(RestorePoints.__module__, RestorePoints.__qualname__), *LEGACY_ORIGINS}
    for value in state.values() if isinstance(state, dict) else ():
        if isinstance(value, RestorePoints):
            return value
        current = value.origin if isinstance(value, Opaque) else None  # read by load_pickle, not unpickled
        if current in origins and isinstance(value.state, dict):
            marks = RestorePoints()
            marks.__setstate__(value.state)
            return marks
    return None
