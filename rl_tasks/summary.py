"""Summaries of generated tables for ``datasets/README.md`` (JAX-free).

For a finished table (``<out>.parquet`` + ``<out>.parquet.json``) or one still being generated (its
``datasets/_parts/<stem>/`` files): configurations and seeds done, mean return of the best and worst
configuration, the spread across seeds (mean per-configuration standard deviation, and its minimum and
maximum across configurations: heteroscedasticity), the fraction of configurations with a NaN return, and the
compute time. ``python -m rl_tasks.summary [TABLE_OR_DIR ...]`` prints one markdown line per table (default:
every table of ``datasets/``, finished or partial).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rl_tasks.parts import parts_dir, parts_done, read_manifest


def _from_parts(out: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-seed returns and timings from the part files of a table (finished or not)."""
    rows, batch, compile_time = [], 0.0, 0.0
    for path in sorted(parts_dir(out).glob("config_*.json")):
        part = json.loads(path.read_text())
        batch += part["batch_time"]
        compile_time += part["compile_time"]
        for seed, value in zip(part["seeds"], part["returns"], strict=True):
            rows.append({"config_id": part["config_id"], "seed": seed,
                         "performance": np.nan if value is None else value})
    return pd.DataFrame(rows), {"run": batch, "compile": compile_time, **read_manifest(out)}


def _extension(out: Path, n_configs: int) -> dict[str, Any]:
    """``extending_to`` / ``extension_done``: a finished table being extended (its parts' manifest asks for more
    configurations than the parquet has; the parquet is rewritten only when the last part is done)."""
    target = read_manifest(out).get("n_configs", n_configs)
    if target <= n_configs:
        return {}
    return {"extending_to": target, "extension_done": parts_done(out)}


def summarize(out: str | Path) -> dict[str, Any]:
    """Statistics of one table; reads the parquet if it exists, the part files otherwise."""
    out = Path(out)
    if out.exists():
        table = pd.read_parquet(out)
        meta = json.loads(Path(f"{out}.json").read_text())
        info = {**meta["compute_seconds"], "n_configs": meta["n_configs"], "seeds": meta["seeds"],
                "machine": meta["machine"], "command": meta["command"], "complete": True,
                **_extension(out, meta["n_configs"])}
    else:
        table, info = _from_parts(out)
        info["complete"] = False
    if table.empty:
        return {"table": out.stem, "configs_done": 0, **info}
    grouped = table.groupby("config_id")["performance"]
    means, stds = grouped.mean(), grouped.std(ddof=1)
    nan_configs = grouped.apply(lambda v: bool(v.isna().any()))
    finite = ~nan_configs
    return {
        "table": out.stem,
        "configs_done": int(grouped.ngroups),
        "seeds_per_config": int(grouped.size().max()),
        "best_mean": float(means[finite].max()) if finite.any() else math.nan,
        "worst_mean": float(means[finite].min()) if finite.any() else math.nan,
        "median_mean": float(means[finite].median()) if finite.any() else math.nan,
        "std_mean": float(stds[finite].mean()) if finite.any() else math.nan,
        "std_min": float(stds[finite].min()) if finite.any() else math.nan,
        "std_max": float(stds[finite].max()) if finite.any() else math.nan,
        "nan_fraction": float(nan_configs.mean()),
        "run_seconds_per_config": info["run"] / max(1, grouped.ngroups),
        **info,
    }


def markdown_line(s: dict[str, Any]) -> str:
    """One markdown table row of a summary (see ``HEADER``)."""
    status = "complete" if s["complete"] else f"partial ({s['configs_done']}/{s.get('n_configs', '?')})"
    if "extending_to" in s:
        status += f"; being extended: {s['extension_done']}/{s['extending_to']}"
    return (f"| {s['table']} | {status} | {s['configs_done']} x {s.get('seeds_per_config', 0)} | "
            f"{s['best_mean']:.1f} / {s['median_mean']:.1f} / {s['worst_mean']:.1f} | "
            f"{s['std_mean']:.1f} ({s['std_min']:.1f}–{s['std_max']:.1f}) | {s['nan_fraction']:.3f} | "
            f"{s['run_seconds_per_config']:.0f} s | {(s['run'] + s['compile']) / 3600:.2f} h |")


HEADER = ("| table | status | configs x seeds | mean return best / median / worst config | std across seeds: "
          "mean (min–max over configs) | NaN configs | run time per config | total compute |\n"
          "|---|---|---|---|---|---|---|---|")


def markdown_table(paths: list[str | Path]) -> str:
    """The markdown summary table of the given tables (skipping tables with nothing done yet)."""
    lines = [HEADER]
    for path in paths:
        stats = summarize(path)
        if stats["configs_done"]:
            lines.append(markdown_line(stats))
    return "\n".join(lines)


def update_readme(readme: str | Path, paths: list[str | Path]) -> None:
    """Replace the block between ``<!-- summary:start -->`` and ``<!-- summary:end -->`` in ``readme``."""
    readme = Path(readme)
    text = readme.read_text()
    start, end = "<!-- summary:start -->", "<!-- summary:end -->"
    if start not in text or end not in text:
        raise ValueError(f"{readme} has no {start} ... {end} block")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{markdown_table(paths)}\n{end}{tail}")


def table_paths(paths: Sequence[str | Path]) -> list[Path]:
    """The tables named by ``paths``: a ``.parquet`` path as is (finished or partial), a directory as every table
    in it (its ``*.parquet`` files and the stems of its ``_parts/`` folders, so partial tables are included)."""
    tables: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            stems = {p.stem for p in path.glob("*.parquet")}
            stems |= {p.name for p in (path / "_parts").glob("*") if p.is_dir()}
            tables += [path / f"{stem}.parquet" for stem in sorted(stems)]
        elif path.suffix == ".parquet" and (path.exists() or parts_dir(path).is_dir()):
            tables.append(path)
        else:
            raise ValueError(f"{path} is neither a table (<name>.parquet, finished or with parts in "
                             f"{parts_dir(path) if path.suffix == '.parquet' else '_parts/<name>/'}) nor a directory")
    return tables


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rl_tasks.summary [--update-readme README] [TABLE_OR_DIR ...]``: print (and optionally write)
    the summary."""
    parser = argparse.ArgumentParser(prog="python -m rl_tasks.summary", description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="*", default=["datasets"],
                        help="tables (<name>.parquet) or directories of tables (default: datasets)")
    parser.add_argument("--update-readme", metavar="README",
                        help="also write the summary between the README's summary:start/end markers")
    args = parser.parse_args(argv)
    try:
        tables = table_paths(args.tables)
    except ValueError as error:
        parser.error(str(error))
    if args.update_readme:
        update_readme(args.update_readme, tables)
    print(markdown_table(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
