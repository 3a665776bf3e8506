"""``tune-risk replay`` as RL researchers expect it (issue #19): flags, fast errors, resuming, table loading."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tune_risk.benchmarks.objectives import get_objective, make_pool_table
from tune_risk.cli import build_parser, main
from tune_risk.offline import OfflineTable
from tune_risk.offline.knobs import NOT_FLAGS, engine_overrides, flag_name
from tune_risk.offline.methods import method_settings
from tune_risk.settings import EngineSettings

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
OUTPUTS = ("runs.csv", "rounds.csv", "summary.md", "regret_curves.png", "ranks_over_time.png", "k_histogram.png",
           "k_vs_mv.png", "performance_profile.png")


def long_table(n_configs: int = 16, n_seeds: int = 25) -> pd.DataFrame:
    X, Y = make_pool_table(get_objective("hartmann3"), n_configs, n_seeds, seed=2)
    return pd.DataFrame([
        {"config_id": c, "seed": s, "performance": Y[c, s], "hp_config.lr": 10 ** (-4 + 3 * X[c, 0]),
         "hp_config.gamma": 0.9 + 0.1 * X[c, 1], "hp_config.tau": X[c, 2]}
        for c in range(n_configs) for s in range(n_seeds)
    ])


@pytest.fixture(scope="module")
def table_csv(tmp_path_factory) -> Path:
    """A 16-configuration, 25-seed ARLBench long table."""
    path = tmp_path_factory.mktemp("tables") / "t25.csv"
    long_table().to_csv(path, index=False)
    return path


def replay_args(table: Path, out: Path, *extra: str) -> list[str]:
    return ["replay", "--table", str(table), "--methods", "erahbo,rahbo-k2", "--repeats", "2", "--budget", "24",
            "--test-seeds", "0", "--out", str(out), *extra]


# --------------------------------------------------------------------------------------------------
# 1. every engine knob a flag, defaults in --help
# --------------------------------------------------------------------------------------------------
def replay_parser():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return subparsers.choices["replay"]


def test_every_engine_setting_is_a_flag_or_set_by_the_protocol():
    options = replay_parser()._option_string_actions
    for flag in ("--alpha", "--k-min", "--k-max", "--k-init", "--n-initial", "--beta", "--beta-stop",
                 "--lengthscale", "--seed-key", "--intensify", "--warp", "--repeats", "--seed", "--out"):
        assert flag in options, flag
    for field in dataclasses.fields(EngineSettings):
        assert flag_name(field.name) in options or field.name in NOT_FLAGS, field.name


def test_help_shows_every_default_without_rst_markup():
    parser = replay_parser()
    formatter = parser.formatter_class(parser.prog)
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "verbose"):
            continue
        text = formatter._get_help_string(action)
        assert "(default:" in text or "(required)" in text, action.option_strings
    assert "``" not in parser.format_help()


def test_engine_flags_reach_every_method_except_what_its_name_fixes(tmp_path):
    args = build_parser().parse_args(["replay", "--table", "t.csv", "--out", str(tmp_path), "--alpha", "0.5",
                                      "--k-max", "10", "--beta", "3", "--intensify", "4"])
    overrides = engine_overrides(args)
    assert overrides == {"alpha": 0.5, "k_max": 10, "beta": 3.0, "intensify": 4}
    erahbo = method_settings("erahbo", 100, 0, **overrides)
    assert (erahbo.alpha, erahbo.k_max, erahbo.beta, erahbo.intensify) == (0.5, 10, 3.0, 4)
    rahbo = method_settings("rahbo-k2", 100, 0, **overrides)
    assert (rahbo.k_min, rahbo.k_max, rahbo.alpha, rahbo.beta) == (2, 2, 0.5, 3.0)
    assert method_settings("gp-ucb", 100, 0, **overrides).alpha == 0.0


def test_verbose_after_the_subcommand_and_bare_command_exits_2(capsys):
    args = build_parser().parse_args(["replay", "--table", "t.csv", "--out", "o", "-v"])
    assert args.verbose is True
    assert build_parser().parse_args(["replay", "--table", "t.csv", "--out", "o"]).verbose is False
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: tune-risk") and "a command is required" in err


def test_py_typed_is_shipped():
    assert resources.files("tune_risk").joinpath("py.typed").is_file()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["tune_risk"]


# --------------------------------------------------------------------------------------------------
# 2. fast errors: one stderr line, exit code 2, torch never imported
# --------------------------------------------------------------------------------------------------
PROBE = """
import json, sys
from tune_risk.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "torch": "torch" in sys.modules, "ray": "ray" in sys.modules}))
"""


def run_probe(argv: list[str]) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=ENV,
                          timeout=120, check=False)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.fixture(scope="module")
def one_config_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tables") / "single.csv"
    long_table().query("config_id == 3").to_csv(path, index=False)
    return path


@pytest.mark.parametrize("single, extra, message", [
    (False, ["--methods", "bohb"], "unknown method 'bohb'"),
    (False, ["--methods", "erahbo,,erahbo"], "entry 2 is empty"),
    (False, ["--methods", "erahbo,rahbo-k2,erahbo"], "'erahbo' is given twice"),
    (False, ["--methods", "rahbo-k30"], "has 25 seeds, fewer than k_max=30 replicates (rahbo-k30)"),
    (False, ["--alpha", "-1"], "alpha must be >= 0"),
    (False, ["--intensify", "24"], "intensify=24 must be smaller than budget=24"),
    (True, [], "single.csv' has 1 configuration(s); a replay needs more than n_initial=5"),
])
def test_bad_calls_fail_before_torch_with_one_line(table_csv, one_config_csv, tmp_path, single, extra, message):
    result, stderr = run_probe(replay_args(one_config_csv if single else table_csv, tmp_path / "out", *extra))
    assert result == {"code": 2, "torch": False, "ray": False}
    assert len(stderr.strip().splitlines()) == 1 and message in stderr, stderr
    assert stderr.startswith("tune-risk replay: error:")


def test_console_entry_point_exits_2_on_a_bad_method(table_csv, tmp_path):
    done = subprocess.run([sys.executable, "-m", "tune_risk.cli", *replay_args(table_csv, tmp_path, "--methods", "x")],
                          capture_output=True, text=True, env=ENV, timeout=120, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "unknown method 'x'" in done.stderr


# --------------------------------------------------------------------------------------------------
# 3. resumable output
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished(table_csv, tmp_path_factory) -> Path:
    """An uninterrupted replay: 2 methods x 2 repeats."""
    out = tmp_path_factory.mktemp("finished")
    assert main(replay_args(table_csv, out)) == 0
    return out


def unit_files(out: Path) -> list[Path]:
    return sorted((out / "units").rglob("*.runs.csv"))


def test_sigint_keeps_finished_units_and_a_rerun_gives_the_same_outputs(table_csv, finished, tmp_path):
    out = tmp_path / "interrupted"
    # The CLI in a process whose second replay blocks, so that Ctrl-C always lands after exactly one
    # finished unit (the four replays of this tiny table otherwise finish in about a second).
    # A child inherits an ignored SIGINT (the test process may ignore it after earlier tests), and Python
    # then installs no KeyboardInterrupt handler: restore the one an interactive shell gives.
    cli = ("import signal, sys, time\n"
           "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
           "import tune_risk.offline.replay as replay\n"
           "from tune_risk.cli import main\n"
           "original, calls = replay.replay_direct, []\n"
           "def blocking(*args, **kwargs):\n"
           "    calls.append(1)\n"
           "    if len(calls) > 1:\n"
           "        time.sleep(600)\n"
           "    return original(*args, **kwargs)\n"
           "replay.replay_direct = blocking\n"
           "sys.exit(main(sys.argv[1:]))\n")
    argv = [sys.executable, "-c", cli, *replay_args(table_csv, out)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.monotonic() + 180
    while not unit_files(out) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()  # never leave the blocked child behind
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1].startswith("interrupted:") and "rerun the same command" in stderr
    kept = unit_files(out)
    assert len(kept) == 1 and not (out / "runs.csv").exists()
    assert not list(out.rglob("*.tmp"))  # no half-written unit
    assert main(replay_args(table_csv, out)) == 0  # resumes
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (finished / name).read_bytes(), name


def test_rerun_of_a_finished_replay_replays_nothing(table_csv, finished, monkeypatch, capsys):
    import tune_risk.offline.replay as replay

    def refuse(*args, **kwargs):
        raise AssertionError("a finished unit was replayed again")

    monkeypatch.setattr(replay, "replay_direct", refuse)
    before = {name: (finished / name).read_bytes() for name in OUTPUTS}
    assert main(replay_args(table_csv, finished)) == 0
    assert "4 of 4 replays reused" in capsys.readouterr().out
    assert {name: (finished / name).read_bytes() for name in OUTPUTS} == before


def test_resume_into_an_output_of_other_settings_is_refused(table_csv, finished, capsys):
    assert main(replay_args(table_csv, finished, "--alpha", "0.5")) == 2
    err = capsys.readouterr().err
    assert "holds results of a replay with other settings" in err and "'engine'" not in err and "engine:" in err


def test_resume_is_refused_when_a_method_now_resolves_to_other_settings(table_csv, tmp_path, monkeypatch, capsys):
    """Same flags, but the package's default for the method changed (here the searcher's recommendation rule,
    as between two versions of tune_risk): the old units must not be mixed with new ones."""
    import tune_risk.settings as settings

    args = ["replay", "--table", str(table_csv), "--methods", "tune-risk", "--repeats", "1", "--budget", "24",
            "--test-seeds", "0", "--out", str(tmp_path / "out")]
    assert main(args) == 0
    manifest = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert manifest["methods"]["tune-risk"]["recommend"] == settings.SEARCHER_RECOMMEND
    monkeypatch.setattr(settings, "SEARCHER_RECOMMEND", "lcb")
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "now resolve to other settings" in err and "tune-risk: recommend 'evidence' there, 'lcb' here" in err


# --------------------------------------------------------------------------------------------------
# 4. table loading: one missing-value rule, inf, string seeds, separators, folders
# --------------------------------------------------------------------------------------------------
def small_configs(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"lr": [0.1, 0.2, 0.3][:n], "opt": ["adam", "sgd", "adam"][:n]})


def returns_with(value: float) -> np.ndarray:
    returns = np.arange(12, dtype=float).reshape(3, 4)
    returns[2, 1] = value
    return returns


def write_format(fmt: str, returns: np.ndarray, path: Path) -> Path:
    configs = small_configs()
    if fmt == "long":
        frame = pd.DataFrame([{"config_id": c, "seed": s, "performance": returns[c, s], "hp_config.lr": configs.lr[c],
                               "hp_config.opt": configs.opt[c]} for c in range(3) for s in range(4)])
    elif fmt == "wide":
        frame = configs.assign(**{f"performance_seed_{s}": returns[:, s] for s in range(4)})
    else:
        frame = configs.assign(performance=[str(list(row)) for row in returns])
    frame.to_csv(path, index=False) if path.suffix == ".csv" else frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("fmt, column", [("long", "performance"), ("wide", "performance_seed_1"),
                                         ("list", "performance")])
def test_a_missing_value_is_the_same_error_in_every_format(tmp_path, fmt, column, suffix):
    path = write_format(fmt, returns_with(np.nan), tmp_path / f"{fmt}{suffix}")
    with pytest.raises(ValueError) as raised:
        OfflineTable.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: missing values: config_id 2 is missing seed(s) [1] (column {column!r}: NaN)")
    table = OfflineTable.load(path, missing="drop")  # the paper's protocol, asked for
    assert table.dropped_nan == 1 and table.n_configs == 2


def test_an_absent_long_row_is_a_missing_value_too(tmp_path):
    path = write_format("long", returns_with(5.0), tmp_path / "absent.csv")
    frame = pd.read_csv(path)
    frame.drop(index=frame.index[(frame.config_id == 2) & (frame.seed == 1)]).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"missing values: config_id 2 is missing seed\(s\) \[1\] \(column "
                                         r"'performance': no row\)"):
        OfflineTable.load(path)


def test_inf_is_reported_as_non_finite(tmp_path):
    path = write_format("wide", returns_with(np.inf), tmp_path / "inf.csv")
    with pytest.raises(ValueError) as raised:
        OfflineTable.load(path)
    assert "non-finite returns: config_id 2" in str(raised.value) and "'performance_seed_1': inf" in str(raised.value)
    assert "NaN" not in str(raised.value)


def test_string_seeds_are_ordered_numerically(tmp_path):
    seeds = [f"s{i}" for i in range(12)]
    frame = small_configs().assign(**{f"performance_seed_{s}": [float(i)] * 3 for i, s in enumerate(seeds)})
    path = tmp_path / "strings.csv"
    frame.sample(frac=1.0, axis=1, random_state=0).to_csv(path, index=False)  # columns in any order
    table = OfflineTable.load(path)
    assert table.seeds.tolist() == seeds
    np.testing.assert_array_equal(table.returns[0], np.arange(12.0))
    long = pd.DataFrame([{"config_id": c, "seed": s, "performance": 1.0 + i + c, "hp_config.x": c / 3}
                         for c in range(3) for i, s in enumerate(seeds)])
    long.to_csv(tmp_path / "long_strings.csv", index=False)
    assert OfflineTable.load(tmp_path / "long_strings.csv").seeds.tolist() == seeds


@pytest.mark.parametrize("sep", [";", "\t"])
def test_semicolon_and_tab_csv_are_read(tmp_path, sep):
    comma = write_format("long", returns_with(5.0), tmp_path / "comma.csv")
    other = tmp_path / "other.csv"
    pd.read_csv(comma).to_csv(other, index=False, sep=sep)
    np.testing.assert_array_equal(OfflineTable.load(other).returns, OfflineTable.load(comma).returns)


def test_a_folder_named_like_a_table_is_a_directory(tmp_path):
    (tmp_path / "x.csv").mkdir()
    with pytest.raises(ValueError, match=r"x\.csv: is a directory"):
        OfflineTable.load(tmp_path / "x.csv")


def register_hello(subparsers) -> None:  # an entry point of another package, for the test below
    subparsers.add_parser("hello", help="say hello").set_defaults(func=lambda args: 7)


def test_subcommands_come_from_the_entry_point_group(monkeypatch):
    from importlib.metadata import EntryPoint

    import tune_risk.cli as cli

    installed = list(cli.entry_points(group=cli.COMMAND_GROUP))
    assert {e.value for e in installed} == {"tune_risk.offline.cli:register", "rl_tasks.cli:register"}
    extra = [EntryPoint("hello", f"{__name__}:register_hello", cli.COMMAND_GROUP),
             EntryPoint("broken", "no_such_package_xyz.cli:register", cli.COMMAND_GROUP)]
    monkeypatch.setattr(cli, "entry_points", lambda group: [*installed, *extra] if group == cli.COMMAND_GROUP else [])
    choices = cli.build_parser()._subparsers._group_actions[0].choices
    assert {"replay", "generate", "prewarm", "hello"} <= set(choices) and "broken" not in choices
    assert cli.main(["hello"]) == 7
