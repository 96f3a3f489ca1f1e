"""The documented columns of every frame, pinned against the real result objects.

The other frame tests use hand-built stand-ins; these run the real optimizer,
refinement loop, learner result, feedback store and report, so that a column
renamed at the source breaks here rather than in a notebook.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tnsai_eval import frames
from tnsai_eval.feedback import Feedback, FeedbackStore, LearningResult
from tnsai_eval.optimizer import OptimizationResult, PromptOptimizer, PromptStrategy
from tnsai_eval.refinement import CompletionCriteria, RefinementLoop
from tnsai_eval.reports import MetricStats, Report, TestStatus, TrackedTest
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM


@pytest.fixture(scope="module")
def optimization() -> OptimizationResult:
    llm = ScriptedLLM(rules=[(r"only the answer", "Paris")], default="It is Paris, I think.")
    optimizer = PromptOptimizer(
        llm, candidate_strategies=[PromptStrategy.ANSWER_ONLY], rewrite=False
    )
    return optimizer.optimize(
        "Capital?",
        [TestCase("France", "Paris"), TestCase("France, again", "Paris")],
        validation_cases=[TestCase("France?", "Paris")],
    )


def test_optimizer_case_columns(optimization: OptimizationResult) -> None:
    out = frames.optimizer_cases(optimization)
    assert frames.OPTIMIZER_CASE_COLUMNS == (
        "round",
        "variant",
        "strategy",
        "case",
        "input",
        "expected",
        "output",
        "score",
        "tokens",
        "latency",
        "cached",
        "error",
        "split",
        "details",
        "reason",
        "case_id",
        "state",
        "error_type",
    )
    assert tuple(out.columns) == frames.OPTIMIZER_CASE_COLUMNS
    assert tuple(optimization.to_dataframe().columns) == frames.OPTIMIZER_CASE_COLUMNS
    assert out["split"].tolist() == ["train"] * 4 + ["validation"] * 2


def test_optimizer_round_columns(optimization: OptimizationResult) -> None:
    assert frames.OPTIMIZER_ROUND_COLUMNS == (
        "round",
        "best_score",
        "best_variant",
        "improved",
        "variants",
        "calls",
        "tokens",
        "failed_calls",
        "elapsed_s",
        "racing_note",
    )
    out = frames.optimizer_rounds(optimization)
    assert tuple(out.columns) == frames.OPTIMIZER_ROUND_COLUMNS
    assert out["best_score"].tolist() == [optimization.initial_score, 1.0]


def test_variant_leaderboard_and_best_so_far_from_a_real_run(
    optimization: OptimizationResult,
) -> None:
    variants = frames.variant_scores(optimization)
    assert tuple(variants.columns) == frames.VARIANT_COLUMNS
    # Validation rows are not a variant's score in a round.
    assert variants["cases"].tolist() == [2, 2]
    board = frames.leaderboard(optimization)
    assert tuple(board.columns) == frames.LEADERBOARD_COLUMNS
    assert board["strategy"].tolist() == ["answer_only", "initial"]
    assert frames.best_so_far(optimization).tolist() == [optimization.initial_score, 1.0]
    progression = frames.score_progressions({"opt": optimization})
    assert tuple(progression.columns) == frames.PROGRESSION_COLUMNS
    assert progression["step"].tolist() == [0, 1]


def test_refinement_columns() -> None:
    criteria = CompletionCriteria.builder().valid_json().must_contain('"id"').build()
    llm = ScriptedLLM(['{"name": "x"}', '{"name": "x", "id": 1}'])
    result = RefinementLoop("Emit a JSON record with an id", criteria).execute(llm, "name=x")
    iterations = frames.refinement_iterations(result)
    assert tuple(iterations.columns) == (
        "iteration",
        "score",
        "passed",
        "checks",
        "failed",
        "failed_checks",
        "improved",
        "repeated",
        "tokens",
        "tokens_estimated",
        "latency_s",
        "checks_duration_s",
        "output",
    )
    checks = frames.refinement_checks(result)
    assert tuple(checks.columns) == (
        "iteration",
        "check",
        "kind",
        "source",
        "passed",
        "skipped",
        "score",
        "message",
        "reason",
        "duration_s",
        "tokens",
    )
    assert set(checks["iteration"]) == set(iterations["iteration"])


def test_learning_and_feedback_columns() -> None:
    learned = frames.learning_frame(LearningResult(["Quote the id."], ["Be brief."], [], 3))
    assert frames.LEARNING_COLUMNS == ("kind", "position", "text")
    assert tuple(learned.columns) == frames.LEARNING_COLUMNS
    assert learned["kind"].tolist() == ["rule", "preference"]
    store = FeedbackStore.in_memory()
    store.save(Feedback.correction("Quote the id."))
    store.save(Feedback.thumbs_up("Order 7 ships today."))
    feedback = frames.feedback_frame(store)
    assert frames.FEEDBACK_COLUMNS == ("id", "type", "content", "session_id", "timestamp")
    assert tuple(feedback.columns) == frames.FEEDBACK_COLUMNS
    assert feedback["type"].tolist() == ["correction", "positive"]


def test_report_columns(tmp_path: Path) -> None:
    test = TrackedTest("t::a", TestStatus.PASSED, {"score": MetricStats("score", (0.5, 1.0))})
    path = Report(tests=(test,)).save(tmp_path / "abc.json")
    out = frames.load_reports([path])
    assert tuple(out.columns[:16]) == (
        "run",
        "nodeid",
        "status",
        "score",
        "score_low",
        "score_high",
        "case_pass_rate",
        "sample_pass_rate",
        "cases",
        "unrecorded",
        "samples",
        "iterations",
        "calls",
        "tokens",
        "cache_hits",
        "duration_s",
    )
    assert list(out.columns[16:]) == ["metric.score"]
    assert frames.COMPARISON_COLUMNS == (
        "nodeid",
        "metric",
        "baseline",
        "current",
        "current_low",
        "current_high",
        "delta",
        "kind",
    )
    comparison = frames.compare_reports(path, path)
    assert tuple(comparison.columns) == frames.COMPARISON_COLUMNS
    assert comparison["kind"].tolist() == ["unchanged"]
