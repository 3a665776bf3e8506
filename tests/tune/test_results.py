"""``tune_risk.load_results``: the recommendation and the per-configuration table in the experiment folder."""

from __future__ import annotations

import json

import pytest
from ray import tune

from tests.tune.test_searcher_tune import run_tuner
from tests.tune.trainables import make_noisy_trainable
from tune_risk import RiskAwareSearch, load_results
from tune_risk.tune.results import FOLDER, RECOMMENDATION


def test_a_finished_run_leaves_its_recommendation_in_the_experiment_folder(ray_session, tmp_path):
    searcher = RiskAwareSearch(random_state_seed=5, k_max=4, n_initial=3)
    grid = run_tuner(searcher, make_noisy_trainable(iterations=2), tmp_path, num_samples=20)
    results = load_results(grid.experiment_path)
    assert results.best_config == searcher.best_config and results.best_config is not None
    assert "seed" not in results.best_config  # a configuration to deploy, not one trial's seed
    assert len(results.frame) == len(searcher.results())
    record = searcher.engine.recommend()
    evidence = results.recommendation["evidence"]
    assert results.recommendation["config_id"] == record.config_id and evidence["k"] == record.n_incorporated
    assert evidence["warped_lcb_mv"] == pytest.approx(float(searcher.results().set_index("config_id")
                                                            .loc[record.config_id, "warped_lcb_mv"]))
    folder = tmp_path / "exp" / FOLDER
    assert json.loads((folder / RECOMMENDATION).read_text())["config"] == results.best_config
    # An experiment written before these files existed: Tune's searcher snapshot gives the same answer.
    for file in folder.iterdir():
        file.unlink()
    folder.rmdir()
    assert load_results(grid.experiment_path).best_config == results.best_config


def test_a_path_without_results_names_the_path_and_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path}.*neither {FOLDER}/{RECOMMENDATION} nor a searcher"):
        load_results(tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        load_results(tmp_path / "nope")


def test_before_the_initial_design_there_is_no_recommendation(tmp_path):
    from tune_risk.tune.results import write_results

    searcher = RiskAwareSearch({"x": tune.uniform(0, 1)}, "r", "max", random_state_seed=1)
    write_results(searcher, tmp_path)
    results = load_results(tmp_path)
    assert results.best_config is None and results.frame.empty
