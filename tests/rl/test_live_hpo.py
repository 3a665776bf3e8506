"""experiments/studies/live_hpo.py's bookkeeping: when a method's recommendation first reaches a target MV."""

from __future__ import annotations

import math

from tests.scripts import load_script


def _live_hpo():
    return load_script("live_hpo")


def test_time_to_reach_is_the_first_recommendation_at_or_above_the_target() -> None:
    live = _live_hpo()
    a, b, c = {"lr": 0.1}, {"lr": 0.2}, {"lr": 0.3}
    mv = {live.config_key(a): (0, 0, -0.3), live.config_key(b): (0, 0, 0.1), live.config_key(c): (0, 0, 0.2)}
    row = {"trace": [(5.0, 100, a), (9.0, 300, b), (20.0, 900, c)], "best": c, "wall": 30.0, "steps": 1000}
    assert live.time_to_reach(row, 0.1, mv) == (9.0, 300)   # b reaches 0.1 exactly
    assert live.time_to_reach(row, 0.15, mv) == (20.0, 900)
    assert live.time_to_reach(row, -1.0, mv) == (5.0, 100)
    never = live.time_to_reach(row, 0.5, mv)
    assert all(math.isinf(v) for v in never)
    # a recommendation that appears only at the end (no trace entry) counts at the run's end
    assert live.time_to_reach({**row, "trace": [(5.0, 100, a)]}, 0.15, mv) == (30.0, 1000)


def test_busy_fraction_counts_trial_time_against_workers_times_wall() -> None:
    live = _live_hpo()
    # Two workers for 10 s: one trial ran 0-10 s, two others 0-2 s and 6-8 s; one never ended (nan: ignored).
    spans = [(0.0, 10.0), (0.0, 2.0), (6.0, 8.0), (9.0, math.nan)]
    assert live.busy_fraction(spans, workers=2, wall=10.0) == 0.7
