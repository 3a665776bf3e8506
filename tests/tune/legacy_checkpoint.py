"""Writes ``tests/tune/data/checkpoint-0.1.0-flat.pkl``: checkpoints of a run of tune_risk 0.1.0 whose
modules sat flat in ``tune_risk/`` (``tune_risk.searcher``, ``tune_risk.warping``, ...), before the
package layout of issue #17, and what the run decides after them.

The fixture was written once, by this script on the last commit before the layout (25375fa):
``python tests/tune/legacy_checkpoint.py``. Its pickles name the classes by their old module paths;
``tests/tune/test_legacy_checkpoint.py`` loads them with today's package and checks that the run
continues with the same decisions. Running the script today would write a checkpoint of today's
layout, which is not what the test needs: keep the committed file.

The pickle holds a dict:

* ``searcher_state``: the bytes ``RiskAwareSearch.save`` writes (Tune's ``searcher-state-*.pkl``):
  the searcher's fields (``TuneSpaceCodec``, ``FrozenWarp``, ``RestorePoints``, ``EngineSettings``
  objects) and the engine's ``state_dict`` (plain containers).
* ``objects``: the searcher and its ``ReplicateScheduler`` pickled as objects (as Tune's ``tuner.pkl``
  holds them), and the ``Engine`` itself.
* ``continuation``: ``(trial id, config row, seed)`` of every trial suggested after the checkpoint,
  and the engine's counts at the end.
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).resolve().parent / "data" / "checkpoint-0.1.0-flat.pkl"
METRIC = "score"
N_ROWS = 40


def candidates() -> list[dict]:
    """A finite candidate set (exact argmax: decisions do not hinge on a continuous optimiser)."""
    rng = np.random.default_rng(17)
    return [{"x": float(x), "y": float(y), "row": i} for i, (x, y) in enumerate(rng.uniform(size=(N_ROWS, 2)))]


def space() -> dict:
    from ray import tune

    return {"x": tune.uniform(0.0, 1.0), "y": tune.uniform(0.0, 1.0), "row": tune.randint(0, N_ROWS)}


def value(config: dict) -> float:
    """A noisy return, deterministic in ``(config, seed)``."""
    noise = np.random.default_rng([config["row"], config["seed"]]).standard_normal()
    x, y = config["x"], config["y"]
    return math.sin(5.0 * x) + 0.5 * y + (0.05 + 0.4 * x) * noise


def drive(searcher, steps: int, start: int, in_flight: list[str], configs: dict[str, dict], log: list) -> int:
    """``steps`` suggest/complete events with up to 3 trials in flight (results in launch order, except
    that the newest trial finishes first at every third suggested trial); cancelled trials are acknowledged.

    Returns the next trial number; ``in_flight`` (trial ids, oldest first) and ``configs`` (trial id ->
    config) carry over between calls.
    """
    trial = start
    for _ in range(steps):
        for trial_id in [t for t in in_flight if searcher.should_stop(t)]:
            in_flight.remove(trial_id)
            searcher.on_trial_complete(trial_id, None)
            log.append((trial_id, "cancelled"))
        config = searcher.suggest(f"t{trial}") if len(in_flight) < 3 else None
        if isinstance(config, dict):
            configs[f"t{trial}"] = config
            in_flight.append(f"t{trial}")
            log.append((f"t{trial}", config["row"], config["seed"]))
            trial += 1
            continue
        if config == "FINISHED" or not in_flight:
            break
        trial_id = in_flight.pop(-1 if len(configs) % 3 == 0 else 0)  # results arrive out of order too
        searcher.on_trial_complete(trial_id, {METRIC: value(configs[trial_id]), "time_total_s": 1.0})
    return trial


def make_searcher():
    # The flat layout's path on purpose (the pickle must name it); ruff no longer finds the module, hence noqa.
    from tune_risk import RiskAwareSearch  # noqa: I001
    from tune_risk.warping import fit_warp

    warp = fit_warp(np.random.default_rng(3).normal(size=200))
    searcher = RiskAwareSearch(
        space(), metric=METRIC, mode="max", random_state_seed=5, k_max=4, n_initial=3, budget=40,
        candidates=candidates(), warp=warp, lengthscale="oscbo", max_active_configs=1, launch_policy="all",
    )
    searcher.set_max_concurrency(3)
    return searcher


def write() -> None:
    from tune_risk import ReplicateScheduler

    searcher = make_searcher()
    in_flight: list[str] = []
    configs: dict[str, dict] = {}
    trial = drive(searcher, 23, 0, in_flight, configs, [])
    FIXTURE.parent.mkdir(exist_ok=True)
    path = FIXTURE.with_suffix(".tmp")
    searcher.save(str(path))
    searcher_state = path.read_bytes()
    path.unlink()
    objects = pickle.dumps({"searcher": searcher, "scheduler": ReplicateScheduler(searcher),
                            "engine": searcher.engine})
    log: list = []
    drive(searcher, 60, trial, list(in_flight), dict(configs), log)
    blob = {"searcher_state": searcher_state, "objects": objects, "next_trial": trial, "in_flight": in_flight,
            "configs": configs, "continuation": log, "counts": searcher.engine.counts()}
    FIXTURE.write_bytes(pickle.dumps(blob, protocol=4))
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size} bytes): {len(log)} events after the checkpoint")


if __name__ == "__main__":
    write()
