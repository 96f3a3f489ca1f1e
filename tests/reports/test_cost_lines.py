"""Costs and latencies as people read them (issue 34, the user journey).

A cost keeps three significant digits everywhere it is shown (six decimals
made a cheap model's cost ``0.000000``), and each cost or latency change the
gate judged reads as one line with the ratio and the gate's rule, in the
terminal, in Markdown and on the HTML page.
"""

from __future__ import annotations

from typing import Any

from tnsai_eval.plots import render_html
from tnsai_eval.reports import (
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
    format_cost,
    format_summary,
)


def _run(**fields: Any) -> Report:
    test = TrackedTest(
        "t.py::test_q", TestStatus.PASSED, {"score": MetricStats("score", (1.0,))},
        model="m", tokens_in=1000, tokens_out=200, tokens=1200, calls=10, live_calls=3,
        latency_p95_s=0.3, **fields,
    )  # fmt: skip
    return Report((test,), {"models": ["m"]})


SLOW = _run(latency_p50_s=0.256, cost=0.000123)
FAST = _run(latency_p50_s=0.054, cost=0.0000456)


def test_a_gated_cost_or_latency_change_names_its_ratio_and_rule() -> None:
    comparison = compare(SLOW, FAST, gate_latency=0.5, gate_costs=0.2)
    text = format_comparison(comparison)
    assert (
        "  t.py::test_q: latency p50 0.054 s -> 0.256 s, 4.74x, limit 1.5x (gate_latency 0.5): "
        "regressed"
    ) in text.splitlines()
    assert (
        "  t.py::test_q: cost 0.0000456 -> 0.000123, 2.7x, limit 1.2x (gate_costs 0.2): regressed"
    ) in text.splitlines()
    markdown = format_comparison(comparison, markdown=True)
    assert "- t.py::test\\_q: latency p50 0.054 s -\\> 0.256 s, 4.74x, limit 1.5x" in markdown
    page = render_html(SLOW, comparison=comparison)
    assert "cost 0.0000456 -&gt; 0.000123, 2.7x, limit 1.2x (gate_costs 0.2): regressed" in page
    # An improvement reads the same way.
    better = format_comparison(compare(FAST, SLOW, gate_latency=0.5))
    assert "latency p50 0.256 s -> 0.054 s, 0.211x, limit 1.5x (gate_latency 0.5): improved" in (
        better
    )


def test_costs_keep_three_significant_digits_in_the_summary_and_on_the_page() -> None:
    assert format_cost(0.0000456) == "0.0000456"
    assert "0.0000456" in format_summary(FAST)  # was 0.000046
    page = render_html(FAST)
    assert "estimated cost 0.0000456" in page
    assert "<td>0.0000456</td>" in page  # the tests table, where three decimals showed 0.000
