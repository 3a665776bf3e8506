"""The OSCBO paper's comparison (Fig. 2, S1, S3): methods x tasks x seeds in the plain GP-UCB loop.

    python experiments/studies/oscbo_benchmark.py \
        --tasks levy5,hartmann3,hartmann6,lunar12,concrete7,material5,crossbarrel4 \
        --methods oscbo,oscbo-l1,gp-ucb-mll,ocbo,a-gp-ucb,lb-gp-ucb,scgp,vanilla-bo \
        --seeds 20 --steps 100 --n-init 10 --data-dir DATA --out results/oscbo_benchmark

``DATA`` is a folder with ``material_agnp/data.csv`` and ``crossbarrel/data.csv`` (the Olympus tables).
``--lambda-init``, ``--omega`` and ``--form`` set the OSCBO game of ``oscbo`` and ``oscbo-l1`` (default:
``lambda_1 = beta/log(1 + sigma^-2)``, ``omega = 0.001``, the prefix form).

Runs live in ``--out`` (``oscbo_harness.store``): ``runs.parquet`` plus a journal of the runs
finished since, each keyed by task, method, seed, steps, ``n_init`` and its OSCBO settings. A command
runs only the runs it lacks, so an interrupted command resumes when repeated, and OSCBO runs under other
settings stay in the folder: the summary shows them as sensitivity rows (e.g. ``oscbo (λ₁=1)``) beside the
command's own. A ``runs.jsonl`` of the previous format is imported once (``migrate_legacy_run``).

Writes into ``--out``: ``final_regret.csv`` (final simple and cumulative regret per task and method, mean
and standard error), ``mean_ranks.csv``, ``diagnostics.csv``, ``summary.md`` (tables, ranks, the paper's
targets), ``fig2_simple_regret.png``, ``figS1_cumulative_regret.png`` and ``figS3_diagnostics.png`` (log10
simple and cumulative regret, coverage, band width, log10 V_t^+, sharpness-calibration trajectory,
lengthscale). Tasks whose package or data is missing are skipped with a message. Lunar's ``f*`` is
unknown: its regret is taken against the best value found by any run (O-20).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import logging
import math
import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from oscbo_harness import METHODS, TASKS, BOResult, TaskUnavailable, make_task, run_bo
from oscbo_harness.store import RunStore, run_key, settings_key

from tune_risk.offline.metrics import block_ranks, mean_se
from tune_risk.oscbo import NOISE, nlml_balanced_lambda

COLORS = {"oscbo": "C3", "oscbo-l1": "C1", "gp-ucb-mll": "C0", "ocbo": "C2", "a-gp-ucb": "C4", "lb-gp-ucb": "C5",
          "scgp": "C6", "vanilla-bo": "C7"}
TINY = 1e-12
BETA = 2.0  # UCB and calibration beta of every method (Table S1)
DELTA = 0.1  # the paper's miscoverage level: calibrated means coverage 1 - delta (eq. 3, Table S1)
OSCBO_METHODS = ("oscbo", "oscbo-l1")
TARGET_TASKS = ("levy5", "hartmann3", "hartmann6")  # the paper's headline comparison with GP-UCB-MLL


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
    parser.add_argument("--summary-only", action="store_true",
                        help="run nothing: summarise the stored runs (says how many of the command's are missing)")
    parser.add_argument("--lambda-init", type=float, default=None,
                        help="OSCBO's dual start lambda_1 > 0 (default: beta/log(1 + sigma^-2) = 0.433)")
    parser.add_argument("--omega", type=float, default=0.001, help="OSCBO's OMD step size (Table S1: 0.001)")
    parser.add_argument("--form", choices=("prefix", "literal"), default="prefix",
                        help="D_0 in OSCBO's objective S5: conditioning only (prefix) or rounds (literal)")
    args = parser.parse_args(argv)
    for name in ("lambda_init", "omega"):
        value = getattr(args, name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            parser.error(f"--{name.replace('_', '-')} must be a finite number > 0, got {value!r}")
    return args


def oscbo_settings(args: argparse.Namespace) -> dict:
    """The settings ``run_bo`` records for an OSCBO run of this command (``lambda_1`` resolved as the game does)."""
    lam = args.lambda_init if args.lambda_init is not None else nlml_balanced_lambda(BETA, NOISE)
    return {"lambda_init": float(lam), "omega": float(args.omega), "form": args.form}


def method_settings(method: str, args: argparse.Namespace) -> dict:
    return oscbo_settings(args) if method in OSCBO_METHODS else {}


def run_all(args: argparse.Namespace) -> list[dict]:
    """Run what the store lacks; return every stored run of these tasks, methods, seeds and sizes (any settings)."""
    store = RunStore(args.out)
    imported = store.import_legacy()
    if imported:
        print(f"imported {imported} runs of {args.out}/runs.jsonl into {store.store_path}", flush=True)
    store.compact()  # the journal of an interrupted command
    runs = store.load()
    done = {run_key(r) for r in runs}
    tasks, methods = names(args.tasks), names(args.methods)
    for name in tasks + methods:
        if name not in TASKS + METHODS:
            raise SystemExit(f"unknown task or method {name!r}; tasks: {', '.join(TASKS)}; methods: {', '.join(METHODS)}")
    jobs = [(task_name, method, seed) for task_name in tasks if available(task_name, args)
            for seed in range(args.seeds) for method in methods
            if (task_name, method, seed, args.steps, args.n_init, settings_key(method_settings(method, args)))
            not in done]
    if args.summary_only:
        print(f"--summary-only: {len(jobs)} runs of this command are not in {args.out}; summarising the others",
              flush=True)
        jobs = []
    try:
        for row in run_jobs(jobs, args):
            store.append(row)
            runs.append(row)
            print(f"{row['task']:13s} {row['method']:11s} seed {row['seed']:2d}: final value {max(row['values']):.5g} "
                  f"({row['seconds']:.1f} s)", flush=True)
    finally:
        store.compact()
    return [r for r in runs if r["task"] in tasks and r["method"] in methods and r["seed"] < args.seeds
            and r["steps"] == args.steps and r["n_init"] == args.n_init]


def names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


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
        from oscbo_harness.tasks import lunar12
        return lunar12(lunar_episodes)
    return make_task(task_name, data_dir)


def run_one(task_name: str, method: str, seed: int, args: argparse.Namespace) -> dict:
    """One BO run; it depends only on (task, method, seed), so any number of workers gives the same rows."""
    torch.set_num_threads(args.threads)
    task = build_task(task_name, args.data_dir, args.lunar_episodes)
    options = {k: getattr(args, k) for k in ("lambda_init", "omega", "form")} if method in OSCBO_METHODS else {}
    result = run_bo(task, method, seed, steps=args.steps, n_init=args.n_init, beta=BETA, **options)
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


def label_runs(runs: list[dict], args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Give every run its ``label``: the method when its settings are this command's, else the method with
    what differs (``oscbo (λ₁=1)``). Returns (primary labels in ``--methods`` order, variant labels)."""
    methods = names(args.methods)
    for run in runs:
        expected, settings = method_settings(run["method"], args), run.get("settings", {})
        run["label"] = run["method"] if settings == expected else f"{run['method']} ({describe(settings, expected)})"
    present = {run["label"] for run in runs}
    primary = [m for m in methods if m in present]
    variants = sorted(present - set(primary), key=lambda label: (methods.index(label.split(" ")[0]), label))
    return primary, variants


