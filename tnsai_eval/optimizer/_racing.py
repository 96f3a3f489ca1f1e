"""Racing: score challengers on growing slices of the cases, drop the hopeless early.

The rule, exactly. The cases are put in one seeded order, shared by every
variant and the current best (so comparisons are paired: same cases). Rung
sizes start at ``max(4, ceil(n / 4))`` cases (all of them when ``n`` is
smaller) and double until they reach ``n``. At each rung every surviving
challenger is scored on the cases of the rung it has not seen yet; then,
before the next rung, a challenger is dropped when

1. it cannot win even by scoring 1.0 on every case still to come: its best
   possible final mean is at most the current best's score; or
2. it is not ahead of the current best on the cases seen so far: the mean
   of the paired differences (challenger minus best, on the cases both have a
   score for) is zero or less, or it has no scored case at all. A tie drops
   the challenger: only a higher score can replace the best; or
3. it is not in the better half: of the ``k`` challengers that started the
   rung, only ``max(2, ceil(k / 2))`` go on, those with the largest paired
   difference (ties to the earlier variant). Two always reach the last rung
   when two qualify: on the benchmark, halving down to a single survivor
   picked the wrong one on small, noisy datasets (arithmetic) while keeping
   two found exhaustive search's best on every dataset and seed tried.

Survivors of the last rung have been scored on every case and compete for
"best" exactly as in exhaustive search. Rule 1 never drops a variant that
could win (when no call failed, rule 2 already covers it; it matters when
failed cases shrink a challenger's mean); rules 2 and 3 are the gamble that
saves calls, which ``bench/optimizer.py`` measures against exhaustive search.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._engine import Engine, Variant
from tnsai_eval.optimizer._records import VariantStatus

__all__ = ["MIN_RUNG_CASES", "paired_advantage", "race", "rung_sizes"]

MIN_RUNG_CASES = 4


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


def paired_advantage(challenger: Variant, incumbent: Variant, seen: Sequence[int]) -> float | None:
    """Mean of (challenger - incumbent) over the cases of ``seen`` both scored."""
    diffs = []
    for case in seen:
        mine, theirs = challenger.scores.get(case), incumbent.scores.get(case)
        if mine is not None and theirs is not None:
            diffs.append(mine - theirs)
    return math.fsum(diffs) / len(diffs) if diffs else None


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
) -> None:
    """Race ``challengers`` against ``incumbent`` (scored on every case) in place.

    Dropped challengers get ``VariantStatus.DROPPED``; the others end scored on
    every case the budget allowed.
    """
    best_score = incumbent.mean() or 0.0
    alive = list(challengers)
    done = 0
    for size in rung_sizes(len(order)):
        if not alive or engine.budget.stop_reason is not None:
            return
        rung = order[done:size]
        await asyncio.gather(*(engine.score(v, rung, cases) for v in alive))
        done = size
        if size == len(order):
            return
        seen = order[:size]
        advantages: dict[int, float] = {}
        for variant in alive:
            advantage = paired_advantage(variant, incumbent, seen)
            has_score = any(s is not None for s in variant.scores.values())
            if (
                _cannot_win(variant, best_score, len(order) - size)
                or not has_score
                or (advantage is not None and advantage <= 0)
            ):
                variant.status = VariantStatus.DROPPED
            else:
                advantages[variant.id] = advantage if advantage is not None else 0.0
        keep = max(2, math.ceil(len(alive) / 2))
        ranked = sorted(
            (v for v in alive if v.id in advantages), key=lambda v: (-advantages[v.id], v.id)
        )
        for variant in ranked[keep:]:
            variant.status = VariantStatus.DROPPED
        alive = ranked[:keep]
