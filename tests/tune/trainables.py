"""Factories of small noisy Tune trainables for the adapter tests.

Each factory returns a *closure*, so that Ray pickles it by value (test modules are not importable
on Ray workers). The return of a replicate depends only on ``(config, seed)``.
"""

from __future__ import annotations


def make_noisy_trainable(iterations: int = 4, sleep: float = 0.0, jitter: float = 0.0,
                         fail_every: int = 0, nan_every: int = 0, silent_every: int = 0):
    """A 1-2 parameter objective: mean ``sin(6x) + bonus(opt)``, noise sd ``0.1 + 0.8 x``.

    ``sleep``/``jitter`` set the per-iteration wall time (jitter randomises arrival order);
    ``fail_every``/``nan_every``/``silent_every``: seeds divisible by it raise / report NaN /
    never report the metric.
    """

    def trainable(config):
        import math
        import time

        import numpy as np
        from ray import tune

        seed = int(config["seed"])
        rng = np.random.default_rng(seed)
        x = float(config["x"])
        bonus = {"a": 1.0, "b": 0.0}.get(config.get("opt", "b"), 0.0)
        value = math.sin(6.0 * x) + bonus + (0.1 + 0.8 * x) * rng.standard_normal()
        delay = sleep + jitter * np.random.default_rng(seed + 7919).random()
        for i in range(iterations):
            time.sleep(delay)
            if fail_every and seed % fail_every == 0 and i == iterations - 1:
                raise RuntimeError(f"injected failure for seed {seed}")
            if silent_every and seed % silent_every == 0:
                tune.report({"other": float(i)})
                continue
            reported = float("nan") if nan_every and seed % nan_every == 0 else value
            tune.report({"return": reported if i == iterations - 1 else value * 0.5, "step": i})

    return trainable
