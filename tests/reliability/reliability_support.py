"""Helpers of the reliability tests: the kill-and-restore harness around ``tune_driver.py``.

``kill_chain`` starts the driver (``fresh``), SIGKILLs it once the completion log has grown by the
first kill point, restores it with ``tune_risk.tune.restore.restore_tuner`` in a new driver process
(killed again at the next point, and so on), and finally lets a last restore finish. A kill is
either outside Tune's snapshot copy (the harness waits for the copy to finish) or inside it: the
driver's storage filesystem is then ``tear_fs``'s, armed to stop the next copy of a chosen file
half-way, and the driver is killed while that copy is stopped. Each driver runs in a new process
session; after it exits or is killed, every process left in that session (Ray's raylet, GCS,
agents and workers of *that* driver's Ray instance) is SIGKILLed, so other Ray instances on the
machine (the test session's, other users') are never touched. ``check_chain`` then compares the
final state with the completion log and with an uninterrupted direct replay.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tear_fs import ARM, TORN

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DRIVER = HERE / "tune_driver.py"
REPEAT, BUDGET = 0, 20
NAME = "replay"  # the driver's experiment name (tune_driver.NAME)


# ---------------------------------------------------------------------------------------------- table
def write_table(path: Path, n_configs: int = 40, n_seeds: int = 8, seed: int = 3) -> Path:
    """A synthetic Hartmann-3 table (configurations x seeds) in the ARLBench long format."""
    from tune_risk.benchmarks.objectives import get_objective, make_pool_table
    from tune_risk.offline.table import OfflineTable

    X, Y = make_pool_table(get_objective("hartmann3"), n_configs, n_seeds, seed=seed)
    table = OfflineTable.from_arrays(pd.DataFrame(X, columns=["x0", "x1", "x2"]), Y, name=path.stem)
    return table.to_long(path)


# ---------------------------------------------------------------------------------------------- processes
def session_pids(sid: int) -> list[int]:
    """Live (non-zombie) processes of session ``sid``, from ``/proc``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            pids.append(int(entry))
    return pids


def kill_session(sid: int, timeout: float = 30.0) -> int:
    """SIGKILL every process of session ``sid`` until none is left; returns how many were killed.

    Ray's workers put themselves in their own process groups, so killing the driver's process
    group would miss them; they all stay in the driver's session.
    """
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while pids := session_pids(sid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of session {sid} survive SIGKILL: {pids}")
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return len(killed)


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]  # a torn last line is ignored


STATE_FILES = ("experiment_state-*.json", "searcher-state-*.pkl", "search_gen_state-*.json")


def state_in_sync(staging: Path, experiment: Path) -> bool:
    """``True`` when the experiment state in storage equals the driver's staged copy (no copy under way)."""
    for pattern in STATE_FILES:
        for staged in staging.glob(pattern):
            try:
                if staged.read_bytes() != (experiment / staged.name).read_bytes():
                    return False
            except OSError:
                return False
    return True


def wait_for_state_sync(log: Path, experiment: Path, timeout: float = 10.0) -> float:
    """Wait until no experiment-state copy is under way; returns the seconds waited.

    Ray Tune saves the experiment state (trial list + searcher) to a local staging directory and then
    copies it to ``storage_path`` in a background thread, file by file and not atomically (ray 2.60).
    A kill *outside* that copy waits for it here; kills inside it use ``kill_in_copy``.
    """
    started = time.monotonic()
    pointer = Path(f"{log}.staging")
    while time.monotonic() - started < timeout:
        if not pointer.exists() or state_in_sync(Path(pointer.read_text()), experiment):
            break
        time.sleep(0.005)
    return time.monotonic() - started


def kill_in_copy(proc: subprocess.Popen, control: Path, tear: dict, timeout: float = 30.0) -> dict | None:
    """Arm ``tear_fs`` (``tear``: target file prefix, mode, fraction), wait until the driver's next copy of
    that file is stopped half-way, SIGKILL the driver there; returns ``torn.json`` (``None``: the driver
    ended or no copy of the file came within ``timeout``, and it was not killed)."""
    control.mkdir(exist_ok=True)
    (control / TORN).unlink(missing_ok=True)
    tmp = control / f".{ARM}.tmp"
    tmp.write_text(json.dumps(tear))
    tmp.replace(control / ARM)
    deadline = time.monotonic() + timeout
    torn = None
    while proc.poll() is None and time.monotonic() < deadline:
        if (control / TORN).exists():
            os.kill(proc.pid, signal.SIGKILL)
            torn = json.loads((control / TORN).read_text())
            break
        time.sleep(0.005)
    (control / ARM).unlink(missing_ok=True)
    (control / TORN).unlink(missing_ok=True)
    return torn


