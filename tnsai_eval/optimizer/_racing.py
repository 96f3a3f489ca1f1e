"""Racing: score challengers on growing slices of the cases; drop only the surely worse.

The rule, exactly. The cases are put in one seeded order, shared by every
variant and the current best (so comparisons are paired: same cases). Rungs
start at ``MIN_RACE_CASES`` cases (all of them when there are fewer) and grow
by half (8, 12, 18, 27, 41, 62, ... cases seen) until they reach ``n``. At
each rung every surviving challenger is scored on the cases of the rung it
has not seen yet, case by case across the challengers (so a budget that runs
out mid-rung leaves every challenger with evidence on the same cases); then,
before the next rung, a challenger is dropped only when

1. it cannot win even by scoring 1.0 on every case still to come: its best
   possible final mean is below the current best's score (a certainty, not
   an estimate; one that could still tie is kept, although only a strictly
   higher score replaces the best, so that no rule ever drops a tie); or
2. a paired one-sided test over the cases seen so far that both scored says
   it is worse than the best (``surely_worse``). The error rate, ``alpha`` =
   0.05 per challenger and round, is spent evenly over the rungs where the
   test is made (every rung but the last: Bonferroni), so looking again
   after every rung does not make a false drop more likely than 5%. The test
   (``racing_bound``):

   - ``"sign"``: the exact sign test (``_util.stats.sign_test``) on the
     cases where the two differ. For 0/1 scores (label accuracy) this is
     McNemar's test: only the cases that flipped say which prompt is better,
     so a challenger behind on 8 of 8 flipped cases is dropped however many
     cases tied;
   - ``"t"``: the upper one-sided Student's t bound on the mean of the
     differences (an approximation for continuous scores);
   - ``"hoeffding"``: the distribution-free Hoeffding bound (valid for any
     scores, but wide: about +-0.5 at 40 cases);
   - ``"auto"`` (the default): the sign test while every difference is
     -1, 0 or +1 (0/1 scores; the mean difference is then the share of
     flips one way minus the other, which is what the sign test tests),
     else ``"t"``.

A tie is never a drop (no flips: p = 1; a mean difference of zero is inside
every bound), nor is anything decided before ``MIN_RACE_CASES`` paired cases,
nor a challenger that is behind by less than the test can tell: racing then
says it declined to eliminate (``RoundRecord.racing_note``) and costs what
exhaustive search costs. Survivors of the last rung have been scored on
every case and compete for "best" exactly as in exhaustive search.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tnsai_eval._util.stats import hoeffding_halfwidth, sign_test, t_critical
from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._engine import Engine, Variant
from tnsai_eval.optimizer._records import VariantStatus

__all__ = [
    "MIN_RACE_CASES",
    "RACING_ALPHA",
    "RACING_BOUNDS",
    "RaceSummary",
    "RacingBound",
    "paired_differences",
    "race",
    "rung_sizes",
    "surely_worse",
]

#: No challenger is dropped on a test over fewer paired cases than this, and
#: the first rung has this many cases.
MIN_RACE_CASES = 8
#: The chance racing drops a challenger that is not worse, per challenger and round.
RACING_ALPHA = 0.05
RacingBound = Literal["auto", "sign", "t", "hoeffding"]
RACING_BOUNDS: tuple[RacingBound, ...] = ("auto", "sign", "t", "hoeffding")
# Each rung sees this many times the cases of the one before: more looks find
# a clear loser sooner, but each look then gets a smaller share of alpha.
_GROWTH = 1.5


def rung_sizes(n: int, *, min_cases: int = MIN_RACE_CASES) -> list[int]:
    """How many cases each rung has seen in total, e.g. ``[8, 12, 18, 20]`` for 20.

    >>> rung_sizes(20), rung_sizes(70), rung_sizes(5)
    ([8, 12, 18, 20], [8, 12, 18, 27, 41, 62, 70], [5])
    """
    if n <= 0:
        return []
    sizes = [min(n, max(1, min_cases))]
    while sizes[-1] < n:
        sizes.append(min(n, math.ceil(sizes[-1] * _GROWTH)))
    return sizes


def paired_differences(challenger: Variant, incumbent: Variant, seen: Sequence[int]) -> list[float]:
    """``challenger - incumbent`` on each case of ``seen`` that both scored."""
    diffs = []
    for case in seen:
        mine, theirs = challenger.scores.get(case), incumbent.scores.get(case)
        if mine is not None and theirs is not None:
            diffs.append(mine - theirs)
    return diffs


def _test_of(diffs: Sequence[float], bound: RacingBound) -> RacingBound:
    if bound != "auto":
        return bound
    return "sign" if all(d in (-1.0, 0.0, 1.0) for d in diffs) else "t"


def surely_worse(
    diffs: Sequence[float],
    *,
    bound: RacingBound = "auto",
    min_cases: int = MIN_RACE_CASES,
    alpha: float = RACING_ALPHA,
) -> bool:
    """Whether a one-sided level-``alpha`` test says the mean paired difference is below 0.

    Never on fewer than ``min_cases`` differences, never on a tie. ``alpha``
    is the level of this one look (``race`` divides its 0.05 over its looks).

    >>> surely_worse([0.0] * 50), surely_worse([-1.0] * 7), surely_worse([-1.0] * 8)
    (False, False, True)
    >>> behind = [-1.0] * 5 + [0.0] * 15  # behind on 5 flips of 20 cases, none ahead
    >>> [surely_worse(behind, bound=b) for b in ("sign", "t", "hoeffding")]
    [True, True, False]
    >>> surely_worse(behind, alpha=0.05 / 6)  # one of six looks: 2**-5 is not enough
    False
    """
    n = len(diffs)
    if n < max(1, min_cases):
        return False
    test = _test_of(diffs, bound)
    if test == "sign":
        better = sum(1 for d in diffs if d > 0)
        worse = sum(1 for d in diffs if d < 0)
        return worse > better and sign_test(better, worse, alternative="less") <= alpha
    mean = math.fsum(diffs) / n
    if test == "hoeffding":
        # hoeffding_halfwidth is two-sided: delta = 2 alpha puts alpha on each side.
        return mean + hoeffding_halfwidth(n, delta=min(0.999, 2 * alpha)) < 0.0
    if n < 2:
        return False
    variance = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    return mean + t_critical(alpha, n - 1) * math.sqrt(variance / n) < 0.0


@dataclass(frozen=True, slots=True)
class RaceSummary:
    """What one race did: challengers dropped (and why), and those it declined to drop.

    ``dropped_by_test`` were surely worse by the paired test;
    ``dropped_hopeless`` could no longer win even by scoring 1.0 on every
    remaining case. ``declined`` counts challengers that were behind the best
    on the cases seen at some rung but not surely worse, so they were scored
    further. ``looks`` is the number of rungs the test was made at (each at
    level ``RACING_ALPHA / looks``), from ``first_rung`` cases on.
    """

    dropped_by_test: int = 0
    dropped_hopeless: int = 0
    declined: int = 0
    first_rung: int = 0
    looks: int = 0
    bound: RacingBound = "auto"

    @property
    def dropped(self) -> int:
        """All challengers dropped."""
        return self.dropped_by_test + self.dropped_hopeless

    @property
    def note(self) -> str | None:
        """A sentence for the round's record, or ``None`` when nothing was decided.

        >>> summary = RaceSummary(2, 1, 1, first_rung=8, looks=6, bound="sign")
        >>> print(summary.note)  # doctest: +NORMALIZE_WHITESPACE
        racing dropped 3 challenger(s) (2 surely worse by the paired sign test, 1 that could no
        longer win); declined to eliminate 1 challenger(s) behind but not surely worse (sign
        test, alpha 0.05 over 6 look(s) from 8 cases)
        """
        if self.dropped == 0 and self.declined == 0:
            return None
        parts = []
        if self.dropped:
            why = []
            if self.dropped_by_test:
                why.append(f"{self.dropped_by_test} surely worse by the paired {self.bound} test")
            if self.dropped_hopeless:
                why.append(f"{self.dropped_hopeless} that could no longer win")
            parts.append(f"dropped {self.dropped} challenger(s) ({', '.join(why)})")
        if self.declined:
            parts.append(
                f"declined to eliminate {self.declined} challenger(s) behind but not surely "
                f"worse ({self.bound} test, alpha {RACING_ALPHA:g} over {self.looks} look(s) "
                f"from {self.first_rung} cases)"
            )
        return "racing " + "; ".join(parts)


def _cannot_win(challenger: Variant, best_score: float, remaining: int) -> bool:
    scored = [s for s in challenger.scores.values() if s is not None]
    denominator = len(scored) + remaining
    if denominator == 0:
        return True
    return (math.fsum(scored) + remaining) / denominator < best_score


async def race(
    engine: Engine,
    challengers: Sequence[Variant],
    incumbent: Variant,
    order: Sequence[int],
    cases: Sequence[TestCase],
    *,
    bound: RacingBound = "auto",
    min_cases: int = MIN_RACE_CASES,
) -> RaceSummary:
    """Race ``challengers`` against ``incumbent`` (scored on every case) in place.

    Dropped challengers get ``VariantStatus.DROPPED``; the others end scored on
    every case the budget allowed.
    """
    best_score = incumbent.mean() or 0.0
    alive = list(challengers)
    done = 0
    by_test = hopeless = 0
    declined: set[int] = set()
    used: set[RacingBound] = set()
    sizes = rung_sizes(len(order), min_cases=min_cases)
    looks = max(1, len(sizes) - 1)
    for size in sizes:
        if not alive or engine.budget.stop_reason is not None:
            break
        rung = order[done:size]
        # Case by case across the challengers: tasks start in the order made.
        await asyncio.gather(*(engine.score_case(v, i, cases[i]) for i in rung for v in alive))
        done = size
        if size == len(order):
            break
        seen = order[:size]
        survivors = []
        for variant in alive:
            diffs = paired_differences(variant, incumbent, seen)
            if len(diffs) >= min_cases:
                used.add(_test_of(diffs, bound))
            if _cannot_win(variant, best_score, len(order) - size):
                variant.status = VariantStatus.DROPPED
                hopeless += 1
                continue
            if surely_worse(diffs, bound=bound, min_cases=min_cases, alpha=RACING_ALPHA / looks):
                variant.status = VariantStatus.DROPPED
                by_test += 1
                continue
            if diffs and math.fsum(diffs) < 0:
                declined.add(variant.id)
            survivors.append(variant)
        alive = survivors
    return RaceSummary(
        dropped_by_test=by_test,
        dropped_hopeless=hopeless,
        declined=len(declined),
        first_rung=sizes[0] if sizes else 0,
        looks=looks,
        bound=used.pop() if len(used) == 1 else bound,
    )