def describe(settings: dict, expected: dict) -> str:
    """What a run's OSCBO settings change against the command's (e.g. ``λ₁=1, ω=0.1``)."""
    parts = []
    for key, symbol in (("lambda_init", "λ₁"), ("omega", "ω"), ("form", "form")):
        value = settings.get(key)
        if value != expected.get(key):
            parts.append(f"{symbol}={value:.3g}" if isinstance(value, float) else f"{symbol}={value}")
    if "dual_losses_p" in settings:  # runs of the code before the p = 1 dual was fixed
        parts.append(f"dual fed p={settings['dual_losses_p']} losses: before the fix")
    return ", ".join(parts) or settings_key(settings)


def curves(runs: list[dict]) -> dict:
    """Per (task, label): arrays seeds x T+1 of simple regret, seeds x T of cumulative regret, diagnostics."""
    by_task: dict[str, list[dict]] = {}
    for run in runs:
        by_task.setdefault(run["task"], []).append(run)
    out = {}
    for task, task_runs in by_task.items():
        optimum = task_runs[0]["optimum"]
        if optimum is None:  # Lunar: regret against the best value found by any run (O-20)
            optimum = max(max(r["values"]) for r in task_runs)
        for run in task_runs:
            entry = out.setdefault((task, run.get("label", run["method"])), {k: [] for k in (
                "simple", "cumulative", "coverage", "width", "V_plus", "gap", "theta", "lambda", "kappa", "seconds")})
            add_curves(entry, run, optimum)
    return {key: {k: np.asarray(v, dtype=np.float64) for k, v in entry.items()} for key, entry in out.items()}


