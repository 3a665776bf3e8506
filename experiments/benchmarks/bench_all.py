"""The performance suite: tune_risk side by side with Ray Tune's own searchers, in one run.

Prints four markdown tables (and writes ``results.json`` and ``engine_scaling.png`` to ``--out``):

1. **Suggestion latency** (p50 / p95 ms) at 25, 100, 200 and 500 evaluated configurations for
   ``RiskAwareSearch`` (512-row pool and continuous cube), ``OptunaSearch`` with Optuna's
   ``GPSampler``, ``HEBOSearch``, ``BayesOptSearch`` and ``Repeater``-ed random search, on one
   synthetic noisy objective (``experiments/benchmarks/bench_searchers.py`` says exactly what is timed), with the
   ratio of each p50 to ours (pool).
2. **Tune per-trial overhead**: seconds per trivial trial under ``tune.Tuner`` with
   ``reuse_actors=True`` and 2 concurrent trials, and the ratio to ``BasicVariantGenerator``.
3. **Replay throughput**: one paper-style ERAHBO replay (budget 1500 on a 512 x 50 table) by the
   direct loop: seconds and replicate evaluations per second.
4. **Engine scaling** to 2000 configurations: the one-off setup (warp + MAP fit of both GPs), then the
   round-opening ``ask`` and the ``tell`` p50, and the peak resident memory of a fresh process.

Each searcher family runs in its own subprocess (fresh memory, one torch/BLAS thread). HEBO pins
``numpy < 1.25`` and cannot share the project's environment; it runs from ``--hebo-python``
(``make bench`` builds ``.venv-hebo``) and is reported as unavailable when that is missing.

    python experiments/benchmarks/bench_all.py [--quick] [--out results/bench] [--hebo-python .venv-hebo/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MAIN_SEARCHERS = ["risk-aware-pool", "risk-aware-continuous", "optuna-gp", "bayesopt", "repeater-random",
                  "basic-variant"]
LABELS = {
    "risk-aware-pool": "RiskAwareSearch (pool of 512)", "risk-aware-continuous": "RiskAwareSearch (continuous)",
    "optuna-gp": "OptunaSearch (GPSampler)", "hebo": "HEBOSearch", "bayesopt": "BayesOptSearch",
    "repeater-random": "Repeater(random search, 2 seeds)", "basic-variant": "BasicVariantGenerator",
}
SCALING_POOL_ROWS = 4096


def run_json(command: list[str], timeout: float) -> dict:
    """Run a worker subprocess (one thread per BLAS) and parse the JSON on its last stdout line."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(command[:3])} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def searcher_results(python: str, names: list[str], sizes: list[int], repeats: int, trials: int) -> dict:
    command = [python, str(HERE / "bench_searchers.py"), "--searchers", ",".join(names), "--sizes",
               *map(str, sizes), "--repeats", str(repeats), "--tune-trials", str(trials)]
    return run_json(command, timeout=3 * 3600)


def replay_run(budget: int) -> dict:
    """One ERAHBO replay on a synthetic 512 x 50 Hartmann-6 table (the paper's budget: 1500)."""
    from tune_risk.benchmarks.objectives import get_objective, make_pool_table  # noqa: PLC0415
    from tune_risk.offline.replay import ReplayTask, replay_direct  # noqa: PLC0415

    X, Y = make_pool_table(get_objective("hartmann6"), 512, 50, seed=0)
    task = ReplayTask("hartmann6", X, Y)
    started = time.perf_counter()
    result = replay_direct(task, "erahbo", 0, budget)
    seconds = time.perf_counter() - started
    return {"budget": budget, "seconds": seconds, "evaluations": result.engine.n_used,
            "rounds": result.engine.rounds}


def scaling_worker(n: int, rounds: int) -> dict:
    """Engine cost with ``n`` evaluated configurations (k = 2 each), in this (fresh) process."""
    from tune_risk.benchmarks.objectives import get_objective  # noqa: PLC0415
    from tune_risk.engine.core import Engine  # noqa: PLC0415
    from tune_risk.engine.records import Replicate  # noqa: PLC0415
    from tune_risk.settings import EngineSettings  # noqa: PLC0415

    objective = get_objective("hartmann6")
    pool = np.random.default_rng(0).random((max(SCALING_POOL_ROWS, 2 * n), objective.dim))
    values = [[objective.sample(x, s) for s in (0, 1)] for x in pool[:n]]
    settings = EngineSettings.for_method("rahbo", k=2, seed=0, common_random_numbers=True)
    started = time.perf_counter()
    engine = Engine(settings, pool=pool, initial_points=pool[:n], initial_values=values)
    request = engine.ask()  # fits the warp and both GPs' hyperparameters once, then opens a round
    setup = time.perf_counter() - started
    asks, tells = [], []
    while len(asks) < rounds and isinstance(request, Replicate):
        started = time.perf_counter()
        engine.tell(request.run_id, objective.sample(np.asarray(request.x), request.seed))
        tells.append(time.perf_counter() - started)
        rounds_before, started = engine.rounds, time.perf_counter()
        request = engine.ask()
        if engine.rounds > rounds_before:  # this ask opened a round (acquisition + B_t)
            asks.append(time.perf_counter() - started)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"n": n, "setup_s": setup, "ask_ms": float(np.median(asks) * 1e3),
            "tell_ms": float(np.median(tells) * 1e3), "peak_rss_mib": rss}


