"""The error of a benchmark that cannot be built or run here (docs/algorithms.md §4.9).

Its own module so that the task builders (``tasks``) and the tasks' implementations (``lunar``) both
raise it without importing each other.
"""

from __future__ import annotations


class TaskUnavailable(RuntimeError):
    """A benchmark cannot be built here (package or data missing); the message says why."""
