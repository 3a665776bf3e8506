"""The OSCBO paper's comparison (Fig. 2, S1, S3): methods x tasks x seeds in the plain GP-UCB loop.

    python experiments/oscbo_benchmark.py \
        --tasks levy5,hartmann3,hartmann6,lunar12,concrete7,material5,crossbarrel4 \
        --methods oscbo,oscbo-l1,gp-ucb-mll,ocbo,a-gp-ucb,lb-gp-ucb,scgp,vanilla-bo \
        --seeds 20 --steps 100 --n-init 10 --data-dir ../shared/data --out results/oscbo_benchmark

Writes into ``--out``: ``runs.jsonl`` (one line per run; an interrupted run resumes from it),
``final_regret.csv`` (final simple and cumulative regret per task and method, mean and standard
error), ``summary.md`` (the table plus mean ranks), ``fig2_simple_regret.png``,
``figS1_cumulative_regret.png`` and ``figS3_diagnostics.png`` (log10 simple and cumulative regret,
coverage, band width, log10 V_t^+, sharpness-calibration trajectory, lengthscale). Tasks whose
package or data is missing are skipped with a message. Lunar's ``f*`` is unknown: its regret is
taken against the best value found by any run (O-20).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import logging
import math
import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from tune_risk.benchmarks import METHODS, TASKS, BOResult, TaskUnavailable, make_task, run_bo

COLORS = {"oscbo": "C3", "oscbo-l1": "C1", "gp-ucb-mll": "C0", "ocbo": "C2", "a-gp-ucb": "C4", "lb-gp-ucb": "C5",
          "scgp": "C6", "vanilla-bo": "C7"}
TINY = 1e-12


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="levy5,hartmann3,hartmann6,lunar12,concrete7,material5,crossbarrel4")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", type=int, default=20, help="repetitions 0..seeds-1 (seed = repetition)")
    parser.add_argument("--steps", type=int, default=100, help="BO rounds T")
    parser.add_argument("--n-init", type=int, default=10, help="scrambled-Sobol points of D_0")
    parser.add_argument("--data-dir", default=None, help="folder with material_agnp/ and crossbarrel/")
    parser.add_argument("--out", default="results/oscbo_benchmark")
    parser.add_argument("--lunar-episodes", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel processes (results identical)")
    return parser.parse_args(argv)


def load_runs(path: Path) -> list[dict]:
    """The finished runs in ``path``; a last line cut off by a kill mid-write is dropped from the file, so
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


def run_all(args: argparse.Namespace) -> list[dict]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.jsonl"
    runs = load_runs(path)
    done = {(r["task"], r["method"], r["seed"], r["steps"], r["n_init"]) for r in runs}
    tasks = [t for t in args.tasks.split(",") if t]
    methods = [m for m in args.methods.split(",") if m]
    for name in tasks + methods:
        if name not in TASKS + METHODS:
            raise SystemExit(f"unknown task or method {name!r}; tasks: {', '.join(TASKS)}; methods: {', '.join(METHODS)}")
    jobs = [(task_name, method, seed) for task_name in tasks if available(task_name, args)
            for seed in range(args.seeds) for method in methods
            if (task_name, method, seed, args.steps, args.n_init) not in done]
    for row in run_jobs(jobs, args):
        runs.append(row)
        with path.open("a") as file:
            file.write(json.dumps(row) + "\n")
        print(f"{row['task']:13s} {row['method']:11s} seed {row['seed']:2d}: final value {max(row['values']):.5g} "
              f"({row['seconds']:.1f} s)", flush=True)
    return [r for r in runs if r["task"] in tasks and r["method"] in methods and r["seed"] < args.seeds
            and r["steps"] == args.steps and r["n_init"] == args.n_init]


def available(task_name: str, args: argparse.Namespace) -> bool:
    """Whether a task can be built here (e.g. Box2D installed, data directory present)."""
    try:
        task = build_task(task_name, args.data_dir, args.lunar_episodes)
        task(np.full(task.dim, 0.5))  # fails early if e.g. Box2D is missing
    except TaskUnavailable as error:
        print(f"skipping {task_name}: {error}", flush=True)
        return False
    return True


