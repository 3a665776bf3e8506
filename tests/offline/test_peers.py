"""Peers in the replay: Ray Tune Searchers in Ray's Repeater, snapped to table rows, scored on held-out seeds."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.offline import peer_searchers
from tune_risk.cli import main
from tune_risk.engine.design import design_rows
from tune_risk.offline.methods import PeerMethod, method_settings, parse_methods, peer_method
from tune_risk.offline.peers import builtin_searcher, nearest_row, replay_peer
from tune_risk.offline.replay import ReplayTask, peer_runs_rows, replay_direct, runs_rows
from tune_risk.offline.table import OfflineTable
from tune_risk.tune.space import TuneSpaceCodec

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "datasets" / "dqn_acrobot.parquet"


@pytest.fixture(scope="module")
def table() -> OfflineTable:
    return OfflineTable.load(TABLE)


def peer_replay(table: OfflineTable, task: ReplayTask, name: str, repeat: int = 3, budget: int = 45):
    peer = peer_method(name)
    searcher = builtin_searcher(peer.family, seed=repeat)
    return replay_peer(task, TuneSpaceCodec.from_param_space(table.space), table.space, peer, searcher, repeat, budget)


def with_test_columns(table: OfflineTable, value: float) -> ReplayTask:
    """The table's task with its last 20 seed columns replaced by ``value`` (what a leak would read)."""
    returns = np.array(table.returns)
    returns[:, -20:] = value
    return ReplayTask(table.name, table.unit_points(), returns, test_seeds=20)  # scoring warp fitted on these


def test_no_method_reads_a_test_seed_column(table):
    """Wild values in the held-out columns change no decision of any method (own or peer)."""
    low, high = with_test_columns(table, -1e6), with_test_columns(table, 1e6)
    for name in ("tpe-rep3", "random-rep2"):
        a, b = peer_replay(table, low, name), peer_replay(table, high, name)
        assert a.rows == b.rows and a.columns == b.columns and a.recommended == b.recommended
        assert max(a.columns) < 30  # only search columns
    for method in ("erahbo", "tune-risk"):
        a, b = (replay_direct(t, method, 1, 40) for t in (low, high))
        assert [r.pool_index for r in a.engine.records] == [r.pool_index for r in b.engine.records]
        assert [r.n_incorporated for r in a.engine.records] == [r.n_incorporated for r in b.engine.records]


def test_held_out_scores_are_the_test_columns_mv_and_mean(table):
    task = ReplayTask.from_table(table, test_seeds=20)
    warped = np.asarray(table.warp()(table.returns[:, 30:]))
    mv = warped.mean(axis=1) - warped.var(axis=1, ddof=1)
    np.testing.assert_allclose(task.heldout_mv, mv, rtol=1e-12)
    np.testing.assert_allclose(task.heldout_mean, warped.mean(axis=1), rtol=1e-12)
    rows = runs_rows(replay_direct(task, "erahbo", 0, 30), task)
    last = rows[-1]
    expected = (mv.max() - mv[last["recommended_row"]]) / (mv.max() - np.median(mv))
    assert last["normalised_heldout_mv_regret"] == pytest.approx(expected)
    assert last["seed_runs"] == 5 * 20 + last["compute"]  # the paper's erahbo: initial design on top


def test_zero_test_seeds_keeps_the_papers_protocol(table):
    """``test_seeds=0``: the same columns and decisions as before held-out seeds existed."""
    task = ReplayTask.from_table(table)
    from tune_risk.offline.replay import seed_permutation

    assert task.seed_of(2, 7, 3) == int(seed_permutation(2, 7, 50)[3])
    assert "heldout_mv_regret" not in runs_rows(replay_direct(task, "erahbo", 0, 20), task)[0]


