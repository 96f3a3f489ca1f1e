"""Finding processes by command line, for tests of checks that must leave none behind.

Inside a check's PID namespace a pid means nothing out here, so tests give
each process a unique command line (``sleep 60.<test pid><n>``) and look it up.
"""

from __future__ import annotations

import os

__all__ = ["running"]


def running(needle: str) -> list[int]:
    """Pids of live processes whose command line contains ``needle`` (read from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat") as handle:
                state = handle.read().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue  # gone meanwhile
        if needle in command and state != "Z":  # a zombie is dead, only not yet reaped
            found.append(int(name))
    return found
