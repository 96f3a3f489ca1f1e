"""Latency in the report model: round trip, the opt-in gate, its note, the summary and the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.plots import render_html
from tnsai_eval.reports import (
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
    format_summary,
    latency_figures,
    read_report,
)


def _run(p50: float | None, nodeid: str = "t.py::test_a") -> Report:
    test = TrackedTest(
        nodeid,
        TestStatus.PASSED,
        {"score": MetricStats("score", (0.9,))},
        live_calls=0 if p50 is None else 10,
        latency_p50_s=p50,
        latency_p95_s=p50,
    )
    return Report(tests=(test,))


def test_latency_survives_the_json_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    _run(0.25).save(path)
    test = read_report(path).tests[0]
    assert (test.live_calls, test.latency_p50_s, test.latency_p95_s) == (10, 0.25, 0.25)


def test_gate_is_opt_in_and_judges_the_median_as_a_ratio() -> None:
    slow, fast = _run(0.5), _run(0.2)
    assert compare(slow, fast).passed  # not gated unless asked
    gated = compare(slow, fast, gate_latency=0.5)
    assert [(c.metric, c.baseline, c.current) for c in gated.regressions] == [
        ("latency_p50_s", 0.2, 0.5)
    ]
    assert compare(slow, fast, gate_latency=1.5).passed  # 0.5 <= 0.2 * 2.5
    assert [c.metric for c in compare(fast, slow, gate_latency=0.5).improved] == ["latency_p50_s"]
    with pytest.raises(ConfigError, match="gate_latency"):
        compare(slow, fast, gate_latency=float("nan"))


def test_a_replayed_run_is_skipped_with_a_note() -> None:
    result = compare(_run(None), _run(0.2), gate_latency=0.1)
    assert result.passed
    assert result.notes == (
        "latency gate skipped for t.py::test_a: no live calls in this run "
        "(replayed replies have no latency)",
    )
    assert "note: latency gate skipped" in format_comparison(result)
    both = compare(_run(None), _run(None), gate_latency=0.1)
    assert "no live calls in baseline and this run" in both.notes[0]
    page = render_html(_run(None), comparison=result)
    assert "latency gate skipped for t.py::test_a" in page


def test_summary_and_page_show_latency_only_for_runs_with_live_calls() -> None:
    assert "latency p50/p95 s" in format_summary(_run(0.25))
    assert "0.250/0.250" in format_summary(_run(0.25))
    assert "latency" not in format_summary(_run(None))
    assert "latency_p50_s" in render_html(_run(0.25))
    assert "latency_p50_s" not in _run(None).to_dataframe().columns
    assert latency_figures([0.3]) == (1, 0.3, 0.3)
