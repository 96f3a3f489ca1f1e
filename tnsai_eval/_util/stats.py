"""The statistics the report gate and the optimizer share, written once.

Three questions come up wherever two prompts are compared on the same cases:

- *How sure is a mean?* :func:`mean_interval` (Student's t; a table, not
  scipy: these are the only critical values we need).
- *Did the pass/fail flips go one way more than chance allows?*
  :func:`sign_test`, the exact binomial (McNemar) test on discordant pairs:
  only the cases that flipped carry information about which prompt is better.
- *Can a variant be dropped while racing?* :func:`sign_test` on the cases
  that flipped (0/1 scores), :func:`t_critical` for a one-sided t bound at
  any level (racing spends its error rate over several looks), or
  :func:`hoeffding_halfwidth`, a distribution-free bound on a mean of paired
  differences.

Pure functions of numbers, so the core and the reports layer can both import
this module without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Literal

__all__ = [
    "hoeffding_halfwidth",
    "mean_interval",
    "sign_test",
    "t_critical",
    "t_critical_95",
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
    levels (its error rate divided over its looks). This is the Cornish-Fisher
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


def sign_test(
    better: int,
    worse: int,
    *,
    alternative: Literal["greater", "less", "two-sided"] = "two-sided",
) -> float:
    """Exact sign (McNemar) test p-value on ``better`` vs ``worse`` flipped cases.

    Under "no difference" each flipped case is equally likely to have gone
    either way, so the count of ``better`` flips is Binomial(n, 1/2) with
    ``n = better + worse``. ``"greater"`` asks whether ``better`` is too large
    for chance, ``"less"`` whether it is too small (that is, a regression),
    ``"two-sided"`` either (capped at 1). With no flips the p-value is 1.

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

    def upper_tail(k: int) -> float:  # P(X >= k)
        # Exact integer arithmetic, then one division: no rounding until the end.
        return sum(math.comb(n, i) for i in range(k, n + 1)) / float(2**n)

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
