"""How tune_risk's recommendation compares with what Ray Tune users run today, on the six shipped tables.

Replays, per budget (300 and 1500 seed-runs), every ``datasets/*.parquet`` table with ``tune-risk replay
--test-seeds 20 --warp online`` (each method fits its own warp on what it sees, as in live use; peers see raw
returns) and scores every method's recommended configuration on the 20 held-out seeds:

* ours: ``tune-risk`` (``RiskAwareSearch``'s defaults), ``erahbo`` (the paper's settings), ``rahbo-k2``,
  ``rahbo-k20``, ``gp-ucb``;
* peers, each a Ray Tune Searcher in Ray's ``Repeater(k)``: ``random-rep5``, ``tpe-rep1``, ``tpe-rep3``,
  ``tpe-rep5`` (Optuna TPE), ``optuna-gp-rep3`` (Optuna's GPSampler) and ``hebo-rep3`` (HEBOSearch, in
  the HEBO venv that ``make bench`` builds); the two slow ones with fewer repeats (``SLOW``).

Resumable from a fresh checkout: every finished (method, table) adds its final rows to the committed
``<results>/b<budget>/finals.csv`` (one row per table, method and repeat: the final row of ``runs.csv``,
held-out columns included), and a rerun of the same command replays only what that file lacks (an interrupted
(method, table) resumes from ``tune-risk replay``'s own store under ``--out`` when it is still there). When
every unit of a budget is done (or with ``--partial``), the study writes ``summary.md`` and
``performance_profile.png`` (from the final rows: the per-evaluation curves stay in ``--out``) and
``headline.md``, the tables the README shows; ``--only-combine`` rewrites them from the committed finals alone.

    python experiments/studies/peers_replay.py [--budgets 300 1500] [--repeats 20] [--tables ...] [--out results/peers]
        [--results experiments/results/peers_replay] [--only-combine] [--partial]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd

from tune_risk.cli import main as tune_risk_main
from tune_risk.offline.metrics import final_values, iqm
from tune_risk.offline.units import Unit, UnitStore

ROOT = Path(__file__).resolve().parents[2]
SLOW = {"tpe-rep1": {300: 20, 1500: 5}, "optuna-gp-rep3": {300: 10}, "hebo-rep3": {300: 5}}
"""Slow peers: budget -> repeats. TPE's cost grows with its trials (1500 single-seed trials: minutes per
replay), Optuna's GPSampler fits a GP per suggestion (~30 s per replay at 300), HEBO ~1 s per suggestion.
A budget absent from a peer's entry: not run there (the study's page says so)."""
HEADLINE_METHODS = ("tune-risk", "gp-ucb", "rahbo-k20", "random-rep5", "tpe-rep1", "tpe-rep3", "tpe-rep5",
                    "optuna-gp-rep3", "hebo-rep3")
ORDER = ("random-rep5", "tune-risk", "tpe-rep5", "gp-ucb", "rahbo-k20", "tpe-rep3", "erahbo", "rahbo-k2")
"""Replay order: the cheapest peer, then the pairs the recommendation target compares first, so an interrupted
study's partial results answer the main question."""


def plan(budget: int, repeats: int) -> list[tuple[str, int]]:
    """``(method, repeats)`` runs of one budget in ``ORDER``, then the slow peers with their own repeats."""
    runs = [(m, repeats) for m in ORDER]
    runs += [(m, min(repeats, by_budget[budget])) for m, by_budget in SLOW.items() if budget in by_budget]
    return runs


def load_finals(path: Path) -> pd.DataFrame:
    """The committed final rows of a budget (empty before its first unit): the study's resume record, since the
    units' own store under ``--out`` does not survive a fresh checkout."""
    return pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["table", "method", "repeat"])


def done_repeats(finals: pd.DataFrame, table: str, method: str) -> set[int]:
    block = finals[(finals["table"] == table) & (finals["method"] == method)]
    return set(block["repeat"].astype(int))


