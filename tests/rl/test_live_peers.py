"""experiments/studies/live_peers.py: equal budgets, fresh seeds no search trains, resume, the summary, bad input."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from tests.scripts import load_script


@pytest.fixture(scope="module")
def peers():
    return load_script("live_peers")


def _record(task: str, method: str, seed: int, level: float, spread: float) -> dict:
    returns = level + spread * np.linspace(-1.0, 1.0, 20) + seed
    return {"task": task, "method": method, "search_seed": seed, "wall_s": 60.0 + seed, "env_steps": 1000 * (seed + 1),
            "trials": 10 + seed, "config": {"learning_rate": 0.001 * (seed + 1)}, "fresh_returns": returns.tolist(),
            "budget_s": 60.0, "workers": 1, "seeds_per_config": [20, 20, 20]}


def test_every_method_gets_the_same_time_budget_and_workers(peers) -> None:
    import rl_tasks

    space = rl_tasks.get_space("ppo", "CartPole-v1")
    methods = [m for m in peers.METHODS if m != "pb2" or peers.pb2_unavailable() is None]
    assert {"erahbo", "asha", "pbt", "tpe-rep3", "random-rep5"} <= set(methods)
    for method in methods:
        setup = peers.method_setup(method, space, seed=0, reports=5)
        config = peers.tune_config(setup, budget_s=77.0, workers=2)
        assert config.time_budget_s == 77.0, method
        assert config.max_concurrent_trials == (None if method in ("pbt", "pb2") else 2), method
        assert config.metric == "return" and config.mode == "max"
    assert peers.method_setup("pbt", space, 0, 5).num_samples == 1  # a grid of 8 member seeds
    assert len(peers.method_setup("pbt", space, 0, 5).extra_space["seed"]["grid_search"]) == peers.POPULATION


def test_pbt_mutates_only_the_float_hyperparameters(peers) -> None:
    import rl_tasks

    floats = peers.float_domains(rl_tasks.get_space("dqn", "CartPole-v1"))
    assert set(floats) == {"initial_epsilon", "target_epsilon", "learning_rate"}  # buffer sizes etc. stay
    # explore steps leave the domain (PBT's x1.2, PB2's float32 0.1): clipped back, the rest untouched
    clipped = peers.clip_to_domains(floats, {"learning_rate": 0.10000000149011612, "initial_epsilon": 0.4,
                                             "target_epsilon": 0.1, "buffer_size": 5000})
    assert clipped == {"learning_rate": 0.1, "initial_epsilon": 0.5, "target_epsilon": 0.1, "buffer_size": 5000}


def test_fresh_seeds_are_never_search_seeds(peers) -> None:
    seeds = {peers.seed_for(s, i) for s in range(5) for i in range(3000)}
    assert len(seeds) == 15000 and not seeds & set(peers.FRESH_SEEDS)
    assert len(peers.FRESH_SEEDS) == 20
    # ... and a search that did train one is refused
    trained = [SimpleNamespace(config={"seed": 3}), SimpleNamespace(config=None),
               SimpleNamespace(config={"seed": peers.FRESH_SEEDS[4]})]
    with pytest.raises(RuntimeError, match="fresh evaluation seeds"):
        peers.check_fresh_seeds_unused(trained)
    peers.check_fresh_seeds_unused(trained[:2])


def test_seeded_search_gives_every_repeat_its_own_seed(peers) -> None:
    from ray.tune.search import Repeater, Searcher

    class Fixed(Searcher):
        def __init__(self) -> None:
            super().__init__(metric="return", mode="max")
            self.n = 0

        def suggest(self, trial_id: str) -> dict:
            self.n += 1
            return {"lr": float(self.n)}

        def on_trial_complete(self, trial_id, result=None, error=False) -> None:
            pass

    search = peers.SeededSearch(Repeater(Fixed(), repeat=3), search_seed=2)
    configs = [search.suggest(f"t{i}") for i in range(6)]
    assert [c["lr"] for c in configs] == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]
    assert len({c["seed"] for c in configs}) == 6
    assert [c["seed"] for c in configs] == [peers.seed_for(2, i) for i in range(6)]
    assert search.get_state() == {"search_seed": 2, "suggested": 6}


def test_plan_skips_done_runs_seed_by_seed(peers, tmp_path) -> None:
    out = tmp_path / "peers.json"
    peers.append_record(out, _record("ppo_cartpole", "asha", 0, 100.0, 5.0))
    peers.append_record(out, _record("dqn_cartpole", "erahbo", 1, 100.0, 5.0))
    done = peers.load_records(out)
    assert len(done) == 2
    todo = peers.plan(["ppo_cartpole", "dqn_cartpole"], ["erahbo", "asha"], range(2), done)
    assert ("ppo_cartpole", "asha", 0) not in todo and ("dqn_cartpole", "erahbo", 1) not in todo
    assert len(todo) == 6
    assert [s for _, _, s in todo] == [0, 0, 0, 1, 1, 1]  # every task and method gets seed 0 first


def test_recommendation_helpers(peers) -> None:
    counter = peers.StepCounter(chunk_steps=2048)
    for t in (2048, 4096, 5000, 2048, 4096, 4096):  # a full run (short last chunk), then a run resumed at 2048
        counter.on_trial_result(0, [], None, {"timesteps": t})
    assert counter.total == 5000 + 2048 + 2048 + 2048
    pairs = [({"a": 1}, 10.0), ({"a": 2}, 30.0), ({"a": 1}, 20.0), ({"a": 2}, 31.0), ({"a": 1}, 12.0)]
    assert peers.best_group(pairs, 2) == {"a": 2}
    assert peers.best_group(pairs, 3) == {"a": 1}  # only a complete group counts
    assert peers.best_group(pairs, 4) is None
    assert peers.hyperparameters({"a": 1, "seed": 4, "__trial_index__": 2}) == {"a": 1}


def test_summary_from_records_alone(peers, tmp_path) -> None:
    out = tmp_path / "peers.json"
    records = [_record(task, method, seed, level, spread)
               for task in ("ppo_cartpole", "sac_pendulum") for seed in range(5)
               for method, level, spread in (("erahbo", 400.0, 10.0), ("asha", 300.0, 60.0), ("pbt", 398.0, 11.0))]
    out.write_text(json.dumps(records))
    peers.main(["--only-summary", "--out", str(out)])
    page = (tmp_path / "peers.md").read_text()
    assert (tmp_path / "peers_ppo_cartpole.png").stat().st_size > 0
    assert (tmp_path / "peers_sac_pendulum.png").stat().st_size > 0
    assert "## ppo_cartpole" in page and "## sac_pendulum" in page and "dqn_cartpole" not in page
    rows = peers.method_rows([r for r in records if r["task"] == "ppo_cartpole"], peers.METHODS)
    by = {r["method"]: r for r in rows}
    assert by["erahbo"]["best"] and by["erahbo"]["mv"] > by["pbt"]["mv"] > by["asha"]["mv"]
    worst_two = np.sort(60.0 * np.linspace(-1.0, 1.0, 20))[:2].mean()  # 10 % of 20 fresh seeds
    assert by["asha"]["worst10"] == pytest.approx(300.0 + worst_two + np.mean(range(5)))
    assert by["asha"]["p"] == pytest.approx(0.0625)  # 5 pairs, all one sign: the smallest two-sided p
    assert by["asha"]["overlap"] is False
    lo, hi = by["erahbo"]["mean_ci"]
    assert lo < by["erahbo"]["mean"] < hi
    assert "| erahbo | 5 |" in page and "erahbo: best MV" in page
    assert "| rahbo-k20 |" not in page  # no row for a method without records


def test_no_interval_is_printed_from_fewer_than_five_search_seeds(peers, tmp_path) -> None:
    out = tmp_path / "peers.json"
    records = [_record("ppo_cartpole", method, seed, level, spread) for seed in range(2)
               for method, level, spread in (("erahbo", 400.0, 10.0), ("asha", 300.0, 60.0))]
    out.write_text(json.dumps(records))
    peers.main(["--only-summary", "--out", str(out)])
    rows = {r["method"]: r for r in peers.method_rows(records, peers.METHODS)}
    assert all(np.isnan(rows["erahbo"][key]).all() for key in ("mean_ci", "mv_ci"))
    assert rows["asha"]["overlap"] is None  # no CI, no overlap verdict
    page = (tmp_path / "peers.md").read_text()
    erahbo = next(line for line in page.splitlines() if line.startswith("| erahbo |"))
    assert "[" not in erahbo  # no bracketed interval in the row


def test_unknown_method_is_one_line_naming_the_flag(peers, capsys) -> None:
    with pytest.raises(SystemExit):
        peers.parse(["--methods", "erahbo,hyperband"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--methods" in error and "'hyperband'" in error and "random-rep5" in error and "erahbo" in error
    with pytest.raises(SystemExit):
        peers.parse(["--tasks", "ppo_pong"])
    assert "--tasks" in capsys.readouterr().err


def test_a_resumed_run_continues_bit_for_bit() -> None:
    """PBT's checkpoints: a run resumed from its snapshot (after a pickle round trip, as through a
    tune.Checkpoint) trains the same chunks as the run itself; a state of another shape is refused."""
    import pickle

    from rl_tasks.seed_run import SeedRun

    config = {"minibatch_size": 256}
    run = SeedRun("ppo", "CartPole-v1", config, 3, 4096, 1024, 4)
    run.advance()
    state = pickle.loads(pickle.dumps(run.snapshot()))
    rest = [run.advance() for _ in range(3)]
    resumed = SeedRun("ppo", "CartPole-v1", config, 3, 4096, 1024, 4, resume=state)
    assert [resumed.advance() for _ in range(3)] == rest and rest[-1].final
    with pytest.raises(ValueError, match="does not fit"):
        SeedRun("ppo", "CartPole-v1", {**config, "hidden_size": 32}, 3, 4096, 1024, 4, resume=state)