def add_curves(entry: dict, run: dict, optimum: float) -> None:
    result = BOResult(**{k: run[k] for k in ("task", "method", "seed", "X", "values", "n_init", "optimum",
                                              "rounds", "seconds")})
    entry["simple"].append(result.simple_regret(optimum))
    entry["cumulative"].append(result.cumulative_regret(optimum))
    rounds = run["rounds"]
    entry["coverage"].append([r["coverage"] for r in rounds])
    entry["width"].append([r["mean_width"] for r in rounds])
    entry["V_plus"].append([r["V_plus_sum"] for r in rounds])
    # the paper's calibration level 1 - delta (eq. 3); a calibrated Gaussian would put 2 Phi(sqrt 2) - 1 = 0.843
    # of the observations inside mu +- sqrt(2) sd, so a model can be "too calibrated" for the band it plays
    entry["gap"].append([abs(r["coverage"] - (1.0 - DELTA)) for r in rounds])
    entry["theta"].append([float(np.mean(r["theta"])) if r["theta"] else np.nan for r in rounds])
    entry["lambda"].append([np.nan if r.get("lambda") is None else r["lambda"] for r in rounds])  # OSCBO only
    entry["kappa"].append([r["kappa"] for r in rounds])
    entry["seconds"].append(run["seconds"])


