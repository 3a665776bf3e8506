"""Run the engine's small-matrix GP algebra on a fixed number of torch threads.

The engine factorises matrices of at most a few hundred rows. Torch's intra-op thread pool gives
little speed-up at that size, and on a machine whose other cores are busy (a Tune driver next to
its trials, or a replay next to other jobs) a two-thread ``torch.exp`` measured 170x slower than a
one-thread one here (8.5 ms vs 0.05 ms for a 512 x 250 matrix). The engine therefore runs with
``EngineSettings.torch_threads`` threads (default 1) and restores the caller's setting afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import torch

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Use ``n`` torch intra-op threads inside the block (``n = 0``: leave torch's setting)."""
    previous = torch.get_num_threads()
    change = n > 0 and n != previous
    if change:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(previous)


def engine_threads(method: F) -> F:
    """Decorator for engine methods: run under ``self.settings.torch_threads`` threads."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with torch_threads(self.settings.torch_threads):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