@functools.cache
def build_task(task_name: str, data_dir: str | None, lunar_episodes: int):
    if task_name == "lunar12" and lunar_episodes != 50:
        from tune_risk.benchmarks.tasks import lunar12
        return lunar12(lunar_episodes)
    return make_task(task_name, data_dir)


def run_one(task_name: str, method: str, seed: int, args: argparse.Namespace) -> dict:
    """One BO run; it depends only on (task, method, seed), so any number of workers gives the same rows."""
    torch.set_num_threads(args.threads)
    task = build_task(task_name, args.data_dir, args.lunar_episodes)
    result = run_bo(task, method, seed, steps=args.steps, n_init=args.n_init)
    return {**result.to_dict(), "steps": args.steps}


def run_jobs(jobs: list[tuple[str, str, int]], args: argparse.Namespace) -> Iterator[dict]:
    """Rows of the jobs as they finish: in this process, or in ``--workers`` spawned processes."""
    if args.workers <= 1:
        for task_name, method, seed in jobs:
            yield run_one(task_name, method, seed, args)
        return
    context = multiprocessing.get_context("spawn")  # no forked torch/OpenMP state
    with concurrent.futures.ProcessPoolExecutor(args.workers, mp_context=context) as pool:
        futures = [pool.submit(run_one, *job, args) for job in jobs]
        for future in concurrent.futures.as_completed(futures):
            yield future.result()


def curves(runs: list[dict]) -> dict:
    """Per (task, method): arrays seeds x T+1 of simple regret, seeds x T of cumulative regret, diagnostics."""
    by_task: dict[str, list[dict]] = {}
    for run in runs:
        by_task.setdefault(run["task"], []).append(run)
    out = {}
    for task, task_runs in by_task.items():
        optimum = task_runs[0]["optimum"]
        if optimum is None:  # Lunar: regret against the best value found by any run (O-20)
            optimum = max(max(r["values"]) for r in task_runs)
        for run in task_runs:
            result = BOResult(**{k: run[k] for k in ("task", "method", "seed", "X", "values", "n_init", "optimum",
                                                      "rounds", "seconds")})
            entry = out.setdefault((task, run["method"]), {k: [] for k in (
                "simple", "cumulative", "coverage", "width", "V_plus", "gap", "theta", "lambda", "seconds")})
            entry["simple"].append(result.simple_regret(optimum))
            entry["cumulative"].append(result.cumulative_regret(optimum))
            rounds = run["rounds"]
            entry["coverage"].append([r["coverage"] for r in rounds])
            entry["width"].append([r["mean_width"] for r in rounds])
            entry["V_plus"].append([r["V_plus_sum"] for r in rounds])
            target = 0.8427  # 2 Phi(sqrt 2) - 1: the band's nominal coverage for a calibrated Gaussian
            entry["gap"].append([abs(r["coverage"] - target) for r in rounds])
            entry["theta"].append([float(np.mean(r["theta"])) if r["theta"] else np.nan for r in rounds])
            entry["lambda"].append([np.nan if r.get("lambda") is None else r["lambda"] for r in rounds])  # OSCBO only
            entry["seconds"].append(run["seconds"])
    return {key: {k: np.asarray(v, dtype=np.float64) for k, v in entry.items()} for key, entry in out.items()}


