"""FinalAnswer, NormCompliance, TrajectoryJudge and named metrics over trajectories."""

from __future__ import annotations

import asyncio

import pytest

from tnsai_eval.errors import ConditionError, ConfigError
from tnsai_eval.norms import NormEntry, NormType, norm
from tnsai_eval.records import ToolCall, Trajectory
from tnsai_eval.scoring import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    FinalAnswer,
    LLMJudgeEvaluator,
    MetricScore,
    NormCompliance,
    TestCase,
    ToolCallMatch,
    TrajectoryEvaluator,
    TrajectoryJudge,
    metrics_of,
    render_trajectory,
)
from tnsai_eval.testing import ScriptedLLM


@norm(
    type=NormType.PROHIBITION,
    action="issue_refund",
    condition='!("lookup_order" in performed)',
    description="No refund before the order is looked up",
)
@norm(
    type=NormType.PROHIBITION,
    action="issue_refund",
    condition="order_status == 'pending'",
    description="Never refund an order that has not shipped",
)
@norm(
    type=NormType.OBLIGATION,
    action="check_policy",
    condition="'issue_refund' in performed",
    description="A refund follows the policy",
)
class SupportDesk:
    """The support desk's norms."""


def trajectory(*names: str) -> Trajectory:
    return Trajectory("Refund A1", steps=tuple(ToolCall(n, {"order_id": "A1"}) for n in names))


SHIPPED, PENDING = {"order_status": "shipped"}, {"order_status": "pending"}
FIRST = "call 1: action 'issue_refund' is prohibited: No refund before the order is looked up"
UNSHIPPED = "action 'issue_refund' is prohibited: Never refund an order that has not shipped"
NO_POLICY = "obligatory action 'check_policy' was not performed: A refund follows the policy"
# (calls made, state, the violations named)
NORM_CASES = {
    "looked up, checked, refunded": (
        ("lookup_order", "check_policy", "issue_refund"), SHIPPED, []
    ),
    "refund first": (("issue_refund", "lookup_order", "check_policy"), SHIPPED, [FIRST]),
    "pending order": (
        ("lookup_order", "check_policy", "issue_refund"), PENDING, [f"call 3: {UNSHIPPED}"]
    ),
    "no policy check": (("lookup_order", "issue_refund"), SHIPPED, [NO_POLICY]),
    "nothing done": ((), PENDING, []),
    "two broken at one call": (
        ("issue_refund", "check_policy"), PENDING, [FIRST, f"call 1: {UNSHIPPED}"]
    ),
}  # fmt: skip


@pytest.mark.parametrize(("names", "state", "named"), NORM_CASES.values(), ids=NORM_CASES.keys())
def test_norm_violations_are_named_per_case(
    names: tuple[str, ...], state: dict[str, str], named: list[str]
) -> None:
    case = TestCase("Refund A1", state=state)
    result = NormCompliance(SupportDesk).evaluate_trajectory(trajectory(*names), case)
    assert result.score == (0.0 if named else 1.0)
    found = result.reason.count("is prohibited") + result.reason.count("was not performed")
    assert found == len(named)
    for text in named:
        assert text in result.reason


def test_norm_compliance_takes_an_engine_or_entries_and_names_bad_input() -> None:
    entry = NormEntry(NormType.PROHIBITION, "", "delete_user", "Never delete")
    assert (
        NormCompliance([entry]).evaluate_trajectory(trajectory("delete_user"), TestCase("q")).score
        == 0.0
    )
    with pytest.raises(ConfigError, match="at least one norm"):
        NormCompliance([])
    with pytest.raises(ConditionError, match="never_defined"):
        NormCompliance([NormEntry(NormType.PROHIBITION, "never_defined ==", "x")])
    with pytest.raises(ConfigError, match="may not set 'performed'"):
        NormCompliance([entry]).evaluate_trajectory(
            trajectory(), TestCase("q", state={"performed": []})
        )


def test_final_answer_scores_the_output_with_any_evaluator() -> None:
    run = Trajectory("q", steps=(ToolCall("lookup_order"),), output="It shipped on Monday.")
    assert (
        FinalAnswer(ContainsEvaluator()).evaluate_trajectory(run, TestCase("q", "shipped")).score
        == 1.0
    )
    assert (
        FinalAnswer(ExactMatchEvaluator()).evaluate_trajectory(run, TestCase("q", "shipped")).score
        == 0.0
    )
    with pytest.raises(ConfigError, match="evaluate"):
        FinalAnswer(object())  # type: ignore[arg-type]