def record(finals_path: Path, store: UnitStore, table: str, method: str, repeats: int) -> None:
    """Add the final rows of ``repeats`` finished units of (table, method) to the committed finals, atomically."""
    tails = [pd.read_csv(store.path(Unit(table, method, r), "runs")).tail(1) for r in range(repeats)]
    finals = load_finals(finals_path)
    keep = finals[~((finals["table"] == table) & (finals["method"] == method))]
    merged = pd.concat([keep, final_values(pd.concat(tails, ignore_index=True))], ignore_index=True)
    merged = merged.sort_values(["table", "method", "repeat"], kind="stable")
    finals_path.parent.mkdir(parents=True, exist_ok=True)
    scratch = finals_path.with_suffix(".tmp")
    merged.to_csv(scratch, index=False, lineterminator="\n")
    scratch.replace(finals_path)


def replay_budget(tables: list[Path], budget: int, repeats: int, out: Path, finals_path: Path,
                  rerun: frozenset[str] = frozenset()) -> None:
    """Replay every (method, table) of the plan whose repeats are not all in the committed finals yet, and
    every one of the ``rerun`` methods whatever the finals hold (their rows are replaced table by table, so
    an interrupted rerun keeps the old rows of the tables it has not reached; the units under ``out``
    resume it)."""
    for method, n in plan(budget, repeats):
        for table in tables:
            if method not in rerun and done_repeats(load_finals(finals_path), table.stem, method) >= set(range(n)):
                continue
            argv = ["replay", "--methods", method, "--repeats", str(n), "--budget", str(budget), "--test-seeds",
                    "20", "--warp", "online", "--out", str(out), "--table", str(table)]
            print(f"budget {budget}: {method} x {n} repeats on {table.stem}", flush=True)
            if tune_risk_main(argv) != 0:
                raise SystemExit(f"replay of {method} did not finish; rerun the same command to resume")
            record(finals_path, UnitStore(out), table.stem, method, n)


def finals_of(tables: list[Path], budget: int, repeats: int, finals_path: Path, partial: bool) -> pd.DataFrame:
    """The committed final rows of the budget's plan (one per table, method and repeat)."""
    finals = load_finals(finals_path)
    wanted = {(t.stem, m, r) for m, n in plan(budget, repeats) for t in tables for r in range(n)}
    keys = list(zip(finals["table"], finals["method"], finals["repeat"].astype(int), strict=True))
    missing = len(wanted - set(keys))
    if missing and not partial:
        raise SystemExit(f"budget {budget}: {missing} units are not done; rerun without --only-combine, or --partial")
    return finals[[key in wanted for key in keys]].reset_index(drop=True)


def headline(finals: pd.DataFrame, budget: int) -> str:
    """Mean and IQM of the held-out normalised regret per method, over every (table, repeat) pooled."""
    rows = []
    for method in [m for m in HEADLINE_METHODS if m in set(finals["method"])]:
        f = finals[finals["method"] == method]
        mv, mean = f["normalised_heldout_mv_regret"], f["normalised_heldout_mean_regret"]
        worst = f.groupby("table")["normalised_heldout_mv_regret"].mean()
        rows.append(f"| {method} | {f['repeat'].nunique()} | {mv.mean():.3f} | {iqm(mv.to_numpy()):.3f} | "
                    f"{mean.mean():.3f} | {iqm(mean.to_numpy()):.3f} | {worst.idxmax()} {worst.max():.2f} |")
    return (f"Budget {budget} seed-runs, six tables, held-out 20 seeds; normalised regret of the recommended "
            "configuration (0 = best, 1 = median configuration; lower is better).\n\n"
            "| method | repeats | MV mean | MV IQM | mean-view mean | mean-view IQM | worst table (MV mean) |\n"
            "|---|---:|---:|---:|---:|---:|---|\n" + "\n".join(rows) + "\n")


