"""The part store of a table being generated: one file per configuration, a manifest, claims.

Each configuration's result is written to ``<out dir>/_parts/<table stem>/config_XXXX.json`` (``part_path``)
as soon as it finishes, atomically (``replace_with``), with the CPU it was computed on (``cpu_signature``);
``manifest.json`` beside the parts holds the table's settings, and ``check_manifest`` refuses a rerun with
other settings. Generators sharing a table claim a configuration before computing it (``claim_part``).
The run loop that fills the store, and the table it finally writes, are ``rl_tasks.generate``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rl_tasks.locks import try_lock


def parts_dir(out: Path) -> Path:
    """Where the per-configuration results of the table ``out`` live."""
    return out.parent / "_parts" / out.stem


def parts_done(out: Path) -> int:
    """How many configurations of ``out`` have their part written (by any generator)."""
    return len(list(parts_dir(out).glob("config_*.json")))


def part_path(out: Path, config_id: int) -> Path:
    """The saved result of configuration ``config_id`` of the table ``out``."""
    return parts_dir(out) / f"config_{config_id:04d}.json"


def _json_float(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def make_manifest(algo: str, env: str, n_configs: int, seeds: Sequence[int], steps: int, seed: int,
                  eval_episodes: int, layout: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
    """The settings the parts of a table depend on (what ``check_manifest`` compares on a rerun)."""
    manifest = {
        "algorithm": algo, "environment": env, "n_configs": n_configs, "seeds": list(seeds), "training_steps": steps,
        "sobol_seed": seed, "eval_episodes": eval_episodes, "batching_layout": layout,
    }
    if fixed:  # only when given, so that tables made before --fixed existed still resume
        manifest["fixed_overrides"] = dict(sorted(fixed.items()))
    return manifest


def _manifest_path(out: Path) -> Path:
    return parts_dir(out) / "manifest.json"


def read_manifest(out: Path) -> dict[str, Any]:
    """The settings the parts of ``out`` were computed with (``{}`` before its first part)."""
    path = _manifest_path(out)
    return json.loads(path.read_text()) if path.exists() else {}


def check_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest of a new table or verify that an existing one matches (resume safety).

    Generators started together read it while another writes it, so it is replaced atomically and left
    untouched when nothing changes (an in-place rewrite showed one of them an empty file)."""
    path = _manifest_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = read_manifest(out)
    if old:
        comparable = {k: v for k, v in old.items() if k != "n_configs"}
        if comparable != {k: v for k, v in manifest.items() if k != "n_configs"}:
            raise ValueError(
                f"{path} was written with different settings ({old}); delete {path.parent} to start afresh or rerun "
                "with the recorded settings"
            )
        manifest = {**manifest, "n_configs": max(old["n_configs"], manifest["n_configs"])}
    if manifest != old:
        replace_with(path, lambda tmp: tmp.write_text(json.dumps(manifest, indent=1) + "\n"))


def write_part(out: Path, config_id: int, config: dict[str, Any], seeds: Sequence[int], result: dict[str, Any]) -> None:
    """Save configuration ``config_id``'s result (``compute_config``'s) as its part, NaN returns as ``null``."""
    part = {
        "config_id": config_id, "config": config, "seeds": list(seeds),
        "returns": [_json_float(r) for r in result["returns"]],
        "batch_time": result["batch_time"], "compile_time": result["compile_time"], "cpu": cpu_signature(),
    }
    replace_with(part_path(out, config_id), lambda tmp: tmp.write_text(json.dumps(part) + "\n"))


@contextmanager
def claim_part(out: Path, config_id: int) -> Iterator[bool]:
    """Claim configuration ``config_id`` of ``out`` for this process: yields ``False`` when another generator holds it.

    The claim is a lock on ``_parts/<stem>/config_XXXX.claim`` (``rl_tasks.locks``), dropped by the kernel if the
    process dies, so a crashed generator blocks nobody. Its file is removed on release; a generator that locks a
    file just removed, or recreates it, finds the part already written (the holder writes it before releasing),
    so check for the part after claiming.
    """
    path = part_path(out, config_id).with_suffix(".claim")
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = try_lock(path)
    if descriptor is None:
        yield False
        return
    try:
        yield True
    finally:
        path.unlink(missing_ok=True)
        os.close(descriptor)


def read_part(out: Path, config_id: int, config: dict[str, Any], seeds: Sequence[int]) -> dict[str, Any] | None:
    """The saved part of configuration ``config_id`` (``None``: not computed yet); ``ValueError`` if it holds
    another configuration or other seeds."""
    path = part_path(out, config_id)
    if not path.exists():
        return None
    part = json.loads(path.read_text())
    if part["config"] != config or part["seeds"] != list(seeds):
        raise ValueError(f"{path} holds a different configuration or seeds; delete it to recompute")
    return part


def replace_with(path: Path, write: Callable[[Path], Any]) -> None:
    """``write`` a temporary file beside ``path``, then rename it onto ``path``: readers (and a generator sharing
    the table) see the old file or the whole new one, never a torn one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    tmp.replace(path)


_VECTOR_ISA = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_bf16",
               "avx512_fp16", "avx512_vnni", "amx_bf16")


@functools.cache  # the CPU of a process does not change; read once, then once per part from the cache
def cpu_signature() -> str:
    """The CPU a part was computed on, as far as it can change the returns: model name, family and model, and the
    vector instruction sets present (``/proc/cpuinfo``; elsewhere ``platform.processor()``).

    Why per part: XLA:CPU compiles for the host's instruction set, and the PPO returns of the first 128 configurations
    of ``ppo_cartpole`` and ``ppo_acrobot``, computed on one VM host, did not regenerate bit for bit on a later
    one with the same software and code (``datasets/README.md``); a table extended across sessions mixes hosts.
    """
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block describes them all
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    flags = set(fields.get("flags", "").split())
    isa = " ".join(f for f in _VECTOR_ISA if f in flags)
    return f"{fields.get('model name', '?')} | family {fields.get('cpu family', '?')} model {fields.get('model', '?')} | {isa}"
