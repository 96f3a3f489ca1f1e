"""Whether a client may send one more HTTP attempt: a caller's budget reaching into retries.

A client that retries (``OpenAIClient``) sends several requests for one
``chat`` call. A caller with a hard request budget (the optimizer's
``max_calls``) must be able to refuse those extra requests, or a flaky server
would let more requests out than the budget allows. The caller installs an
``AttemptGate`` for the duration of its call with :func:`attempt_gate`; the
client asks :func:`may_retry` before each retry. The gate travels in a
context variable, so it follows the call into ``asyncio`` tasks and
``asyncio.to_thread`` workers and never leaks into unrelated calls.

>>> class Counted:
...     def __init__(self, left: int) -> None:
...         self.left = left
...     def allow_retry(self) -> bool:
...         self.left -= 1
...         return self.left >= 0
>>> may_retry()  # no gate: the client's own retry policy decides alone
True
>>> with attempt_gate(Counted(1)):
...     may_retry(), may_retry()
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

__all__ = ["AttemptGate", "attempt_gate", "may_retry"]


@runtime_checkable
class AttemptGate(Protocol):
    """Says whether one more attempt (a retry) may be sent; a yes is spent on the attempt."""

    def allow_retry(self) -> bool:
        """Reserve one more HTTP attempt, or return ``False`` to have the call fail now."""
        ...


_GATE: ContextVar[AttemptGate | None] = ContextVar("tnsai_eval_attempt_gate", default=None)


@contextmanager
def attempt_gate(gate: AttemptGate) -> Iterator[None]:
    """Install ``gate`` for the calls made inside the ``with`` block (this context only)."""
    token = _GATE.set(gate)
    try:
        yield
    finally:
        _GATE.reset(token)


def may_retry() -> bool:
    """Whether the caller's gate allows one more attempt (``True`` when there is no gate)."""
    gate = _GATE.get()
    return gate is None or gate.allow_retry()