def mean_and_se(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``metrics.mean_se`` over the first axis (seeds, or tasks), with s.e. 0 for a single one: the tables
    print ``± 0`` and the figures draw no band then."""
    mean, se = mean_se(np.asarray(values, dtype=np.float64), axis=0)
    return mean, np.nan_to_num(se, nan=0.0)


def table(data: dict, tasks: list[str], labels: list[str], ranked: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Final regrets of every label; mean ranks over the tasks among the ``ranked`` labels only."""
    rows = []
    for task in tasks:
        for label in labels:
            if (task, label) not in data:
                continue
            entry = data[(task, label)]
            (simple_mean, simple_se), (cumulative_mean, cumulative_se) = (
                mean_and_se(entry[kind][:, -1]) for kind in ("simple", "cumulative"))
            rows.append({
                "task": task, "method": label, "seeds": len(entry["simple"]),
                "simple_mean": float(simple_mean), "simple_se": float(simple_se),
                "cumulative_mean": float(cumulative_mean), "cumulative_se": float(cumulative_se),
                "seconds_per_run": entry["seconds"].mean(),
            })
    frame = pd.DataFrame(rows)
    ranks = []
    for column in ("simple_mean", "cumulative_mean"):
        pivot = frame[frame.method.isin(ranked)].pivot(index="task", columns="method", values=column)
        values = pivot.to_numpy(dtype=np.float64)
        mean, se = mean_and_se(block_ranks(values, ~np.isnan(values)))  # tasks are the blocks
        kind = column.split("_")[0]
        ranks.append(pd.DataFrame({"method": pivot.columns, f"rank_{kind}": mean, f"rank_{kind}_se": se}))
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


def markdown(frame: pd.DataFrame, ranks: pd.DataFrame, diagnostics: pd.DataFrame, data: dict,
             args: argparse.Namespace, primary: list[str]) -> str:
    """``summary.md``: regret table, mean ranks (with OCBO's multiplier), diagnostics, the paper's targets."""
    sections = [regret_section(frame, args, primary), rank_section(ranks, data),
                diagnostics_section(diagnostics), target_section(frame, ranks, diagnostics, primary)]
    return "\n".join(line for section in sections for line in section) + "\n"


def regret_section(frame: pd.DataFrame, args: argparse.Namespace, primary: list[str]) -> list[str]:
    lam = "β/log(1+σ⁻²) = 0.433" if args.lambda_init is None else f"{args.lambda_init:g}"
    lines = [f"# OSCBO benchmark: {args.seeds} seeds x {args.steps} steps (n_init = {args.n_init})", "",
             f"OSCBO settings of this summary: λ₁ = {lam}, ω = {args.omega:g}, {args.form} form. Rows with a "
             "parenthesis are OSCBO runs under other settings found in the same folder (sensitivity rows; not "
             "ranked).", "",
             "Final simple regret `f* - max_j f(x_j)` and final cumulative regret (mean ± s.e. over seeds); "
             "lower is better. Lunar's regret is against the best value found by any run.", "",
             "| task | method | simple regret | cumulative regret | s/run |", "|---|---|---|---|---|"]
    for task, group in frame.groupby("task", sort=False):
        best = group[group.method.isin(primary)].simple_mean.min()
        for _, row in group.iterrows():
            mark = "**" if row.simple_mean == best and row.method in primary else ""
            lines.append(f"| {task} | {row.method} | {mark}{row.simple_mean:.4g} ± {row.simple_se:.2g}{mark} | "
                         f"{row.cumulative_mean:.4g} ± {row.cumulative_se:.2g} | {row.seconds_per_run:.1f} |")
    return lines


def rank_section(ranks: pd.DataFrame, data: dict) -> list[str]:
    lines = ["", "Mean rank across tasks (methods ranked within each task by mean final regret; ± s.e. over tasks):", "",
             "| method | rank (simple regret) | rank (cumulative regret) |", "|---|---|---|"]
    for _, row in ranks.iterrows():
        lines.append(f"| {row.method} | {row.rank_simple:.2f} ± {row.rank_simple_se:.2f} | "
                     f"{row.rank_cumulative:.2f} ± {row.rank_cumulative_se:.2f} |")
    kappas = {task: float(np.median(entry["kappa"])) for (task, label), entry in data.items() if label == "ocbo"}
    if kappas and "ocbo" in set(ranks.method):
        lo, hi = min(kappas.values()), max(kappas.values())
        spread = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f} across tasks"
        best = ranks.sort_values("rank_cumulative").method.iloc[0] == "ocbo"
        lines += ["", f"OCBO plays UCB with κ_t = Φ⁻¹(q_t), q_t the LOO-PIT 0.9-quantile: its median κ is {spread}, "
                  f"against √β = {math.sqrt(BETA):.2f} for the other UCB methods, which makes it nearly greedy"
                  + (". That is why it has the best cumulative-regret rank (it exploits from the first round), not a "
                     "better-calibrated model." if best else ".")]
    return lines