def test_peer_replay_repeats_bit_for_bit(tmp_path):
    args = ["replay", "--table", str(TABLE), "--methods", "tpe-rep3,random-rep2", "--repeats", "2",
            "--budget", "30"]
    for out in ("a", "b"):
        assert main([*args, "--out", str(tmp_path / out)]) == 0
    for name in ("runs.csv", "rounds.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_suggestion_snaps_to_its_nearest_row(table, monkeypatch):
    """Suggestions off the table land on the row nearest in the unit cube (brute force over every row)."""
    codec = TuneSpaceCodec.from_param_space(table.space)
    rng = np.random.default_rng(5)
    points = [codec.decode(rng.random(table.unit_points().shape[1])) for _ in range(6)]
    monkeypatch.setattr(peer_searchers, "POINTS", points)
    task = ReplayTask.from_table(table, test_seeds=20)
    run = replay_peer(task, codec, table.space, PeerMethod("mine-rep1", "mine", 1), peer_searchers.recording(),
                      0, 6)
    pool = table.unit_points()
    for point, (row, _k, distance) in zip(points, run.groups, strict=True):
        brute = np.array([np.sqrt(((pool[i] - codec.encode(point)) ** 2).sum()) for i in range(len(pool))])
        assert row == int(np.argmin(brute)) and distance == pytest.approx(brute.min())
    assert nearest_row(np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]), np.array([0.1, 0.1]))[0] == 0  # first on ties


def test_peers_run_in_rays_own_repeater(table, monkeypatch):
    """The wrapper is ``ray.tune.search.Repeater``: the searcher hears once per group, the mean of its k seeds."""
    import ray.tune.search as search

    built = []

    class Spy(search.Repeater):
        def __init__(self, *args, **kwargs):
            built.append(kwargs.get("repeat", args[1] if len(args) > 1 else None))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(search, "Repeater", Spy)
    codec = TuneSpaceCodec.from_param_space(table.space)
    monkeypatch.setattr(peer_searchers, "POINTS", [table.config(r) for r in (3, 9, 3)])
    task = ReplayTask.from_table(table, test_seeds=20)
    run = replay_peer(task, codec, table.space, PeerMethod("mine-rep4", "mine", 4), peer_searchers.recording(), 0, 12)
    assert built == [4]
    completes = [result for kind, result in peer_searchers.CALLS if kind == "complete"]
    suggests = [kind for kind, _ in peer_searchers.CALLS if kind == "suggest"]
    assert len(suggests) == 3 and len(completes) == 3
    values = [table.returns[row, col] for row, col in zip(run.rows, run.columns, strict=True)]
    for group, result in enumerate(completes):
        assert result["return"] == pytest.approx(np.mean(values[4 * group:4 * group + 4]))
    # row 3 was suggested twice: its seeds continue in the repetition's order instead of starting again
    assert run.columns[8:12] == [task.seed_of(0, 3, i) for i in range(4, 8)]
    means = {3: np.mean(table.returns[3, run.columns[:4] + run.columns[8:]]),
             9: np.mean(table.returns[9, run.columns[4:8]])}
    assert run.recommended[-1] == max(means, key=means.get) and run.seeds_of_recommended[-1] == (8 if
                                                                                                run.recommended[-1] == 3 else 4)


def test_replay_command_holds_peers_ours_and_a_users_searcher(tmp_path):
    """The issue's command (smaller budget) plus a --searcher of the user's own."""
    out = tmp_path / "out"
    code = main(["replay", "--table", str(TABLE), "--methods", "erahbo,random-rep5,tpe-rep3,mine-rep2",
                 "--repeats", "2", "--budget", "40", "--test-seeds", "20", "--out", str(out),
                 "--searcher", "mine=tests.offline.peer_searchers:tpe"])
    assert code == 0
    runs = pd.read_csv(out / "runs.csv")
    assert set(runs.method) == {"erahbo", "random-rep5", "tpe-rep3", "mine-rep2"}
    finals = runs.sort_values("n_eval").groupby(["method", "repeat"]).tail(1)
    assert finals["normalised_heldout_mv_regret"].notna().all() and (finals["normalised_heldout_mv_regret"] >= 0).all()
    assert (finals.query("method != 'erahbo'").seed_runs == 40).all()
    summary = (out / "summary.md").read_text()
    assert "## Recommended configuration on held-out seeds" in summary and "mine-rep2" in summary


