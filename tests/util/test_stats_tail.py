"""The sign test's binomial tail at any number of flips, against exact fractions.

The exact reference sums ``comb(n, i)`` in integers and divides once (Python's
``int / int`` is correctly rounded however large the numbers), so it is exact
to the last bit; the function under test switches to log space past
``EXACT_SIGN_FLIPS``.
"""

from __future__ import annotations

import math

import pytest

from tnsai_eval._util.stats import EXACT_SIGN_FLIPS, binomial_half_tail, sign_test


def exact_tail(n: int, k: int) -> float:
    """P(Binomial(n, 1/2) >= k), exactly, then rounded once."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    term, total = math.comb(n, k), 0
    for i in range(k, n + 1):
        total += term
        term = term * (n - i) // (i + 1)
    return total / (1 << n)


def assert_close(got: float, want: float) -> None:
    if want == 0.0:
        assert got < 1e-300
    else:
        assert got == pytest.approx(want, rel=1e-11, abs=0.0)


@pytest.mark.parametrize("n", [1_023, 1_024])
def test_the_tail_matches_exact_fractions_either_side_of_the_float_range(n: int) -> None:
    # 2**1024 no longer fits a float: the old code raised OverflowError here.
    for k in [*range(0, n + 2, 11), n // 2, n // 2 + 1, n - 1, n]:
        assert_close(binomial_half_tail(n, k), exact_tail(n, k))


def test_the_tail_matches_exact_fractions_at_100_000_flips() -> None:
    n = 100_000
    for k in (0, 49_000, 49_999, 50_000, 50_001, 50_300, 51_000, 51_500, 52_000):
        assert_close(binomial_half_tail(n, k), exact_tail(n, k))
    # Far in the tail the probability is below the smallest float: 0.0, not an error.
    assert binomial_half_tail(n, 60_000) == 0.0


def test_small_counts_stay_exact_to_the_last_bit() -> None:
    for n in (1, 7, 64, 100, EXACT_SIGN_FLIPS):
        for k in range(n + 2):
            assert binomial_half_tail(n, k) == exact_tail(n, k)


def test_the_sign_test_answers_at_a_million_flips() -> None:
    # One-sided p-values of the two directions add to 1 plus the middle term.
    assert sign_test(500_000, 500_000) == 1.0
    worse = sign_test(499_000, 501_000, alternative="less")
    better = sign_test(499_000, 501_000, alternative="greater")
    assert 0.0 < worse < 0.03
    assert better > 0.97
    assert sign_test(400_000, 600_000) == 0.0


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="-1"):
        binomial_half_tail(-1, 0)