def diagnostics_section(diagnostics: pd.DataFrame) -> list[str]:
    lines = ["", "Diagnostics (median over seeds at round t; Fig. S3): θ is the mean lengthscale played in round t on "
             "the unit cube, coverage the fraction of rounds 1..t whose new observation fell inside the band (the "
             f"paper's calibration level is 1 − δ = {1 - DELTA:.1f}, eq. 3; a calibrated Gaussian puts 0.843 inside "
             "μ ± √2 σ), width the band's mean width at the queried points over rounds 1..t (standardised units).", "",
             "| task | method | " + " | ".join(f"θ / coverage / width at t={t}" for t in diagnostics["round"].unique())
             + " | OSCBO's λ at the end (range over seeds) |", "|---|---|" + "---|" * (diagnostics["round"].nunique() + 1)]
    for (task, method), group in diagnostics.groupby(["task", "method"], sort=False):
        cells = [f"{row.theta:.3g} / {row.coverage:.2f} / {row.width:.3g}" for row in group.itertuples()]
        last = group.iloc[-1]
        cells.append("" if np.isnan(last.lambda_min) else f"{last.lambda_min:.3g}–{last.lambda_max:.3g}")
        lines.append(f"| {task} | {method} | " + " | ".join(cells) + " |")
    return lines


def target_section(frame: pd.DataFrame, ranks: pd.DataFrame, diagnostics: pd.DataFrame, primary: list[str]) -> list[str]:
    """The paper's findings as checks on these runs: OSCBO against GP-UCB-MLL (regret and lengthscale) for
    every OSCBO row, and the p = 1 against p = 2 pattern of the command's own rows."""
    if "gp-ucb-mll" not in primary:
        return []
    checks = []
    for label in [m for m in frame.method.unique() if m.split(" ")[0] == "oscbo"]:
        checks += [regret_target(frame, label), lengthscale_target(diagnostics, label)]
    checks.append(p_pattern(ranks, diagnostics))
    # The blank lines stay: without the one above it, Markdown reads the heading as a row of the table before.
    return ["", "**Against the paper's findings** (computed from the rows above):", "", *filter(None, checks)]


def regret_target(frame: pd.DataFrame, label: str) -> str:
    """Final simple regret within one standard error of GP-UCB-MLL's, or better: ``a - b <= sqrt(se_a^2 + se_b^2)``."""
    cells, held = [], 0
    rows = frame.set_index(["task", "method"])
    tasks = [t for t in TARGET_TASKS if (t, label) in rows.index and (t, "gp-ucb-mll") in rows.index]
    for task in tasks:
        a, b = rows.loc[(task, label)], rows.loc[(task, "gp-ucb-mll")]
        se = math.hypot(a.simple_se, b.simple_se)
        z = (a.simple_mean - b.simple_mean) / se if se > 0 else 0.0
        held += z <= 1.0
        cells.append(f"{task} {a.simple_mean:.3g} ± {a.simple_se:.2g} against {b.simple_mean:.3g} ± {b.simple_se:.2g} "
                     f"({z:+.1f} s.e.)")
    if not tasks:
        return ""
    return (f"* *{label}: final simple regret within one s.e. of GP-UCB-MLL's (s.e. of the difference), or better,"
            f" on Levy 5D, Hartmann 3D and 6D.* {'Holds' if held == len(tasks) else 'Fails'}, met on {held} of "
            f"{len(tasks)}: " + "; ".join(cells) + ".")


