"""Non-blocking, crash-safe claims between processes on one machine: an exclusive ``flock`` on a lock file.

The kernel drops an ``flock`` when its descriptor is closed or its process dies, however it dies, so a claim
never outlives its holder and nothing needs cleaning up after a crash. Used to give each training process cores
of its own (``rl_tasks.pinning``) and to let several table generators share one table, configuration by
configuration (``rl_tasks.generate``).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def try_lock(path: Path) -> int | None:
    """The descriptor of ``path`` locked exclusively for this process, or ``None`` when another holder has it.

    The file is created if absent. Close the descriptor to release the claim. A lock file another user owns
    and this one may not open raises ``PermissionError``.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)  # flock needs no write access
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor
