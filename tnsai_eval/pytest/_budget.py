"""``--llm-max-calls N``: a spending bound on model calls for one session.

A call is counted as the HTTP attempts it took (``Completion.attempts``:
retries included); a reply served from the response store never counts. A
call is *reserved* before it is made (one attempt), so concurrent cases never
overshoot the bound by more than their retries; the attempts beyond the
first are added when the reply comes back.

Under pytest-xdist the count is shared by every worker through a small file
that the controller creates and names in ``workerinput``; each update holds
an exclusive ``flock`` on it (POSIX), so two workers never both take the
last call.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

__all__ = ["CallBudget"]


class CallBudget:
    """At most ``limit`` model calls, counted here or in a file shared with other workers.

    >>> budget = CallBudget(2)
    >>> budget.reserve(), budget.reserve(), budget.reserve()
    (True, True, False)
    >>> budget.spent
    2
    """

    def __init__(self, limit: int, shared: Path | None = None) -> None:
        self.limit = limit
        self.shared = shared
        self._spent = 0
        self._lock = threading.Lock()

    @property
    def spent(self) -> int:
        """Calls made so far in the session (every worker's, when shared)."""
        with self._lock:
            if self.shared is None:
                return self._spent
            return self._update(0, check=False)[1]

    def reserve(self) -> bool:
        """Take one call from the budget; False (nothing taken) when it is spent."""
        with self._lock:
            if self.shared is None:
                if self._spent >= self.limit:
                    return False
                self._spent += 1
                return True
            return self._update(1, check=True)[0]

    def add(self, attempts: int) -> None:
        """Count ``attempts`` more (the retries of a call already reserved)."""
        if attempts <= 0:
            return
        with self._lock:
            if self.shared is None:
                self._spent += attempts
            else:
                self._update(attempts, check=False)

    def _update(self, amount: int, *, check: bool) -> tuple[bool, int]:
        assert self.shared is not None
        fd = os.open(self.shared, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.read(fd, 64).decode("ascii", "replace").strip()
            spent = int(raw) if raw.isdigit() else 0
            if check and spent + amount > self.limit:
                return False, spent
            if amount:
                spent += amount
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, str(spent).encode("ascii"))
            return True, spent
        finally:
            os.close(fd)  # closing releases the lock
