"""The example suite replays offline from its committed store and passes its baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_example_suite_replays_offline(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        str(EXAMPLES),
        "--llm-record",
        "replay",
        "--tnsai-baseline",
        str(EXAMPLES / "baseline.json"),
        "--tnsai-report",
        "replayed.json",
    )
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*no regressions beyond tolerance 0.05*"])
    # Every reply came from the store: a replayed run never reaches the model.
    report = pytester.path / "replayed.json"
    totals = json.loads(report.read_text())["totals"]
    assert totals["calls"] == totals["cache_hits"] > 0
