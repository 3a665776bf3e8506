"""Host a Ray Tune ``Searcher`` in another interpreter, for a peer whose library cannot live beside ours.

HEBO 0.3.6 needs numpy < 1.25, which JAX and our stack cannot use, so ``hebo-rep<k>`` runs HEBOSearch in
the HEBO venv (``make bench`` builds it) and talks to it through this script. It is run by path
(``python searcher_host.py``) and imports only the standard library and what the factory needs (Ray),
never ``tune_risk``.

Protocol (:mod:`tune_risk.offline.remote` is the other end): length-prefixed pickles on stdin/stdout. The
first message is ``(factory "module:callable", kwargs)``; then ``("set_search_properties", metric, mode,
space)``, ``("suggest", trial_id)``, ``("complete", trial_id, result)`` or ``("close",)``; each is answered
with ``("ok", value)`` or ``("error", "Type: message")``. Values cross as Python builtins (numpy differs
between the two interpreters).
"""

from __future__ import annotations

import importlib
import os
import pickle
import struct
import sys
import traceback
from typing import Any, BinaryIO

HEADER = struct.Struct("!Q")


def read_message(stream: BinaryIO) -> Any:
    """One length-prefixed pickle from ``stream`` (``EOFError`` at the end)."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("stream closed")
    (size,) = HEADER.unpack(header)
    return pickle.loads(stream.read(size))


def write_message(stream: BinaryIO, message: Any) -> None:
    """Write ``message`` as a length-prefixed pickle (protocol 4: both ends are Python 3.11)."""
    data = pickle.dumps(message, protocol=4)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and containers turned into Python builtins."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and type(value).__module__.startswith("numpy"):
        return value.item()
    return value


def serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Build the searcher from the first message, then answer calls until ``close`` or the end of input."""
    target, kwargs = read_message(requests)
    _quiet_pymoo()
    module, _, name = target.partition(":")
    searcher = getattr(importlib.import_module(module), name)(**kwargs)
    write_message(replies, ("ok", type(searcher).__name__))
    while True:
        try:
            message = read_message(requests)
        except EOFError:
            return
        try:
            if message[0] == "close":
                write_message(replies, ("ok", None))
                return
            if message[0] == "set_search_properties":
                value = searcher.set_search_properties(message[1], message[2], message[3])
            elif message[0] == "suggest":
                value = plain(searcher.suggest(message[1]))
            elif message[0] == "complete":
                value = searcher.on_trial_complete(message[1], result=message[2])
            else:
                raise ValueError(f"unknown request {message[0]!r}")
            write_message(replies, ("ok", plain(value)))
        except Exception as err:  # noqa: BLE001 - reported to the caller, which raises it
            traceback.print_exc(file=sys.stderr)
            write_message(replies, ("error", f"{type(err).__name__}: {err}"))


def _quiet_pymoo() -> None:
    """HEBO's optimiser pymoo prints a compile-speed notice to stderr on import, once per replay: not news."""
    try:
        from pymoo.config import Config
    except ImportError:
        return
    Config.warnings["not_compiled"] = False


def main() -> None:
    # The protocol owns the real stdout; anything the searcher prints goes to stderr instead.
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