def per_table(finals: pd.DataFrame) -> str:
    """Mean held-out MV regret per table and method (the view the headline pools)."""
    wide = finals.pivot_table(index="table", columns="method", values="normalised_heldout_mv_regret", aggfunc="mean")
    order = [m for m in HEADLINE_METHODS if m in wide.columns]
    lines = ["| table | " + " | ".join(order) + " |", "|---|" + "---:|" * len(order)]
    for table, row in wide[order].iterrows():
        best = row.min()
        cells = [f"**{v:.3f}**" if v == best else f"{v:.3f}" for v in row]
        lines.append(f"| {table} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def target_check(finals: pd.DataFrame, ours: str = "tune-risk") -> str:
    """Per table, ``ours`` against every method with a lower mean held-out MV regret: a paired two-sided Wilcoxon
    test over the repeats both ran (the recommendation issue's target: lowest, or separable from none of them).

    A rival with too few shared repeats for the test to reach p < 0.05 is listed as untested, not as a tie.
    A separable rival whose lower mean comes from a few repeats while ``ours`` is lower on most of them (the
    median paired difference favours ``ours``) is reported as a split, with the count, not as a win for
    either side: the mean and the ranks disagree, and the reader should see both.
    """
    from tune_risk.offline.metrics import paired_p_value, wilcoxon_min_pairs

    lines = [f"| table | {ours} | lower means (pairs, p) | verdict |", "|---|---:|---|---|"]
    for table, block in finals.groupby("table"):
        wide = block.pivot_table(index="repeat", columns="method", values="normalised_heldout_mv_regret")
        if ours not in wide.columns:
            continue
        mine = wide[ours].mean()
        rivals = wide.drop(columns=[ours]).mean().sort_values()
        cells, worse, split, untested = [], [], [], []
        for rival, mean in rivals[rivals < mine].items():
            both = wide[[ours, rival]].dropna()
            if len(both) < wilcoxon_min_pairs():
                untested.append(rival)
                cells.append(f"{rival} {mean:.3f} ({len(both)}, untested)")
                continue
            p = paired_p_value(both[ours].to_numpy(), both[rival].to_numpy())
            cells.append(f"{rival} {mean:.3f} ({len(both)}, {p:.2g})")
            if p < 0.05:
                difference = both[ours] - both[rival]
                if difference.median() > 0:
                    worse.append(rival)
                else:
                    split.append(f"{rival}: lower mean, {ours} lower in {int((difference < 0).sum())} of {len(both)}")
        verdict = ("worse than " + ", ".join(worse)) if worse else ("lowest" if not cells else "not separable")
        if split:
            verdict += " (split with " + "; ".join(split) + ")"
        if untested and not worse:
            verdict += " (untested: " + ", ".join(untested) + ")"
        lines.append(f"| {table} | {mine:.3f} | {'; '.join(cells) or '-'} | {verdict} |")
    return "\n".join(lines) + "\n"


def combine(tables: list[Path], budget: int, repeats: int, results: Path, partial: bool) -> None:
    from tune_risk.offline.summary import write_summary

    target = results / f"b{budget}"
    finals = finals_of(tables, budget, repeats, target / "finals.csv", partial)
    with tempfile.TemporaryDirectory() as scratch:  # curves need every evaluation; the finals give the rest
        write_summary(finals, pd.DataFrame(), scratch, title=f"Peers on the six tables, budget {budget}", test_seeds=20)
        for name in ("summary.md", "performance_profile.png"):
            shutil.copyfile(Path(scratch) / name, target / name)
    text = (headline(finals, budget) + "\nMean held-out MV regret per table (bold: lowest):\n\n" + per_table(finals)
            + "\n`tune-risk` against every method with a lower mean held-out MV regret on the table (paired Wilcoxon "
            "over shared repeats):\n\n"
            + target_check(finals))
    (target / "headline.md").write_text(text, encoding="utf-8")
    print(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", type=int, nargs="+", default=[300, 1500])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tables", nargs="*", default=None, help="table names (default: every datasets/*.parquet)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "peers")
    parser.add_argument("--results", type=Path, default=ROOT / "experiments" / "results" / "peers_replay")
    parser.add_argument("--only-combine", action="store_true", help="write the results of the units done so far")
    parser.add_argument("--partial", action="store_true", help="combine even when some units are missing")
    parser.add_argument("--rerun", default="", help="comma-separated methods to replay again although the finals "
                        "hold them (after their defaults changed; use a fresh --out, whose units would be stale)")
    args = parser.parse_args(argv)
    rerun = frozenset(m for m in args.rerun.split(",") if m)
    known = {m for b in args.budgets for m, _ in plan(b, args.repeats)}
    if rerun - known:
        parser.error(f"--rerun: {', '.join(sorted(rerun - known))} not in the plan ({', '.join(sorted(known))})")
    tables = sorted((ROOT / "datasets").glob("*.parquet"))
    if args.tables:
        tables = [t for t in tables if t.stem in args.tables]
    for budget in args.budgets:
        if not args.only_combine:
            replay_budget(tables, budget, args.repeats, args.out / f"b{budget}", args.results / f"b{budget}" / "finals.csv",
                          rerun)
        combine(tables, budget, args.repeats, args.results, args.partial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