def engine_scaling(sizes: list[int], rounds: int) -> list[dict]:
    return [run_json([sys.executable, __file__, "--scaling-worker", str(n), "--rounds", str(rounds)], 1800)
            for n in sizes]


def plot_scaling(rows: list[dict], path: Path) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    n = [r["n"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.loglog(n, [r["ask_ms"] for r in rows], "o-", label="ask (opens a round)")
    left.loglog(n, [r["tell_ms"] for r in rows], "s-", label="tell (one replicate)")
    left.loglog(n, [r["setup_s"] * 1e3 for r in rows], "^-", label="setup (warp + MAP fit, once)")
    left.set(xlabel="evaluated configurations", ylabel="milliseconds (p50)", title="Engine cost")
    left.legend()
    right.plot(n, [r["peak_rss_mib"] for r in rows], "o-")
    right.set(xlabel="evaluated configurations", ylabel="MiB", title="Peak resident memory (fresh process)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_latency(latency: dict, sizes: list[int]) -> None:
    print("\n### Suggestion latency, p50 / p95 ms (ratio of p50 to RiskAwareSearch on a pool)\n")
    print("| searcher | " + " | ".join(f"n = {n}" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    ours = {n: np.percentile(latency["risk-aware-pool"][str(n)], 50) for n in sizes}
    for name, per_size in latency.items():
        if isinstance(per_size, str):
            print(f"| {LABELS[name]} | " + " | ".join(per_size for _ in sizes) + " |")
            continue
        cells = []
        for n in sizes:
            p50, p95 = np.percentile(per_size[str(n)], [50, 95])
            cells.append(f"{p50:.1f} / {p95:.1f} ({p50 / ours[n]:.0f}x)")
        print(f"| {LABELS[name]} | " + " | ".join(cells) + " |")


def print_overhead(per_trial: dict, trials: int) -> None:
    print(f"\n### Tune per-trial overhead ({trials} trivial trials, reuse_actors=True, 2 concurrent)\n")
    print("| searcher | seconds per trial | ratio to BasicVariantGenerator |")
    print("|---|---:|---:|")
    base = per_trial["basic-variant"]
    for name, seconds in per_trial.items():
        if isinstance(seconds, str):
            print(f"| {LABELS[name]} | {seconds} | |")
        else:
            print(f"| {LABELS[name]} | {seconds:.3f} | {seconds / base:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a one-minute version (smaller n, fewer repeats)")
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--hebo-python", default=".venv-hebo/bin/python")
    parser.add_argument("--scaling-worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scaling_worker is not None:
        print(json.dumps(scaling_worker(args.scaling_worker, args.rounds)))
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sizes = [25, 100] if args.quick else [25, 100, 200, 500]
    repeats, trials = (3, 20) if args.quick else (10, 60)
    scaling_sizes = [100, 500] if args.quick else [100, 250, 500, 1000, 2000]
    started = time.perf_counter()
    main_results = searcher_results(sys.executable, MAIN_SEARCHERS, sizes, repeats, trials)
    latency, per_trial = main_results["latency_ms"], main_results["tune_seconds_per_trial"]
    versions = {"main": main_results["versions"]}
    latency["hebo"] = per_trial["hebo"] = f"not run ({args.hebo_python} missing: `make bench` builds it)"
    if Path(args.hebo_python).exists():
        try:
            hebo = searcher_results(args.hebo_python, ["hebo"], sizes, repeats, trials)
            latency["hebo"], per_trial["hebo"] = hebo["latency_ms"]["hebo"], hebo["tune_seconds_per_trial"]["hebo"]
            versions["hebo-venv"] = hebo["versions"]
        except RuntimeError as error:  # a broken peer environment must not sink the suite
            print(f"HEBOSearch not measured: {error}", file=sys.stderr)
            latency["hebo"] = per_trial["hebo"] = "not run (its environment failed; see stderr)"
    replay = replay_run(300 if args.quick else 1500)
    scaling = engine_scaling(scaling_sizes, rounds=3 if args.quick else 10)
    args.out.mkdir(parents=True, exist_ok=True)
    plot_scaling(scaling, args.out / "engine_scaling.png")
    machine = (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, one torch/BLAS "
               f"thread per process; {json.dumps(versions)}")
    (args.out / "results.json").write_text(json.dumps(
        {"machine": machine, "latency_ms": latency, "tune_seconds_per_trial": per_trial, "replay": replay,
         "scaling": scaling, "quick": args.quick}, indent=1))
    print(f"Machine: {machine}")
    print_latency(latency, sizes)
    print_overhead(per_trial, trials)
    print(f"\n### Replay throughput (direct loop, synthetic 512 x 50 table, 1 worker)\n\n"
          f"One ERAHBO run at budget {replay['budget']}: {replay['seconds']:.1f} s, {replay['evaluations']} replicate "
          f"evaluations ({replay['evaluations'] / replay['seconds']:.0f} per second), {replay['rounds']} rounds.")
    print("\n### Engine scaling (pool of max(4096, 2n) rows, k = 2 replicates per configuration)\n")
    print("| evaluated configs | setup s (once) | ask p50 ms | tell p50 ms | peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|")
    for row in scaling:
        print(f"| {row['n']} | {row['setup_s']:.2f} | {row['ask_ms']:.1f} | {row['tell_ms']:.2f} | "
              f"{row['peak_rss_mib']:.0f} |")
    print(f"\nFigure: {args.out / 'engine_scaling.png'}; total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
