"""The statistics the report gate and the optimizer share, written once.

Three questions come up wherever two prompts are compared on the same cases:

- *How sure is a mean?* :func:`mean_interval` (Student's t; a table, not
  scipy: these are the only critical values we need).
- *Did the pass/fail flips go one way more than chance allows?*
  :func:`sign_test`, the binomial (McNemar) test on discordant pairs: only
  the cases that flipped carry information about which prompt is better. Its
  tail, :func:`binomial_half_tail`, is exact up to ``EXACT_SIGN_FLIPS`` flips
  and computed in log space beyond (any number of flips, in bounded time).
- *How sure is a paired gain?* :func:`paired_proportions_interval`
  (Newcombe's interval for the difference of paired proportions, for 0/1
  scores) and :func:`paired_bootstrap_interval` (a seeded percentile
  bootstrap of the mean paired difference, for partial credit).
- *Can a variant be dropped while racing?* :func:`sign_test` on the cases
  that flipped (0/1 scores), :func:`t_critical` for a one-sided t bound at
  any level (racing spends its error rate over several looks), or
  :func:`hoeffding_halfwidth`, a distribution-free bound on a mean of paired
  differences; :func:`sequential_level` is the level each look gets when one
  error rate covers them all (:func:`sequential_sign_level`, exactly, for
  the sign test).

Pure functions of numbers, so the core and the reports layer can both import
this module without importing each other.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Sequence
from statistics import NormalDist
from typing import Literal

__all__ = [
    "EXACT_SIGN_FLIPS",
    "binomial_half_tail",
    "hoeffding_halfwidth",
    "mean_interval",
    "paired_bootstrap_interval",
    "paired_proportions_interval",
    "sequential_level",
    "sequential_sign_level",
    "sign_test",
    "t_critical",
    "t_critical_95",
    "wilson_interval",
]

# Two-sided 95% critical values of Student's t for 1..30 degrees of freedom.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_critical_95(dof: int) -> float:
    """Two-sided 95% critical value of Student's t (the normal 1.96 past 30).

    >>> t_critical_95(1), t_critical_95(30), t_critical_95(500)
    (12.706, 2.042, 1.96)
    """
    if dof < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {dof!r}")
    return _T95[dof - 1] if dof <= len(_T95) else 1.96


def t_critical(alpha: float, dof: int) -> float:
    """The one-sided critical value of Student's t: ``P(T > t) = alpha`` for ``dof``.

    The table above holds only the 95% two-sided values; racing needs other
    levels (its error rate spread over its looks). This is the Cornish-Fisher
    expansion of t around the normal quantile (four terms), within 0.01 of
    the exact value from 5 degrees of freedom on (racing uses 7 and more).

    >>> round(t_critical(0.025, 7), 3), t_critical_95(7)
    (2.365, 2.365)
    >>> all(abs(t_critical(0.025, d) - t_critical_95(d)) < 0.01 for d in range(5, 31))
    True
    >>> round(t_critical(0.005, 10), 3)  # the exact value is 3.169
    3.169
    """
    if dof < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {dof!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    z = NormalDist().inv_cdf(1.0 - alpha)
    terms = (
        (z**3 + z) / 4,
        (5 * z**5 + 16 * z**3 + 3 * z) / 96,
        (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
        (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
    )
    return z + math.fsum(term / dof ** (k + 1) for k, term in enumerate(terms))


def mean_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its 95% interval (Student's t).

    One value has no spread to estimate: its interval is the value itself.

    >>> mean_interval([0.5])
    (0.5, 0.5, 0.5)
    >>> m, lo, hi = mean_interval([0.0, 1.0, 1.0, 0.0])
    >>> m, round(lo, 3), round(hi, 3)
    (0.5, -0.419, 1.419)
    """
    n = len(values)
    if n == 0:
        raise ValueError("mean_interval needs at least one value")
    mean = math.fsum(values) / n
    if n == 1:
        return mean, mean, mean
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_critical_95(n - 1) * math.sqrt(variance / n)
    return mean, mean - half, mean + half


