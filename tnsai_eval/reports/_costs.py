"""How costs and latencies read: significant digits, and a gated change as one line.

A cost of ``0.0000456`` printed with six decimals was ``0.000046`` (or
``0.000000`` for a cheap model), and a latency regression read as a score
row ("0.054  0.256  +0.202") with no word of the rule that failed it. Here a
cost keeps three significant digits, and a cost or latency change judged by
the gate reads as one line naming the ratio and the gate's limit, the same
in the terminal, in Markdown and on the HTML page.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tnsai_eval.reports._compare import MetricChange

__all__ = ["COST_METRICS", "cost_line", "format_cost"]

#: The metrics the cost gate (``gate_costs``) and the latency gate (``gate_latency``) judge.
COST_METRICS = ("tokens", "calls", "cost", "latency_p50_s")

_LABELS = {"tokens": "tokens", "calls": "calls", "cost": "cost", "latency_p50_s": "latency p50"}
_RULES = {"latency_p50_s": "gate_latency"}


def format_cost(value: float | None) -> str:
    """An estimated cost with three significant digits (at least two decimals), or "-".

    >>> format_cost(0.0000456), format_cost(0.000123), format_cost(12.3456), format_cost(None)
    ('0.0000456', '0.000123', '12.35', '-')
    >>> format_cost(0.0)
    '0.00'
    """
    if value is None:
        return "-"
    if value == 0 or not math.isfinite(value):
        return f"{value:.2f}"
    decimals = max(2, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def _value(metric: str, value: float) -> str:
    if metric == "cost":
        return format_cost(value)
    if metric == "latency_p50_s":
        return f"{value:.3g} s"
    return f"{value:,.0f}"  # a count


def cost_line(change: MetricChange) -> str:
    """A cost or latency change as the gate judged it: both values, the ratio, the limit.

    >>> from tnsai_eval.reports._compare import ChangeKind, MetricChange
    >>> slow = MetricChange("t::a", "latency_p50_s", 0.054, 0.256, 0.256, 0.256,
    ...                     ChangeKind.REGRESSED, allowed=0.027)
    >>> cost_line(slow)
    'latency p50 0.054 s -> 0.256 s, 4.74x, limit 1.5x (gate_latency 0.5): regressed'
    """
    label = _LABELS.get(change.metric, change.metric)
    shown = f"{_value(change.metric, change.baseline)} -> {_value(change.metric, change.current)}"
    rule = _RULES.get(change.metric, "gate_costs")
    if change.baseline > 0:
        relative = change.allowed / change.baseline
        ratio = f"{change.current / change.baseline:.3g}x"
        limit = f"limit {1 + relative:.3g}x ({rule} {relative:.3g})"
    else:  # from nothing: no ratio to speak of
        ratio = "from 0"
        limit = f"limit {_value(change.metric, change.allowed)} ({rule})"
    return f"{label} {shown}, {ratio}, {limit}: {change.kind.value}"
