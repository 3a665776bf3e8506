"""experiments/studies/peers_replay.py: the committed finals are the resume record, and the target check is honest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.scripts import load_script
from tune_risk.offline.units import Unit, UnitStore

study = load_script("peers_replay")


def write_unit(store: UnitStore, table: str, method: str, repeat: int, regret: float) -> None:
    """A finished unit's runs.csv: two evaluations, the final one carrying ``regret``."""
    path = store.path(Unit(table, method, repeat), "runs")
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"table": table, "method": method, "repeat": repeat, "n_eval": n, "regret": regret + 1 - n,
             "normalised_heldout_mv_regret": regret} for n in (0, 1)]
    pd.DataFrame(rows).to_csv(path, index=False)


def test_record_adds_final_rows_and_replaces_a_rerun(tmp_path: Path) -> None:
    store, finals = UnitStore(tmp_path / "out"), tmp_path / "results" / "finals.csv"
    for r in range(2):
        write_unit(store, "t1", "tpe-rep3", r, 0.5 + r)
        write_unit(store, "t2", "tpe-rep3", r, 0.1)
    study.record(finals, store, "t1", "tpe-rep3", 2)
    study.record(finals, store, "t2", "tpe-rep3", 2)
    write_unit(store, "t1", "tpe-rep3", 0, 0.9)  # (table, method) replayed again: its rows are replaced
    study.record(finals, store, "t1", "tpe-rep3", 2)
    got = pd.read_csv(finals)
    assert len(got) == 4 and not finals.with_suffix(".tmp").exists()
    t1 = got[got["table"] == "t1"].set_index("repeat")["normalised_heldout_mv_regret"]
    assert t1.to_dict() == {0: 0.9, 1: 1.5}
    assert set(got["n_eval"]) == {1}  # the final row of each unit only


def test_replay_budget_replays_only_what_the_committed_finals_lack(tmp_path: Path, monkeypatch) -> None:
    finals = tmp_path / "finals.csv"
    done = [{"table": "t1", "method": m, "repeat": r} for m, n in study.plan(300, 2) for r in range(n)]
    done += [{"table": "t2", "method": "random-rep5", "repeat": 0}]  # one of two repeats: not done
    pd.DataFrame(done).to_csv(finals, index=False)
    calls: list[tuple[str, str]] = []

    def fake_main(argv: list[str]) -> int:
        calls.append((argv[argv.index("--methods") + 1], Path(argv[argv.index("--table") + 1]).stem))
        return 0

    monkeypatch.setattr(study, "tune_risk_main", fake_main)
    monkeypatch.setattr(study, "record", lambda *args: None)
    study.replay_budget([Path("t1.parquet"), Path("t2.parquet")], 300, 2, tmp_path / "out", finals)
    assert all(table == "t2" for _, table in calls)
    assert [m for m, _ in calls] == [m for m, _ in study.plan(300, 2)]


def test_rerun_replays_a_method_the_finals_already_hold(tmp_path: Path, monkeypatch) -> None:
    finals = tmp_path / "finals.csv"
    pd.DataFrame([{"table": "t1", "method": m, "repeat": r} for m, n in study.plan(300, 2) for r in range(n)]
                 ).to_csv(finals, index=False)
    calls: list[str] = []
    monkeypatch.setattr(study, "tune_risk_main", lambda argv: calls.append(argv[argv.index("--methods") + 1]) or 0)
    monkeypatch.setattr(study, "record", lambda *args: None)
    study.replay_budget([Path("t1.parquet")], 300, 2, tmp_path / "out", finals, rerun=frozenset({"tune-risk"}))
    assert calls == ["tune-risk"]
    with pytest.raises(SystemExit):
        study.main(["--budgets", "300", "--rerun", "tune-riks", "--only-combine"])


def test_finals_of_refuses_a_partial_budget_unless_asked(tmp_path: Path) -> None:
    finals = tmp_path / "finals.csv"
    pd.DataFrame([{"table": "t1", "method": "tune-risk", "repeat": 0, "normalised_heldout_mv_regret": 0.1},
                  {"table": "t1", "method": "retired-method", "repeat": 0, "normalised_heldout_mv_regret": 0.2}]
                 ).to_csv(finals, index=False)
    with pytest.raises(SystemExit, match="units are not done"):
        study.finals_of([Path("t1.parquet")], 300, 1, finals, partial=False)
    got = study.finals_of([Path("t1.parquet")], 300, 1, finals, partial=True)
    assert list(got["method"]) == ["tune-risk"]  # rows outside the plan are left out


def finals_frame(ours: np.ndarray, rivals: dict[str, np.ndarray]) -> pd.DataFrame:
    rows = [{"table": "t", "method": m, "repeat": r, "normalised_heldout_mv_regret": float(v)}
            for m, values in {"tune-risk": ours, **rivals}.items() for r, v in enumerate(values)]
    return pd.DataFrame(rows)


def test_target_check_says_worse_when_a_lower_method_is_separable() -> None:
    ours = np.linspace(0.5, 0.7, 20)
    text = study.target_check(finals_frame(ours, {"a": ours - 0.2, "b": ours + 0.1}))
    assert "worse than a" in text and "b " not in text.split("\n")[2]


def test_target_check_does_not_call_too_few_pairs_a_tie() -> None:
    ours = np.linspace(0.5, 0.7, 20)
    text = study.target_check(finals_frame(ours, {"few": ours[:5] - 0.3}))
    assert "untested: few" in text and "(5, untested)" in text and "worse" not in text


def test_target_check_calls_a_mean_won_by_one_outlier_a_split_not_a_loss() -> None:
    """A rival lower on average only because ``ours`` has one disastrous repeat, while ``ours`` is lower on
    the other 19: separable (p < 0.05) but in the direction of the ranks, so a split, never "worse"."""
    rival = np.linspace(0.02, 0.04, 20)
    ours = rival - 0.01
    ours[0] = 1.0
    text = study.target_check(finals_frame(ours, {"a": rival}))
    assert "worse" not in text and "split with a: lower mean, tune-risk lower in 19 of 20" in text


def test_target_check_lowest_when_no_method_is_lower() -> None:
    ours = np.linspace(0.1, 0.2, 20)
    assert "| lowest |" in study.target_check(finals_frame(ours, {"a": ours + 0.05}))
