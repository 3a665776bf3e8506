"""Generate an offline table: configurations x seeds of final evaluation returns, ARLBench long format.

Configurations are the first ``n_configs`` points of a scrambled Sobol sequence (``scipy.stats.qmc``, seeded)
mapped into the task's ARLBench search space (``rl_tasks.spaces.config_from_unit``). All seeds of one
configuration train in one vmapped JAX call (or ``devices`` pmapped calls of ``seeds / devices`` seeds each),
with every float/bool/int hyperparameter that rejax can trace passed as an array. That *batching layout* is
fixed per table and recorded in the metadata, because per-seed returns change with it (10 vs 50 seeds per
call, 1 vs 2 devices, traced vs constant hyperparameters change XLA's fusion and reduction order); with the
same layout a table regenerates bit for bit on the same software and CPU.

Resumability: each configuration's result is written to ``<out dir>/_parts/<table stem>/config_XXXX.json`` as
soon as it finishes; a rerun with the same settings skips those files. A ``manifest.json`` beside the parts
holds the settings, and a rerun with different settings refuses to mix results. Several generators (e.g. one
pinned to each core) can share a table: each claims a configuration before computing it (``claim_part``) and
skips the ones another holds; whichever finds every part done writes the table. The part store and its manifest
are ``rl_tasks.parts``; this module runs the generation and writes the table.

Output: ``<out>`` (parquet: ``config_id, seed, performance, hp_config.<name>..., wall_time``) and
``<out>.json`` (metadata; see ``table_metadata``).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import platform
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import qmc

from rl_tasks.envs import check_task
from rl_tasks.parts import (
    check_manifest,
    claim_part,
    cpu_signature,
    make_manifest,
    part_path,
    parts_done,
    read_part,
    replace_with,
    write_part,
)
from rl_tasks.spaces import (
    check_fixed_override,
    config_from_unit,
    describe_space,
    fixed_hyperparameters,
    get_space,
    space_name,
)

logger = logging.getLogger(__name__)

FORMAT = "arlbench-long"
_LIBRARIES = ("jax", "jaxlib", "rejax", "gymnax", "brax", "flax", "optax", "numpy", "scipy", "ray", "pandas")


def sobol_configs(algo: str, env: str, n_configs: int, seed: int) -> list[dict[str, Any]]:
    """The first ``n_configs`` scrambled-Sobol configurations of a task's space (seeded, deterministic)."""
    space = get_space(algo, env)
    sampler = qmc.Sobol(d=len(space), scramble=True, seed=seed)
    with warnings.catch_warnings():  # Sobol balance warning for n that is not a power of two
        warnings.simplefilter("ignore", UserWarning)
        points = sampler.random(n_configs)
    return [config_from_unit(space, point) for point in points]


