from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from tnsai_eval import frames
from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback import Feedback, FeedbackStore, LearningResult
from tnsai_eval.norms import CheckResult, NormEngine, NormEntry, NormType
from tnsai_eval.optimizer import OptimizationResult
from tnsai_eval.refinement import RefinementMetrics, RefinementResult, RefinementStatus
from tnsai_eval.reports import ChangeKind, Comparison, MetricChange

from .conftest import save_report


def test_optimizer_cases_delegates_and_checks_columns(optimization: OptimizationResult) -> None:
    out = frames.optimizer_cases(optimization)
    assert tuple(out.columns) == frames.OPTIMIZER_CASE_COLUMNS
    assert len(out) == 9
    with pytest.raises(ConfigError, match="'score'"):
        frames.optimizer_cases(out.drop(columns="score"))
    with pytest.raises(ConfigError, match="OptimizationResult"):
        frames.optimizer_cases(object())  # type: ignore[arg-type]


def test_optimizer_rounds_delegates(optimization: OptimizationResult) -> None:
    assert list(frames.optimizer_rounds(optimization)["best_score"]) == [0.25, 0.75, 1.0]


def test_variant_scores_means_costs_and_best(optimization: OptimizationResult) -> None:
    out = frames.variant_scores(optimization)
    assert tuple(out.columns) == frames.VARIANT_COLUMNS
    assert list(out["round"]) == [0, 1, 1, 2]
    assert list(out["score"]) == [0.25, 0.75, 0.25, 1.0]
    assert list(out["cases"]) == [2, 2, 2, 2]
    assert list(out["cached"]) == [0, 0, 0, 2]
    assert list(out["tokens"]) == [21, 21, 21, 21]
    assert list(out["best"]) == [True, True, False, True]


def test_variant_scores_ignores_failed_cases(cases_frame: pd.DataFrame) -> None:
    cases_frame.loc[0, "score"] = float("nan")  # the first case of round 0 failed
    out = frames.variant_scores(cases_frame)
    assert out.loc[0, "score"] == 0.5
    assert out.loc[0, "cases"] == 1


def test_score_progressions_from_sequences_results_and_optimizations(
    optimization: OptimizationResult,
) -> None:
    refinement = RefinementResult(
        final_output="b",
        iteration_count=2,
        status=RefinementStatus.SUCCESS,
        total_duration=timedelta(0),
        metrics=RefinementMetrics(total_duration_ms=0.0, total_tokens=0, scores=(0.5, 1.0)),
    )
    out = frames.score_progressions({"opt": optimization, "ref": refinement, "raw": (0.1,)})
    assert tuple(out.columns) == frames.PROGRESSION_COLUMNS
    assert out[out["run"] == "opt"]["score"].tolist() == [0.25, 0.75, 1.0]
    assert out[out["run"] == "ref"]["step"].tolist() == [1, 2]  # iterations count from 1
    assert out[out["run"] == "opt"]["step"].tolist() == [0, 1, 2]  # round 0 = initial
    assert out[out["run"] == "raw"]["score"].tolist() == [0.1]
    single = frames.score_progressions([0.3, 0.6])
    assert single["run"].unique().tolist() == ["run"]
    with pytest.raises(ConfigError, match="int"):
        frames.score_progressions(3)  # type: ignore[arg-type]


def test_refinement_frames_delegate_and_validate(
    bare_refinement: RefinementResult, checks_frame: pd.DataFrame
) -> None:
    assert frames.refinement_iterations(bare_refinement)["score"].tolist() == [0.0, 0.5, 1.0]
    assert frames.refinement_checks(bare_refinement) is checks_frame
    with pytest.raises(ConfigError, match="'passed'"):
        frames.refinement_checks(checks_frame.drop(columns="passed"))


def test_learning_frame_lists_every_item_by_kind() -> None:
    result = LearningResult(
        prompt_adjustments=["Be brief."],
        preferences=["Use metric units.", "Answer in English."],
        good_examples=[],
        feedback_analyzed=5,
    )
    out = frames.learning_frame(result)
    assert tuple(out.columns) == frames.LEARNING_COLUMNS
    assert out.values.tolist() == [
        ["rule", 0, "Be brief."],
        ["preference", 0, "Use metric units."],
        ["preference", 1, "Answer in English."],
    ]
    assert out.attrs["feedback_analyzed"] == 5
    with pytest.raises(ConfigError, match="LearningResult"):
        frames.learning_frame(object())  # type: ignore[arg-type]


def test_feedback_frame_reads_a_store_or_items() -> None:
    item = Feedback.correction("Say kg", id="x1")
    store = FeedbackStore.in_memory()
    store.save(item)
    sources: tuple[FeedbackStore | list[Feedback], ...] = (store, [item])
    for source in sources:
        out = frames.feedback_frame(source)
        assert tuple(out.columns) == frames.FEEDBACK_COLUMNS
        assert out[["id", "type", "content"]].iloc[0].tolist() == ["x1", "correction", "Say kg"]


