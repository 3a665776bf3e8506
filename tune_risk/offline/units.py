"""Resumable replay output: one pair of CSV files per (table, method, repeat) unit, and a manifest.

A replay of many tables, methods and repeats can take hours; an interrupted one must keep what
finished. Each unit's rows are written, as soon as it finishes, to
``<out>/units/<table>/<method>/repeat_<r>.rounds.csv`` and then ``...runs.csv`` (each written to a
temporary file and renamed, so a unit is either complete or absent: its ``runs`` file marks it
done). ``<out>/replay.json`` records the settings that decide the results (budget, workers, warp,
engine flags...) and a SHA-256 of each table; a rerun into the same ``--out`` with other settings or
a changed table is refused instead of mixing results. Replays are deterministic, so the final
``runs.csv`` / ``rounds.csv``, concatenated from the unit files in job order, are the same bytes
whether or not the run was interrupted and resumed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "replay.json"
UNITS = "units"
KINDS = ("rounds", "runs")  # written in this order: "runs" marks a finished unit


@dataclass(frozen=True)
class Unit:
    """One replay: a method on a table in one repetition."""

    table: str
    method: str
    repeat: int

    def label(self) -> str:
        return f"{self.table} {self.method} repeat {self.repeat}"


class UnitStore:
    """The unit files and the manifest under an output directory."""

    def __init__(self, out: Path) -> None:
        self.out = out

    def prepare(self, protocol: dict[str, Any], tables: dict[str, str],
                methods: dict[str, dict[str, Any]] | None = None) -> None:
        """Create ``out`` and check (then extend) its manifest; ``ValueError`` if it holds another replay.

        ``protocol``: the settings that decide every unit's result; ``tables``: name -> SHA-256; ``methods``:
        name -> what the name resolves to (an own method's full ``EngineSettings``, a peer's searcher and the
        versions of the libraries it runs on). The flags alone do not decide a unit: a method's defaults can
        change between versions of tune_risk (or of Optuna), and a resumed replay must not mix the two.
        """
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"--out {self.out}: cannot create the output directory ({err.strerror})") from err
        path = self.out / MANIFEST
        old = self._read_manifest(path)
        methods = json.loads(json.dumps(methods or {}, default=str))  # as the manifest stores it (tuples: lists)
        if old is not None:
            _check_same(self.out, old.get("protocol", {}), protocol, old.get("tables", {}), tables)
            _check_same_methods(self.out, old.get("methods", {}), methods)
            tables = {**old.get("tables", {}), **tables}
            methods = {**old.get("methods", {}), **methods}
        manifest = {"protocol": protocol, "tables": tables, "methods": methods}
        _write_atomic(path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")

    @staticmethod
    def _read_manifest(path: Path) -> dict[str, Any] | None:
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: unreadable replay manifest ({err}); delete it and the units folder") from err

    def path(self, unit: Unit, kind: str) -> Path:
        return self.out / UNITS / unit.table / unit.method / f"repeat_{unit.repeat}.{kind}.csv"

    def is_done(self, unit: Unit) -> bool:
        return self.path(unit, "runs").exists()

    def write(self, unit: Unit, rows: dict[str, list[dict[str, Any]]]) -> None:
        """Write a finished unit's ``rounds`` then ``runs`` rows (``rows[kind]``)."""
        import pandas as pd

        for kind in KINDS:
            path = self.path(unit, kind)
            path.parent.mkdir(parents=True, exist_ok=True)
            text = pd.DataFrame(rows[kind]).to_csv(index=False, lineterminator="\n") if rows[kind] else ""
            _write_atomic(path, text)

    def assemble(self, units: list[Unit], kind: str, dest: Path) -> None:
        """Concatenate the units' ``kind`` files (one header) into ``dest``."""
        header, bodies = None, []
        for unit in units:
            text = self.path(unit, kind).read_text()
            if not text:
                continue  # a unit without rows of this kind
            first, _, body = text.partition("\n")
            if header is not None and first != header:
                raise ValueError(f"{self.path(unit, kind)}: columns {first!r} differ from the other units' {header!r}")
            header = first
            bodies.append(body)
        _write_atomic(dest, "" if header is None else header + "\n" + "".join(bodies))


def _check_same(out: Path, old: dict[str, Any], new: dict[str, Any], old_tables: dict[str, str],
                new_tables: dict[str, str]) -> None:
    """Refuse to resume into an output directory written with other settings or tables."""
    changed = [f"{key}: {old.get(key)!r} there, {new.get(key)!r} here"
               for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    changed += [f"table {name!r} changed since" for name, digest in new_tables.items()
                if old_tables.get(name, digest) != digest]
    if changed:
        raise ValueError(f"--out {out} holds results of a replay with other settings ({'; '.join(changed)}); "
                         f"rerun with the same settings, use another --out or delete {out / UNITS} and {out / MANIFEST}")


def _check_same_methods(out: Path, old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> None:
    """Refuse to resume a method whose name now resolves to other settings than the units under ``out`` used."""
    changed = []
    for name in sorted(set(old) & set(new)):
        fields = [f"{key} {old[name].get(key)!r} there, {new[name].get(key)!r} here"
                  for key in sorted(set(old[name]) | set(new[name])) if old[name].get(key) != new[name].get(key)]
        if fields:
            changed.append(f"{name}: {', '.join(fields)}")
    if changed:
        raise ValueError(f"--out {out} holds replays of methods that now resolve to other settings "
                         f"({'; '.join(changed)}: this version of tune_risk or of a peer's library differs from the "
                         f"one that wrote them); use another --out or delete {out / UNITS} and {out / MANIFEST}")


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so that an interrupt leaves no partial file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
