"""Racing: score every variant on growing slices of the cases; drop only the surely worse.

The rule, exactly. The cases are put in one seeded order, shared by every
racer (so comparisons are paired: same cases). The racers are the round's
challengers and its incumbent, the best prompt so far, which races like the
others: in the first round that is the starting prompt, which ``Run`` scores
only on the first rung's cases before the round (more only while it
survives; on every case when a demo search needs its correct replies as the
bootstrapped demos' pool); in later rounds the incumbent was already scored
on every case, so it costs nothing more, but it can be dropped too. Rungs start at
``MIN_RACE_CASES`` cases (all of them when there are fewer) and grow by half
(8, 12, 18, 27, 41, 62, ... cases seen) until they reach ``n``. At each rung
every surviving racer is scored on the cases of the rung it has not seen
yet, case by case across the racers (so a budget that runs out mid-rung
leaves every racer with evidence on the same cases); then, before the next
rung, racers are dropped in two steps, and a third decides what the
incumbent is scored on next:

1. **Cannot win** (a certainty, not an estimate). A racer's *best possible*
   final mean is its mean with 1.0 on every case it has not been scored on;
   its *guaranteed* final mean is its mean with 0.0 on those cases (for a
   racer scored on every case, its mean; for a partial one, its sum over
   ``n``; failed cases are left out of both, as of every mean). A racer whose
   best possible final mean is below the highest guaranteed final mean among
   the survivors is dropped. One that could still tie is kept, and the racer
   holding that highest guaranteed mean is never dropped by this step.
2. **Surely worse than the leader.** The *leader* is the surviving racer
   with the highest mean on the cases seen so far (ties: the incumbent, then
   the earlier variant). Every other survivor is compared with the leader by
   a paired one-sided test over the cases of the rung that both scored
   (``surely_worse``), and dropped when the test says it is worse. The leader
   is never dropped at that rung. The error rate, ``alpha`` = 0.05 per
   comparison of a racer with the leader over a round, covers every rung
   where the test is made (every rung but the last), so looking again after
   every rung does not make a false drop against a given leader more likely
   than 5%. Each look gets the same level, computed for the rung schedule:
   the looks reuse each other's cases, so their tests are correlated and a
   false drop at one look mostly comes with one at the next, and
   Bonferroni's split (0.05 / 6 = 0.0083 for the six looks of 70 cases)
   gives away power. The sign test's level is exact
   (``_util.stats.sequential_sign_level``: 0.0244 for those six looks, the
   largest of its discrete p-values at which a racer as good as the leader
   is dropped at most 5% of the time, whatever share of the cases flip);
   the t test's is Pocock's (``_util.stats.sequential_level``, asymptotic:
   0.014). Hoeffding's bound, the distribution-free option, keeps
   Bonferroni's split, which needs no approximation. The leader is chosen
   from the same data, so with ``k`` racers the chance that a round drops the one whose
   mean over every case is highest is at most ``(k - 1)`` times 5% (a union
   bound over who leads; most rounds have one clear leader). The test
   (``racing_bound``):

   - ``"sign"``: the exact sign test (``_util.stats.sign_test``) on the
     cases where the two differ. For 0/1 scores (label accuracy) this is
     McNemar's test: only the cases that flipped say which prompt is better,
     so a racer behind on 8 of 8 flipped cases is dropped however many
     cases tied;
   - ``"t"``: the upper one-sided Student's t bound on the mean of the
     differences (an approximation for continuous scores);
   - ``"hoeffding"``: the distribution-free Hoeffding bound (valid for any
     scores, but wide: about +-0.5 at 40 cases);
   - ``"auto"`` (the default): the sign test while every difference is
     -1, 0 or +1 (0/1 scores; the mean difference is then the share of
     flips one way minus the other, which is what the sign test tests),
     else ``"t"``.

3. **A leading incumbent is completed.** The first time the incumbent
   leads alone (its mean on the cases seen is above every other survivor's),
   it is scored on every case it has not seen, with the next rung: it is then
   the likeliest winner, which is scored on every case in the end anyway,
   and its complete mean is the strongest "cannot win" bound for the others
   (a partial racer's guaranteed mean, its sum over ``n``, is weak until late).
   Scoring a racer on more cases changes no bound's validity, only when it
   bites.

A tie is never a drop (no flips: p = 1; a mean difference of zero is inside
every bound), nor is anything decided by the test before ``MIN_RACE_CASES``
paired cases, nor a racer that is behind by less than the test can tell:
racing then says it declined to eliminate (``RoundRecord.racing_note``) and
costs what exhaustive search costs. Survivors of the last rung have been
scored on every case. Choosing the best (``Run``): a challenger replaces the
incumbent only with a strictly higher score over every case, as in
exhaustive search; when the incumbent itself was dropped (shown worse than a
survivor, or unable to win), the best is the survivor scored on every case
with the highest mean (ties: the earlier variant), or, when the budget left
none, still the incumbent. A starting prompt dropped in the first round keeps
its mean over the cases it was scored on as its training score
(``OptimizationResult.initial_cases`` says how many, ``training_change``
shows it); held-out validation still scores it on every held-out case.

**Halving** (``search="halving"``, successive halving; ``halve``) is the same
race with a different step 2 and no step 3: rungs double (8, 16, 32, ... cases), and
after each one only the upper half of the racers by mean on the cases seen
(rounded up; ties: the incumbent, then the earlier variant) goes on, until
one is left, which is then scored on every case. An incumbent already
scored on every case costs nothing more and is kept outside the ranking
(the survivor must beat its complete score, as in exhaustive search). It
makes no test: its cost is known in advance (``k`` racers cost ``8k`` on
the first rung and about ``4k`` on each of the next ``log2(k)``, as half as
many racers see twice the cases, plus the survivor's remaining cases) and
it can drop the best variant on an unlucky early rung, which racing's tests
guard against; the held-out score and its paired test against the
starting prompt are what tell whether its pick is better. Step 1 (cannot
win) still applies.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tnsai_eval._util.stats import (
    hoeffding_halfwidth,
    sequential_level,
    sequential_sign_level,
    sign_test,
    t_critical,
)
from tnsai_eval.evaluation import Engine, Variant
from tnsai_eval.optimizer._records import VariantStatus
from tnsai_eval.scoring import TestCase

__all__ = [
    "MIN_RACE_CASES",
    "RACING_ALPHA",
    "RACING_BOUNDS",
    "RaceSummary",
    "RacingBound",
    "final_bounds",
    "halve",
    "look_level",
    "paired_differences",
    "race",
    "rung_sizes",
    "savings_report",
    "surely_worse",
]

#: No racer is dropped on a test over fewer paired cases than this, and
#: the first rung has this many cases.
MIN_RACE_CASES = 8
#: The chance racing drops a racer that is not worse than the leader, per racer and round.
RACING_ALPHA = 0.05
RacingBound = Literal["auto", "sign", "t", "hoeffding"]
RACING_BOUNDS: tuple[RacingBound, ...] = ("auto", "sign", "t", "hoeffding")
# Each rung sees this many times the cases of the one before: more looks find
# a clear loser sooner, but each look then gets a smaller share of alpha.
_GROWTH = 1.5


def rung_sizes(n: int, *, min_cases: int = MIN_RACE_CASES, growth: float = _GROWTH) -> list[int]:
    """How many cases each rung has seen in total, e.g. ``[8, 12, 18, 20]`` for 20.

    Halving's rungs double (``growth=2``).

    >>> rung_sizes(20), rung_sizes(70), rung_sizes(5)
    ([8, 12, 18, 20], [8, 12, 18, 27, 41, 62, 70], [5])
    >>> rung_sizes(70, growth=2)
    [8, 16, 32, 64, 70]
    """
    if n <= 0:
        return []
    sizes = [min(n, max(1, min_cases))]
    while sizes[-1] < n:
        sizes.append(min(n, math.ceil(sizes[-1] * growth)))
    return sizes


def look_level(looks: Sequence[int], test: RacingBound) -> float:
    """The level of each of ``test``'s looks after ``looks`` cases, ``RACING_ALPHA`` for all.

    The sign test gets its exact level for the schedule, the t test
    Pocock's; Hoeffding's bound, which makes no approximation, Bonferroni's
    ``RACING_ALPHA / len(looks)``. ``"auto"`` means the sign test here.

    >>> looks = [8, 12, 18, 27, 41, 62]
    >>> [round(look_level(looks, test), 4) for test in ("sign", "t", "hoeffding")]
    [0.0244, 0.014, 0.0083]
    """
    if len(looks) <= 1:
        return RACING_ALPHA
    if test == "hoeffding":
        return RACING_ALPHA / len(looks)
    if test == "t":
        return sequential_level(tuple(looks), RACING_ALPHA)
    return sequential_sign_level(tuple(looks), RACING_ALPHA)


def paired_differences(challenger: Variant, incumbent: Variant, seen: Sequence[int]) -> list[float]:
    """``challenger - incumbent`` on each case of ``seen`` that both scored."""
    pairs = ((challenger.scores.get(case), incumbent.scores.get(case)) for case in seen)
    return [mine - theirs for mine, theirs in pairs if mine is not None and theirs is not None]


def final_bounds(variant: Variant, n: int) -> tuple[float, float]:
    """The lowest and highest mean ``variant`` can end with over ``n`` cases.

    Guaranteed: 0.0 on every case it has not been scored on; best possible:
    1.0 on each. Failed cases are left out, as of every mean. For a variant
    scored on every case both are its mean.

    >>> from tnsai_eval.evaluation import PromptVariant
    >>> v = Variant(1, 1, "concise", PromptVariant("P"), 0, scores={0: 1.0, 1: 0.0, 2: None})
    >>> final_bounds(v, 5)  # 1.0 from 2 scored cases; 2 cases to come
    (0.25, 0.75)
    >>> final_bounds(v, 3)
    (0.5, 0.5)
    """
    values = [s for s in variant.scores.values() if s is not None]
    remaining = max(0, n - variant.attempted)
    denominator = len(values) + remaining
    if denominator == 0:
        return 0.0, 0.0  # every case failed: a mean of 0.0 (``Variant.mean``)
    total = math.fsum(values)
    return total / denominator, (total + remaining) / denominator


def _seen_mean(variant: Variant, seen: Sequence[int]) -> float:
    values = [s for case in seen if (s := variant.scores.get(case)) is not None]
    return math.fsum(values) / len(values) if values else 0.0


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
    is the level of this one look (``race`` spreads its 0.05 over its looks:
    ``look_level``).

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


def _who(count: int, incumbent: str | None) -> str:
    """``count`` racers, the incumbent (named ``incumbent``) among them when it is not None."""
    if incumbent is None:
        return f"{count} challenger(s)"
    if count == 1:
        return incumbent
    return f"{incumbent} and {count - 1} challenger(s)"


@dataclass(frozen=True, slots=True)
class RaceSummary:
    """What one race did: racers dropped (and why), and those it declined to drop.

    ``dropped_by_test`` were surely worse than the leader by the paired test;
    ``dropped_hopeless`` could no longer win even by scoring 1.0 on every
    remaining case; ``dropped_by_rank`` (halving only) were in the lower half
    of a rung. ``declined`` counts racers that were behind the leader
    on the cases seen at some rung but not surely worse, and were never
    dropped: racing scored them to the end. Each count includes the
    incumbent when ``dropped_incumbent`` / ``declined_incumbent`` names it
    (e.g. "the starting prompt"). ``looks`` is the number of rungs the test
    was made at, from ``first_rung`` cases on, and ``level`` the level of
    each look (``RACING_ALPHA`` spread over the looks: module docstring) of
    the test ``bound`` names; when ``bound`` is ``"auto"`` both the sign and
    the t test were made, and ``level`` is the sign test's, ``t_level`` the
    t test's.
    """

    dropped_by_test: int = 0
    dropped_hopeless: int = 0
    declined: int = 0
    first_rung: int = 0
    looks: int = 0
    level: float = RACING_ALPHA
    bound: RacingBound = "auto"
    t_level: float | None = None
    dropped_by_rank: int = 0
    halving: bool = False
    dropped_incumbent: str | None = None
    declined_incumbent: str | None = None
    #: Case scorings exhaustive search would have made in this race and racing did not.
    saved: int = 0
    #: Racers dropped at the last look (the rung before every case is seen), saving least.
    dropped_last: int = 0

    @property
    def dropped(self) -> int:
        """All racers dropped, the incumbent included."""
        return self.dropped_by_test + self.dropped_hopeless + self.dropped_by_rank

    @property
    def note(self) -> str | None:
        """A sentence for the round's record, or ``None`` when nothing was decided.

        >>> summary = RaceSummary(2, 1, 1, first_rung=8, looks=6, level=0.0244, bound="sign")
        >>> print(summary.note)  # doctest: +NORMALIZE_WHITESPACE
        racing dropped 3 challenger(s) (2 surely worse than the leader by the paired sign
        test, 1 that could no longer win); declined to eliminate 1 challenger(s) behind
        the leader but not surely worse (sign test, alpha 0.05 over 6 look(s) from 8 cases,
        0.0244 each)
        >>> print(RaceSummary(2, 0, first_rung=8, looks=6, bound="t",
        ...                   dropped_incumbent="the starting prompt").note)
        racing dropped the starting prompt and 1 challenger(s) (2 surely worse than the leader by the paired t test)
        >>> print(RaceSummary(1, 0, first_rung=8, looks=1, bound="auto").note)
        racing dropped 1 challenger(s) (1 surely worse than the leader by the paired sign or t test)
        >>> print(RaceSummary(0, 1, first_rung=8, looks=3, dropped_by_rank=2, halving=True).note)
        halving dropped 3 challenger(s) (2 in the lower half of a rung, 1 that could no longer win); no test, so a dropped variant may have been the best
        >>> print(RaceSummary(0, 0, 1, first_rung=8, looks=6, level=0.0244, t_level=0.014).note)
        ... # doctest: +NORMALIZE_WHITESPACE
        racing declined to eliminate 1 challenger(s) behind the leader but not surely worse
        (sign or t test, alpha 0.05 over 6 look(s) from 8 cases, 0.0244 each for the sign
        test, 0.014 for t)
        """  # noqa: E501
        if self.dropped == 0 and self.declined == 0:
            return None
        # "auto" here means both tests were made (0/1 differences against one
        # racer, others against another): name them, not the option.
        test = "sign or t" if self.bound == "auto" else self.bound
        parts = []
        if self.dropped:
            why = []
            if self.dropped_by_test:
                why.append(
                    f"{self.dropped_by_test} surely worse than the leader by the paired {test} test"
                )
            if self.dropped_by_rank:
                why.append(f"{self.dropped_by_rank} in the lower half of a rung")
            if self.dropped_hopeless:
                why.append(f"{self.dropped_hopeless} that could no longer win")
            parts.append(f"dropped {_who(self.dropped, self.dropped_incumbent)} ({', '.join(why)})")
            if self.dropped_by_rank:
                parts.append("no test, so a dropped variant may have been the best")
        if self.declined:
            each = f"{self.level:.3g} each"
            if self.bound == "auto" and self.t_level is not None:
                each += f" for the sign test, {self.t_level:.3g} for t"
            parts.append(
                f"declined to eliminate {_who(self.declined, self.declined_incumbent)} behind "
                f"the leader but not surely worse ({test} test, alpha "
                f"{RACING_ALPHA:g} over {self.looks} look(s) from {self.first_rung} cases, "
                f"{each})"
            )
        return ("halving " if self.halving else "racing ") + "; ".join(parts)


def _drop_hopeless(alive: Sequence[Variant], n: int) -> tuple[list[Variant], int]:
    """Step 1, cannot win: drop each racer whose best possible final mean is below the floor.

    The floor is the highest guaranteed final mean among ``alive``; returns
    the racers kept and how many were dropped.
    """
    floor = max(final_bounds(v, n)[0] for v in alive)
    kept = []
    for variant in alive:
        if final_bounds(variant, n)[1] < floor:
            variant.status = VariantStatus.DROPPED
        else:
            kept.append(variant)
    return kept, len(alive) - len(kept)


def _halve(
    racers: Sequence[Variant], incumbent: Variant, seen: Sequence[int], n: int
) -> tuple[list[Variant], int]:
    """Halving's step 2: the upper half of ``racers`` by mean on ``seen`` (rounded up).

    Ties rank the incumbent first, then the earlier variant. An incumbent
    scored on every case costs nothing more and is kept outside the ranking:
    the round's survivor must then beat its complete score to replace it.
    """
    complete = incumbent.attempted >= n
    ranked = sorted(
        (v for v in racers if not (complete and v is incumbent)),
        key=lambda v: (-_seen_mean(v, seen), v is not incumbent, v.id),
    )
    lower = ranked[math.ceil(len(ranked) / 2) :]
    for variant in lower:
        variant.status = VariantStatus.DROPPED
    # In the order raced, so that scoring stays case by case across the racers.
    return [v for v in racers if v.status is not VariantStatus.DROPPED], len(lower)


async def race(
    engine: Engine,
    challengers: Sequence[Variant],
    incumbent: Variant,
    order: Sequence[int],
    cases: Sequence[TestCase],
    *,
    bound: RacingBound = "auto",
    min_cases: int = MIN_RACE_CASES,
    incumbent_name: str = "the starting prompt",
) -> RaceSummary:
    """Race ``challengers`` and ``incumbent`` in place (module docstring: the rule).

    ``incumbent`` may be scored on some or every case already; no case is
    scored twice. Dropped racers, the incumbent included, get
    ``VariantStatus.DROPPED``; the others end scored on every case the budget
    allowed. ``incumbent_name`` names the incumbent in the summary's note.
    Halving, which drops by rank instead of by test, is ``halve``.
    """
    n = len(order)
    alive = [incumbent, *challengers]
    done = by_test = hopeless = dropped_last = 0
    declined: set[int] = set()
    used: set[RacingBound] = set()
    sizes = rung_sizes(n, min_cases=min_cases, growth=_GROWTH)
    looks = max(1, len(sizes) - 1)  # every rung but the last (module docstring, step 2)
    # Set once the incumbent leads alone: it is then scored on every remaining case.
    finish_incumbent = False
    for size in sizes:
        if engine.budget.stop_reason is not None:
            break
        rung = order[done:size]
        # Variants compare by identity here (their dataclass equality compares scores).
        racing_incumbent = any(v is incumbent for v in alive)
        rest = order[size:] if finish_incumbent and racing_incumbent else []
        # Case by case across the racers (tasks start in the order made), then
        # the rest of a leading incumbent's cases.
        await asyncio.gather(
            *(engine.score_case(v, i, cases) for i in rung for v in alive if i not in v.scores),
            *(engine.score_case(incumbent, i, cases) for i in rest if i not in incumbent.scores),
        )
        done = size
        if size == n:
            break
        before_look = sum(1 for v in alive if v.status is not VariantStatus.DROPPED)
        # 1. Cannot win: a certainty, so it goes first and needs no test.
        kept, dropped_now = _drop_hopeless(alive, n)
        hopeless += dropped_now
        seen = order[:size]
        last_look = size == sizes[-2]
        # 2. Surely worse than the leader on the cases seen so far.
        leader = max(kept, key=lambda v: (_seen_mean(v, seen), v is incumbent, -v.id))
        alive = []
        for variant in kept:
            if variant is leader:
                alive.append(variant)
                continue
            diffs = paired_differences(variant, leader, seen)
            if len(diffs) >= min_cases:
                used.add(_test_of(diffs, bound))
            level = look_level(sizes[:-1], _test_of(diffs, bound))
            if surely_worse(diffs, bound=bound, min_cases=min_cases, alpha=level):
                variant.status = VariantStatus.DROPPED
                by_test += 1
                continue
            if diffs and math.fsum(diffs) < 0:
                declined.add(variant.id)
            alive.append(variant)
        dropped_last += (before_look - len(alive)) if last_look else 0
        ahead = _seen_mean(incumbent, seen)
        finish_incumbent = finish_incumbent or (
            any(v is incumbent for v in alive)
            and all(_seen_mean(v, seen) < ahead for v in alive if v is not incumbent)
        )
    dropped = incumbent.status is VariantStatus.DROPPED
    # Declined: behind at some rung, yet never dropped, so scored to the end.
    declined = {v.id for v in alive if v.id in declined}
    named = next(iter(used)) if len(used) == 1 else bound
    return RaceSummary(
        dropped_by_test=by_test,
        dropped_hopeless=hopeless,
        declined=len(declined),
        first_rung=sizes[0] if sizes else 0,
        looks=looks,
        level=look_level(sizes[:-1], named),
        bound=named,
        t_level=look_level(sizes[:-1], "t") if len(used) > 1 else None,
        dropped_incumbent=incumbent_name if dropped else None,
        declined_incumbent=incumbent_name if incumbent.id in declined else None,
        saved=sum(n - v.attempted for v in (incumbent, *challengers) if v.attempted < n),
        dropped_last=dropped_last,
    )


async def halve(
    engine: Engine,
    challengers: Sequence[Variant],
    incumbent: Variant,
    order: Sequence[int],
    cases: Sequence[TestCase],
    *,
    min_cases: int = MIN_RACE_CASES,
    incumbent_name: str = "the starting prompt",
) -> RaceSummary:
    """Halve ``challengers`` and ``incumbent`` in place (module docstring, "Halving").

    The rungs double; after each, step 1 (cannot win) and then the upper half
    by mean on the cases seen (``_halve``) go on. No test is made, so no
    level is computed (the sign test's costs a dynamic program the first
    time a schedule is seen). Statuses as in ``race``.
    """
    n = len(order)
    alive = [incumbent, *challengers]
    done = 0
    hopeless = by_rank = dropped_last = 0
    sizes = rung_sizes(n, min_cases=min_cases, growth=2.0)
    for size in sizes:
        if engine.budget.stop_reason is not None:
            break
        # Case by case across the racers (tasks start in the order made).
        rung = order[done:size]
        await asyncio.gather(
            *(engine.score_case(v, i, cases) for i in rung for v in alive if i not in v.scores)
        )
        done = size
        if size == n:
            break
        before_look = len(alive)
        kept, dropped_now = _drop_hopeless(alive, n)
        hopeless += dropped_now
        alive, dropped_now = _halve(kept, incumbent, order[:size], n)
        by_rank += dropped_now
        dropped_last += (before_look - len(alive)) if size == sizes[-2] else 0
    return RaceSummary(
        dropped_hopeless=hopeless,
        dropped_by_rank=by_rank,
        halving=True,
        first_rung=sizes[0] if sizes else 0,
        looks=max(1, len(sizes) - 1),
        dropped_incumbent=(incumbent_name if incumbent.status is VariantStatus.DROPPED else None),
        saved=sum(n - v.attempted for v in (incumbent, *challengers) if v.attempted < n),
        dropped_last=dropped_last,
    )


def savings_report(
    search: str, saved: int, calls: int, *, dropped: int, dropped_last: int, complete: bool
) -> str:
    """What racing (or halving) saved over exhaustive search, in a sentence.

    ``saved`` counts the case scorings exhaustive search would have made and
    this run did not (one request each, less what the run's cache would have
    answered), ``calls`` the requests the run made, ``dropped`` the racers it
    dropped and ``dropped_last`` those dropped at the last look (the rung
    before every case is seen), which save the least. ``complete`` is False
    when the budget or a stop cut the run short: the cases left unscored
    then are no saving.

    >>> savings_report("racing", 4, 161, dropped=2, dropped_last=2, complete=True)
    'racing saved 4 of 165 requests: every drop at the last look'
    >>> savings_report("racing", 0, 92, dropped=0, dropped_last=0, complete=True)
    'racing saved nothing (92 requests, as exhaustive search): it dropped no variant'
    >>> savings_report("halving", 60, 100, dropped=3, dropped_last=1, complete=True)
    'halving saved 60 of 160 requests (38%)'
    """
    if not complete:
        return f"{search} was cut short (budget or stop): no saving to report"
    if saved == 0:
        why = "it dropped no variant" if dropped == 0 else "every drop came after its last case"
        return f"{search} saved nothing ({calls} requests, as exhaustive search): {why}"
    total = calls + saved
    line = f"{search} saved {saved} of {total} requests"
    if dropped and dropped_last == dropped:
        return f"{line}: every drop at the last look"
    return f"{line} ({saved / total:.0%})"
