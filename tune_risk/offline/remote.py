"""A Ray Tune ``Searcher`` that runs in another interpreter (:mod:`tune_risk.offline.searcher_host`).

:class:`RemoteSearcher` forwards ``set_search_properties``, ``suggest`` and ``on_trial_complete`` to a
child process, so that it can be wrapped in *this* process's Ray ``Repeater`` like any searcher: what is
measured is Ray's own wrapper around the peer. Used for HEBO, whose numpy < 1.25 pin cannot share our venv.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from ray.tune.search import Searcher

from tune_risk.offline import searcher_host

HOST = Path(searcher_host.__file__)


def check_interpreter(python: Path, modules: tuple[str, ...], what: str) -> None:
    """``ValueError(what + reason)`` unless ``python`` exists and imports every one of ``modules``."""
    if not Path(python).exists():
        raise ValueError(f"{what} ({python} does not exist)")
    code = "; ".join(f"import {m}" for m in modules)
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ValueError(f"{what} ({python}: {err})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"{what} ({python} cannot import {', '.join(modules)}: {last})")


class RemoteSearcher(Searcher):
    """``target(**kwargs)`` (``"module:callable"``) built and driven in the interpreter ``python``.

    Example:
        >>> searcher = RemoteSearcher(sys.executable, "ray.tune.search.optuna:OptunaSearch", {})  # doctest: +SKIP
        >>> searcher.set_search_properties("return", "max", {"x": tune.uniform(0, 1)})  # doctest: +SKIP
        True
    """

    def __init__(self, python: str | Path, target: str, kwargs: dict[str, Any]) -> None:
        super().__init__()
        self._target = target
        self._process = subprocess.Popen([str(python), str(HOST)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=sys.stderr if _has_fileno(sys.stderr) else subprocess.DEVNULL)
        searcher_host.write_message(self._process.stdin, (target, dict(kwargs)))
        self._reply()

    def _call(self, *message: Any) -> Any:
        searcher_host.write_message(self._process.stdin, message)
        return self._reply()

    def _reply(self) -> Any:
        try:
            status, value = searcher_host.read_message(self._process.stdout)
        except EOFError:
            code = self._process.wait()
            raise RuntimeError(f"{self._target} in {self._process.args[0]} exited with code {code}") from None
        if status == "error":
            raise RuntimeError(f"{self._target} (remote): {value}")
        return value

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        ok = bool(self._call("set_search_properties", metric, mode, config))
        if ok:
            self._metric, self._mode = metric, mode
        return ok

    def suggest(self, trial_id: str) -> dict | None:
        return self._call("suggest", trial_id)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        plain = None if result is None else {k: float(v) for k, v in result.items()}
        self._call("complete", trial_id, plain)

    def close(self) -> None:
        """End the child process (also done when the searcher is garbage-collected)."""
        if self._process.poll() is None:
            try:
                self._call("close")
            except (RuntimeError, OSError):
                pass
            self._process.wait(timeout=30)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True