def wilson_interval(successes: int, n: int, *, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson's score interval for a proportion, at level ``1 - alpha``.

    >>> low, high = wilson_interval(0, 10)
    >>> low, round(high, 4)
    (0.0, 0.2775)
    """
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got {successes!r} of {n!r}")
    z = NormalDist().inv_cdf(1.0 - alpha / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 or n successes the bound is exactly 0 or 1; rounding would leave 1e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def paired_proportions_interval(
    both: int, only_first: int, only_second: int, neither: int, *, alpha: float = 0.05
) -> tuple[float, float]:
    """Newcombe's interval for ``p_first - p_second`` on paired 0/1 outcomes.

    The counts are the paired table: cases where both succeeded, only the
    first, only the second, neither (``p_first`` is the first's success
    rate). Newcombe's square-and-add method (his method 10, 1998): each
    rate's Wilson interval, combined with the estimated correlation of the
    two (the phi coefficient of the table, shrunk towards 0 by ``n / 2`` when
    positive). Unlike the Wald interval it stays inside [-1, 1] and keeps its
    coverage at the few cases a held-out split has. The published example
    (Fagerland, Lydersen and Laake's table of 161 pairs) gives -0.0621,
    [-0.1186, -0.0046]:

    >>> low, high = paired_proportions_interval(59, 6, 16, 80)
    >>> round(low, 4), round(high, 4)
    (-0.1186, -0.0046)
    >>> [round(x, 3) for x in paired_proportions_interval(0, 4, 0, 8)]  # +4/-0 of 12
    [0.022, 0.609]
    """
    counts = (both, only_first, only_second, neither)
    if any(c < 0 for c in counts) or sum(counts) == 0:
        raise ValueError(f"paired counts must be >= 0 and not all 0, got {counts!r}")
    n = sum(counts)
    first, second = both + only_first, both + only_second
    p1, p2 = first / n, second / n
    l1, u1 = wilson_interval(first, n, alpha=alpha)
    l2, u2 = wilson_interval(second, n, alpha=alpha)
    margins = first * (n - first) * second * (n - second)
    phi = 0.0
    if margins:
        cross = both * neither - only_first * only_second
        # Newcombe's correction: a positive association counts for n/2 less.
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    below = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    above = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, p1 - p2 - below), min(1.0, p1 - p2 + above)


def paired_bootstrap_interval(
    differences: Sequence[float],
    *,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = 2000,
) -> tuple[float, float]:
    """A seeded percentile bootstrap interval for the mean of paired differences.

    For partial-credit scores, where no closed form fits: ``resamples`` times,
    draw as many cases as there are, with replacement (the pairs stay
    together: a case's difference is resampled whole), and take the
    ``alpha / 2`` and ``1 - alpha / 2`` quantiles of the resampled means. The
    same ``seed`` gives the same interval. A bootstrap sees no more spread
    than the sample has: on a handful of cases it runs narrow, and with every
    difference equal the interval is that value, so read it beside the
    paired test's p-value, which does not have that weakness.

    >>> paired_bootstrap_interval([0.5, 0.5, 0.5])
    (0.5, 0.5)
    >>> low, high = paired_bootstrap_interval([0.2, 0.4, -0.1, 0.3, 0.0, 0.5], seed=1)
    >>> -0.1 <= low < 0.2166 < high <= 0.5
    True
    """
    n = len(differences)
    if n == 0:
        raise ValueError("paired_bootstrap_interval needs at least one difference")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    values = list(differences)
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))

    def quantile(q: float) -> float:
        # The nearest-rank quantile: an actual resampled mean, no interpolation.
        return means[min(resamples - 1, max(0, math.ceil(q * resamples) - 1))]

    return quantile(alpha / 2), quantile(1 - alpha / 2)


_LOG_2PI = math.log(2 * math.pi)
# Up to this many flips the sign test's tails are summed exactly in integers
# (one rounding, at the final division); beyond, in log space (Loader's
# saddle-point terms), where the exact sum's cost grows with the square of n.
EXACT_SIGN_FLIPS = 1_000


def _stirling_error(m: int) -> float:
    """``log(m!) - log(sqrt(2 pi m) (m/e)^m)``: what Stirling's formula misses."""
    if m <= 15:
        return math.lgamma(m + 1) - (m + 0.5) * math.log(m) + m - 0.5 * _LOG_2PI
    m2 = float(m) * m
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * m2)) / m2) / m2) / m2) / m