def mean_se(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = np.nanmean(values, axis=0)
    n = values.shape[0]
    se = np.nanstd(values, axis=0, ddof=1) / math.sqrt(n) if n > 1 else np.zeros_like(mean)
    return mean, se


def table(data: dict, tasks: list[str], methods: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for task in tasks:
        for method in methods:
            if (task, method) not in data:
                continue
            entry = data[(task, method)]
            simple, cumulative = entry["simple"][:, -1], entry["cumulative"][:, -1]
            rows.append({
                "task": task, "method": method, "seeds": len(simple),
                "simple_mean": simple.mean(), "simple_se": _se(simple),
                "cumulative_mean": cumulative.mean(), "cumulative_se": _se(cumulative),
                "seconds_per_run": entry["seconds"].mean(),
            })
    frame = pd.DataFrame(rows)
    ranks = []
    for column in ("simple_mean", "cumulative_mean"):
        pivot = frame.pivot(index="task", columns="method", values=column)
        ranked = pivot.rank(axis=1, method="average")
        ranks.append(pd.DataFrame({"method": ranked.columns, f"rank_{column.split('_')[0]}": ranked.mean().values,
                                   f"rank_{column.split('_')[0]}_se": (ranked.std(ddof=1) / math.sqrt(len(ranked))).values
                                   if len(ranked) > 1 else 0.0}))
    return frame, ranks[0].merge(ranks[1], on="method").sort_values("rank_simple")


def diagnostics_table(data: dict, tasks: list[str], methods: list[str]) -> pd.DataFrame:
    """Median over seeds of the lengthscale, running band coverage and running mean band width after a quarter,
    half and all of the rounds: the numbers behind Fig. S3 that show how much a lengthscale strategy explores."""
    rows = []
    for task in tasks:
        for method in methods:
            entry = data.get((task, method))
            if entry is None:
                continue
            steps = entry["theta"].shape[1]
            for t in sorted({max(steps // 4, 1), max(steps // 2, 1), steps}):
                rows.append({"task": task, "method": method, "round": t,
                             "theta": float(np.nanmedian(entry["theta"][:, t - 1])),
                             "coverage": float(np.nanmedian(entry["coverage"][:, t - 1])),
                             "width": float(np.nanmedian(entry["width"][:, t - 1])),
                             "lambda_min": float(np.min(entry["lambda"][:, t - 1])),
                             "lambda_max": float(np.max(entry["lambda"][:, t - 1]))})
    return pd.DataFrame(rows)


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0


def markdown(frame: pd.DataFrame, ranks: pd.DataFrame, diagnostics: pd.DataFrame, args: argparse.Namespace) -> str:
    lines = [f"# OSCBO benchmark: {args.seeds} seeds x {args.steps} steps (n_init = {args.n_init})", "",
             "Final simple regret `f* - max_j f(x_j)` and final cumulative regret (mean ± s.e. over seeds); "
             "lower is better. Lunar's regret is against the best value found by any run.", "",
             "| task | method | simple regret | cumulative regret | s/run |", "|---|---|---|---|---|"]
    for task, group in frame.groupby("task", sort=False):
        best = group.simple_mean.min()
        for _, row in group.iterrows():
            mark = "**" if row.simple_mean == best else ""
            lines.append(f"| {task} | {row.method} | {mark}{row.simple_mean:.4g} ± {row.simple_se:.2g}{mark} | "
                         f"{row.cumulative_mean:.4g} ± {row.cumulative_se:.2g} | {row.seconds_per_run:.1f} |")
    lines += ["", "Mean rank across tasks (methods ranked within each task by mean final regret; ± s.e. over tasks):", "",
              "| method | rank (simple regret) | rank (cumulative regret) |", "|---|---|---|"]
    for _, row in ranks.iterrows():
        lines.append(f"| {row.method} | {row.rank_simple:.2f} ± {row.rank_simple_se:.2f} | "
                     f"{row.rank_cumulative:.2f} ± {row.rank_cumulative_se:.2f} |")
    lines += ["", "Diagnostics (median over seeds at round t; Fig. S3): θ is the mean lengthscale on the unit cube, coverage "
              "the fraction of rounds 1..t whose new observation fell inside the band (nominal 0.84), width the "
              "band's mean width at the queried points over rounds 1..t (standardised units).", "",
              "| task | method | " + " | ".join(f"θ / coverage / width at t={t}" for t in diagnostics["round"].unique())
              + " | OSCBO's λ at the end (range over seeds) |", "|---|---|" + "---|" * (diagnostics["round"].nunique() + 1)]
    for (task, method), group in diagnostics.groupby(["task", "method"], sort=False):
        cells = [f"{row.theta:.3g} / {row.coverage:.2f} / {row.width:.3g}" for row in group.itertuples()]
        last = group.iloc[-1]
        cells.append("" if np.isnan(last.lambda_min) else f"{last.lambda_min:.3g}–{last.lambda_max:.3g}")
        lines.append(f"| {task} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _log_band(ax, x, values, method, label=True):
    mean, se = mean_se(values)
    ax.plot(x, np.log10(np.maximum(mean, TINY)), color=COLORS.get(method), label=method if label else None, lw=1.3)
    lower = np.maximum(mean - se, np.maximum(mean / 10.0, TINY))  # keep the band readable near 0
    ax.fill_between(x, np.log10(lower), np.log10(np.maximum(mean + se, TINY)),
                    color=COLORS.get(method), alpha=0.15)


def _band(ax, x, values, method):
    mean, se = mean_se(values)
    ax.plot(x, mean, color=COLORS.get(method), lw=1.3)
    ax.fill_between(x, mean - se, mean + se, color=COLORS.get(method), alpha=0.15)


def regret_figure(data, tasks, methods, ranks, kind: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = len(tasks) + 1
    cols = min(4, panels)
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, task in zip(axes.flat, tasks, strict=False):
        for method in methods:
            if (task, method) in data:
                values = data[(task, method)][kind]
                x = np.arange(values.shape[1]) + (0 if kind == "simple" else 1)
                _log_band(ax, x, values, method)
        ax.set_title(task)
        ax.set_xlabel("BO step")
        ax.set_ylabel(f"log10 {kind} regret")
    ax = axes.flat[len(tasks)]
    column = f"rank_{kind}"
    ordered = ranks.sort_values(column)
    ax.barh(ordered.method, ordered[column], xerr=ordered[f"{column}_se"],
            color=[COLORS.get(m) for m in ordered.method])
    ax.invert_yaxis()
    ax.set_xlabel(f"mean rank, final {kind} regret")
    for extra in list(axes.flat)[panels:]:
        extra.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def diagnostics_figure(data, tasks, methods, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = ["log10 simple regret", "log10 cumulative regret", "coverage p_t", "mean band width",
               "log10 V_t^+", "sharpness-calibration", "lengthscale"]
    fig, axes = plt.subplots(len(tasks), len(columns), figsize=(2.9 * len(columns), 2.5 * len(tasks)), squeeze=False)
    for i, task in enumerate(tasks):
        for method in methods:
            if (task, method) not in data:
                continue
            entry = data[(task, method)]
            t = np.arange(1, entry["coverage"].shape[1] + 1)
            _log_band(axes[i, 0], np.arange(entry["simple"].shape[1]), entry["simple"], method, label=i == 0)
            _log_band(axes[i, 1], t, entry["cumulative"], method, label=False)
            _band(axes[i, 2], t, entry["coverage"], method)
            _band(axes[i, 3], t, entry["width"], method)
            _log_band(axes[i, 4], t, np.maximum(entry["V_plus"], TINY), method, label=False)
            axes[i, 5].plot(np.nanmean(entry["width"], 0), np.nanmean(entry["gap"], 0), color=COLORS.get(method), lw=1)
            _band(axes[i, 6], t, entry["theta"], method)
        axes[i, 0].set_ylabel(task)
    for j, title in enumerate(columns):
        axes[0, j].set_title(title, fontsize=9)
    axes[-1, 5].set_xlabel("mean width")
    axes[-1, 5].set_ylabel("|coverage - 0.843|")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="upper center", ncol=len(methods), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    runs = run_all(args)
    if not runs:
        raise SystemExit("no runs to summarise (every task was unavailable?)")
    data = curves(runs)
    tasks = [t for t in args.tasks.split(",") if any(k[0] == t for k in data)]
    methods = [m for m in args.methods.split(",") if any(k[1] == m for k in data)]
    frame, ranks = table(data, tasks, methods)
    out = Path(args.out)
    frame.to_csv(out / "final_regret.csv", index=False)
    ranks.to_csv(out / "mean_ranks.csv", index=False)
    diagnostics = diagnostics_table(data, tasks, methods)
    diagnostics.to_csv(out / "diagnostics.csv", index=False)
    text = markdown(frame, ranks, diagnostics, args)
    (out / "summary.md").write_text(text)
    regret_figure(data, tasks, methods, ranks, "simple", out / "fig2_simple_regret.png")
    regret_figure(data, tasks, methods, ranks, "cumulative", out / "figS1_cumulative_regret.png")
    diagnostics_figure(data, tasks, methods, out / "figS3_diagnostics.png")
    print(text)
    print(f"wrote {out}/summary.md, final_regret.csv, mean_ranks.csv and 3 figures "
          f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