def test_final_answer_keeps_a_judges_reason_and_awaits_it() -> None:
    judge = LLMJudgeEvaluator(ScriptedLLM(default="Close enough.\nSCORE: 80"))
    run = Trajectory("q", output="Lyon")
    found = asyncio.run(FinalAnswer(judge).aevaluate_trajectory(run, TestCase("q", "Paris")))
    assert found == MetricScore(0.8, "Close enough.")


def test_the_trajectory_judge_reads_the_whole_run() -> None:
    llm = ScriptedLLM(default="It looked the order up first.\nSCORE: 75")
    judge = TrajectoryJudge(llm, "Did the agent look the order up before refunding?")
    run = Trajectory(
        "Refund A1",
        steps=(
            ToolCall("lookup_order", {"order_id": "A1"}, result={"status": "shipped"}),
            ToolCall("issue_refund", {"order_id": "A1"}, error="KeyError: 'A1'"),
        ),
        output="Refunded.",
    )
    result = judge.evaluate_trajectory(run, TestCase("Refund A1", "Refunded"))
    assert result.score == 0.75
    sent = llm.calls[0].prompt
    assert 'lookup_order(order_id="A1") -> {"status": "shipped"}' in sent
    assert "issue_refund(order_id=\"A1\") -> error: KeyError: 'A1'" in sent
    assert "Final answer: Refunded.\nExpected answer: Refunded" in sent
    assert "Did the agent look the order up before refunding?" in sent
    unreadable = TrajectoryJudge(ScriptedLLM(default="no idea"), "Good?")
    assert unreadable.evaluate_trajectory(run, TestCase("q")).score == 0.0
    with pytest.raises(ConfigError, match="rubric"):
        TrajectoryJudge(llm, " ")


def test_render_trajectory_cuts_long_results() -> None:
    run = Trajectory("q", steps=(ToolCall("t", result="x" * 1000),))
    text = render_trajectory(run)
    assert "Tool calls:\n1. t() -> " + "x" * 297 + "..." in text
    assert "Tool calls: none" in render_trajectory(Trajectory("q"))


def test_metrics_of_a_list_names_each_and_keeps_thresholds() -> None:
    metrics = metrics_of(
        [
            ToolCallMatch("strict"),
            FinalAnswer(ContainsEvaluator()),
            NormCompliance(SupportDesk),
            ContainsEvaluator(),
        ]
    )
    assert [(m.name, m.threshold) for m in metrics] == [
        ("tool_calls_strict", 1.0),
        ("final_answer", 1.0),
        ("norms", 1.0),
        ("contains", None),
    ]
    assert all(isinstance(m.evaluator, TrajectoryEvaluator) for m in metrics[:3])
    assert not isinstance(metrics[3].evaluator, TrajectoryEvaluator)
    run = Trajectory(
        "Refund A1", steps=(ToolCall("lookup_order", {"order_id": "A1"}),), output="Shipped"
    )
    case = TestCase(
        "Refund A1",
        "shipped",
        [{"name": "lookup_order", "arguments": {"order_id": "A1"}}],
        {"order_status": "shipped"},
    )
    assert [m.score(run, case).score for m in metrics] == [1.0, 1.0, 1.0, 1.0]
    assert (metrics[3].passes(0.4, 0.5), metrics[0].passes(1.0, 0.5)) == (False, True)
    with pytest.raises(ConfigError, match="empty list"):
        metrics_of([])
    with pytest.raises(ConfigError, match=r"evaluator\[1\] must have evaluate"):
        metrics_of([ContainsEvaluator(), "contains"])  # type: ignore[list-item]


def test_an_evaluator_returning_nonsense_is_named() -> None:
    class Broken:
        def evaluate(self, actual: str, expected: str) -> float:
            return float("nan")

    (metric,) = metrics_of(Broken())
    with pytest.raises(ConfigError, match="returned nan; expected a number from 0 to 1"):
        metric.score("x", TestCase("q"))
