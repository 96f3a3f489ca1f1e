"""The tidy cases frame across reports, per-case deltas, and their plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plots._axes import bars
from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.reports import (
    CaseRecord,
    CaseState,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
)


def _save(path: Path, scores: list[float | None]) -> Path:
    cases = tuple(
        CaseRecord(f"c{i}", f"q{i}", "a", state=CaseState.UNRECORDED)
        if s is None
        else CaseRecord(f"c{i}", f"q{i}", "a", output="a" if s else "b", score=s, passed=s >= 0.5)
        for i, s in enumerate(scores)
    )
    recorded = [s for s in scores if s is not None]
    metric = MetricStats("score", (sum(recorded) / len(recorded),))
    test = TrackedTest("t.py::test_a", TestStatus.PASSED, {"score": metric}, cases=cases)
    return Report(tests=(test,)).save(path)


def test_report_cases_is_one_tidy_frame_across_reports(tmp_path: Path) -> None:
    old = _save(tmp_path / "old.json", [1.0, 0.0, 1.0])
    new = _save(tmp_path / "new.json", [0.0, 1.0, None])
    frame = frames.report_cases([old, new])
    assert tuple(frame.columns) == frames.REPORT_CASE_COLUMNS
    assert frame["report"].tolist() == ["old"] * 3 + ["new"] * 3
    assert frame.loc[frame["report"] == "new", "state"].tolist() == [
        "scored",
        "scored",
        "unrecorded",
    ]
    pivot = frame.pivot_table(index="case_id", columns="report", values="score")
    assert pivot.loc["c0"].to_dict() == {"new": 0.0, "old": 1.0}


def test_case_deltas_worst_first_and_the_plot(tmp_path: Path) -> None:
    old = _save(tmp_path / "old.json", [1.0, 0.0, 1.0, 0.8])
    new = _save(tmp_path / "new.json", [0.0, 1.0, None, 0.6])
    deltas = frames.case_deltas(new, old)
    assert tuple(deltas.columns) == frames.CASE_DELTA_COLUMNS
    assert deltas["case_id"].tolist() == ["c0", "c3", "c1"]  # unrecorded c2 left out
    assert deltas["flip"].tolist() == ["broken", "", "fixed"]
    assert deltas["delta"].round(2).tolist() == [-1.0, -0.2, 1.0]
    fig = plots.plot_case_deltas(compare(new, old))
    ax = fig.axes[0]
    assert [round(bar.get_width(), 2) for bar in bars(ax)] == [-1.0, -0.2, 1.0]
    assert "1 broken, 1 fixed" in ax.get_title()
    with pytest.raises(ConfigError, match="needs a baseline"):
        frames.case_deltas(new)