def _deviance(x: int, mean: float) -> float:
    """``x log(x / mean) + mean - x``, without cancellation when ``x`` is near ``mean``."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total = (x - mean) * v
        term = 2 * x * v
        j = 1
        while True:
            term *= v * v
            following = total + term / (2 * j + 1)
            if following == total:
                return total
            total = following
            j += 1
    return x * math.log(x / mean) + mean - x


def _log_half_binomial(n: int, k: int) -> float:
    """``log P(X = k)`` for X ~ Binomial(n, 1/2), to about 1e-15 relative (Loader, 2000)."""
    if k in (0, n):
        return -n * math.log(2.0)
    half = n / 2
    return (
        _stirling_error(n)
        - _stirling_error(k)
        - _stirling_error(n - k)
        - _deviance(k, half)
        - _deviance(n - k, half)
        + 0.5 * (math.log(n) - _LOG_2PI - math.log(k) - math.log(n - k))
    )


def _log_space_upper_tail(n: int, k: int) -> float:
    """``P(X >= k)`` for ``n / 2 < k <= n``: terms from ``k`` up, in ratios of the first."""
    total, term, i = 1.0, 1.0, k
    # Each term is the one before times (n - i) / (i + 1) < 1: past the mean
    # they shrink at least geometrically, so about 6 sqrt(n) terms reach 2^-60.
    while i < n and term > total * 2.0**-60:
        term *= (n - i) / (i + 1)
        total += term
        i += 1
    return math.exp(_log_half_binomial(n, k) + math.log(total))


def binomial_half_tail(n: int, k: int) -> float:
    """``P(X >= k)`` for X ~ Binomial(n, 1/2): the sign test's one-sided p-value.

    Exact (an integer sum, rounded once) up to ``EXACT_SIGN_FLIPS`` flips;
    beyond, within about 1e-12 relative (log-space terms), in time that
    grows with the square root of ``n``. Never overflows: a tail below the
    smallest float is 0.0.

    >>> binomial_half_tail(3, 3), binomial_half_tail(3, 0), binomial_half_tail(3, 4)
    (0.125, 1.0, 0.0)
    >>> binomial_half_tail(100_000, 50_000) > 0.5
    True
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n!r}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if n <= EXACT_SIGN_FLIPS:
        term, total = math.comb(n, k), 0
        for i in range(k, n + 1):
            total += term
            term = term * (n - i) // (i + 1)
        return total / (1 << n)  # int / int: correctly rounded, however large n is
    if 2 * k > n:
        return _log_space_upper_tail(n, k)
    # At or below the mean: the complement of the lower tail, which by
    # symmetry is the upper tail from n - k + 1 (at most 1/2, so no loss).
    return 1.0 - _log_space_upper_tail(n, n - k + 1)


def sign_test(
    better: int,
    worse: int,
    *,
    alternative: Literal["greater", "less", "two-sided"] = "two-sided",
) -> float:
    """Sign (McNemar) test p-value on ``better`` vs ``worse`` flipped cases.

    Under "no difference" each flipped case is equally likely to have gone
    either way, so the count of ``better`` flips is Binomial(n, 1/2) with
    ``n = better + worse``. ``"greater"`` asks whether ``better`` is too large
    for chance, ``"less"`` whether it is too small (that is, a regression),
    ``"two-sided"`` either (capped at 1). With no flips the p-value is 1.
    Exact up to ``EXACT_SIGN_FLIPS`` flips, within 1e-12 relative beyond
    (:func:`binomial_half_tail`).

    >>> sign_test(3, 0)  # "+3/-0 cases": not significant on its own
    0.25
    >>> sign_test(3, 0, alternative="greater")
    0.125
    >>> round(sign_test(1, 9, alternative="less"), 4)
    0.0107
    """
    if better < 0 or worse < 0:
        raise ValueError(f"flip counts must be >= 0, got better={better!r}, worse={worse!r}")
    n = better + worse
    if n == 0:
        return 1.0
    upper_tail = functools.partial(binomial_half_tail, n)
    if alternative == "greater":
        return upper_tail(better)
    if alternative == "less":
        return upper_tail(worse)
    if alternative == "two-sided":
        return min(1.0, 2 * upper_tail(max(better, worse)))
    raise ValueError(f"alternative must be 'greater', 'less' or 'two-sided', got {alternative!r}")


