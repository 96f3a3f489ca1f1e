"""Racing: score challengers on growing slices of the cases; drop only the surely worse.

The rule, exactly. The cases are put in one seeded order, shared by every
variant and the current best (so comparisons are paired: same cases). Rung
sizes start at ``max(4, ceil(n / 4))`` cases (all of them when ``n`` is
smaller) and double until they reach ``n``. At each rung every surviving
challenger is scored on the cases of the rung it has not seen yet; then,
before the next rung, a challenger is dropped only when

1. it cannot win even by scoring 1.0 on every case still to come: its best
   possible final mean is at most the current best's score (a certainty, not
   an estimate: only a strictly higher score replaces the best); or
2. a paired confidence bound says it is worse: over the cases seen so far
   that both scored (at least ``MIN_RACE_CASES`` of them), the upper end of
   the 95% bound on the mean of the differences (challenger minus best) is
   below zero. The bound is Hoeffding's (``_util.stats.hoeffding_halfwidth``,
   distribution-free) by default, or Student's t over the differences
   (``racing_bound="t"``: tighter when most cases tie, but an approximation).

A tie is never a drop (its upper bound is above zero), nor is a challenger
that is behind by less than the bound's width: racing then says it declined
to eliminate (``RoundRecord.racing_note``) and costs what exhaustive search
costs. With 10-14 cases the Hoeffding bound is about +-0.7, so on small
datasets racing rarely drops anything; it pays off on a hundred cases and
more. Survivors of the last rung have been scored on every case and compete
for "best" exactly as in exhaustive search.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tnsai_eval._util.stats import hoeffding_halfwidth, mean_interval
from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._engine import Engine, Variant
from tnsai_eval.optimizer._records import VariantStatus

__all__ = [
    "MIN_RACE_CASES",
    "MIN_RUNG_CASES",
    "RaceSummary",
    "RacingBound",
    "paired_differences",
    "race",
    "rung_sizes",
    "surely_worse",
]

MIN_RUNG_CASES = 4
#: No challenger is dropped on a bound over fewer paired cases than this.
MIN_RACE_CASES = 8
RacingBound = Literal["hoeffding", "t"]


def rung_sizes(n: int) -> list[int]:
    """How many cases each rung has seen in total, e.g. ``[5, 10, 20]`` for 20.

    >>> rung_sizes(20), rung_sizes(30), rung_sizes(3)
    ([5, 10, 20], [8, 16, 30], [3])
    """
    if n <= 0:
        return []
    sizes = [min(n, max(MIN_RUNG_CASES, math.ceil(n / 4)))]
    while sizes[-1] < n:
        sizes.append(min(n, sizes[-1] * 2))
    return sizes


def paired_differences(challenger: Variant, incumbent: Variant, seen: Sequence[int]) -> list[float]:
    """``challenger - incumbent`` on each case of ``seen`` that both scored."""
    diffs = []
    for case in seen:
        mine, theirs = challenger.scores.get(case), incumbent.scores.get(case)
        if mine is not None and theirs is not None:
            diffs.append(mine - theirs)
    return diffs


def surely_worse(
    diffs: Sequence[float], *, bound: RacingBound = "hoeffding", min_cases: int = MIN_RACE_CASES
) -> bool:
    """Whether the 95% upper bound on the mean paired difference is below zero.

    Never on fewer than ``min_cases`` differences, never on a tie.

    >>> surely_worse([0.0] * 50), surely_worse([-1.0] * 7), surely_worse([-1.0] * 8)
    (False, False, True)
    >>> surely_worse([-1.0] * 5 + [0.0] * 15), surely_worse([-1.0] * 5 + [0.0] * 15, bound="t")
    (False, True)
    """
    n = len(diffs)
    if n < max(1, min_cases):
        return False
    mean = math.fsum(diffs) / n
    upper = mean_interval(diffs)[2] if bound == "t" else mean + hoeffding_halfwidth(n)
    return upper < 0.0


@dataclass(frozen=True, slots=True)
class RaceSummary:
    """What one race did: challengers dropped, and those it declined to drop.

    ``declined`` counts challengers that were behind the best on the cases
    seen at some rung but not surely worse (the bound was too wide), so they
    were scored further; ``halfwidth`` is the Hoeffding half-width at the
    first rung, to show how wide the bound was.
    """

    dropped: int = 0
    declined: int = 0
    first_rung: int = 0
    halfwidth: float | None = None

    @property
    def note(self) -> str | None:
        """A sentence for the round's record, or ``None`` when nothing was decided."""
        if self.dropped == 0 and self.declined == 0:
            return None
        parts = []
        if self.dropped:
            parts.append(f"dropped {self.dropped} challenger(s) surely worse")
        if self.declined:
            width = f" (bound +-{self.halfwidth:.2f} at {self.first_rung} cases)"
            parts.append(
                f"declined to eliminate {self.declined} challenger(s) behind but not surely "
                f"worse{width if self.halfwidth is not None else ''}"
            )
        return "racing " + "; ".join(parts)


def _cannot_win(challenger: Variant, best_score: float, remaining: int) -> bool:
    scored = [s for s in challenger.scores.values() if s is not None]
    denominator = len(scored) + remaining
    if denominator == 0:
        return True
    return (math.fsum(scored) + remaining) / denominator <= best_score


async def race(
    engine: Engine,
    challengers: Sequence[Variant],
    incumbent: Variant,
    order: Sequence[int],
    cases: Sequence[TestCase],
    *,
    bound: RacingBound = "hoeffding",
    min_cases: int = MIN_RACE_CASES,
) -> RaceSummary:
    """Race ``challengers`` against ``incumbent`` (scored on every case) in place.

    Dropped challengers get ``VariantStatus.DROPPED``; the others end scored on
    every case the budget allowed.
    """
    best_score = incumbent.mean() or 0.0
    alive = list(challengers)
    done = 0
    dropped = 0
    declined: set[int] = set()
    sizes = rung_sizes(len(order))
    first = sizes[0] if sizes else 0
    for size in sizes:
        if not alive or engine.budget.stop_reason is not None:
            break
        rung = order[done:size]
        await asyncio.gather(*(engine.score(v, rung, cases) for v in alive))
        done = size
        if size == len(order):
            break
        seen = order[:size]
        survivors = []
        for variant in alive:
            diffs = paired_differences(variant, incumbent, seen)
            if _cannot_win(variant, best_score, len(order) - size) or surely_worse(
                diffs, bound=bound, min_cases=min_cases
            ):
                variant.status = VariantStatus.DROPPED
                dropped += 1
                continue
            if diffs and math.fsum(diffs) < 0:
                declined.add(variant.id)
            survivors.append(variant)
        alive = survivors
    return RaceSummary(
        dropped=dropped,
        declined=len(declined),
        first_rung=first,
        halfwidth=hoeffding_halfwidth(first) if first else None,
    )
