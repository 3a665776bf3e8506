"""``tune-risk generate``'s input checks (JAX-free): seeds a replay accepts, ARLBench environment names."""

from __future__ import annotations

import pytest

from rl_tasks import cli
from rl_tasks.envs import check_task, get_env_spec
from tune_risk.cli import main


def test_one_seed_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / "t.parquet"
    with pytest.raises(SystemExit) as exited:  # argparse's exit
        main(["generate", "--algo", "ppo", "--env", "cc_cartpole", "--seeds", "1", "--out", str(out)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--seeds: must be at least 2, got 1" in err and err.count("\n") == 1
    assert not out.exists()


def test_generate_table_refuses_one_seed():
    generate = pytest.importorskip("rl_tasks.generate")
    assert generate.MIN_SEEDS == cli.MIN_SEEDS
    with pytest.raises(ValueError, match=r"seeds=1: a table needs at least 2 seeds"):
        generate.check_sizes(4, [0], 100)
    with pytest.raises(ValueError, match=r"repeat a seed"):
        generate.check_sizes(4, [0, 0], 100)


@pytest.mark.parametrize("arlbench, ours", [
    ("cc_cartpole", "CartPole-v1"), ("cc_acrobot", "Acrobot-v1"), ("cc_pendulum", "Pendulum-v1"),
    ("cc_mountain_car", "MountainCar-v0"), ("cc_continuous_mountain_car", "MountainCarContinuous-v0"),
    ("cc_mountain_car_continuous", "MountainCarContinuous-v0"), ("brax_fast", "brax/fast"),
    ("brax_halfcheetah", "brax/halfcheetah"),
])
def test_arlbench_environment_names_map_to_ours(arlbench, ours):
    assert get_env_spec(arlbench).name == ours


def test_unknown_environment_lists_the_arlbench_names(capsys):
    assert main(["generate", "--algo", "sac", "--env", "cc_lunar", "--out", "x.parquet"]) == 2
    err = capsys.readouterr().err
    assert "unknown environment 'cc_lunar'" in err and "cc_cartpole" in err
    assert check_task("sac", "cc_pendulum").name == "Pendulum-v1"
