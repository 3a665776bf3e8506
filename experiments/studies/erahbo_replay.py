"""Reproduce the ERAHBO paper's offline comparison on every table in ``datasets/``.

Runs ``tune-risk replay`` with the paper's four methods (ERAHBO, RAHBO k=2, RAHBO k=20, GP-UCB)
plus ERAHBO with the exponential beta_stop schedule, 20 repetitions, budget 1500, on every
``datasets/*.parquet`` table, and writes ``runs.csv``, ``rounds.csv``, ``summary.md`` and figures to
``--out``. ``--synthetic`` adds (or, when no real table exists yet, substitutes) three synthetic
heteroscedastic tables written from ``tune_risk.benchmarks.objectives`` (clearly named ``synthetic-*``).

Each table is replayed into its own ``--out/tables/<name>/`` (resumable unit by unit, like ``tune-risk replay``,
and fingerprinted per table), so a table that is regenerated or extended invalidates only its own replays;
the study over all tables (ranks, Wilcoxon tests over every (table, repeat) pair, thresholds, figures) is then
written to ``--out`` from the per-table runs. Rerunning the same command resumes; ``--tables`` picks tables.
Any other flag is an engine flag of ``tune-risk replay`` (``--var-posterior nonnegative``, ``--alpha 0.5``, ...),
passed to every table's replay and checked there.

    python experiments/studies/erahbo_replay.py [--repeats 20] [--budget 1500] [--tables dqn_cartpole ...] [--synthetic]
        [--out results/erahbo_replay] [engine flags of tune-risk replay]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.cli import main as tune_risk_main
from tune_risk.offline.metrics import at_common_horizon, threshold_table, wilcoxon_vs
from tune_risk.offline.summary import write_summary
from tune_risk.offline.table import OfflineTable

ROOT = Path(__file__).resolve().parents[2]
METHODS = "erahbo,rahbo-k2,rahbo-k20,gp-ucb,erahbo-exp"
# The ERAHBO paper's Table 5 (App. C.4) for the tasks our tables mirror: the first evaluation at which the IQM of
# normalised MV regret is at most 75 / 50 / 25 % of the initial design's (None = not reached), on its 512 x 50
# ARLBench tables. Quoted here to be printed beside ours (comparison.md), never used in a computation.
PAPER_TABLE5 = {
    "dqn_cartpole": ("dqn/cc_cartpole", {"erahbo": (43, 135, None), "rahbo-k20": (61, 121, None),
                                         "rahbo-k2": (259, 1185, None), "gp-ucb": (421, 781, None)}),
    "dqn_acrobot": ("dqn/cc_acrobot", {"erahbo": (21, 65, 151), "rahbo-k20": (21, 81, 221),
                                       "rahbo-k2": (7, 25, 75), "gp-ucb": (21, 101, 241)}),
    "ppo_acrobot": ("ppo/cc_acrobot", {"erahbo": (48, 63, 92), "rahbo-k20": (81, 141, 181),
                                       "rahbo-k2": (21, 37, 65), "gp-ucb": (61, 101, 141)}),
    "ppo_cartpole": ("ppo/cc_cartpole", {"erahbo": (21, 63, 87), "rahbo-k20": (21, 81, 161),
                                         "rahbo-k2": (25, 57, 129), "gp-ucb": (21, 81, 161)}),
    "ppo_brax_fast": ("ppo/brax_fast", {"erahbo": (48, 223, 389), "rahbo-k20": (81, 201, 581),
                                        "rahbo-k2": (75, 121, 889), "gp-ucb": (81, 241, 1081)}),
    "sac_pendulum": ("sac/cc_pendulum", {"erahbo": (49, 85, 111), "rahbo-k20": (121, 181, 321),
                                         "rahbo-k2": (17, 25, 75), "gp-ucb": (121, 201, 301)}),
}
METRICS = (("regret", "final simple regret", False), ("cumulative_regret", "cumulative regret", False),
           ("cumulative_regret", "cumulative regret at the common horizon", True))
"""(column, label, cut at the common horizon) of the comparison's rows."""
SYNTHETIC = (("synthetic-hartmann3", "hartmann3", 512), ("synthetic-hartmann6", "hartmann6", 512),
             ("synthetic-branin", "branin", 512))