def hoeffding_halfwidth(n: int, *, value_range: float = 2.0, delta: float = 0.05) -> float:
    """Half-width of a two-sided ``1 - delta`` Hoeffding bound on a mean of ``n`` values.

    Paired score differences lie in [-1, 1], a range of 2: with 12 cases the
    bound is about +-0.78, so on small datasets it rarely separates variants,
    which is the honest answer.

    >>> round(hoeffding_halfwidth(12), 2), round(hoeffding_halfwidth(200), 3)
    (0.78, 0.192)
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return value_range * math.sqrt(math.log(2.0 / delta) / (2.0 * n))


# The grid `sequential_level` integrates on: standardized statistics from
# -_Z_SPAN to +_Z_SPAN in steps of _Z_STEP (the mass beyond 8 is below 1e-15).
_Z_SPAN, _Z_STEP = 8.0, 0.02
# Candidate boundaries tried at once, between the unadjusted and the
# Bonferroni one (the answer always lies between them).
_CANDIDATES = 400


def _check_looks(sizes: tuple[int, ...], alpha: float) -> None:
    """The arguments both sequential levels take: a schedule of looks and a level."""
    if not sizes or any(b <= a for a, b in itertools.pairwise(sizes)) or sizes[0] < 1:
        raise ValueError(f"sizes must be positive and increasing, got {sizes!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")


@functools.lru_cache(maxsize=64)
def sequential_level(sizes: tuple[int, ...], alpha: float = 0.05) -> float:
    """The one-sided level of each of several looks at growing samples, ``alpha`` for all.

    A test repeated after ``sizes[0]``, ``sizes[1]``, ... paired cases (each
    look sees every case of the ones before) would reject a true null far
    more often than at one look. Bonferroni (``alpha / len(sizes)`` at each
    look) fixes that for any dependence, but the looks are strongly
    correlated (a test at 12 cases reuses the 8 seen at the first), so it
    gives away power. This is Pocock's answer for the actual schedule: one
    level for every look, chosen so that a cumulative sum of paired
    differences with mean 0 (a Brownian motion, by the central limit
    theorem) crosses the boundary at *some* look with probability ``alpha``.
    The chance is integrated numerically over the looks (a grid of the
    standardized statistic, a Gaussian step between looks, the part beyond
    the boundary removed at each look), for candidate boundaries between the
    unadjusted and the Bonferroni one at once.

    The approximation is asymptotic. A simulation of racing's whole sequence
    of looks at 70 cases (``tests/optimizer/test_racing.py``) measures what
    it gives: the exact sign test, whose discrete p-values rarely reach the
    level, drops a racer as good as the leader only 1.9-2.9% of the time for
    5% (100,000 runs with 40-90% of the cases flipped; so racing gives the
    sign test :func:`sequential_sign_level` instead); the
    t test, itself an approximation at 8-12 cases whose estimated variance
    also loosens the looks' correlation, 5.1% on normal differences, 5.5%
    on the differences of two uniform scores and 4.5% on lumpy
    partial-credit scores (20,000 runs each).

    >>> sequential_level((8,), 0.05)  # one look: no adjustment
    0.05
    >>> round(sequential_level((8, 12, 18, 27, 41, 62)), 4)  # Bonferroni: 0.0083
    0.014
    """
    import numpy as np  # pandas's dependency; imported here to keep import time low

    _check_looks(sizes, alpha)
    if len(sizes) == 1:
        return alpha
    normal = NormalDist()
    z = np.arange(-_Z_SPAN, _Z_SPAN + _Z_STEP / 2, _Z_STEP)
    bounds = np.linspace(
        normal.inv_cdf(1 - alpha), normal.inv_cdf(1 - alpha / len(sizes)), _CANDIDATES
    )
    # The share of each grid cell above the boundary -c, for every candidate c:
    # a smooth mask keeps the crossing chance continuous in c.
    above = np.clip((z[:, None] + _Z_STEP / 2 + bounds[None, :]) / _Z_STEP, 0.0, 1.0)
    density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * _Z_STEP
    alive = density[:, None] * above
    for before, after in itertools.pairwise(sizes):
        # Z' = rho Z + sqrt(1 - rho^2) e: the statistic at the next look given this one.
        rho = math.sqrt(before / after)
        spread = math.sqrt(1 - rho * rho)
        step = np.exp(-0.5 * ((z[None, :] - rho * z[:, None]) / spread) ** 2)
        step *= _Z_STEP / (spread * math.sqrt(2 * math.pi))
        alive = (step.T @ alive) * above
    crossed = 1.0 - alive.sum(axis=0)  # falls as the boundary moves out
    index = int(np.searchsorted(-crossed, -alpha))  # first candidate at or below alpha
    index = min(max(index, 1), _CANDIDATES - 1)
    c0, c1 = bounds[index - 1], bounds[index]
    p0, p1 = crossed[index - 1], crossed[index]
    bound = c0 + (c1 - c0) * (p0 - alpha) / (p0 - p1) if p0 != p1 else c1
    return float(1.0 - normal.cdf(float(bound)))


# Discordance rates `sequential_sign_level` takes the worst case over: a grid
# of (0, 1]; the chance of a false drop is a smooth polynomial in the rate,
# and 200 points found the same levels as these 40 on racing's schedules.
_DISCORDANCE_GRID = 40
# Beyond this many cases at the last look, `sequential_sign_level` uses
# `sequential_level`: its cost grows with the cube of the cases (about half a
# second at 93, racing's last look for 100 to 135 cases), and the sign
# test's discreteness, which the exact answer recovers, matters less and less.
_EXACT_SIGN_CASES = 100


@functools.lru_cache(maxsize=64)
def sequential_sign_level(sizes: tuple[int, ...], alpha: float = 0.05) -> float:
    """The sign test's level at each of several looks, exactly, ``alpha`` for all.

    :func:`sequential_level` is asymptotic, and the exact sign test on few
    flips rarely reaches it: its p-values are discrete (at 8 flips, 0.0039,
    0.035, 0.145...), so at Pocock's level it falsely drops a racer as good
    as the leader only 1.9-2.9% of the time for 5%, giving away power. This
    computes the error rate of the actual tests instead. Under "no
    difference" each paired case is a flip with some probability ``q`` (the
    discordance rate, unknown: a failed case counts like a tie, unflipped),
    and each flip goes either way with probability 1/2. A dynamic program
    over (flips, flips the racer won) after each case, with the rejected
    states removed at each look, gives the chance that some look rejects;
    the level returned is the largest p-value the sign test can produce
    (``sign_test(better, worse, alternative="less")`` for some flip counts)
    for which that chance stays at or below ``alpha`` for every ``q`` on a
    grid of (0, 1]. Comparing a p-value with ``<=`` against it is exact:
    both are the same integer sum divided by the same power of two.

    Schedules whose last look is beyond ``_EXACT_SIGN_CASES`` cases get
    :func:`sequential_level`.

    >>> sequential_sign_level((8,))  # one look: no adjustment
    0.05
    >>> round(sequential_sign_level((8, 12, 18, 27, 41, 62)), 4)  # Pocock's: 0.014
    0.0244
    """
    import numpy as np  # pandas's dependency; imported here to keep import time low

    _check_looks(sizes, alpha)
    if len(sizes) == 1:
        return alpha
    last = sizes[-1]
    if last > _EXACT_SIGN_CASES:
        return sequential_level(sizes, alpha)
    # p_less[m, b]: the one-sided p-value of b wins in m flips, P(Bin(m, 1/2) <= b),
    # where the racer is behind (2b < m); 2.0 (never rejected) elsewhere.
    p_less = np.full((last + 1, last + 1), 2.0)
    for m in range(1, last + 1):
        wins = 0
        for b in range((m + 1) // 2):
            wins += math.comb(m, b)
            p_less[m, b] = wins / float(2**m)
    rate = (np.arange(_DISCORDANCE_GRID) + 1.0)[:, None, None] / _DISCORDANCE_GRID
    looks = set(sizes)

    def worst_false_drop(level: float) -> float:
        rejected = p_less <= level
        state = np.zeros((_DISCORDANCE_GRID, last + 1, last + 1))
        state[:, 0, 0] = 1.0
        dropped = np.zeros(_DISCORDANCE_GRID)
        for case in range(1, last + 1):
            # After `case` cases there are at most `case` flips: only that corner
            # of the table can hold any probability yet.
            seen = state[:, : case + 1, : case + 1]
            # Unflipped with 1 - q; a flip the racer won or lost with q / 2 each.
            moved = seen * (1.0 - rate)
            moved[:, 1:, :] += seen[:, :-1, :] * (rate / 2)
            moved[:, 1:, 1:] += seen[:, :-1, :-1] * (rate / 2)
            state[:, : case + 1, : case + 1] = moved
            if case in looks:
                dropped += (state * rejected).sum(axis=(1, 2))
                state[:, rejected] = 0.0
        return float(dropped.max())

    # The candidates: every p-value at or below alpha. The chance of a false
    # drop grows with the level (the rejected states only grow), so bisect.
    candidates = np.unique(p_less[p_less <= alpha])
    low, high = -1, candidates.size - 1  # low: the largest that holds (-1: none does)
    while low < high:
        middle = (low + high + 1) // 2
        if worst_false_drop(float(candidates[middle])) <= alpha:
            low = middle
        else:
            high = middle - 1
    return float(candidates[low]) if low >= 0 else 0.0  # 0.0: no look may reject
