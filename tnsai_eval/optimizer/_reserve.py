"""The held-out check's cost, estimated from the run so far, and kept from the search.

The held-out check scores the starting prompt and the best one on every
held-out case: ``2 x n`` model calls (``n`` when the starting prompt stays the
best). What those calls cost depends on the run: a server that answers 503 to
every fourth request needs about 4/3 attempts per call, long prompts take more
tokens, a loaded server more seconds. So every budget the run has
(``max_calls``, ``max_tokens``, ``max_seconds``) sets aside what the check is
estimated to need, from what the run has observed, and the search spends only
the rest:

- **calls**: ``k`` calls at the observed attempts per call ``rho`` (HTTP
  attempts over calls sent, retries included), plus two standard deviations
  of the retries (``2 * sqrt(k * (rho - 1))``): with no retry seen, exactly
  ``k``;
- **tokens**: ``n`` times the starting prompt's tokens per case call plus
  ``n`` times the best's (during the search, which prompt will be best is not
  known: the most any scored variant took per call), times ``MARGIN``;
- **seconds**: ``k`` times the run's seconds per call so far (wall time over
  calls sent, so the run's concurrency is in it), times ``MARGIN``.

A prompt makes one model call per case; a target (``optimize(target=...)``,
an agent) may make several, so its ``2 x n`` cases count at the calls per
case observed so far (at least one each).

Before anything is observed, tokens and seconds reserve nothing (the first
calls of the starting prompt give the figures); calls reserve ``k``.
``Run`` updates the reserve after every scored case, and before the check
asks ``shortfall``: the check is started only when every budget has what its
estimate needs, and otherwise the result says which budget fell short, and
by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MARGIN", "CheckCost", "Observed", "estimate", "shortfall"]

#: Tokens and seconds per call vary (replies differ in length, a server in
#: load): the estimate is this much above the observed mean.
MARGIN = 1.25


@dataclass(frozen=True, slots=True)
class CheckCost:
    """What the held-out check is estimated to need: attempts, tokens, seconds."""

    calls: int
    tokens: int
    seconds: float
    #: The model calls the estimate is for (``2 x n``, or ``n``).
    case_calls: int
    #: The attempts per call it assumed.
    attempts_per_call: float


@dataclass(frozen=True, slots=True)
class Observed:
    """What the run has spent so far (``Budget``'s counters) and per-call token figures.

    ``initial_tokens`` and ``best_tokens`` are tokens per case call of the
    starting prompt and of the prompt the check will score as the best (the
    largest of the scored variants' while the search goes on); ``None`` when
    not observed yet.
    """

    attempts: int
    retries: int
    elapsed_s: float
    initial_tokens: float | None
    best_tokens: float | None
    #: Model calls per case: 1 for a prompt; a target's (an agent's) as observed.
    calls_per_case: float = 1.0


def estimate(held_out: int, *, best_is_initial: bool, seen: Observed) -> CheckCost:
    """The held-out check's estimated cost on ``held_out`` cases.

    >>> seen = Observed(attempts=40, retries=10, elapsed_s=60.0,
    ...                 initial_tokens=20.0, best_tokens=30.0)
    >>> estimate(10, best_is_initial=False, seen=seen)
    CheckCost(calls=32, tokens=625, seconds=50.0, case_calls=20, attempts_per_call=1.3333333333333333)
    >>> estimate(10, best_is_initial=True, seen=Observed(0, 0, 0.0, None, None)).calls
    10
    """  # noqa: E501
    cases = held_out if best_is_initial else 2 * held_out
    case_calls = math.ceil(cases * seen.calls_per_case - 1e-9)
    sent = seen.attempts - seen.retries
    rho = seen.attempts / sent if sent > 0 else 1.0
    calls = math.ceil(case_calls * rho + 2.0 * math.sqrt(case_calls * (rho - 1.0)) - 1e-9)
    per_case = (seen.initial_tokens or 0.0) + (
        0.0 if best_is_initial else (seen.best_tokens or 0.0)
    )
    tokens = math.ceil(MARGIN * held_out * per_case - 1e-9)
    seconds = MARGIN * case_calls * (seen.elapsed_s / sent) if sent > 0 else 0.0
    return CheckCost(calls, tokens, seconds, case_calls, rho)


def shortfall(
    need: CheckCost,
    *,
    calls_left: int | None,
    tokens_left: int | None,
    seconds_left: float | None,
    held_out: int,
) -> str | None:
    """Why the held-out check cannot finish within what is left, or ``None`` when it can.

    >>> need = CheckCost(calls=30, tokens=900, seconds=12.0, case_calls=20, attempts_per_call=1.4)
    >>> print(shortfall(need, calls_left=25, tokens_left=None, seconds_left=None, held_out=10))
    max_calls has 25 attempt(s) left; the held-out check needs about 30 (20 calls on 10 held-out cases at 1.40 attempts each, as observed)
    >>> shortfall(need, calls_left=30, tokens_left=900, seconds_left=12.5, held_out=10) is None
    True
    """  # noqa: E501
    what = f"{need.case_calls} calls on {held_out} held-out cases"
    if calls_left is not None and calls_left < need.calls:
        return (
            f"max_calls has {calls_left} attempt(s) left; the held-out check needs about "
            f"{need.calls} ({what} at {need.attempts_per_call:.2f} attempts each, as observed)"
        )
    if tokens_left is not None and tokens_left < need.tokens:
        return (
            f"max_tokens has {max(0, tokens_left)} token(s) left; the held-out check needs "
            f"about {need.tokens} ({what}, tokens per call as observed, x{MARGIN})"
        )
    if seconds_left is not None and seconds_left < need.seconds:
        return (
            f"max_seconds has {max(0.0, seconds_left):.1f} s left; the held-out check needs "
            f"about {need.seconds:.1f} s ({what}, seconds per call as observed, x{MARGIN})"
        )
    return None