def test_norm_checks_one_row_per_violation_and_per_clean_check() -> None:
    engine = NormEngine.of(
        NormEntry(NormType.PROHIBITION, "hasConsent == false", "delete_data", "No deletion", 5),
        NormEntry(NormType.OBLIGATION, "", "log_access", "Log every access", 1),
    )
    state = {"hasConsent": False}
    out = frames.norm_checks(
        {
            "delete_data": engine.check_action("delete_data", state=state),
            "read_data": engine.check_action("read_data", state=state),
            "obligations": engine.check_obligations(["read_data"], state=state),
        }
    )
    assert tuple(out.columns) == frames.NORM_CHECK_COLUMNS
    assert out["check"].tolist() == ["delete_data", "read_data", "obligations"]
    assert out["action"].tolist() == ["delete_data", "read_data", "log_access"]
    assert out["allowed"].tolist() == [False, True, False]
    assert out["norm_type"].tolist()[::2] == ["prohibition", "obligation"]
    assert out.loc[0, "priority"] == 5
    assert "No deletion" in str(out.loc[0, "reason"])
    assert out["norm_type"].isna()[1]
    pairs = frames.norm_checks([("a", CheckResult()), ("a", CheckResult())])
    assert pairs["allowed"].tolist() == [True, True]


def test_load_reports_adds_a_leading_run_column(tmp_path: Path) -> None:
    a = save_report(tmp_path / "abc123.json", {"t1": 0.5, "t2": 1.0})
    b = save_report(tmp_path / "def456.json", {"t1": 0.7})
    out = frames.load_reports([a, b])
    assert out.columns[0] == "run"
    assert out["run"].tolist() == ["abc123", "abc123", "def456"]
    assert out["nodeid"].tolist() == ["t1", "t2", "t1"]
    named = frames.load_reports({"v1": a, "v2": b})
    assert named["run"].unique().tolist() == ["v1", "v2"]
    labelled = frames.load_reports([a, b], runs=["old", "new"])
    assert labelled.groupby("run", sort=False)["score"].mean().tolist() == [0.75, 0.7]
    with pytest.raises(ConfigError, match="1 names for 2"):
        frames.load_reports([a, b], runs=["x"])
    with pytest.raises(ConfigError, match="at least one"):
        frames.load_reports([])


def test_compare_reports_runs_the_gate_comparison(tmp_path: Path) -> None:
    old = save_report(tmp_path / "old.json", {"t::a": 0.9, "t::b": 0.5, "t::gone": 1.0})
    new = save_report(tmp_path / "new.json", {"t::a": 0.3, "t::b": 0.52, "t::fresh": 1.0})
    out = frames.compare_reports(new, old, tolerance=0.05)
    assert tuple(out.columns) == frames.COMPARISON_COLUMNS
    assert out[["nodeid", "kind"]].values.tolist() == [
        ["t::a", "regressed"],
        ["t::fresh", "new"],
        ["t::gone", "vanished"],
        ["t::b", "unchanged"],
    ]
    assert out.loc[0, "delta"] == pytest.approx(-0.6)


def test_comparison_frame_lists_changes_then_new_and_vanished() -> None:
    regressed, unchanged = ChangeKind.REGRESSED, ChangeKind.UNCHANGED
    comparison = Comparison(
        # Regressions listed best first: the frame must put the worst first.
        regressions=(
            MetricChange("t.py::test_small", "score", 0.9, 0.7, 0.7, 0.7, regressed),
            MetricChange("t.py::test_big", "score", 0.9, 0.1, 0.0, 0.2, regressed),
        ),
        improved=(),
        unchanged=(MetricChange("t.py::test_ok", "score", 0.8, 0.8, 0.8, 0.8, unchanged),),
        new=("t.py::test_new", "t.py::test_ok :: latency"),
        vanished=("t.py::test_gone",),
        tolerance=0.05,
    )
    out = frames.comparison_frame(comparison)
    assert tuple(out.columns) == frames.COMPARISON_COLUMNS
    assert out["nodeid"].tolist() == [
        "t.py::test_big",
        "t.py::test_small",
        "t.py::test_new",
        "t.py::test_ok",
        "t.py::test_gone",
        "t.py::test_ok",
    ]
    assert out["kind"].tolist() == [
        "regressed",
        "regressed",
        "new",
        "new",
        "vanished",
        "unchanged",
    ]
    # "nodeid :: metric" names a metric new to a test that is in both runs.
    assert out.loc[3, "metric"] == "latency"
    assert out["metric"].isna()[2]
    assert out["baseline"].isna()[2]
    assert frames.comparison_frame(out) is out
    with pytest.raises(ConfigError, match="Comparison"):
        frames.comparison_frame(object())  # type: ignore[arg-type]


def test_variant_scores_carry_details_and_accept_frames_without_them(
    cases_frame: pd.DataFrame,
) -> None:
    out = frames.variant_scores(cases_frame)
    assert list(out["details"]) == ["", "", "system message", "system message; 2 demo(s) as chat"]
    # results.csv of a run from before the column existed.
    older = frames.variant_scores(cases_frame.drop(columns="details"))
    assert list(older["details"]) == [""] * 4
    assert list(older["score"]) == list(out["score"])