def snapshot_finished(experiment: Path) -> int:
    """Finished trials (TERMINATED or ERROR) in the newest ``experiment_state`` file in storage (0 while
    there is none or a copy of it is under way)."""
    from tune_risk.tune.snapshot_files import read_experiment_state

    files = sorted(experiment.glob("experiment_state-*.json"), key=lambda path: path.stat().st_mtime)
    try:
        _, trials = read_experiment_state(files[-1].read_bytes()) if files else ("", {})
    except (ValueError, KeyError, TypeError, OSError):
        return 0
    return sum(status in ("TERMINATED", "ERROR") for status in trials.values())


@dataclass
class DriverRun:
    mode: str
    killed: bool
    returncode: int | None
    seconds: float
    log_before: int  # log lines when the driver started
    log_after: int  # log lines when it was killed or finished
    leftovers: int  # processes of its session killed afterwards
    torn: dict | None = None  # tear_fs's report when it was killed inside a snapshot copy


@dataclass
class Chain:
    """Outcome of ``kill_chain``: every driver, the completion log, the final state."""

    workdir: Path
    budget: int = BUDGET
    workers: int = 2
    runs: list[DriverRun] = field(default_factory=list)
    log: list[dict] = field(default_factory=list)
    repairs: list[dict] = field(default_factory=list)  # restore_tuner's repair report of each restore
    final: dict[str, Any] | None = None

    @property
    def kills(self) -> list[DriverRun]:
        return [r for r in self.runs if r.killed]


