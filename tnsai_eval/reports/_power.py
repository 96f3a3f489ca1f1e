r"""What a suite can see: two exact figures for the one-sided sign test.

The paired gate calls a drop a regression only when the flipped cases lean
towards "broken" beyond what chance explains (the exact one-sided sign test
at ``alpha``). On a small suite that test often cannot fire at all, and the
honest report of a drop it did not call is not "no regression" but "this
suite is too small to tell". Two figures say how small:

* ``min_broken``: given the ``m`` flips observed, the smallest number of
  broken ones (the rest fixed) that the test would call a regression;
  ``None`` when even ``m`` broken of ``m`` would not (``2**-m >= alpha``).
* ``cases_needed``: how many common cases the suite would need for the
  *observed* broken and fixed rates to reach significance. At ``N`` cases the
  expected counts are ``broken * N / common`` and ``fixed * N / common``,
  each rounded to the nearest whole case (halves up); ``cases_needed`` is the
  smallest ``N >= common`` whose counts give ``p < alpha``. ``None`` when it is
  not estimable: no flips, or no more broken than fixed cases (then no size
  ever reaches significance).

>>> d = detectability(broken=3, fixed=0, common=12, alpha=0.05)
>>> d.min_broken is None, d.min_flips, d.cases_needed
(True, 5, 18)
>>> print(d.describe().replace("; ", ";\n"))
3 flip(s): no split of 3 flips is significant at alpha 0.05 (it takes at least 5 flips);
at the observed rates (3 broken, 0 fixed of 12) the suite would need 18 common cases
"""

from __future__ import annotations

from dataclasses import dataclass

from tnsai_eval._util.stats import sign_test

__all__ = ["MAX_CASES", "Detectability", "detectability"]

#: The search for ``cases_needed`` stops here: a suite that would need more
#: cases than this is reported as needing "more than" it.
MAX_CASES = 100_000
# Exact tails of the sign test cost O(flips) big-integer terms each; beyond
# this many flips the search stops and reports "more than".
_MAX_FLIPS = 4_000


@dataclass(frozen=True, slots=True)
class Detectability:
    """The two figures for one score under the paired gate (see the module docstring)."""

    broken: int
    fixed: int
    common: int
    alpha: float
    #: Smallest broken count, of the observed flips, that the test would call a regression.
    min_broken: int | None
    #: Fewest flips for which any split can be significant (all of them broken).
    min_flips: int
    #: Common cases needed for the observed rates to reach significance.
    cases_needed: int | None
    #: True when the search gave up: the suite would need more than ``cases_needed``.
    beyond: bool = False

    @property
    def flips(self) -> int:
        return self.broken + self.fixed

    def describe(self) -> str:
        """The two figures in one sentence."""
        m = self.flips
        if m == 0:
            return (
                "no flipped cases: what the sign test at alpha "
                f"{self.alpha:g} could see is not estimable"
            )
        if self.min_broken is None:
            first = (
                f"no split of {m} flips is significant at alpha {self.alpha:g} "
                f"(it takes at least {self.min_flips} flips)"
            )
        else:
            first = (
                f"of {m} flips, {self.min_broken} or more broken would be a regression "
                f"at alpha {self.alpha:g}"
            )
        rates = f"the observed rates ({self.broken} broken, {self.fixed} fixed of {self.common})"
        if self.cases_needed is None:
            second = f"at {rates} no suite size would: not estimable"
        elif self.beyond:
            second = f"at {rates} the suite would need more than {self.cases_needed} common cases"
        else:
            second = f"at {rates} the suite would need {self.cases_needed} common cases"
        return f"{m} flip(s): {first}; {second}"


def _significant(broken: int, fixed: int, alpha: float) -> bool:
    return sign_test(fixed, broken, alternative="less") < alpha


def _nearest(numerator: int, denominator: int) -> int:
    """``numerator / denominator`` rounded to the nearest integer, halves up (exact)."""
    return (2 * numerator + denominator) // (2 * denominator)


def detectability(*, broken: int, fixed: int, common: int, alpha: float) -> Detectability:
    """The two figures for ``broken`` and ``fixed`` flips among ``common`` cases."""
    if min(broken, fixed) < 0 or common < broken + fixed:
        raise ValueError(
            f"need 0 <= broken + fixed <= common, got broken={broken!r}, fixed={fixed!r}, "
            f"common={common!r}"
        )
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    m = broken + fixed
    # All flips broken is the most extreme split: P = 2**-m.
    min_flips = 1
    while 0.5**min_flips >= alpha:
        min_flips += 1
    min_broken = next((k for k in range(m + 1) if _significant(k, m - k, alpha)), None)
    needed: int | None = None
    beyond = False
    if m and broken > fixed:
        seen: tuple[int, int] | None = None
        for size in range(common, MAX_CASES + 1):
            counts = (_nearest(broken * size, common), _nearest(fixed * size, common))
            if counts == seen:
                continue  # the test only changes when a rounded count does
            seen = counts
            if sum(counts) > _MAX_FLIPS:
                needed, beyond = size - 1, True
                break
            if _significant(*counts, alpha):
                needed = size
                break
        else:
            needed, beyond = MAX_CASES, True
    return Detectability(
        broken=broken,
        fixed=fixed,
        common=common,
        alpha=alpha,
        min_broken=min_broken,
        min_flips=min_flips,
        cases_needed=needed,
        beyond=beyond,
    )
