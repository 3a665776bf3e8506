"""``tune_risk.tune.restore``: restore points of a real Tune run, and the repair of torn or mixed snapshots.

One real Ray Tune 2.60 run (``tune_driver``'s replay, in this process, a snapshot every step) gives
an experiment directory with Tune's files and tune_risk's restore points; each test damages a copy
of it the way a crash inside Tune's snapshot copy does (a file truncated, a file left from the
previous snapshot, a newer session's file missing) and checks what ``repair_experiment`` keeps.
The reads of Tune's layout (``read_experiment_state``, ``read_search_gen_state``, ``tune_files``) are
checked here against the real files. The kill-and-restore tests (``test_kill_restore.py``) run the
same repair across real driver crashes.
"""

from __future__ import annotations

import pickle
import shutil
import time
from pathlib import Path

import pytest
from reliability_support import write_table

from tune_risk.tune import restore_points as rp
from tune_risk.tune.restore import SnapshotError, check_snapshot, repair_experiment, restore_tuner
from tune_risk.tune.restore_points import RestorePoints, searcher_marks, unpack_restore_point
from tune_risk.tune.snapshot_files import (
    TUNER_PKL,
    Snapshot,
    digest,
    load_pickle,
    read_experiment_state,
    read_search_gen_state,
    tune_files,
)


