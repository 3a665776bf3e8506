"""Searchers a user might pass with ``--searcher NAME=module:callable`` (tests of the peer replay)."""

from __future__ import annotations

from ray.tune.search import Searcher

CALLS: list[tuple[str, dict | None]] = []  # what the last RecordingSearcher saw, in order


class RecordingSearcher(Searcher):
    """Suggests the configurations ``points`` in turn and records every call it gets."""

    def __init__(self, points: list[dict]) -> None:
        super().__init__()
        self.points = points
        self.suggested = 0
        CALLS.clear()

    def set_search_properties(self, metric, mode, config, **spec) -> bool:
        self._metric, self._mode = metric, mode
        return True

    def suggest(self, trial_id: str) -> dict:
        point = self.points[self.suggested % len(self.points)]
        self.suggested += 1
        CALLS.append(("suggest", dict(point)))
        return dict(point)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        CALLS.append(("complete", result))


POINTS: list[dict] = []  # set by a test before the replay


def recording(seed: int = 0) -> RecordingSearcher:
    return RecordingSearcher(POINTS)


def tpe(seed: int) -> Searcher:
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    return OptunaSearch(sampler=optuna.samplers.TPESampler(seed=seed))


def not_a_searcher() -> object:
    return object()


def raises(seed: int) -> Searcher:
    raise RuntimeError("no licence server")