def lengthscale_ratios(diagnostics: pd.DataFrame, label: str, task: str = "levy5") -> list[tuple[int, float, float]]:
    """``(t, median theta of label, median theta of GP-UCB-MLL)`` at half and all of the rounds."""
    table = diagnostics[diagnostics.task == task].set_index(["method", "round"]).theta
    if not len(table):
        return []
    steps = int(diagnostics["round"].max())
    return [(t, table[(label, t)], table[("gp-ucb-mll", t)]) for t in sorted({max(steps // 2, 1), steps})
            if (label, t) in table.index and ("gp-ucb-mll", t) in table.index]


def lengthscale_target(diagnostics: pd.DataFrame, label: str) -> str:
    ratios = lengthscale_ratios(diagnostics, label)
    if not ratios:
        return ""
    held = all(abs(a / b - 1.0) <= 0.15 for _, a, b in ratios)
    cells = "; ".join(f"t = {t}: {a:.3g} against {b:.3g} ({a / b - 1:+.0%})" for t, a, b in ratios)
    return (f"* *{label}: median lengthscale within 15 % of GP-UCB-MLL's on Levy 5D.* "
            f"{'Holds' if held else 'Fails'}: {cells}.")


def p_pattern(ranks: pd.DataFrame, diagnostics: pd.DataFrame) -> str:
    """The paper's p = 1 against p = 2 finding (§7.2): OSCBO-L1 better in cumulative regret, slightly worse in
    final simple regret, its lengthscale apart from GP-UCB-MLL's while OSCBO's tracks it."""
    rank = ranks.set_index("method")
    if not {"oscbo", "oscbo-l1"} <= set(rank.index):
        return ""
    l1, l2 = rank.loc["oscbo-l1"], rank.loc["oscbo"]
    held = l1.rank_cumulative < l2.rank_cumulative and l1.rank_simple >= l2.rank_simple
    levy = "; ".join(f"t = {t}: OSCBO-L1 {a:.3g}, OSCBO {c:.3g}, GP-UCB-MLL {b:.3g}" for (t, a, b), (_, c, _)
                     in zip(lengthscale_ratios(diagnostics, "oscbo-l1"), lengthscale_ratios(diagnostics, "oscbo"),
                            strict=False))
    return (f"* *p = 1 against p = 2: OSCBO-L1 ranks better than OSCBO in cumulative regret and no better in final "
            f"simple regret.* {'Holds' if held else 'Fails'}: cumulative {l1.rank_cumulative:.2f} against "
            f"{l2.rank_cumulative:.2f}, simple {l1.rank_simple:.2f} against {l2.rank_simple:.2f}."
            + (f" Median lengthscale on Levy 5D: {levy}." if levy else ""))


def _log_band(ax, x, values, method, label=True):
    mean, se = mean_and_se(values)
    ax.plot(x, np.log10(np.maximum(mean, TINY)), color=COLORS.get(method), label=method if label else None, lw=1.3)
    lower = np.maximum(mean - se, np.maximum(mean / 10.0, TINY))  # keep the band readable near 0
    ax.fill_between(x, np.log10(lower), np.log10(np.maximum(mean + se, TINY)),
                    color=COLORS.get(method), alpha=0.15)


def _band(ax, x, values, method):
    mean, se = mean_and_se(values)
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
    axes[-1, 5].set_ylabel(f"|coverage - {1 - DELTA:.1f}|")
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
    primary, variants = label_runs(runs, args)
    data = curves(runs)
    tasks = [t for t in names(args.tasks) if any(k[0] == t for k in data)]
    frame, ranks = table(data, tasks, primary + variants, primary)
    out = Path(args.out)
    frame.to_csv(out / "final_regret.csv", index=False)
    ranks.to_csv(out / "mean_ranks.csv", index=False)
    diagnostics = diagnostics_table(data, tasks, primary + variants)
    diagnostics.to_csv(out / "diagnostics.csv", index=False)
    text = markdown(frame, ranks, diagnostics, data, args, primary)
    (out / "summary.md").write_text(text)
    regret_figure(data, tasks, primary, ranks, "simple", out / "fig2_simple_regret.png")
    regret_figure(data, tasks, primary, ranks, "cumulative", out / "figS1_cumulative_regret.png")
    diagnostics_figure(data, tasks, primary, out / "figS3_diagnostics.png")
    print(text)
    print(f"wrote {out}/summary.md, final_regret.csv, mean_ranks.csv and 3 figures "
          f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