def compute_config(
    algo: str, env: str, config: dict[str, Any], seeds: Sequence[int], steps: int, eval_episodes: int, devices: int,
    seeds_per_call: int, fixed: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train all seeds of one configuration and return ``{"returns": [...], "batch_time": s, "compile_time": s}``.

    Seeds are trained ``seeds_per_call`` at a time; with ``devices > 1`` each call is a pmap over ``devices``
    JAX devices of a vmap over ``seeds_per_call / devices`` seeds. Programs are compiled ahead of time once
    per process and shape; ``compile_time`` is that compilation, ``batch_time`` the training calls. ``fixed``
    overrides hyperparameters the space keeps fixed (``rl_tasks.spaces.full_config``).
    """
    import jax  # noqa: PLC0415 - JAX is imported only when a table is generated

    from rl_tasks.training import prepare, seed_keys  # noqa: PLC0415

    program, traced = prepare(algo, env, {**(fixed or {}), **config}, steps, eval_episodes)
    returns: list[float] = []
    compile_time = 0.0
    batch_time = 0.0
    for start in range(0, len(seeds), seeds_per_call):
        keys = seed_keys(list(seeds[start:start + seeds_per_call]))
        if devices > 1:
            keys = keys.reshape(devices, keys.shape[0] // devices, *keys.shape[1:])
        t0 = time.perf_counter()
        executable = _executable(program, traced, keys, devices)
        t1 = time.perf_counter()
        values = jax.block_until_ready(executable(traced, keys))
        batch_time += time.perf_counter() - t1
        compile_time += t1 - t0
        returns.extend(float(v) for v in np.asarray(values).reshape(-1))
    return {"returns": returns, "batch_time": batch_time, "compile_time": compile_time}


# (id(program), devices, key shape) -> (program, executable). The entry holds its program: while it lives its
# id cannot be reused by another program (``training.prepare`` caches programs in a bounded LRU, so an evicted
# program's id could otherwise come back for another configuration's static shape).
_EXECUTABLES: dict[tuple, tuple[Any, Any]] = {}


def _executable(program: Any, traced: dict[str, Any], keys: Any, devices: int) -> Any:
    """The compiled batch function for these shapes, compiled ahead of time once per process."""
    cache_key = (id(program), devices, tuple(keys.shape))
    entry = _EXECUTABLES.get(cache_key)
    if entry is None or entry[0] is not program:
        fn = program.train_batch_pmap if devices > 1 else program.train_batch
        entry = (program, fn.lower(traced, keys).compile())
        _EXECUTABLES[cache_key] = entry
    return entry[1]


def batching_layout(algo: str, env: str, n_seeds: int, devices: int, seeds_per_call: int | None) -> dict[str, Any]:
    """The fixed batching layout of a table (see the module docstring), validated."""
    from rl_tasks.training import static_and_traced_names  # noqa: PLC0415

    per_call = n_seeds if seeds_per_call is None else seeds_per_call
    if per_call <= 0 or n_seeds % per_call or per_call % devices:
        raise ValueError(
            f"seeds_per_call={per_call} must divide the {n_seeds} seeds and be a multiple of devices={devices}"
        )
    static, traced = static_and_traced_names(algo, env)
    return {
        "seeds_per_call": per_call,
        "calls_per_config": n_seeds // per_call,
        "devices": devices,
        "seeds_per_device": per_call // devices,
        "vectorisation": "pmap(vmap)" if devices > 1 else "jit(vmap)",
        "traced_hyperparameters": traced,
        "static_hyperparameters": static,
        "jax_enable_x64": False,
    }


def _library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def _machine() -> dict[str, Any]:
    import jax  # noqa: PLC0415

    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu": cpu_signature(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


class Progress:
    """A plain-text progress line with elapsed time and ETA, written to stderr."""

    def __init__(self, total: int, done: int, stream: Any = None) -> None:
        self.total, self.done, self.start = total, done, time.perf_counter()
        self.done_at_start = done
        self.stream = stream if stream is not None else sys.stderr

    def update(self, config_id: int, seconds: float, done: int) -> None:
        """Record one finished configuration and print the progress line.

        ``done``: the configurations finished by now, this generator's and those of others sharing the table (the
        parts on disk); the ETA extrapolates their joint rate.
        """
        self.done = done
        elapsed = time.perf_counter() - self.start
        eta = elapsed / max(1, self.done - self.done_at_start) * (self.total - self.done)
        print(
            f"[{self.done:>4}/{self.total}] config {config_id:04d} {seconds:6.1f}s | elapsed {_hms(elapsed)} | "
            f"ETA {_hms(eta)}",
            file=self.stream, flush=True,
        )


def _hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _run_missing(
    out: Path, todo: list[int], configs: list[dict[str, Any]], job: Callable[[dict[str, Any]], dict[str, Any]],
    on_done: Callable[[int, dict[str, Any]], None], ray_parallel: bool,
) -> None:
    """Compute the missing configurations in this process, each under its claim (``claim_part``: another
    generator may share the table), or as Ray tasks (one per configuration; one driver, so no claims)."""
    if not ray_parallel:
        skipped = 0
        for config_id in todo:
            with claim_part(out, config_id) as mine:
                if mine and not part_path(out, config_id).exists():  # not finished elsewhere since the scan
                    on_done(config_id, job(configs[config_id]))
                else:
                    skipped += 1
        if skipped:
            logger.info("%s: %d configuration(s) left to the other generator(s) of this table", out, skipped)
        return
    import ray  # noqa: PLC0415

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    remote_job = ray.remote(num_cpus=1)(job)
    pending = {remote_job.remote(configs[i]): i for i in todo}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        config_id = pending.pop(ready[0])
        on_done(config_id, ray.get(ready[0]))


MIN_SEEDS = 2
"""Seeds per configuration a table needs: its ground-truth variance, and ``tune-risk replay``, need two."""


def check_sizes(configs: int, seeds: Sequence[int], steps: int) -> None:
    """Refuse sizes that cannot make a usable table (before any training)."""
    if configs <= 0 or steps <= 0:
        raise ValueError(f"configs={configs} and steps={steps} must be positive")
    if len(seeds) < MIN_SEEDS:
        raise ValueError(f"seeds={len(seeds)}: a table needs at least {MIN_SEEDS} seeds per configuration (the "
                         "ground-truth mean-variance needs a variance; tune-risk replay refuses fewer)")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds {list(seeds)} repeat a seed; each seed must be distinct")


def generate_table(
    algo: str,
    env: str,
    configs: int,
    seeds: int | Sequence[int],
    steps: int,
    out: str | Path,
    seed: int = 0,
    ray_parallel: bool = False,
    eval_episodes: int = 128,
    devices: int = 1,
    seeds_per_call: int | None = None,
    command: str | None = None,
    max_new: int | None = None,
    fixed: dict[str, Any] | None = None,
) -> pd.DataFrame | None:
    """Generate (or resume) a table and write ``out`` (parquet) and ``out + '.json'`` (metadata).

    Args:
        algo: ``ppo``, ``dqn`` or ``sac``.
        env: environment name or alias.
        configs: number of Sobol configurations.
        seeds: number of seeds (``0..n-1``) or the list of integer seeds.
        steps: training budget per run, in environment steps.
        out: parquet path; parts go to ``<out dir>/_parts/<stem>/``.
        seed: Sobol scrambling seed.
        ray_parallel: run configurations as parallel Ray tasks (one CPU each).
        eval_episodes: greedy evaluation episodes of the final evaluation.
        devices: JAX devices per call (pmap); needs ``XLA_FLAGS=--xla_force_host_platform_device_count``.
        seeds_per_call: seeds per JAX call (default: all seeds in one call).
        command: the command line to record (default: ``sys.argv``).
        max_new: stop after computing this many new configurations (the table is written only when complete).
        fixed: new values for hyperparameters the space keeps fixed (e.g. ``{"hidden_size": 64}``), the same
            for every configuration; recorded in the manifest and the metadata.

    Returns:
        The long-format table, or ``None`` when ``max_new`` stopped generation before the end. A rerun
        on a complete table computes nothing and leaves both files untouched.
    """
    spec = check_task(algo, env)
    out = Path(out)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    check_sizes(configs, seed_list, steps)
    fixed = {name: check_fixed_override(algo, name, value) for name, value in (fixed or {}).items()}
    layout = batching_layout(algo, spec.name, len(seed_list), devices, seeds_per_call)
    check_manifest(out, make_manifest(algo, spec.name, configs, seed_list, steps, seed, eval_episodes, layout, fixed))
    config_list = sobol_configs(algo, spec.name, configs, seed)
    parts = {i: read_part(out, i, c, seed_list) for i, c in enumerate(config_list)}
    todo = [i for i, part in parts.items() if part is None][:max_new]
    logger.info("%s: %d of %d configurations done, computing %d", out, configs - sum(p is None for p in parts.values()),
                configs, len(todo))
    meta_path = Path(f"{out}.json")
    if all(part is not None for part in parts.values()) and out.exists() and meta_path.exists():
        # Complete already: rewriting would only change the metadata's date and machine.
        return pd.read_parquet(out)
    progress = Progress(configs, configs - sum(p is None for p in parts.values()))

    def job(config: dict[str, Any]) -> dict[str, Any]:
        return compute_config(algo, spec.name, config, seed_list, steps, eval_episodes, devices,
                              layout["seeds_per_call"], fixed)

    def on_done(config_id: int, result: dict[str, Any]) -> None:
        write_part(out, config_id, config_list[config_id], seed_list, result)
        parts[config_id] = read_part(out, config_id, config_list[config_id], seed_list)
        # other generators' parts count too
        progress.update(config_id, result["batch_time"] + result["compile_time"], parts_done(out))

    _run_missing(out, todo, config_list, job, on_done, ray_parallel)
    parts = {i: part or read_part(out, i, config_list[i], seed_list) for i, part in parts.items()}  # others' parts
    if any(part is None for part in parts.values()):
        return None
    table = long_table(config_list, [parts[i] for i in range(configs)])
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = table_metadata(algo, spec.name, steps, seed_list, configs, seed, eval_episodes, layout, command, parts,
                          fixed)
    replace_with(out, lambda tmp: table.to_parquet(tmp, index=False))
    replace_with(meta_path, lambda tmp: tmp.write_text(json.dumps(meta, indent=1, default=str) + "\n"))
    return table


def long_table(configs: list[dict[str, Any]], parts: list[dict[str, Any]]) -> pd.DataFrame:
    """The ARLBench long format: one row per (configuration, seed)."""
    rows = []
    for config_id, (config, part) in enumerate(zip(configs, parts, strict=True)):
        wall_time = part["batch_time"] / len(part["seeds"])
        for s, r in zip(part["seeds"], part["returns"], strict=True):
            row = {"config_id": config_id, "seed": s, "performance": np.nan if r is None else float(r)}
            row.update({f"hp_config.{name}": value for name, value in config.items()})
            row["wall_time"] = wall_time
            rows.append(row)
    table = pd.DataFrame(rows)
    table["config_id"] = table["config_id"].astype("int64")
    table["seed"] = table["seed"].astype("int64")
    table["performance"] = table["performance"].astype("float64")
    return table


def table_metadata(
    algo: str, env: str, steps: int, seeds: list[int], n_configs: int, sobol_seed: int, eval_episodes: int,
    layout: dict[str, Any], command: str | None, parts: dict[int, dict[str, Any]], fixed: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The sidecar metadata of a table (everything needed to regenerate it); ``fixed`` = ``--fixed`` overrides."""
    compute = sum(p["batch_time"] for p in parts.values())
    compile_time = sum(p["compile_time"] for p in parts.values())
    return {
        "format": FORMAT,
        "algorithm": algo,
        "environment": env,
        "search_space_name": space_name(algo, env),
        "training_steps": steps,
        "seeds": seeds,
        "n_configs": n_configs,
        "sobol": {"scramble": True, "seed": sobol_seed, "generator": "scipy.stats.qmc.Sobol"},
        "evaluation": {"episodes": eval_episodes, "policy": "greedy", "statistic": "mean return"},
        "performance": "final mean greedy evaluation return (higher is better)",
        "search_space": describe_space(get_space(algo, env)),
        "fixed_hyperparameters": {**fixed_hyperparameters(algo, env), **(fixed or {})},
        "fixed_overrides": dict(fixed or {}),
        "batching_layout": layout,
        "library_versions": _library_versions(),
        "command": command if command is not None else " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "machine": _machine(),
        # the CPUs the parts were computed on (parts from before this record: "not recorded")
        "cpus": dict(Counter(p.get("cpu", "not recorded") for p in parts.values()).most_common()),
        "compute_seconds": {"run": compute, "compile": compile_time},
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
