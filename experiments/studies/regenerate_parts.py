"""Recompute shipped table configurations and compare them with their saved parts, seed by seed.

Each part in ``datasets/_parts/<table>/`` holds one configuration's 50 returns; this script retrains the
given configurations with the settings of the table's manifest (the same seeds, steps, evaluation episodes,
batching layout and fixed overrides) and prints, per configuration, how many seeds come out bit for bit
equal, the CPU the part was computed on and the one it is recomputed on, and whether the two samples differ
in distribution (Mann-Whitney U and Kolmogorov-Smirnov p-values, ``scipy.stats``). ``datasets/README.md``
("Regenerating bit for bit") reports its results. About a minute per PPO configuration on one core::

    XLA_FLAGS=--xla_force_host_platform_device_count=1 taskset -c 1 \\
        python experiments/studies/regenerate_parts.py ppo_acrobot 0 148 250
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import stats

from rl_tasks.generate import compute_config
from rl_tasks.parts import cpu_signature, part_path, parts_dir, read_manifest

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def regenerate(table: Path, config_id: int) -> dict:
    """Recompute one configuration of ``table`` from its manifest; compare with the saved part."""
    manifest = read_manifest(table)
    if not manifest:
        raise SystemExit(f"{table}: no manifest in {parts_dir(table)}")
    path = part_path(table, config_id)
    if not path.exists():
        raise SystemExit(f"{table}: configuration {config_id} has no part ({path})")
    part = json.loads(path.read_text())
    layout = manifest["batching_layout"]
    start = time.perf_counter()
    result = compute_config(manifest["algorithm"], manifest["environment"], part["config"], part["seeds"],
                            manifest["training_steps"], manifest["eval_episodes"], layout["devices"],
                            layout["seeds_per_call"], manifest.get("fixed_overrides"))
    saved, again = np.array(part["returns"], float), np.array(result["returns"], float)
    return {
        "config": config_id, "equal": int(np.sum(saved == again)), "seeds": len(saved),
        "part_cpu": part.get("cpu", "not recorded"), "mean_saved": saved.mean(), "mean_again": again.mean(),
        "mwu_p": stats.mannwhitneyu(saved, again).pvalue, "ks_p": stats.ks_2samp(saved, again).pvalue,
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("table", help="table name in datasets/ (e.g. ppo_acrobot)")
    parser.add_argument("configs", type=int, nargs="+", help="configuration ids")
    args = parser.parse_args()
    table = DATASETS / f"{args.table}.parquet"
    print(f"recomputing on: {cpu_signature()}")
    for config_id in args.configs:
        r = regenerate(table, config_id)
        print(f"{args.table} {r['config']}: {r['equal']} of {r['seeds']} seeds equal | part computed on: "
              f"{r['part_cpu']} | means {r['mean_saved']:.1f} / {r['mean_again']:.1f}, Mann-Whitney p = "
              f"{r['mwu_p']:.2f}, KS p = {r['ks_p']:.2f} | {r['seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
