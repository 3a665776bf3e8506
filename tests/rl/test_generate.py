"""The table generator: long format, metadata, determinism and resumption."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import rl_tasks.generate as generate_module
from rl_tasks.generate import generate_table, sobol_configs
from rl_tasks.parts import claim_part, cpu_signature, parts_dir
from rl_tasks.spaces import get_space

TINY = {"algo": "ppo", "env": "CartPole-v1", "configs": 2, "seeds": 2, "steps": 2048, "eval_episodes": 4}
META_KEYS = {
    "format", "algorithm", "environment", "training_steps", "seeds", "n_configs", "search_space",
    "batching_layout", "library_versions", "command", "machine", "cpus", "created",
}


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tables")


@pytest.fixture(scope="module")
def first_table(table_dir):
    out = table_dir / "ppo_tiny.parquet"
    table = generate_table(out=out, command="test", **TINY)
    return out, table


def test_long_format_schema(first_table) -> None:
    out, table = first_table
    assert table is not None and out.exists()
    on_disk = pd.read_parquet(out)
    pd.testing.assert_frame_equal(on_disk, table)
    space = get_space("ppo", "CartPole-v1")
    expected = ["config_id", "seed", "performance", *(f"hp_config.{n}" for n in space), "wall_time"]
    assert list(table.columns) == expected
    assert len(table) == TINY["configs"] * TINY["seeds"]
    assert table["config_id"].dtype == "int64" and table["seed"].dtype == "int64"
    assert table["performance"].dtype == "float64"
    assert not table.duplicated(["config_id", "seed"]).any()
    assert (table["wall_time"] > 0).all()
    # seeds differ within a configuration; hyperparameters are constant within it
    assert table.groupby("config_id")["performance"].nunique().min() == TINY["seeds"]
    assert (table.groupby("config_id")["hp_config.learning_rate"].nunique() == 1).all()
    assert all(math.isfinite(v) for v in table["performance"])


def test_metadata_is_complete(first_table) -> None:
    out, _ = first_table
    meta = json.loads(out.with_name(out.name + ".json").read_text())
    assert META_KEYS <= set(meta), META_KEYS - set(meta)
    assert meta["format"] == "arlbench-long"
    assert meta["algorithm"] == "ppo" and meta["environment"] == "CartPole-v1"
    assert meta["training_steps"] == TINY["steps"] and meta["seeds"] == [0, 1] and meta["n_configs"] == 2
    assert set(meta["search_space"]) == set(get_space("ppo", "CartPole-v1"))
    assert meta["search_space"]["learning_rate"]["log"] is True
    layout = meta["batching_layout"]
    assert layout["seeds_per_call"] == 2 and layout["devices"] == 1
    assert "learning_rate" in layout["traced_hyperparameters"]
    assert "num_minibatches" in layout["static_hyperparameters"]
    assert meta["library_versions"]["jax"] and meta["library_versions"]["rejax"] == "0.1.3"
    assert meta["command"] == "test"
    cpu = cpu_signature()  # every part records its CPU; the metadata counts the CPUs of the table's parts
    assert "family" in cpu and meta["machine"]["cpu"] == cpu and meta["cpus"] == {cpu: 2}
    assert all(json.loads(p.read_text())["cpu"] == cpu for p in parts_dir(out).glob("config_*.json"))


def test_resume_recomputes_only_missing_parts(first_table, capsys) -> None:
    out, table = first_table
    part_files = sorted(parts_dir(out).glob("config_*.json"))
    assert [p.name for p in part_files] == ["config_0000.json", "config_0001.json"]
    kept = {p.name: p.read_text() for p in part_files}
    mtimes = {p.name: p.stat().st_mtime_ns for p in part_files}
    (parts_dir(out) / "config_0001.json").unlink()
    capsys.readouterr()
    again = generate_table(out=out, command="test", **TINY)
    progress = capsys.readouterr().err
    assert "config 0001" in progress and "config 0000" not in progress
    assert (parts_dir(out) / "config_0000.json").stat().st_mtime_ns == mtimes["config_0000.json"]
    recomputed = json.loads((parts_dir(out) / "config_0001.json").read_text())
    assert recomputed["returns"] == json.loads(kept["config_0001.json"])["returns"], "not bit-for-bit repeatable"
    pd.testing.assert_series_equal(again["performance"], table["performance"])


def test_rerun_of_a_complete_table_leaves_its_files_untouched(first_table) -> None:
    out, _ = first_table
    files = (out, out.with_name(out.name + ".json"), parts_dir(out) / "manifest.json")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    again = generate_table(out=out, command="a different command line", **TINY)
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before
    pd.testing.assert_frame_equal(again, pd.read_parquet(out))


def test_extending_a_table_replaces_its_manifest_whole(table_dir) -> None:
    # A generator reading the manifest while another extends the table sees the old one or the new one,
    # never a truncated file (two generators started together once crashed on an empty manifest).
    out = table_dir / "extended.parquet"
    generate_table(out=out, max_new=0, **TINY)
    manifest = parts_dir(out) / "manifest.json"
    with manifest.open() as reader:
        generate_table(out=out, max_new=0, **{**TINY, "configs": 4})
        assert json.loads(reader.read())["n_configs"] == 2
    assert json.loads(manifest.read_text())["n_configs"] == 4


def test_resume_refuses_different_settings(first_table) -> None:
    out, _ = first_table
    with pytest.raises(ValueError, match="different settings"):
        generate_table(out=out, **{**TINY, "steps": 4096})


def test_max_new_stops_early_and_cli_resumes(table_dir, capsys) -> None:
    from rl_tasks.cli import main

    out = table_dir / "cli_tiny.parquet"
    args = ["generate", "--algo", "ppo", "--env", "cartpole", "--configs", "2", "--seeds", "2", "--steps", "2048",
            "--eval-episodes", "4", "--out", str(out)]
    assert main([*args, "--max-new", "1"]) == 0
    assert not out.exists() and len(list(parts_dir(out).glob("config_*.json"))) == 1
    assert "1 of 2 configurations done, no table yet" in capsys.readouterr().err
    assert main(args) == 0
    meta = json.loads(out.with_name(out.name + ".json").read_text())
    assert meta["command"].startswith("tune-risk generate --algo ppo")
    assert len(pd.read_parquet(out)) == 4


def test_generators_sharing_a_table_skip_each_others_configurations(table_dir, monkeypatch) -> None:
    out = table_dir / "shared.parquet"
    sizes = {**TINY, "configs": 3}
    rates = [c["learning_rate"] for c in sobol_configs("ppo", "CartPole-v1", 3, 0)]
    computed: list[float] = []

    def fake_compute(algo, env, config, seeds, *args, **kwargs):  # no training: which configurations run is the point
        computed.append(config["learning_rate"])
        if len(computed) == 1:  # meanwhile a second generator starts on the same table
            assert generate_table(out=out, command="test", **sizes) is None
        return {"returns": [config["learning_rate"]] * len(seeds), "batch_time": 0.5, "compile_time": 0.0}

    monkeypatch.setattr(generate_module, "compute_config", fake_compute)
    with claim_part(out, 1) as mine:  # a third generator is computing configuration 1
        assert mine
        with claim_part(out, 1) as again:
            assert not again  # a claim is exclusive, also within one process
        assert generate_table(out=out, command="test", **sizes) is None  # 1 is not done: no table yet
    # the first generator computed 0; the second skipped 0 and 1 (held) and computed 2, which the first then
    # skipped because its part appeared after the first's scan
    assert computed == [rates[0], rates[2]]
    assert not out.exists() and not list(parts_dir(out).glob("*.claim"))  # claims leave no files behind
    table = generate_table(out=out, command="test", **sizes)  # configuration 1 is free now
    assert computed == rates[:1] + rates[2:] + rates[1:2]
    assert table is not None and out.exists()
    assert table.groupby("config_id")["performance"].first().tolist() == rates


def test_progress_counts_the_parts_of_every_generator_sharing_the_table(monkeypatch) -> None:
    import io

    clock = iter([100.0, 160.0, 220.0])
    monkeypatch.setattr(generate_module.time, "perf_counter", lambda: next(clock))
    stream = io.StringIO()
    progress = generate_module.Progress(total=20, done=4, stream=stream)
    progress.update(7, 60.0, done=5)  # alone: 1 configuration in 60 s, 15 to go
    progress.update(9, 60.0, done=8)  # another generator finished 2 meanwhile: 4 in 120 s, 12 to go
    first, second = stream.getvalue().splitlines()
    assert first.startswith("[   5/20]") and first.endswith("ETA 0:15:00")
    assert second.startswith("[   8/20]") and second.endswith("ETA 0:06:00")


def test_sobol_configs_are_seeded() -> None:
    a = sobol_configs("dqn", "CartPole-v1", 8, seed=0)
    assert a == sobol_configs("dqn", "CartPole-v1", 8, seed=0)
    assert a != sobol_configs("dqn", "CartPole-v1", 8, seed=1)
    assert a[:4] == sobol_configs("dqn", "CartPole-v1", 4, seed=0)
    assert len({c["buffer_batch_size"] for c in a}) == 3


def test_register_adds_the_generate_subcommand() -> None:
    import argparse

    from rl_tasks.cli import register, run_generate

    parser = argparse.ArgumentParser(prog="tune-risk")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["generate", "--algo", "sac", "--env", "Pendulum-v1", "--out", "x.parquet"])
    assert args.func is run_generate and args.configs == 128 and args.seeds == 50 and args.steps == 100_000


def test_summary_of_finished_and_partial_tables(first_table, table_dir) -> None:
    import shutil

    from rl_tasks.summary import markdown_line, summarize

    out, table = first_table
    done = summarize(out)
    per_config = table.groupby("config_id")["performance"]
    assert done["complete"] and done["configs_done"] == 2 and done["nan_fraction"] == 0.0
    assert done["best_mean"] == pytest.approx(per_config.mean().max())
    assert done["std_max"] == pytest.approx(per_config.std().max())
    partial_out = table_dir / "partial.parquet"
    shutil.copytree(parts_dir(out), parts_dir(partial_out))
    (parts_dir(partial_out) / "config_0001.json").unlink()
    partial = summarize(partial_out)
    assert not partial["complete"] and partial["configs_done"] == 1
    assert "partial (1/2)" in markdown_line(partial)
    manifest = parts_dir(out) / "manifest.json"
    kept = manifest.read_text()
    manifest.write_text(json.dumps({**json.loads(kept), "n_configs": 5}))  # generate --configs 5, under way
    try:
        growing = summarize(out)
    finally:
        manifest.write_text(kept)
    assert growing["complete"] and growing["configs_done"] == 2  # the shipped parquet, until the extension is done
    assert "| complete; being extended: 2/5 | 2 x" in markdown_line(growing)


def test_summary_cli_lists_a_directory_with_its_partial_tables_and_names_a_bad_path(
        first_table, tmp_path, capsys) -> None:
    import shutil

    from rl_tasks.summary import main, table_paths

    out, _ = first_table
    for suffix in ("", ".json"):
        shutil.copy(f"{out}{suffix}", tmp_path / f"done.parquet{suffix}")
    shutil.copytree(parts_dir(out), parts_dir(tmp_path / "done.parquet"))
    shutil.copytree(parts_dir(out), parts_dir(tmp_path / "growing.parquet"))  # parts only, no parquet yet
    assert table_paths([tmp_path]) == [tmp_path / "done.parquet", tmp_path / "growing.parquet"]
    assert main([str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| done | complete | 2 x" in printed and "| growing | partial (2/2) | 2 x" in printed
    (tmp_path / "notes.md").write_text("not a table")
    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path / "notes.md")])
    assert exit_info.value.code == 2 and "notes.md is neither a table" in capsys.readouterr().err