def synthetic_tables(directory: Path, seeds: int = 50) -> list[Path]:
    """Write the synthetic tables in the ARLBench long format (with metadata) and return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, objective, configs in SYNTHETIC:
        X, Y = make_pool_table(get_objective(objective), configs, seeds, seed=0)
        frame = pd.DataFrame({f"x{i}": X[:, i] for i in range(X.shape[1])})
        path = directory / f"{name}.parquet"
        OfflineTable.from_arrays(frame, Y, name=name).to_long(path)
        paths.append(path)
    return paths


def replay_each(tables: list[Path], args: argparse.Namespace) -> list[Path]:
    """Replay every table into ``--out/tables/<name>/`` (resuming finished units); return those directories."""
    outs = []
    for table in tables:
        out = args.out / "tables" / table.stem
        argv = ["replay", "--methods", args.methods, "--repeats", str(args.repeats), "--budget", str(args.budget),
                "--table", str(table), "--out", str(out), "--test-seeds", "0", *args.engine_flags]  # the paper: all seeds
        if tune_risk_main(argv) != 0:
            raise SystemExit(f"replay of {table} did not finish; rerun the same command to resume")
        outs.append(out)
    return outs


def combine(outs: list[Path], out: Path) -> list[Path]:
    """The study over all tables: concatenated ``runs.csv`` / ``rounds.csv`` and their summary in ``out``."""
    frames = {kind: pd.concat([pd.read_csv(d / f"{kind}.csv") for d in outs], ignore_index=True)
              for kind in ("runs", "rounds")}
    for kind, frame in frames.items():
        frame.to_csv(out / f"{kind}.csv", index=False, lineterminator="\n")
    names = ", ".join(d.name for d in outs)
    written = write_summary(frames["runs"], frames["rounds"], out, title=f"Offline replay: {names}")
    text = (f"# {names}\n\n## ERAHBO against each method\n\n{erahbo_against_each(frames['runs'])}\n"
            f"## Spending per table\n\n{spending(frames['runs'])}\n"
            f"## Table 5 beside the ERAHBO paper's\n\n{paper_comparison(frames['runs'])}")
    comparison = out / "comparison.md"
    comparison.write_text(text)
    print(text)
    return [*written, comparison]


def erahbo_against_each(runs: pd.DataFrame) -> str:
    """Markdown: ERAHBO against every other method, paired by (table, repeat), on final simple and on
    cumulative regret (the issue's target: better mean rank than RAHBO(k=20) and GP-UCB with p < 0.05), over
    all tables and then on each table alone; cumulative regret also at each block's common horizon, because a
    method that exhausts a table stops accumulating regret before the budget ends."""
    header = ["| tables | method | metric | mean rank (ERAHBO's) | ERAHBO wins / ties / losses | "
              "p (Wilcoxon, two-sided) | signed ranks favour |", "|---|---|---|---|---|---|---|"]
    scopes = [("all", runs)] + ([(t, g) for t, g in runs.groupby("table")] if runs["table"].nunique() > 1 else [])
    lines = []
    for scope, frame in scopes:
        for column, label, cut in METRICS:
            tests = wilcoxon_vs(at_common_horizon(frame) if cut else frame, "erahbo", column).set_index("method")
            own = tests.loc["erahbo", "mean_rank"]
            for method, row in tests.drop(index="erahbo").iterrows():
                lines.append(f"| {scope} | {method} | {label} | {row['mean_rank']:.2f} ({own:.2f}) | "
                             f"{row['wins']:.0f} / {row['ties']:.0f} / {row['losses']:.0f} | {row['p_value']:.3g} | "
                             f"{row['favours'] or '—'} |")
    return ("ERAHBO against each method over the (table, repeat) pairs of all tables, then of each table: mean rank "
            "among all methods (lower is better), pairs where ERAHBO's final value is lower / equal / higher, the "
            "p-value, and the side the signed ranks favour (lower values; the test itself is two-sided). \"At the common "
            "horizon\": each (table, repeat) cut at the evaluation count where its shortest run ends (a method that "
            "has evaluated every configuration stops there), so that every method has spent the same.\n\n"
            + "\n".join(header + lines) + "\n")


def spending(runs: pd.DataFrame) -> str:
    """Markdown: per table and method, means over repeats of the evaluations used, the distinct configurations
    evaluated, and both again at each (table, repeat)'s common horizon: what explains cumulative regret (a method
    that exhausts a table stops accumulating; within equal spending, more configurations cost more regret)."""
    keys = ["table", "method", "repeat"]
    full = runs.groupby(keys).agg(n_eval=("n_eval", "max"), configs=("config_row", "nunique"))
    cut = at_common_horizon(runs).groupby(keys).agg(horizon=("n_eval", "max"), configs_h=("config_row", "nunique"))
    means = full.join(cut).groupby(["table", "method"]).mean()
    lines = ["| table | method | evaluations used | configurations | common horizon | configurations by it |",
             "|---|---|---|---|---|---|"]
    for (table, method), row in means.iterrows():
        lines.append(f"| {table} | {method} | {row['n_eval']:.0f} | {row['configs']:.0f} | {row['horizon']:.0f} | "
                     f"{row['configs_h']:.0f} |")
    return ("Means over repeats: evaluations used (fewer than the budget when a method has evaluated every "
            "configuration of the table), distinct configurations evaluated after the initial design, the common "
            "horizon and the configurations evaluated by it.\n\n" + "\n".join(lines) + "\n")


def paper_comparison(runs: pd.DataFrame) -> str:
    """Markdown: our first crossings of 75 / 50 / 25 % (Table 5's metric) beside the paper's, per mirrored task."""
    ours = threshold_table(runs).set_index(["table", "method"])
    methods = [m for m in ("erahbo", "rahbo-k20", "rahbo-k2", "gp-ucb") if m in set(runs["method"])]

    def cell(values) -> str:
        return " / ".join("—" if v is None or v != v else str(int(v)) for v in values)

    lines = ["| our table (paper task) | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for table in sorted(set(runs["table"]) & set(PAPER_TABLE5)):
        task, paper = PAPER_TABLE5[table]
        cells = [f"{cell(ours.loc[(table, m)].to_numpy())} ({cell(paper[m])})" for m in methods]
        lines.append(f"| {table} ({task}) | " + " | ".join(cells) + " |")
    return ("First evaluation at which the IQM of normalised MV regret is at most 75 / 50 / 25 % of the initial "
            "design's, ours (the paper's Table 5 in brackets); — = not reached.\n\n" + "\n".join(lines) + "\n")


def pick_tables(names: list[str] | None) -> list[Path]:
    """The finished tables of ``datasets/`` (all, or those named); a partial table has no parquet yet."""
    available = {p.stem: p for p in sorted((ROOT / "datasets").glob("*.parquet"))}
    if names is None:
        return list(available.values())
    unknown = sorted(set(names) - set(available))
    if unknown:
        raise SystemExit(f"--tables: no finished table {unknown} in datasets/ (have: {sorted(available)})")
    return [available[name] for name in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--tables", nargs="+", metavar="NAME", help="table names in datasets/ (default: all)")
    parser.add_argument("--synthetic", action="store_true", help="add the synthetic tables")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "erahbo_replay")
    args, engine_flags = parser.parse_known_args()  # the rest: engine flags for tune-risk replay
    args.engine_flags = engine_flags
    tables = pick_tables(args.tables)
    if args.synthetic or not tables:
        if not tables:
            print("no table in datasets/ yet: using the synthetic tables", file=sys.stderr)
        tables += synthetic_tables(args.out / "synthetic_tables")
    written = combine(replay_each(tables, args), args.out)
    print(f"wrote the study over {len(tables)} table(s) to {args.out} ({len(written)} summary files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
