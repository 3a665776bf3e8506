"""Compact, resumable store of benchmark runs: one Parquet file plus an append-only journal.

A run is the dictionary the benchmark writes (``BOResult.to_dict()`` plus ``steps``): ``task``,
``method``, ``seed``, ``steps``, ``n_init``, ``optimum``, ``seconds``, ``settings`` (the OSCBO game's
``lambda_init``, ``omega``, ``form``; empty for the other methods), ``X``, ``values`` and ``rounds``
(one dictionary per BO round). A folder holds

* ``runs.parquet``: one row per run, the per-round fields as list columns (columnar, zstd, byte-stream
  split floats), sorted by task, method, settings and seed. About 5 KB a run instead of 53 KB of JSON.
* ``runs.journal.jsonl``: runs finished since the last ``compact()``, one JSON line each, appended as they
  finish so that a kill loses at most the run in progress (a line cut off mid-write is dropped).

What is kept exactly and what is not:

* float64, bit for bit: ``values``, ``optimum``, ``seconds`` and every per-round field the summary reads
  (``theta``, ``kappa``, ``calibration``, ``width``, ``covered``, ``lambda``) and the other logged ones
  (``oscbo_V``, ``phase``, ``q``, ``beta_delta``, ``theta_cal``);
* float32 (relative error below 6e-8): the query points ``X`` on the unit cube and the sharpness loss
  ``sharpness``; no summary number depends on them;
* not stored: ``RUNNING_FIELDS`` of ``oscbo_harness.loop`` (``t``, ``value``, running coverage,
  mean width and ``V``), recomputed on load by the loop's own ``add_running_diagnostics``. ``append``
  and ``write_runs`` refuse a run whose running fields differ from that recomputation.

A run is identified by ``run_key``: task, method, seed, steps, ``n_init`` and its settings, so runs of
the same method under different OSCBO settings (e.g. ``lambda_1 = 1`` and the default) live side by side.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from oscbo_harness.loop import RUNNING_FIELDS, add_running_diagnostics
from tune_risk.gp.exact import DTYPE
from tune_risk.oscbo import NOISE, fit_lengthscale_mll, standardize

STORE_FILE = "runs.parquet"
JOURNAL_FILE = "runs.journal.jsonl"
LEGACY_FILE = "runs.jsonl"  # the JSON-lines file of the code before this store; imported once
LEGACY_SETTINGS = {"lambda_init": 1.0, "omega": 0.001, "form": "prefix"}  # that code's only OSCBO settings
RUN_FIELDS = ("task", "method", "seed", "steps", "n_init", "optimum", "seconds", "settings", "X", "values", "rounds")
SCALAR_ROUND_FIELDS = {  # per-round field -> Arrow type of its values
    "kappa": pa.float64(), "calibration": pa.float64(), "width": pa.float64(), "covered": pa.bool_(),
    "sharpness": pa.float32(), "lambda": pa.float64(), "oscbo_V": pa.float64(), "phase": pa.string(),
    "q": pa.float64(), "beta_delta": pa.float64(),
}
VECTOR_ROUND_FIELDS = ("theta", "theta_cal")  # lengthscales: a list per round
REQUIRED_ROUND_FIELDS = ("theta", "kappa", "calibration", "width", "covered", "sharpness")
SCHEMA = pa.schema(
    [("task", pa.string()), ("method", pa.string()), ("settings", pa.string()), ("seed", pa.int64()),
     ("steps", pa.int64()), ("n_init", pa.int64()), ("optimum", pa.float64()), ("seconds", pa.float64()),
     ("dim", pa.int64()), ("values", pa.list_(pa.float64())), ("X", pa.list_(pa.float32()))]
    + [(name, pa.list_(kind)) for name, kind in SCALAR_ROUND_FIELDS.items()]
    + [(name, pa.list_(pa.list_(pa.float64()))) for name in VECTOR_ROUND_FIELDS]
)
RUN_KEY_FIELDS = ("task", "method", "seed", "steps", "n_init", "settings")
DICTIONARY_COLUMNS = ["task", "method", "settings", "phase.list.element"]  # few distinct strings
SORT_KEYS = [("task", "ascending"), ("method", "ascending"), ("settings", "ascending"), ("seed", "ascending")]
COMPRESSION_LEVEL = 19  # zstd; writing 1,500 runs takes a few seconds


def settings_key(settings: dict[str, Any] | None) -> str:
    """Canonical JSON of a run's settings (sorted keys; floats by ``repr``, so exact)."""
    return json.dumps(settings or {}, sort_keys=True)


def run_key(run: dict[str, Any]) -> tuple:
    """``(task, method, seed, steps, n_init, settings)``: what makes two runs the same run."""
    return (run["task"], run["method"], int(run["seed"]), int(run["steps"]), int(run["n_init"]),
            settings_key(run.get("settings")))