def driver_env(checkpoint_period: str | None) -> dict[str, str]:
    """The driver's environment: this checkout first on ``PYTHONPATH`` (Ray's workers inherit it), and
    this directory (workers unpickle ``tear_fs``'s filesystem from the trials' storage context)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), str(HERE), env.get("PYTHONPATH", "")) if p)
    if checkpoint_period is not None:
        env["TUNE_GLOBAL_CHECKPOINT_S"] = checkpoint_period
    return env


def run_driver(mode: str, workdir: Path, table: Path, kill_after: int | None, *, workers: int = 2, budget: int = BUDGET,
               trial_sleep: float = 0.0, checkpoint_period: str | None = None, timeout: float = 300.0,
               tear: dict | None = None, tearable: bool = False, restore_with: str = "tune_risk",
               driver: Path = DRIVER, snapshot_holds: int = 0) -> DriverRun:
    """Run ``tune_driver.py mode`` (or ``driver``, a script with the same command line: ``pool_driver.py``);
    SIGKILL it once ``kill_after`` more trials have been logged and Tune's snapshot in storage lists at
    least ``snapshot_holds`` finished trials (fast trials may all finish between two snapshots: then the
    restore keeps none): inside the next copy of a snapshot file when ``tear`` is given (``kill_in_copy``;
    needs ``tearable``: the driver then runs on ``tear_fs``), else once no copy is under way."""
    log, out = workdir / "completions.jsonl", workdir / "final.json"
    before = len(read_log(log))
    Path(f"{log}.staging").unlink(missing_ok=True)
    index = len(list(workdir.glob("driver-*.txt")))
    command = [sys.executable, str(driver), mode, "--table", str(table), "--storage", str(workdir / "storage"),
               "--log", str(log), "--out", str(out), "--workers", str(workers), "--budget", str(budget),
               "--repeat", str(REPEAT), "--trial-sleep", str(trial_sleep), "--restore-with", restore_with]
    if tearable:
        command += ["--tear-control", str(workdir / "tear")]
    started = time.monotonic()
    with open(workdir / f"driver-{index}-{mode}.txt", "w") as console:
        proc = subprocess.Popen(command, cwd=REPO, env=driver_env(checkpoint_period), stdout=console,
                                stderr=subprocess.STDOUT, start_new_session=True)
    killed, torn = False, None
    try:
        deadline = started + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if (kill_after is not None and len(read_log(log)) - before >= kill_after
                    and snapshot_finished(workdir / "storage" / NAME) >= snapshot_holds):
                if tear is not None:
                    torn = kill_in_copy(proc, workdir / "tear", tear)
                    killed = torn is not None
                    if not killed and proc.poll() is None:
                        raise AssertionError(f"no copy of {tear['target']}* came to tear (see {console.name})")
                else:
                    wait_for_state_sync(log, workdir / "storage" / NAME)
                    os.kill(proc.pid, signal.SIGKILL)  # the driver only: Ray's processes see it die
                    killed = True
                break
            time.sleep(0.05)
        if proc.poll() is None and not killed:
            raise TimeoutError(f"driver {mode} did not finish in {timeout:.0f} s (see {console.name})")
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftovers = kill_session(proc.pid)
    return DriverRun(mode, killed, None if killed else proc.returncode, time.monotonic() - started, before,
                     len(read_log(log)), leftovers, torn)


def kill_chain(workdir: Path, table: Path, kill_points: list[int], *, workers: int = 2, budget: int = BUDGET,
               trial_sleep: float = 0.0, checkpoint_period: str | None = None, timeout: float = 300.0,
               tears: list[dict | None] | None = None, restore_with: str | None = None,
               driver: Path = DRIVER, snapshot_holds: int = 0) -> Chain:
    """Fresh driver, SIGKILLed after ``kill_points[0]`` logged trials; each restore SIGKILLed after
    ``kill_points[i]`` more (inside a snapshot copy where ``tears[i]`` is given, see ``run_driver``);
    a last restore runs to the end. Restores use ``restore_tuner``, or plain ``tune.Tuner.restore``
    with ``restore_with="ray"`` (default: ``$RELIABILITY_RESTORE_WITH``, else ``"tune_risk"``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    chain = Chain(workdir, budget, workers)
    tears = tears or [None] * len(kill_points)
    tearable = any(t is not None for t in tears)
    restore_with = restore_with or os.environ.get("RELIABILITY_RESTORE_WITH", "tune_risk")
    for i, point in enumerate([*kill_points, None]):
        mode = "fresh" if i == 0 else "restore"
        run = run_driver(mode, workdir, table, point, workers=workers, budget=budget, trial_sleep=trial_sleep,
                         checkpoint_period=checkpoint_period, timeout=timeout,
                         tear=tears[i] if i < len(tears) else None, tearable=tearable, restore_with=restore_with,
                         driver=driver, snapshot_holds=snapshot_holds)
        chain.runs.append(run)
        if not run.killed:
            if run.returncode != 0:
                tail = (workdir / f"driver-{i}-{mode}.txt").read_text()[-3000:]
                raise AssertionError(f"driver {mode} #{i} exited with {run.returncode}:\n{tail}")
            break  # it finished before the kill point: nothing left to kill
    chain.log = read_log(workdir / "completions.jsonl")
    chain.repairs = read_log(workdir / "completions.jsonl.repairs")
    out = workdir / "final.json"
    chain.final = json.loads(out.read_text()) if out.exists() else None
    return chain


# ---------------------------------------------------------------------------------------------- checks
def check_restore_points(experiment: Path) -> int:
    """Every restore point left in storage that is not torn is a consistent snapshot; returns how many.

    (Tears the harness made leave unreadable zips, skipped here; an intact zip failing the checks would
    mean the checks disagree with the snapshots Tune really writes.)
    """
    from tune_risk.tune.restore import check_snapshot
    from tune_risk.tune.restore_points import PREFIX, unpack_restore_point

    checked = 0
    for path in sorted(experiment.glob(f"{PREFIX}*.zip")):
        try:
            snapshot = unpack_restore_point(path.read_bytes(), path.name)
        except ValueError:
            continue
        assert check_snapshot(snapshot) == [], (path.name, check_snapshot(snapshot))
        checked += 1
    return checked


def reference_engine(table: Path, workers: int, budget: int):
    """The uninterrupted run: a direct replay with the same method, seed and budget."""
    from tune_risk.offline.replay import ReplayTask, replay_direct
    from tune_risk.offline.table import OfflineTable

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from tune_driver import METHOD, OVERRIDES

    task = ReplayTask.from_table(OfflineTable.load(table))
    return replay_direct(task, METHOD, REPEAT, budget, workers=workers, **OVERRIDES).engine


def drive_searcher(searcher, evaluate, workers: int) -> None:
    """Run a ``RiskAwareSearch`` to completion without Tune (the uninterrupted reference of a live run).

    Up to ``workers`` suggested replicates are in flight; the oldest finishes first with
    ``evaluate(config)`` as its final return, a cancelled one (``should_stop``) is reported without a
    result, as ``ReplicateScheduler`` makes Tune do. In the decision-equivalent mode
    (``max_active_configs=1``) the order of arrivals does not change the decisions.
    """
    from ray.tune.search import Searcher

    searcher.set_search_properties(None, None, {})
    searcher.set_max_concurrency(workers)
    running: list[tuple[str, dict]] = []
    finished = False
    while True:
        while not finished and len(running) < workers:
            trial_id = f"reference_{len(searcher.engine.runs) if searcher.engine else 0:05d}"
            config = searcher.suggest(trial_id)
            if config is None or config == Searcher.FINISHED:
                finished = config == Searcher.FINISHED
                break
            running.append((trial_id, config))
        if not running:
            assert finished, "the searcher waits for results but no replicate is running"
            return
        trial_id, config = running.pop(0)
        if searcher.should_stop(trial_id):
            searcher.on_trial_complete(trial_id, None)
            continue
        result = {searcher.metric: evaluate(config), "training_iteration": 1}
        searcher.on_trial_result(trial_id, result)
        searcher.on_trial_complete(trial_id, result)


def decisions(engine) -> list[tuple]:
    return [(r.pool_index, r.n_incorporated, r.status, r.incumbent_lcb) for r in engine.records]


def check_chain(chain: Chain, table: Path, reference=None) -> dict[str, int]:
    """Assert nothing was lost or counted twice; return the figures of the chain. ``reference``: the
    uninterrupted run's engine (default: ``reference_engine``, the direct replay of ``table``)."""
    from tune_risk.engine.core import Engine
    from tune_risk.engine.records import RunStatus

    assert chain.final is not None, "the last restore did not write its final state"
    final = chain.final
    engine = Engine.from_state_dict(final["engine_state"])
    counts = engine.counts()
    assert counts["runs_in_flight"] == 0 and engine.finished and final["n_errors"] == 0

    # Tune's trials and the searcher's runs are the same set, one run per trial.
    trial_to_run = {t: int(r) for t, r in final["trial_to_run"].items()}
    assert len(set(trial_to_run.values())) == len(trial_to_run) == counts["runs_launched"] == len(engine.runs)
    assert sorted(trial_to_run) == final["tune_trials"], "Tune's trials differ from the searcher's runs"

    # One run per replicate (row, seed index) and one incorporated value per slot.
    key_of = {run.run_id: (engine.records[run.config_id].pool_index, run.seed_index) for run in engine.runs.values()}
    assert len(set(key_of.values())) == len(key_of), "a replicate was run twice in the final state"
    used: dict[tuple, float] = {}
    for record in engine.records:
        slots = record.slots[: record.n_incorporated]
        assert len({s.run_id for s in slots}) == len(slots)
        for slot in slots:
            assert engine.runs[slot.run_id].status is RunStatus.USED
            used[key_of[slot.run_id]] = slot.value
    assert counts["runs_completed"] == len(used) == sum(r.n_incorporated for r in engine.records)
    status_of = {key_of[run.run_id]: run.status for run in engine.runs.values()}

    # Every replicate completed before a kill is in the final state with the same value.
    lost, mismatched, completed_before_kills = [], [], set()
    for run in chain.kills:
        for line in chain.log[: run.log_after]:
            if line["event"] != "complete" or line["value"] is None:
                continue
            key = (line["row"], line["seed"])
            completed_before_kills.add(key)
            status = status_of.get(key)
            if status is None or status is RunStatus.IN_FLIGHT:
                lost.append(line)
            elif status is RunStatus.USED and used[key] != line["value"]:
                mismatched.append((line, used[key]))
    assert not lost, f"replicates completed before a kill are missing after the restore: {lost}"
    assert not mismatched, f"replicates changed value across the restore: {mismatched}"
    seen: dict[tuple, int] = {}
    for line in chain.log:
        if line["event"] == "complete":
            key = (line["row"], line["seed"])
            seen[key] = seen.get(key, 0) + 1
    rerun = sum(n - 1 for n in seen.values())  # replicates run again after a restore (not counted twice)
    completions_of_trial: dict[str, int] = {}
    for line in chain.log:
        completions_of_trial[line["trial_id"]] = completions_of_trial.get(line["trial_id"], 0) + 1
    last_kill = chain.kills[-1].log_after if chain.kills else 0
    kept = {line["trial_id"] for line in chain.log[:last_kill]
            if completions_of_trial[line["trial_id"]] == 1 and line["trial_id"] in trial_to_run}

    # The final result is the uninterrupted run's: same rounds, same k, same stops, same values.
    if reference is None:
        reference = reference_engine(table, chain.workers, chain.budget)
    assert decisions(engine) == decisions(reference)
    assert [r.incorporated_values() for r in engine.records] == [r.incorporated_values() for r in reference.records]
    assert np.isfinite([v for v in used.values()]).all()
    restore_points = check_restore_points(chain.workdir / "storage" / NAME)
    return {
        "kills": len(chain.kills), "completed_before_kills": len(completed_before_kills), "lost": len(lost),
        "counted_twice": len(key_of) - len(set(key_of.values())), "rerun_after_restore": rerun,
        "kept_across_restore": len(kept), "leftover_processes_killed": sum(r.leftovers for r in chain.runs),
        "trials": counts["runs_launched"], "in_copy_kills": sum(r.torn is not None for r in chain.kills),
        "repaired_restores": sum(r["repaired"] for r in chain.repairs), "restore_points_checked": restore_points,
    }


# ---------------------------------------------------------------------------------------------- faults
FAULT_KINDS = ("ok", "raise_early", "raise_late", "nan", "inf", "-inf", "silent", "mute")
# 20 % raise (half before any report, half after one), 10 % NaN/inf final returns, 8 % without the metric.
FAULT_SHARES = {"raise_early": 0.10, "raise_late": 0.10, "nan": 0.05, "inf": 0.03, "-inf": 0.02,
                "silent": 0.05, "mute": 0.03}


def fault_of(row: int, seed: int) -> str:
    """The fault injected into replicate ``(row, seed)``: a fixed draw, so tests know it in advance."""
    u = float(np.random.default_rng([row, seed, 0xFA17]).random())
    for kind, share in FAULT_SHARES.items():
        if u < share:
            return kind
        u -= share
    return "ok"


def make_faulty_trainable(returns: np.ndarray, faults: dict[tuple[int, int], str]):
    """A table-replay trainable with injected faults (``faults[(row, seed)]``, see ``fault_of``).

    ``raise_early`` raises before reporting; ``raise_late`` reports an intermediate result, then
    raises; ``nan``/``inf``/``-inf`` report a finite intermediate result, then that final value;
    ``silent`` reports only other keys; ``mute`` returns without reporting anything. A closure,
    so that Ray pickles it by value.
    """
    n_seeds = returns.shape[1]

    def trainable(config: dict) -> None:
        from ray import tune

        row, seed = int(config["table_row"]), int(config["seed"])
        value = float(returns[row, seed % n_seeds])
        kind = faults.get((row, seed), "ok")
        if kind == "raise_early":
            raise RuntimeError(f"injected crash of replicate ({row}, {seed}) before any report")
        if kind == "mute":
            return
        if kind == "silent":
            tune.report({"step": 0, "loss_of_something_else": 1.0})
            return
        tune.report({"return": 0.5 * value, "step": 0})  # intermediate: never an observation
        if kind == "raise_late":
            raise RuntimeError(f"injected crash of replicate ({row}, {seed}) after one report")
        final = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}.get(kind, value)
        tune.report({"return": final, "step": 1})

    return trainable


# ---------------------------------------------------------------------------------------------- node loss
def run_node_loss(workdir: Path, table: Path, max_failures: int, *, kill_after: int = 6, budget: int = 16,
                  timeout: float = 400.0, driver: str = "node_loss_driver.py") -> dict[str, Any]:
    """Run ``node_loss_driver.py`` (or ``driver``: ``pool_node_loss_driver.py``) in its own session (its
    local cluster dies with it); the final state."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(HERE / driver), "--table", str(table), "--workdir", str(workdir),
               "--max-failures", str(max_failures), "--kill-after", str(kill_after), "--budget", str(budget)]
    started = time.monotonic()
    with open(workdir / "console.txt", "w") as console:
        proc = subprocess.Popen(command, cwd=REPO, env=driver_env(None), stdout=console, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        returncode = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftovers = kill_session(proc.pid)
    tail = (workdir / "console.txt").read_text()[-3000:]
    assert returncode == 0, f"node-loss driver exited with {returncode}:\n{tail}"
    final = json.loads((workdir / "final.json").read_text())
    final.update(seconds=time.monotonic() - started, leftovers=leftovers,
                 events=[json.loads(line) for line in (workdir / "events.jsonl").read_text().splitlines()])
    return final
