"""When to retry a model call and how long to wait first.

Pure functions and one small record, so that the sync and async paths of
``OpenAIClient`` share every decision and the tests can check them without a
server.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

from tnsai_eval.errors import ConfigError

__all__ = ["RetryPolicy", "is_retryable_status", "parse_retry_after"]

# 408 (request timeout) and 409 (conflict: OpenAI uses it for lock contention)
# are transient although they are 4xx; 429 is rate limiting.
_RETRYABLE_4XX = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another attempt (408, 409, 429 and 5xx)."""
    return status in _RETRYABLE_4XX or 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait, or ``None`` when it did not say.

    ``retry-after-ms`` (OpenAI's millisecond header) wins over ``retry-after``,
    which is either delta-seconds or an HTTP date (RFC 9110, 10.2.3). Values
    that do not parse, are negative or are not finite are ignored rather than
    trusted. ``headers`` must look names up case-insensitively (httpx.Headers
    does).
    """
    raw_ms = headers.get("retry-after-ms")
    seconds = None if raw_ms is None else _finite_non_negative(raw_ms)
    if seconds is not None:
        return seconds / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _finite_non_negative(raw)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _finite_non_negative(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times to retry and how long to wait between attempts.

    The wait before retry ``n`` (1-based) is ``backoff_base * 2 ** (n - 1)``,
    capped at ``backoff_max``, with "equal jitter" (a random point in the upper
    half) so that many clients that failed together do not retry together. A
    server's ``Retry-After`` replaces the computed wait, capped at
    ``retry_after_max`` so that a misbehaving server cannot park us for hours.

    >>> policy = RetryPolicy(max_retries=2, backoff_base=0.5, backoff_max=8.0)
    >>> policy.max_attempts
    3
    >>> 0.25 <= policy.delay(1, rng=random.Random(0)) <= 0.5
    True
    >>> policy.delay(1, retry_after=3.0)
    3.0
    """

    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    retry_after_max: float = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigError(f"max_retries must be an int >= 0, got {self.max_retries!r}")
        for name in ("backoff_base", "backoff_max", "retry_after_max"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value >= 0 or not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")

    @property
    def max_attempts(self) -> int:
        """The first attempt plus ``max_retries``."""
        return self.max_retries + 1

    def delay(
        self,
        retry: int,
        *,
        retry_after: float | None = None,
        rng: random.Random | None = None,
    ) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        # The exponent is clamped so that a huge retry count cannot overflow a float.
        growth = 2.0 ** min(max(retry - 1, 0), 60)
        capped = min(self.backoff_max, self.backoff_base * growth)
        draw = (rng or random).random()
        return capped / 2.0 + draw * capped / 2.0
