"""The compact run store: exact round trip of what the summary reads, journal and compaction, resume after a
kill, and the import of the previous ``runs.jsonl`` format."""

from __future__ import annotations

import json
import math

import pytest
from oscbo_harness import make_task, run_bo
from oscbo_harness.loop import RUNNING_FIELDS
from oscbo_harness.store import (
    JOURNAL_FILE,
    LEGACY_FILE,
    RunStore,
    check_run,
    migrate_legacy_run,
    read_journal,
    run_key,
)

FLOAT32_FIELDS = ("sharpness",)


@pytest.fixture(scope="module")
def runs() -> list[dict]:
    """One short run of each kind of logged fields: OSCBO (lambda, phase, oscbo_V), OCBO (q), SCGP
    (beta_delta, theta_cal), VanillaBO (ARD theta)."""
    task = make_task("hartmann3")
    out = []
    for method in ("oscbo-l1", "ocbo", "scgp", "vanilla-bo", "a-gp-ucb"):
        result = run_bo(task, method, seed=1, steps=3, n_init=5)
        out.append({**result.to_dict(), "steps": 3})
    return json.loads(json.dumps(out))  # as the journal gives them back


def assert_same_run(stored: dict, original: dict) -> None:
    """Equal, bit for bit, except the float32 fields (X, sharpness) to float32 precision."""
    for key in original:
        if key not in ("X", "rounds"):
            assert stored[key] == original[key], key
    for a, b in zip(stored["X"], original["X"], strict=True):
        assert a == pytest.approx(b, rel=6e-8, abs=1e-30)
    for got, want in zip(stored["rounds"], original["rounds"], strict=True):
        assert set(got) == set(want)
        for key, value in want.items():
            if key in FLOAT32_FIELDS:
                assert got[key] == pytest.approx(value, rel=6e-8)
            else:
                assert got[key] == value, key


def test_round_trip_is_exact_for_everything_the_summary_reads(tmp_path, runs):
    store = RunStore(tmp_path)
    store.write(runs)
    back = {run_key(r): r for r in RunStore(tmp_path).load()}
    assert len(back) == len(runs)
    for run in runs:
        assert_same_run(back[run_key(run)], run)
    assert back[run_key(runs[0])]["settings"]["lambda_init"] == 2 / math.log(101)


def test_journal_compaction_and_a_kill_mid_write(tmp_path, runs):
    store = RunStore(tmp_path)
    store.write(runs[:2])
    store.append(runs[2])
    with (tmp_path / JOURNAL_FILE).open("a") as file:  # a kill in the middle of the next append
        file.write(json.dumps(runs[3])[:100])
    loaded = store.load()  # drops the cut-off line and keeps the rest
    assert sorted(run_key(r) for r in loaded) == sorted(run_key(r) for r in runs[:3])
    store.append(runs[3])
    store.append(runs[1])  # already compacted (a kill between compact()'s rename and unlink): loaded once
    assert len(store.load()) == 4
    assert store.compact() == 2 and not (tmp_path / JOURNAL_FILE).exists()
    assert sorted(run_key(r) for r in store.load()) == sorted(run_key(r) for r in runs[:4])


def test_a_run_cut_off_mid_write_is_dropped_and_the_rest_kept(tmp_path, capsys):
    path = tmp_path / JOURNAL_FILE
    path.write_text('{"task": "hartmann3", "seed": 0}\n{"task": "hartmann3", "se')
    assert read_journal(path) == [{"task": "hartmann3", "seed": 0}]
    assert path.read_text() == '{"task": "hartmann3", "seed": 0}\n'  # the next append starts a fresh line
    assert "incomplete last line" in capsys.readouterr().out


def test_runs_that_would_not_come_back_are_refused(tmp_path, runs):
    bad = json.loads(json.dumps(runs[1]))
    bad["rounds"][1]["coverage"] = 0.123
    with pytest.raises(ValueError, match="round 2: coverage=0.123 differs from its recomputation"):
        check_run(bad)
    unknown = json.loads(json.dumps(runs[1]))
    unknown["rounds"][0]["new_field"] = 1.0
    with pytest.raises(ValueError, match=r"fields \['new_field'\] have no column in the run store"):
        RunStore(tmp_path).append(unknown)
    with pytest.raises(ValueError, match="repeat another run's key"):
        RunStore(tmp_path).write([runs[0], runs[0]])
    assert set(RUNNING_FIELDS) <= set(runs[0]["rounds"][0])


def test_legacy_runs_are_imported_with_their_settings_and_the_played_lengthscale(tmp_path, runs):
    """runs.jsonl of the code before the #20 fixes: lambda_1 = 1, OSCBO-L1's dual fed p = 2 losses, and
    OSCBO's theta logged after the round (theta_next); the import makes theta the played one again."""
    oscbo = runs[0]
    legacy = json.loads(json.dumps(oscbo))
    legacy.pop("settings")
    after = [r["theta"] for r in oscbo["rounds"][1:]] + [[0.77]]  # theta_t, chosen after round t
    for row, theta in zip(legacy["rounds"], after, strict=True):
        row["theta"] = row["theta_next"] = theta
    plain = {k: v for k, v in runs[1].items() if k != "settings"}
    migrated = migrate_legacy_run(legacy)
    assert [r["theta"] for r in migrated["rounds"]] == [r["theta"] for r in oscbo["rounds"]]  # theta_0 recomputed
    assert migrated["settings"] == {"lambda_init": 1.0, "omega": 0.001, "form": "prefix", "dual_losses_p": 2}
    assert migrate_legacy_run(plain)["settings"] == {}
    (tmp_path / LEGACY_FILE).write_text(json.dumps(legacy) + "\n" + json.dumps(plain) + "\n")
    store = RunStore(tmp_path)
    assert store.import_legacy() == 2 and store.import_legacy() == 0
    assert (tmp_path / (LEGACY_FILE + ".imported")).exists() and not (tmp_path / LEGACY_FILE).exists()
    assert {run_key(r) for r in store.load()} == {run_key(migrated), run_key({**plain, "settings": {}})}
