"""``CallBudget``: the one bound on model calls, reserved one HTTP attempt at a time.

One budget serves a whole run or session: the optimizer's ``max_calls``, the
pytest plugin's ``--llm-max-calls`` (shared by every xdist worker through a
counting file) and the CLI all use this class. What it counts is *attempts*:
a retry is one more attempt, and a reply served from a response store is none.

When an attempt is taken
    An attempt is reserved when it is about to be sent, after any wait for a
    concurrency slot, so tasks queued behind a semaphore hold nothing. The
    caller makes its budget *active* for the duration of a call
    (``with budget.active():``); whoever sends then takes the attempt with
    :func:`reserve_attempt`: ``OpenAIClient`` does so for each HTTP request,
    retries included, once it holds a connection slot; for any other client
    (``ScriptedLLM``, ``LocalLLM``, a user's own) ``llm.metered_call`` takes
    one attempt just before calling it and counts the retries its reply
    reports afterwards, with no budget active inside (a user's wrapper around
    ``OpenAIClient`` is charged once, outside).
    Budgets nest: a call made while two are active (an optimizer run inside a
    pytest session) takes its attempt from both, or from neither.

Holding back a reserve
    ``hold(n)`` keeps ``n`` more attempts out of reach of ordinary
    reservations until they are released (``release(n)``, or ``release()``
    for every held attempt): the optimizer sets its held-out check's calls
    aside this way before the search starts, so the search spends the rest
    and the held-out check still runs. Holds add up, so two phases that each
    hold their share both keep it.

Across processes
    With ``shared=PATH`` the count lives in a small file that every process
    updates under an exclusive ``flock`` (POSIX), so two pytest-xdist workers
    never both take the last attempt. A hold is per process. The budget fails
    closed: a count file that cannot be opened, is not a regular file or does
    not hold a count (a hand edit, a truncation) refuses every reservation,
    and the refusal names the file and what is wrong with it.

>>> budget = CallBudget(3)
>>> with budget.active():
...     [reserve_attempt() for _ in range(4)]
[True, True, True, False]
>>> budget.spent, budget.left
(3, 0)
>>> reserve_attempt()  # no budget active: nothing bounds the call
True
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from tnsai_eval.errors import CallBudgetExceeded, ConfigError

__all__ = [
    "CallBudget",
    "add_attempts",
    "attempt_available",
    "budget_exceeded",
    "only_budgets",
    "refund_attempt",
    "reserve_attempt",
]


class CallBudget:
    """At most ``limit`` model call attempts, counted here or in a file shared by processes.

    >>> budget = CallBudget(5)
    >>> budget.hold(2)
    >>> [budget.try_reserve() for _ in range(4)]
    [True, True, True, False]
    >>> budget.release(); budget.try_reserve(), budget.left
    (True, 1)
    """

    def __init__(self, limit: int, *, shared: str | os.PathLike[str] | None = None) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigError(f"a call budget's limit must be an int >= 0, got {limit!r}")
        self.limit = limit
        self.shared = None if shared is None else Path(shared)
        self._spent = 0
        self._held = 0
        # What is wrong with the shared count file, when it could not be used.
        self._problem: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        held = f", held={self._held}" if self._held else ""
        return f"CallBudget(limit={self.limit}, spent={self.spent}{held})"

    @property
    def spent(self) -> int:
        """Attempts taken so far (every process's, when shared)."""
        with self._lock:
            return self._update(0, check=False)[1]

    @property
    def held(self) -> int:
        """Attempts held back for a later phase (see ``hold``)."""
        return self._held

    @property
    def left(self) -> int:
        """Attempts that may still be taken, the held-back ones included."""
        return max(0, self.limit - self.spent)

    def hold(self, count: int) -> None:
        """Keep ``count`` more attempts out of reach of ``try_reserve`` until released."""
        _check_count("hold", count)
        with self._lock:
            self._held += count

    def release(self, count: int | None = None) -> None:
        """Make ``count`` held-back attempts available again (``None``: all of them)."""
        if count is not None:
            _check_count("release", count)
        with self._lock:
            self._held = 0 if count is None else max(0, self._held - count)

    def try_reserve(self) -> bool:
        """Take one attempt; ``False`` (nothing taken) when none is left outside the hold."""
        with self._lock:
            return self._update(1, check=True)[0]

    def add(self, attempts: int) -> None:
        """Count ``attempts`` already made without a reservation (a client's own retries)."""
        _check_count("add", attempts)
        if attempts:
            with self._lock:
                self._update(attempts, check=False)

    def refund(self, attempts: int = 1) -> None:
        """Give back reserved attempts that were not sent (a store answered instead)."""
        _check_count("refund", attempts)
        if attempts:
            with self._lock:
                self._update(-attempts, check=False)

    @contextmanager
    def active(self) -> Iterator[CallBudget]:
        """Make this budget bound the calls made inside the block (this context only).

        The budget travels in a context variable, so it follows the call into
        ``asyncio`` tasks and ``asyncio.to_thread`` / ``OpenAIClient`` worker
        threads, and never leaks into unrelated calls.
        """
        with only_budgets(*_ACTIVE.get(), self):
            yield self

    def exceeded(self, what: str = "the call") -> CallBudgetExceeded:
        """The error saying that this budget refused ``what``."""
        spent = self.spent
        if self._problem is not None:
            why = f": {self._problem}, so no attempt is taken (the budget fails closed)"
        else:
            held = f" ({self._held} held back for a later phase)" if self._held else ""
            why = f" spent ({spent} made){held}"
        return CallBudgetExceeded(
            f"call budget of {self.limit} attempt(s){why}: {what} was not sent",
            limit=self.limit,
            spent=spent,
        )

    def _update(self, amount: int, *, check: bool) -> tuple[bool, int]:
        """Add ``amount`` to the count unless ``check`` finds no room; (taken, spent after)."""
        if self.shared is None:
            if check and self._spent + amount + self._held > self.limit:
                return False, self._spent
            self._spent = max(0, self._spent + amount)
            return True, self._spent
        where = str(self.shared)
        try:
            # Not blocking: a FIFO in its place must not hang the open or the read.
            fd = os.open(self.shared, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            return self._closed(f"the shared count file {where!r} cannot be opened: {exc}")
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return self._closed(f"the shared count file {where!r} is not a regular file")
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.read(fd, _COUNT_BYTES + 1)
            text = raw.decode("ascii", "replace").strip()
            if len(raw) > _COUNT_BYTES or (text and not _COUNT.fullmatch(text)):
                return self._closed(
                    f"the shared count file {where!r} holds {text[:20]!r}, not a count of attempts"
                )
            spent = int(text) if text else 0
            if check and spent + amount + self._held > self.limit:
                return False, spent
            if amount:
                spent = max(0, spent + amount)
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, str(spent).encode("ascii"))
            self._problem = None
            return True, spent
        except OSError as exc:
            return self._closed(f"the shared count file {where!r} cannot be used: {exc}")
        finally:
            os.close(fd)  # closing releases the lock

    def _closed(self, problem: str) -> tuple[bool, int]:
        """Fail closed: nothing taken, and the budget reads as spent (``problem`` says why)."""
        self._problem = problem
        return False, self.limit


# A count the file can hold: digits only (what ``_update`` writes), at most this long.
_COUNT = re.compile(r"[0-9]+")
_COUNT_BYTES = 32


def _check_count(method: str, count: object) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ConfigError(f"CallBudget.{method}() takes an int >= 0, got {count!r}")


_ACTIVE: ContextVar[tuple[CallBudget, ...]] = ContextVar("tnsai_eval_call_budget", default=())


def reserve_attempt() -> bool:
    """Take one attempt from every active budget, or from none; ``False`` if one refused."""
    taken: list[CallBudget] = []
    for budget in _ACTIVE.get():
        if not budget.try_reserve():
            for earlier in taken:
                earlier.refund()
            return False
        taken.append(budget)
    return True


def attempt_available() -> bool:
    """Whether every active budget has an attempt left (nothing is taken)."""
    return all(b.spent + b.held < b.limit for b in _ACTIVE.get())


def add_attempts(attempts: int) -> None:
    """Count ``attempts`` made without a reservation (a client's own retries) in every active
    budget."""
    for budget in _ACTIVE.get():
        budget.add(attempts)


def refund_attempt() -> None:
    """Give one reserved attempt back to every active budget (nothing was sent)."""
    for budget in _ACTIVE.get():
        budget.refund()


@contextmanager
def only_budgets(*budgets: CallBudget) -> Iterator[None]:
    """Exactly ``budgets`` active inside the block (none: the calls inside are unbounded here).

    A judge given its own budget (``judge_budget=``) draws on that one only;
    a call already charged outside a client runs with none, so that the
    client does not take the same attempts again.
    """
    token = _ACTIVE.set(tuple(dict.fromkeys(budgets)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def budget_exceeded(what: str = "the call") -> CallBudgetExceeded:
    """The error of the first active budget with nothing left (for a refused reservation)."""
    budgets = _ACTIVE.get()
    spent = [b for b in budgets if b.spent + b.held >= b.limit]
    chosen = spent[0] if spent else budgets[0]
    return chosen.exceeded(what)
