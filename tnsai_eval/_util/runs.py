"""A run's id: which run of a store last used its replies (``llm._usage``)."""

from __future__ import annotations

import os
import time

__all__ = ["new_run_id"]

_last = [0]  # ids made in one process stay distinct and ordered, whatever the clock's grain


def new_run_id() -> str:
    """A new run id: the start time in nanoseconds (20 digits, so ids sort by it), then the pid.

    >>> a, b = new_run_id(), new_run_id()
    >>> len(a.split("-")[0]), a < b
    (20, True)
    """
    stamp = max(time.time_ns(), _last[0] + 1)
    _last[0] = stamp
    return f"{stamp:020d}-{os.getpid()}"