# ---------------------------------------------------------------------------------------------- a real run
@pytest.fixture(scope="module")
def real_run(ray_session, tmp_path_factory):
    """A finished replay run whose experiment directory holds restore points (a snapshot every 0.5 s)."""
    import tune_driver

    work = tmp_path_factory.mktemp("real_run")
    table = write_table(work / "h3.parquet")
    args = tune_driver.parse(["fresh", "--table", str(table), "--storage", str(work / "storage"),
                              "--log", str(work / "log.jsonl"), "--out", str(work / "out.json"),
                              "--budget", "10", "--trial-sleep", "0.1"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "0.5")
        patch.setattr(rp, "MIN_RESTORE_POINT_INTERVAL_S", 0.0)
        table_, task = tune_driver.make_task(table)
        tune_driver.build_tuner(args, task, table_).fit()
    return work / "storage" / tune_driver.NAME


@pytest.fixture
def experiment(real_run, tmp_path) -> Path:
    """A private copy of the real run's experiment directory (tests damage it)."""
    return Path(shutil.copytree(real_run, tmp_path / "replay"))


def table_of(real_run: Path) -> Path:
    return real_run.parents[1] / "h3.parquet"


def session_of(experiment: Path) -> str:
    (name,) = [p.name for p in experiment.glob("experiment_state-*.json")]
    return name[len("experiment_state-"):-len(".json")]


def restore_points(experiment: Path) -> list[Snapshot]:
    """The experiment's restore points, newest first."""
    points = [unpack_restore_point(p.read_bytes(), p.name) for p in experiment.glob(f"{rp.PREFIX}*.zip")]
    return sorted(points, key=lambda s: s.seq, reverse=True)


def current(experiment: Path) -> Snapshot:
    session = session_of(experiment)
    names = tune_files(session)
    return Snapshot(session, None, {n: (experiment / n).read_bytes() for n in names.required}, "current")


def test_a_real_run_leaves_consistent_restore_points_one_snapshot_behind(real_run):
    now = current(real_run)
    assert check_snapshot(now) == []  # the reads of Tune's layout agree with the real files
    names = tune_files(now.session)
    session, trials = read_experiment_state(now.files[names.experiment])
    counter, live = read_search_gen_state(now.files[names.search_gen])
    assert session == now.session and counter == len(trials) >= 10
    assert live is None  # RiskAwareSearch enforces max_concurrent_trials: Tune's limiter is a pass-through
    assert all(status == "TERMINATED" for status in trials.values())
    marks = searcher_marks(pickle.loads(now.files[names.searcher]))
    assert marks.experiment_digest == digest(now.files[names.experiment]) and marks.session == now.session
    points = restore_points(real_run)
    assert len(points) == 2 and {p.source[-6:] for p in points} == {"-0.zip", "-1.zip"}
    for point in points:
        assert check_snapshot(point) == [], point.source
        assert point.session == now.session and point.seq < now.seq
        assert point.files[names.experiment] != now.files[names.experiment]
    assert points[0].seq > points[1].seq  # both slots hold the last two restore points written


def test_repair_leaves_a_consistent_experiment_alone_and_seals_it(experiment):
    before = {p.name: p.read_bytes() for p in experiment.iterdir() if p.is_file()}
    report = repair_experiment(experiment)
    assert not report.repaired and report.source.startswith("current files") and report.rejected == {}
    assert report.sealed == rp.restore_point_name(session_of(experiment), rp.SEALED)
    sealed = unpack_restore_point((experiment / report.sealed).read_bytes(), report.sealed)
    assert check_snapshot(sealed) == [] and sealed.seq == report.seq and TUNER_PKL in sealed.files
    after = {p.name: p.read_bytes() for p in experiment.iterdir() if p.is_file()}
    assert after == {**before, report.sealed: after[report.sealed]}
    again = repair_experiment(experiment)
    assert not again.repaired and again.sealed is None


def repaired_from_newest_point(experiment: Path, problem: str) -> None:
    """Repair, then check the newest restore point was written back and the damage named."""
    newest = restore_points(experiment)[0]
    report = repair_experiment(experiment)
    assert report.repaired and report.source == newest.source and report.seq == newest.seq
    assert any(problem in p for p in report.rejected[f"current files of session {newest.session}"]), report.rejected
    now = current(experiment)
    assert check_snapshot(now) == [] and all(now.files[n] == newest.files[n] for n in now.files)
    assert all((experiment / d).exists() for d in report.discarded)


def test_torn_experiment_state_is_restored_from_the_newest_restore_point(experiment):
    state = experiment / tune_files(session_of(experiment)).experiment
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    repaired_from_newest_point(experiment, "does not parse")


def test_searcher_state_of_another_snapshot_is_detected(experiment):
    names = tune_files(session_of(experiment))
    (experiment / names.searcher).write_bytes(restore_points(experiment)[1].files[names.searcher])
    repaired_from_newest_point(experiment, "belongs to another snapshot")


def rewrite_search_gen_state(experiment: Path, change) -> None:
    """Edit the wrapper state as if it came from another snapshot (``change(state)``)."""
    import ray.cloudpickle as cloudpickle

    path = experiment / tune_files(session_of(experiment)).search_gen
    state = cloudpickle.loads(path.read_bytes())
    change(state)
    path.write_bytes(cloudpickle.dumps(state))


def test_search_gen_state_of_another_snapshot_is_detected(experiment):
    """One trial fewer created: the wrapper state of the snapshot before the last trial was suggested."""
    rewrite_search_gen_state(experiment, lambda state: state.update(counter=state["counter"] - 1))
    repaired_from_newest_point(experiment, "counts")


def test_live_trials_of_another_snapshot_are_detected(experiment):
    """A finished trial still live for a limiting ConcurrencyLimiter (one around a searcher that leaves the limit
    to it): restored, it would hold a slot forever. RiskAwareSearch enforces the limit itself, so Tune's limiter
    around it is a pass-through whose (empty) live set is not checked."""
    names = tune_files(session_of(experiment))
    finished = next(iter(read_experiment_state((experiment / names.experiment).read_bytes())[1]))
    limiter = load_pickle((experiment / names.search_gen).read_bytes())["name:ConcurrencyLimiter"]
    assert limiter["_limit_concurrency"] is False and not limiter["live_trials"]

    def limiting_with_a_finished_trial(state):
        state["name:ConcurrencyLimiter"].update(_limit_concurrency=True, live_trials={finished})

    rewrite_search_gen_state(experiment, limiting_with_a_finished_trial)
    repaired_from_newest_point(experiment, "live trials")


def test_torn_restore_point_is_skipped(experiment):
    newest, older = restore_points(experiment)
    torn = experiment / newest.source
    torn.write_bytes(torn.read_bytes()[:-100])
    state = experiment / tune_files(newest.session).experiment
    state.write_bytes(b"")
    report = repair_experiment(experiment)
    assert report.source == older.source and "unreadable" in report.rejected[newest.source][0]
    assert check_snapshot(current(experiment)) == []


def test_newer_session_without_experiment_state_is_set_aside(experiment):
    """A crash during a new session's first copy: its searcher file arrived, its trial list did not.
    Tune would load the new searcher with the old trial list; the repair moves the new files aside."""
    names = tune_files(session_of(experiment))
    newer = tune_files("2999-01-01_00-00-00")
    shutil.copy(experiment / names.searcher, experiment / newer.searcher)
    shutil.copy(experiment / names.search_gen, experiment / newer.search_gen)
    report = repair_experiment(experiment)
    assert report.repaired and report.session == session_of(experiment)
    assert report.rejected["current files of session 2999-01-01_00-00-00"] == [f"missing {newer.experiment}"]
    assert not (experiment / newer.searcher).exists() and not (experiment / newer.search_gen).exists()
    assert max(p.name for p in experiment.glob("searcher-state-*.pkl")) == names.searcher


def test_torn_tuner_pkl_is_restored_from_a_restore_point(experiment):
    repair_experiment(experiment)  # seals the snapshot, tuner.pkl included (as staged after a restore)
    tuner = experiment / TUNER_PKL
    original = tuner.read_bytes()
    tuner.write_bytes(original[:100])
    report = repair_experiment(experiment)
    assert report.repaired and report.written == [TUNER_PKL] and tuner.read_bytes() == original


def test_no_consistent_snapshot_fails_loudly(experiment):
    for point in experiment.glob(f"{rp.PREFIX}*.zip"):
        point.write_bytes(point.read_bytes()[:50])
    state = experiment / tune_files(session_of(experiment)).experiment
    state.write_bytes(state.read_bytes()[:1000])
    with pytest.raises(SnapshotError, match=r"no consistent snapshot of the experiment in .*replay.*does not parse"):
        repair_experiment(experiment)


def test_directory_without_snapshot_fails_loudly(tmp_path):
    with pytest.raises(SnapshotError, match="no Ray Tune experiment snapshot in .*start a new tune.Tuner"):
        repair_experiment(tmp_path)


def test_restore_tuner_continues_a_torn_experiment(real_run, experiment):
    """``restore_tuner`` repairs, then ``Tuner.restore`` continues from the restore point to the end."""
    import tune_driver

    state = experiment / tune_files(session_of(experiment)).experiment
    state.write_bytes(state.read_bytes()[:-10])
    _table, task = tune_driver.make_task(table_of(real_run))
    tuner = restore_tuner(experiment, trainable=tune_driver.make_trainable(task, 0, 0.0))
    results = tuner.fit()
    search_alg = tuner._local_tuner._tune_config.search_alg
    searcher = getattr(search_alg, "searcher", search_alg)  # as tune_driver.final_state reads it
    assert searcher.engine.finished and not results.errors
    assert len(results) == searcher.engine.counts()["runs_launched"]


# ---------------------------------------------------------------------------------------------- reading pickles
CALLS: list[str] = []


def record_call(what: str) -> str:
    CALLS.append(what)
    return what


class Elsewhere:
    """Pickles as a call of ``record_call``: loading it runs code."""

    def __reduce__(self):
        return record_call, ("ran",)


def test_snapshot_pickles_are_read_without_running_or_importing_anything():
    """Tune's wrapper state holds the trainable, the storage filesystem, callbacks: their modules may be
    missing where the repair runs, and the repair must not run their code (it did: a custom storage
    filesystem whose module was not importable made every snapshot look torn)."""
    blob = pickle.dumps({"counter": 3, "name:ConcurrencyLimiter": {"live_trials": {"a", "b"}}, "fs": Elsewhere()})
    renamed = blob.replace(b"test_restore_points", b"no_such_module_xyz_")  # same length: a valid pickle
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(renamed)
    CALLS.clear()
    assert read_search_gen_state(renamed) == (3, {"a", "b"}) and CALLS == []
    state = load_pickle(renamed)
    assert state["fs"].origin == ("no_such_module_xyz_", "record_call")
    with pytest.raises((pickle.UnpicklingError, EOFError)):
        load_pickle(blob[:-5])  # a torn file still fails
    marks = RestorePoints()
    marks.__setstate__({"session": "s", "seq": 4, "experiment_digest": "d"})
    assert searcher_marks(load_pickle(pickle.dumps({"_restore_points": marks, "x": 1}))) == marks


# ---------------------------------------------------------------------------------------------- the writer
def stage(directory: Path, session: str, **files: bytes) -> None:
    names = tune_files(session)
    for kind, blob in files.items():
        (directory / getattr(names, kind)).write_bytes(blob)


def test_restore_points_follow_tunes_save_order(tmp_path, monkeypatch):
    """Tune writes experiment_state, then calls the searcher, then writes the wrapper state: the restore
    point written at snapshot n is snapshot n-1, whole, in its slot, the other slot gone from staging."""
    monkeypatch.setattr(rp, "MIN_RESTORE_POINT_INTERVAL_S", 0.0)
    staging = tmp_path / "driver_artifacts"
    staging.mkdir()
    points, session = RestorePoints(), "2026-01-01_00-00-00"
    points.before_searcher_save(str(staging), session)  # no experiment_state: not a Tune snapshot
    assert points.experiment_digest is None and list(staging.iterdir()) == []
    for n in (1, 2, 3):
        stage(staging, session, experiment=b"E%d" % n)
        points.before_searcher_save(str(staging), session)
        assert points.seq == n and points.experiment_digest == digest(b"E%d" % n)
        stage(staging, session, searcher=b"P%d" % n, search_gen=b"G%d" % n)
    written = sorted(p.name for p in staging.glob(f"{rp.PREFIX}*"))
    assert written == [rp.restore_point_name(session, "1")]  # snapshot 2; snapshot 1's slot 0 deleted
    point = unpack_restore_point((staging / written[0]).read_bytes(), written[0])
    names = tune_files(session)
    assert (point.seq, point.files) == (2, {names.experiment: b"E2", names.searcher: b"P2", names.search_gen: b"G2"})
    assert not list(tmp_path.glob("*.tmp"))


def test_restore_points_are_rate_limited_and_not_pickled_with_their_pending_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(rp, "MIN_RESTORE_POINT_INTERVAL_S", 3600.0)
    staging, session = tmp_path, "s"
    points = RestorePoints()
    points._last_written = time.monotonic()
    for n in (1, 2):
        stage(staging, session, experiment=b"E%d" % n)
        points.before_searcher_save(str(staging), session)
        stage(staging, session, searcher=b"P", search_gen=b"G")
    assert not list(staging.glob(f"{rp.PREFIX}*"))
    clone = pickle.loads(pickle.dumps(points))
    assert clone == points and clone._pending is None and points._pending == b"E2"
    assert clone.__getstate__() == {"session": "s", "seq": 2, "experiment_digest": digest(b"E2")}


def test_restore_marks_pickled_under_their_old_module_path_still_load(monkeypatch):
    """Searcher states saved before the split name ``tune_risk.tune.restore.RestorePoints``: they unpickle,
    and the repair's check (``load_pickle``, nothing unpickled) finds their marks."""
    marks = RestorePoints()
    marks.__setstate__({"session": "s", "seq": 4, "experiment_digest": "d"})
    with monkeypatch.context() as patch:
        patch.setattr(RestorePoints, "__module__", "tune_risk.tune.restore")
        blob = pickle.dumps({"_restore_points": marks})
    assert b"tune_risk.tune.restore\x94" in blob or b"tune_risk.tune.restore\n" in blob
    assert pickle.loads(blob)["_restore_points"] == marks
    assert load_pickle(blob)["_restore_points"].origin == ("tune_risk.tune.restore", "RestorePoints")
    assert searcher_marks(load_pickle(blob)) == marks