@pytest.mark.parametrize("flag, message", [
    ("mine=no_such_module_xyz:make", "cannot import module 'no_such_module_xyz'"),
    ("mine=tests.offline.peer_searchers:not_a_searcher", "returned object, not a ray.tune.search.Searcher"),
    ("mine=tests.offline.peer_searchers:missing", "has no callable 'missing'"),
    ("mine=tests.offline.peer_searchers:raises", "calling it raised RuntimeError: no licence server"),
    ("mine", "expected NAME=module:callable"),
])
def test_a_bad_searcher_flag_is_one_line_naming_the_flag(tmp_path, capsys, flag, message):
    code = main(["replay", "--table", str(TABLE), "--methods", "mine-rep2", "--out", str(tmp_path),
                 "--searcher", flag])
    err = capsys.readouterr().err
    assert code == 2 and "--searcher" in err and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("methods, extra, message", [
    ("nope-rep3", [], "unknown peer 'nope-rep3'"),
    ("tpe-rep40", [], "Repeater(40) needs 40 distinct seeds per suggestion"),
    ("smac", [], "SMAC3 is not available"),
    ("bohb-rep2", [], "TuneBOHB needs hpbandster"),
    ("tpe-rep3", ["--via", "tune"], "--via tune: peers (tpe-rep3)"),
    ("erahbo", ["--test-seeds", "35"], "held out by --test-seeds 35"),
    ("hebo-rep2", ["--hebo-python", "/nonexistent/python"], "HEBO needs numpy < 1.25"),
])
def test_bad_peer_calls_fail_before_any_replay(tmp_path, capsys, methods, extra, message):
    code = main(["replay", "--table", str(TABLE), "--methods", methods, "--out", str(tmp_path), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


def test_method_names_of_peers_and_own_methods():
    assert parse_methods("tune-risk,tpe-rep3,mine-rep1", ("mine",)) == ["tune-risk", "tpe-rep3", "mine-rep1"]
    assert peer_method("optuna-gp-rep3") == PeerMethod("optuna-gp-rep3", "optuna-gp", 3)
    assert peer_method("erahbo") is None and peer_method("rahbo-k20") is None
    with pytest.raises(ValueError, match="k >= 1"):
        peer_method("tpe-rep0")


def test_tune_risk_method_is_risk_aware_searchs_defaults():
    """``tune-risk`` in the replay = the engine ``RiskAwareSearch(budget=B)`` builds (every knob left out)."""
    from ray import tune

    from tune_risk.tune.searcher import RiskAwareSearch

    searcher = RiskAwareSearch(budget=200, random_state_seed=4)
    searcher.set_search_properties("r", "max", {"x": tune.uniform(0, 1)})
    searcher.suggest("t0")  # builds the engine
    live = searcher.engine.settings.to_dict()
    replay = method_settings("tune-risk", 200, seed=4, warp="online").to_dict()
    protocol = {"common_random_numbers", "max_active_configs"}  # the replay's protocol, not a default
    assert {k: v for k, v in live.items() if k not in protocol} == {k: v for k, v in replay.items() if k not in protocol}
    assert live["recommend"] == "evidence" and live["method"] == "erahbo"


def test_peer_regret_shares_the_initial_designs_scale(table):
    """``r0`` of a peer comes from the same shared Sobol design as the engine's methods'."""
    task = ReplayTask.from_table(table, test_seeds=20)
    result = replay_direct(task, "erahbo", 2, 20)
    engine_rows = [r.pool_index for r in result.engine.records if r.phase == "initial"]
    assert design_rows(task.points, 5, 2) == engine_rows
    own = runs_rows(result, task)[0]
    run = peer_replay(table, task, "random-rep1", repeat=2, budget=5)
    peer = peer_runs_rows(run, task, design_rows(task.points, 5, 2))[0]
    assert own["regret"] / own["normalised_regret"] == pytest.approx(peer["regret"] / peer["normalised_regret"])


def test_remote_searcher_speaks_to_another_interpreter(table):
    """The host protocol (used for HEBO's venv), exercised with this interpreter hosting OptunaSearch."""
    from tune_risk.offline.remote import RemoteSearcher

    task = ReplayTask.from_table(table, test_seeds=20)
    codec = TuneSpaceCodec.from_param_space(table.space)
    import optuna

    remote = RemoteSearcher(sys.executable, "ray.tune.search.optuna:OptunaSearch",
                            {"sampler": optuna.samplers.TPESampler(seed=3)})
    try:
        far = replay_peer(task, codec, table.space, PeerMethod("tpe-rep2", "tpe", 2), remote, 3, 20)
    finally:
        remote.close()
    near = peer_replay(table, task, "tpe-rep2", repeat=3, budget=20)
    assert far.rows == near.rows and far.columns == near.columns
