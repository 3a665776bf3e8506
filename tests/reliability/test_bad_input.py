"""Bad input: every case raises a clear error that names the problem (one table of cases, parametrised).

Categories: search spaces, ``RiskAwareSearch`` / ``ReplicateScheduler`` / ``Engine`` arguments, engine
calls and state, offline tables, ``tune-risk replay`` arguments. For the CLI the contract is exit
code 2, exactly one line on stderr, no traceback.

Already covered elsewhere (not repeated here; counted in the README's Reliability figures):

==========================================================  ==================================================
file                                                        bad input
==========================================================  ==================================================
tests/tune/test_tune_space.py::test_unsupported_spaces...   18 unsupported / empty / malformed Tune spaces
tests/tune/test_tune_space.py::test_non_dict_space...       non-dict space, configs missing / out of range
tests/tune/test_searcher_contract.py                        10 constructor arguments, 3 unsupported domains,
                                                            missing space / metric, scheduler without searcher
tests/engine/test_settings.py                               every EngineSettings field out of range
tests/offline/test_table.py::BAD_FRAMES (x parquet, csv)    16 malformed tables (keys, returns, ragged, lists)
tests/offline/test_table.py::BAD_SPACES                     6 metadata search spaces that do not fit
tests/offline/test_table.py::test_missing_file_unknown...   missing file, unknown extension, bad parquet/JSON
tests/offline/test_table.py::test_fuzz_loader...            hypothesis: random columns, types, NaNs, duplicates
tests/offline/test_cli.py                                   unknown method, budget=1, too few seeds, no file
==========================================================  ==================================================
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ray import tune
from ray.tune.search import ConcurrencyLimiter

from tune_risk import Engine, EngineSettings, ReplicateScheduler, RiskAwareSearch
from tune_risk.cli import main
from tune_risk.offline.table import OfflineTable

SPACE = {"x": tune.uniform(0.0, 1.0), "opt": tune.choice(["a", "b"])}
GOOD = [{"x": 0.1 * i, "opt": "a"} for i in range(6)]


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[Path], object]  # receives a tmp directory
    error: type[BaseException]
    match: str


def searcher(**kwargs) -> RiskAwareSearch:
    return RiskAwareSearch(SPACE, metric="return", mode="max", random_state_seed=0, **kwargs)


def first_suggestion(**kwargs):
    """Arguments only checkable against the space: they fail at the first suggestion."""
    return searcher(**kwargs).suggest("trial_0")


def engine_in_flight() -> tuple[Engine, int]:
    engine = Engine(EngineSettings(k_init=2, n_initial=2), dim=1)
    return engine, engine.ask().run_id


def from_arrays(returns, configs=None, **kwargs) -> OfflineTable:
    configs = pd.DataFrame({"a": [0.1, 0.2]}) if configs is None else configs
    return OfflineTable.from_arrays(configs, returns, name="syn", **kwargs)


def csv_table(tmp: Path, name: str = "ok.csv") -> Path:
    # 8 configurations x 2 seeds: more than the initial design (5), so only the argument under test is wrong.
    configs = np.repeat(np.arange(8), 2)
    frame = pd.DataFrame({"config_id": configs, "seed": np.tile([0, 1], 8), "performance": np.arange(16.0),
                          "hp_config.a": 0.1 * (configs + 1)})
    frame.to_csv(tmp / name, index=False)
    return tmp / name


def write(tmp: Path, name: str, text: str) -> Path:
    (tmp / name).write_text(text)
    return tmp / name


CASES = [
    # ---------------------------------------------------------------- search spaces
    Case("space_not_a_dict", lambda t: RiskAwareSearch([1, 2]), ValueError, r"param_space must be a dict, got list"),
    Case("space_param_named_like_seed_key", lambda t: RiskAwareSearch({"x": tune.uniform(0, 1), "seed": tune.randint(0, 9)}),
         ValueError, r"parameter 'seed'.*training seed.*seed_key"),
    Case("space_constant_named_like_seed_key", lambda t: RiskAwareSearch({"x": tune.uniform(0, 1), "rs": 3}, seed_key="rs"),
         ValueError, r"parameter 'rs'"),
    Case("space_nested_grid_search", lambda t: RiskAwareSearch({"opt": {"lr": tune.grid_search([0.1, 0.2])}}),
         ValueError, r"Parameter 'opt/lr': grid_search is not supported"),
    Case("space_empty_choice", lambda t: RiskAwareSearch({"c": tune.choice([])}), ValueError,
         r"Parameter 'c': categorical has no choices"),
    Case("space_only_constants", lambda t: RiskAwareSearch({"lr": 0.1}), ValueError, r"search space is empty"),
    # ---------------------------------------------------------------- RiskAwareSearch / ReplicateScheduler arguments
    Case("candidates_empty", lambda t: searcher(candidates=[]), ValueError, r"candidates is empty"),
    Case("candidates_a_dict", lambda t: searcher(candidates={"x": 0.5, "opt": "a"}), ValueError,
         r"candidates must be a list of config dicts"),
    Case("points_to_evaluate_a_dict", lambda t: searcher(points_to_evaluate={"x": 0.5, "opt": "a"}), ValueError,
         r"points_to_evaluate must be a list of config dicts"),
    Case("candidate_outside_space", lambda t: first_suggestion(candidates=[{"x": 2.0, "opt": "a"}, *GOOD]),
         ValueError, r"Parameter 'x': value 2\.0 is outside \[0\.0, 1\.0\]"),
    Case("candidate_missing_parameter", lambda t: first_suggestion(candidates=[{"x": 0.5}, *GOOD]), ValueError,
         r"Parameter 'opt': missing from config"),
    Case("candidate_not_a_choice", lambda t: first_suggestion(candidates=[{"x": 0.5, "opt": "z"}, *GOOD]),
         ValueError, r"Parameter 'opt'.*'z'"),
    Case("candidates_fewer_than_n_initial", lambda t: first_suggestion(candidates=GOOD[:3]), ValueError,
         r"pool has 3 rows, fewer than n_initial=5"),
    Case("candidates_duplicated", lambda t: first_suggestion(candidates=[GOOD[1]] * 6), ValueError,
         r"pool has duplicate rows"),
    Case("point_to_evaluate_outside_space", lambda t: first_suggestion(points_to_evaluate=[{"x": 5.0, "opt": "a"}]),
         ValueError, r"Parameter 'x': value 5\.0 is outside"),
    Case("evaluated_rewards_text", lambda t: searcher(points_to_evaluate=GOOD[:1], evaluated_rewards=["abc"]),
         ValueError, r"evaluated_rewards\[0\] must hold finite numbers, got 'abc'"),
    Case("evaluated_rewards_none", lambda t: searcher(points_to_evaluate=GOOD[:1], evaluated_rewards=[None]),
         ValueError, r"evaluated_rewards\[0\] must hold finite numbers, got None"),
    Case("evaluated_rewards_nan", lambda t: searcher(points_to_evaluate=GOOD[:1], evaluated_rewards=[[1.0, np.nan]]),
         ValueError, r"evaluated_rewards\[0\] must hold finite numbers"),
    Case("evaluated_rewards_wrong_length", lambda t: searcher(points_to_evaluate=GOOD[:1], evaluated_rewards=[1.0, 2.0]),
         ValueError, r"evaluated_rewards has 2 entries for 1 points_to_evaluate"),
    Case("max_active_configs_zero", lambda t: searcher(max_active_configs=0), ValueError,
         r"max_active_configs must be a positive integer, got max_active_configs=0"),
    Case("budget_negative", lambda t: searcher(budget=-3), ValueError, r"budget must be a positive integer, got budget=-3"),
    Case("budget_fractional", lambda t: searcher(budget=2.5), ValueError, r"budget must be a positive integer"),
    Case("budget_below_initial_design", lambda t: first_suggestion(budget=3), ValueError,
         r"budget=3 runs is smaller than the initial design \(n_initial=5 x k_init=2 = 10\)"),
    Case("warp_not_fitted", lambda t: searcher(warp="online"), ValueError, r"warp must be a FrozenWarp"),
    Case("engine_option_misspelt", lambda t: searcher(launch_polcy="all"), TypeError, r"launch_polcy"),
    Case("k_init_one", lambda t: searcher(k_init=1), ValueError, r"k_init must be >= 2"),
    Case("alpha_nan", lambda t: searcher(alpha=float("nan")), ValueError, r"RiskAwareSearch: alpha must be a number in \[0, 1e\+06\], got alpha=nan"),
    Case("random_state_seed_negative", lambda t: RiskAwareSearch(SPACE, random_state_seed=-1), ValueError,
         r"seed must be >= 0, got seed=-1"),
    Case("n_initial_one", lambda t: searcher(n_initial=1), ValueError, r"n_initial must be >= 2"),
    Case("scheduler_given_the_wrapper", lambda t: ReplicateScheduler(ConcurrencyLimiter(searcher(), 2)), TypeError,
         r"needs the RiskAwareSearch used as search_alg, got ConcurrencyLimiter"),
    # ---------------------------------------------------------------- Engine arguments, calls and state
    Case("engine_neither_dim_nor_pool", lambda t: Engine(EngineSettings()), ValueError, r"give exactly one of dim"),
    Case("engine_pool_outside_cube", lambda t: Engine(EngineSettings(), pool=np.full((6, 1), 2.0)), ValueError,
         r"pool coordinates must lie in the unit cube"),
    Case("engine_pool_nan", lambda t: Engine(EngineSettings(), pool=np.full((6, 1), np.nan)), ValueError,
         r"pool contains NaN"),
    Case("engine_pool_one_dimensional", lambda t: Engine(EngineSettings(), pool=np.full(6, 0.5)), ValueError,
         r"pool must be a non-empty 2-D array"),
    Case("engine_dim_zero", lambda t: Engine(EngineSettings(), dim=0), ValueError, r"dim must be >= 1"),
    Case("engine_initial_values_mismatch",
         lambda t: Engine(EngineSettings(), dim=1, initial_points=np.array([[0.5]]), initial_values=[[1.0], [2.0]]),
         ValueError, r"initial_values has 2 entries for 1 initial_points"),
    Case("engine_initial_points_wrong_dim", lambda t: Engine(EngineSettings(), dim=2, initial_points=np.array([[0.5]])),
         ValueError, r"initial_points must be a finite \(m x 2\) array"),
    Case("engine_state_newer_version", lambda t: Engine.from_state_dict({"version": 3}), ValueError,
         r"unsupported engine state version 3"),
    Case("engine_state_not_a_dict", lambda t: Engine.from_state_dict(None), ValueError,
         r"unsupported engine state version None"),
    Case("tell_unknown_run", lambda t: engine_in_flight()[0].tell(999, 1.0), ValueError,
         r"unknown run_id=999: it was never returned by ask\(\)"),
    Case("tell_cancelled_for_a_running_run", lambda t: (lambda e, r: e.tell_cancelled(r))(*engine_in_flight()),
         ValueError, r"run 0 was not marked for cancellation"),
    Case("rahbo_with_k_min_below_k_max", lambda t: EngineSettings(method="rahbo", k_min=2, k_max=5), ValueError,
         r"method='rahbo' uses a fixed number of replicates"),
    # ---------------------------------------------------------------- offline tables
    Case("table_metadata_not_a_mapping", lambda t: OfflineTable.load(csv_table(t), metadata=5), ValueError,
         r"ok\.csv: metadata must be a dict, a JSON file path or None, got 5"),
    Case("table_metadata_file_missing", lambda t: OfflineTable.load(csv_table(t), metadata=t / "nope.json"),
         ValueError, r"ok\.csv: cannot read metadata .*nope\.json"),
    Case("table_metadata_a_list", lambda t: (write(t, "ok.csv.json", "[1, 2]"), OfflineTable.load(csv_table(t))),
         ValueError, r"ok\.csv: metadata .*ok\.csv\.json must hold a JSON object, got list"),
    Case("table_metadata_space_not_a_dict",
         lambda t: (write(t, "ok.csv.json", '{"search_space": 5}'), OfflineTable.load(csv_table(t))),
         ValueError, r"ok\.csv: search_space must be a non-empty dict of parameters, got 5"),
    Case("table_csv_empty", lambda t: OfflineTable.load(write(t, "empty.csv", "")), ValueError,
         r"empty\.csv: cannot read as csv"),
    Case("table_csv_header_only", lambda t: OfflineTable.load(write(t, "h.csv", "config_id,seed,performance,hp_config.a\n")),
         ValueError, r"h\.csv: the table has no rows"),
    Case("table_returns_text", lambda t: from_arrays([["a", "b"], ["c", "d"]]), ValueError,
         r"syn: returns must be numeric"),
    Case("table_returns_3d", lambda t: from_arrays(np.zeros((2, 2, 2))), ValueError,
         r"syn: returns must have shape \(2, n_seeds\), got \(2, 2, 2\)"),
    Case("table_one_seed", lambda t: from_arrays([[1.0], [2.0]]), ValueError, r"syn: fewer than 2 seeds"),
    Case("table_configs_not_a_frame", lambda t: OfflineTable.from_arrays({"a": [1]}, [[1.0, 2.0]]), ValueError,
         r"configs_df must be a pandas DataFrame, got dict"),
    Case("table_space_value_outside", lambda t: from_arrays([[1.0, 2.0], [1.0, 3.0]],
                                                             space={"a": {"type": "float", "lower": 0, "upper": 0.15}}),
         ValueError, r"syn: a configuration does not fit the search space: Parameter 'a': value 0\.2 is outside"),
    Case("table_true_mv_negative_alpha", lambda t: from_arrays([[1.0, 2.0], [1.0, 3.0]]).true_mv(alpha=-1),
         ValueError, r"alpha must be a finite number >= 0, got -1"),
    Case("table_row_out_of_range", lambda t: from_arrays([[1.0, 2.0], [1.0, 3.0]]).config(-1), IndexError,
         r"syn: row -1 is not in 0\.\.1"),
]

CLI_CASES = [
    # (id, extra arguments (after replay --table <ok.csv>), message on stderr)
    ("repeats_zero", ["--repeats", "0", "--out", "{t}/o"], "argument --repeats: must be a positive integer, got '0'"),
    ("budget_not_a_number", ["--budget", "abc", "--out", "{t}/o"], "argument --budget: must be a positive integer, got 'abc'"),
    ("workers_negative", ["--workers", "-2", "--out", "{t}/o"], "argument --workers: must be a positive integer, got '-2'"),
    ("via_unknown", ["--via", "ray", "--out", "{t}/o"], "argument --via: invalid choice: 'ray'"),
    ("out_missing", [], "the following arguments are required: --out"),
    ("methods_empty", ["--methods", " , ", "--out", "{t}/o"], "--methods ' , ' names no method"),
    ("method_unknown", ["--methods", "erahbo,bohb", "--out", "{t}/o"], "unknown method 'bohb'"),
    ("out_is_a_file", ["--methods", "rahbo-k2", "--budget", "4", "--out", "{t}/ok.csv"],
     "cannot create the output directory (File exists)"),
    ("seed_negative", ["--seed", "-1", "--methods", "rahbo-k2", "--budget", "4", "--out", "{t}/o"],
     "argument --seed: must be an integer >= 0, got '-1'"),
    ("table_too_few_seeds", ["--methods", "rahbo-k3", "--out", "{t}/o"], "has 2 seeds, fewer than k_max=3"),
    ("second_table_missing", ["--table", "{t}/absent.parquet", "--out", "{t}/o"], "absent.parquet: file not found"),
    ("table_unknown_extension", ["--table", "{t}/t.xlsx", "--out", "{t}/o"], "t.xlsx: unknown extension '.xlsx'"),
    ("table_without_returns", ["--table", "{t}/noret.csv", "--out", "{t}/o"], "noret.csv: no recognisable return columns"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_raises_a_clear_error(case: Case, tmp_path):
    with pytest.raises(case.error, match=case.match):
        case.call(tmp_path)


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse errors
        code = exit_.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case_id, extra, message", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_bad_cli_arguments_exit_2_with_one_line(case_id, extra, message, tmp_path, capsys):
    table = csv_table(tmp_path)
    (tmp_path / "t.xlsx").write_text("x")
    pd.DataFrame({"a": [1, 2], "b": [3, 4]}).to_csv(tmp_path / "noret.csv", index=False)
    argv = ["replay", "--table", str(table), "--repeats", "1", "--test-seeds", "0", *[a.format(t=tmp_path) for a in extra]]
    code, err = run_cli(argv, capsys)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("tune-risk replay: error: ")


def test_cli_errors_in_a_real_process(tmp_path):
    """The console script end to end: exit status 2, one stderr line, no traceback."""
    for argv, message in (
        (["replay", "--table", str(tmp_path / "nope.parquet"), "--out", str(tmp_path / "o")], "nope.parquet: file not found"),
        (["replay", "--budget", "0"], "argument --budget: must be a positive integer, got '0'"),
    ):
        proc = subprocess.run([sys.executable, "-m", "tune_risk.cli", *argv], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr, proc.stderr


def test_case_table_size():
    """The issue asks for at least 25 bad-input cases (search spaces, arguments, tables, CLI)."""
    assert len(CASES) + len(CLI_CASES) + 1 >= 25
    assert len({c.id for c in CASES}) == len(CASES)
