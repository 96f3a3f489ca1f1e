"""Option checks shared by several classes; each raises ``ConfigError`` naming the value."""

from __future__ import annotations

import math

from tnsai_eval.errors import ConfigError

__all__ = ["seconds", "whole"]


def seconds(name: str, value: object) -> float:
    """``value`` as a number of seconds: finite and > 0 (``bool`` and NaN refused).

    >>> seconds("timeout", 2)
    2.0
    >>> seconds("timeout", float("inf"))
    Traceback (most recent call last):
    ...
    tnsai_eval.errors.ConfigError: timeout must be a finite number of seconds > 0, got inf
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not value > 0
    ):
        raise ConfigError(f"{name} must be a finite number of seconds > 0, got {value!r:.40}")
    return float(value)


def whole(name: str, value: object, least: int) -> int:
    """``value`` as a count: an int >= ``least`` (``bool`` refused).

    >>> whole("max_steps", 0, 1)
    Traceback (most recent call last):
    ...
    tnsai_eval.errors.ConfigError: max_steps must be an int >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name} must be an int >= {least}, got {value!r:.40}")
    return value