# ---------------------------------------------------------------------------------------------- runs <-> table
def runs_to_table(runs: Iterable[dict[str, Any]]) -> pa.Table:
    """The store's table of ``runs`` (checked: known fields only, running fields as recomputed)."""
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for run in runs:
        check_run(run)
        X = np.asarray(run["X"], dtype=np.float64)
        base = {"task": run["task"], "method": run["method"], "settings": settings_key(run.get("settings")),
                "seed": int(run["seed"]), "steps": int(run["steps"]), "n_init": int(run["n_init"]),
                "optimum": run["optimum"], "seconds": float(run["seconds"]), "dim": int(X.shape[1]),
                "values": [float(v) for v in run["values"]], "X": X.astype(np.float32).ravel()}
        for name, value in {**base, **_round_columns(run["rounds"])}.items():
            columns[name].append(value)
    return pa.table(columns, schema=SCHEMA)


def check_run(run: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless ``run`` can be stored and given back as it is (up to the float32 fields)."""
    name = f"run {run_key(run)}" if all(k in run for k in ("task", "method", "seed", "steps", "n_init")) else "a run"
    missing = [k for k in RUN_FIELDS if k not in run and k != "settings"]
    if missing:
        raise ValueError(f"{name} lacks the fields {missing}")
    known = set(SCALAR_ROUND_FIELDS) | set(VECTOR_ROUND_FIELDS) | set(RUNNING_FIELDS)
    for t, row in enumerate(run["rounds"], start=1):
        unknown = sorted(set(row) - known)
        absent = [k for k in REQUIRED_ROUND_FIELDS if k not in row]
        if unknown or absent:
            raise ValueError(f"{name}, round {t}: fields {unknown} have no column in the run store and "
                             f"{absent} are required; known per-round fields: {sorted(known)}")
    recomputed = [{k: row[k] for k in row if k not in RUNNING_FIELDS} for row in run["rounds"]]
    add_running_diagnostics(recomputed, run["values"], int(run["n_init"]))
    for t, (row, again) in enumerate(zip(run["rounds"], recomputed, strict=True), start=1):
        for field in RUNNING_FIELDS:
            if field in row and row[field] != again[field]:
                raise ValueError(f"{name}, round {t}: {field}={row[field]!r} differs from its recomputation "
                                 f"{again[field]!r} from the per-round fields; the store would not give it back")


def _round_columns(rounds: list[dict[str, Any]]) -> dict[str, list | None]:
    """Per-round fields as one list per field; ``None`` for a field no round has."""
    out: dict[str, list | None] = {}
    for name in (*SCALAR_ROUND_FIELDS, *VECTOR_ROUND_FIELDS):
        present = [name in row for row in rounds]
        if any(present) and not all(present):
            raise ValueError(f"per-round field {name!r} is in {sum(present)} of {len(rounds)} rounds; it must be "
                             f"in all of them or in none")
        out[name] = [row[name] for row in rounds] if all(present) and rounds else None
    return out


def table_to_runs(table: pa.Table) -> list[dict[str, Any]]:
    """The runs of a store table, with ``RUNNING_FIELDS`` recomputed (inverse of ``runs_to_table``)."""
    runs = []
    for record in table.to_pylist():
        n_rounds = len(record["kappa"])
        rounds = [{} for _ in range(n_rounds)]
        for name in (*SCALAR_ROUND_FIELDS, *VECTOR_ROUND_FIELDS):
            if record[name] is not None:
                for row, value in zip(rounds, record[name], strict=True):
                    row[name] = value
        X = np.asarray(record["X"], dtype=np.float64).reshape(-1, record["dim"])
        add_running_diagnostics(rounds, record["values"], record["n_init"])
        runs.append({"task": record["task"], "method": record["method"], "seed": record["seed"],
                     "X": X.tolist(), "values": record["values"], "n_init": record["n_init"],
                     "optimum": record["optimum"], "rounds": rounds, "seconds": record["seconds"],
                     "settings": json.loads(record["settings"]), "steps": record["steps"]})
    return runs


def write_table(table: pa.Table, path: Path) -> None:
    """Write the sorted table to ``path`` atomically (a temporary file, then a rename)."""
    table = table.sort_by(SORT_KEYS)
    floats = _float_leaf_paths(table.schema)
    temporary = path.with_name(path.name + ".tmp")
    pq.write_table(table, temporary, compression="zstd", compression_level=COMPRESSION_LEVEL,
                   use_byte_stream_split=floats, use_dictionary=DICTIONARY_COLUMNS)
    os.replace(temporary, path)


def _float_leaf_paths(schema: pa.Schema) -> list[str]:
    """Parquet leaf paths (``name.list.element...``) of the floating-point columns: byte-stream split."""
    paths = []
    for field in schema:
        kind, path = field.type, field.name
        while pa.types.is_list(kind):
            kind, path = kind.value_type, path + ".list.element"
        if pa.types.is_floating(kind):
            paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------- the folder
class RunStore:
    """The runs of one benchmark folder: ``runs.parquet`` plus ``runs.journal.jsonl`` (see the module docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.store_path = self.folder / STORE_FILE
        self.journal_path = self.folder / JOURNAL_FILE

    def load(self) -> list[dict[str, Any]]:
        """Every run: the compacted ones, then the journal's (a journal run already compacted is skipped)."""
        runs = table_to_runs(pq.read_table(self.store_path)) if self.store_path.exists() else []
        keys = {run_key(run) for run in runs}
        for run in read_journal(self.journal_path):
            if run_key(run) not in keys:  # a kill between compact()'s rename and its unlink leaves duplicates
                keys.add(run_key(run))
                runs.append(run)
        return runs

    def append(self, run: dict[str, Any]) -> None:
        """Add a finished run to the journal (checked first; flushed to disk before returning)."""
        check_run(run)
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.journal_path.open("a") as file:
            file.write(json.dumps(run) + "\n")
            file.flush()
            os.fsync(file.fileno())

    def compact(self) -> int:
        """Move the journal's runs into ``runs.parquet``; returns how many were new to it."""
        if not read_journal(self.journal_path):
            self.journal_path.unlink(missing_ok=True)
            return 0
        stored = pq.read_metadata(self.store_path).num_rows if self.store_path.exists() else 0
        runs = self.load()
        self.write(runs)
        self.journal_path.unlink()
        return len(runs) - stored

    def import_legacy(self) -> int:
        """Move the runs of a ``runs.jsonl`` (the format before this store) into the store, migrated by
        ``migrate_legacy_run``, and rename that file ``runs.jsonl.imported``; returns how many runs came in."""
        legacy = self.folder / LEGACY_FILE
        if not legacy.exists():
            return 0
        runs = self.load()
        keys = {run_key(run) for run in runs}
        new = [run for run in map(migrate_legacy_run, read_journal(legacy)) if run_key(run) not in keys]
        self.write(runs + new)
        self.journal_path.unlink(missing_ok=True)
        legacy.rename(legacy.with_name(LEGACY_FILE + ".imported"))
        return len(new)

    def write(self, runs: list[dict[str, Any]]) -> None:
        """Replace ``runs.parquet`` by ``runs`` (which must have distinct keys)."""
        keys = [run_key(run) for run in runs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{len(keys) - len(set(keys))} runs repeat another run's key {RUN_KEY_FIELDS}")
        self.folder.mkdir(parents=True, exist_ok=True)
        write_table(runs_to_table(runs), self.store_path)



def read_journal(path: Path) -> list[dict[str, Any]]:
    """The runs of a JSON-lines file; a last line cut off by a kill mid-write is dropped from the file, so
    that the next append starts on a fresh line."""
    if not path.exists():
        return []
    text = path.read_text()
    if text and not text.endswith("\n"):
        kept = text[: text.rfind("\n") + 1]
        print(f"{path}: dropping an incomplete last line ({len(text) - len(kept)} characters)", flush=True)
        path.write_text(kept)
        text = kept
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def migrate_legacy_run(run: dict[str, Any]) -> dict[str, Any]:
    """A run of ``runs.jsonl`` (written before the fixes of issue #20) in today's form.

    * ``settings``: that code ran OSCBO only with ``LEGACY_SETTINGS`` (``lambda_1 = 1``); an OSCBO-L1 run
      also gets ``"dual_losses_p": 2``, because its dual step (S7) and ``V`` were fed the p = 2 losses.
    * ``theta`` of the OSCBO methods: that code logged ``theta_t``, chosen after round ``t`` (also as
      ``theta_next``); the lengthscale played in round ``t`` is ``theta_{t-1}``, and ``theta_0`` is the MLL
      fit on ``D_0`` (O-3), recomputed here exactly as the game's ``start`` computes it.
    """
    run = {**run, "rounds": [dict(row) for row in run["rounds"]]}
    run.setdefault("settings", {})
    if run["method"] in ("oscbo", "oscbo-l1"):
        run["settings"] = {**LEGACY_SETTINGS, **({"dual_losses_p": 2} if run["method"] == "oscbo-l1" else {})}
        after = [row.pop("theta_next", row["theta"]) for row in run["rounds"]]
        played = [list(legacy_theta_0(run)), *after[:-1]]
        for row, theta in zip(run["rounds"], played, strict=True):
            row["theta"] = theta
    return run


def legacy_theta_0(run: dict[str, Any]) -> tuple[float, ...]:
    """``theta_0``: the MLL fit on the run's ``D_0`` from ``ln 2`` (O-3), as ``OSCBOGame.start`` fits it."""
    n_init = int(run["n_init"])
    X = torch.as_tensor(run["X"][:n_init], dtype=DTYPE)
    y, _, _ = standardize(torch.as_tensor(run["values"][:n_init], dtype=DTYPE))
    return fit_lengthscale_mll(X, y, NOISE)
