"""The support desk data set: regenerated identically, loaded with its tool calls and state,
and scored end to end through Agent.run with the desk's real tools."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tnsai_eval import datasets
from tnsai_eval.agents import Agent, Trajectory
from tnsai_eval.llm import Completion, Message
from tnsai_eval.llm import ToolCall as Request
from tnsai_eval.scoring import (
    ContainsEvaluator,
    FinalAnswer,
    MatchMode,
    NormCompliance,
    TestCase,
    ToolCallF1,
    ToolCallMatch,
    metrics_of,
)
from tnsai_eval.testing import ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "datasets" / "support_desk.jsonl"


@pytest.fixture(scope="module")
def desk() -> Iterator[ModuleType]:
    sys.path.insert(0, str(REPO / "datasets"))
    try:
        import make_support_desk

        yield make_support_desk
    finally:
        sys.path.remove(str(REPO / "datasets"))


def test_the_file_is_what_the_generator_writes(desk: ModuleType) -> None:
    lines = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert lines == desk.make_cases()


def test_the_data_set_loads_with_tool_calls_and_state() -> None:
    cases = datasets.load(DATA)
    assert len(cases) == 48
    with_calls = [case for case in cases if case.expected_tool_calls]
    assert len(with_calls) == 42
    assert len({case.id for case in cases}) == 48
    refund = next(case for case in cases if case.id == "refund-A1002")
    assert [(c.name, dict(c.arguments)) for c in refund.expected_tool_calls] == [
        ("lookup_order", {"order_id": "A1002"}),
        ("issue_refund", {"order_id": "A1002"}),
    ]
    assert refund.state == {"has_order": True, "refundable": True}
    late = next(case for case in cases if case.id == "refund-A1005")  # delivered 45 days ago
    assert [c.name for c in late.expected_tool_calls] == ["lookup_order"]


def test_the_tools_are_deterministic_and_refuse_what_the_policy_refuses(desk: ModuleType) -> None:
    assert desk.lookup_order("a1002")["status"] == "delivered"
    assert desk.issue_refund("A1002") == {"order_id": "A1002", "refunded": 189.0}
    with pytest.raises(ValueError, match="A1005 cannot be refunded"):
        desk.issue_refund("A1005")
    with pytest.raises(KeyError, match="no order 'Z1'"):
        desk.lookup_order("Z1")
    assert "30 days" in desk.check_policy("Refunds")


def _replaying(calls: list[list[dict[str, Any]]], answer: str) -> ScriptedLLM:
    """A model that asks for each list of calls in turn, then answers."""
    replies: list[str | Completion] = [
        Completion(
            "",
            tool_calls=tuple(
                Request(f"c{i}", c["name"], c["arguments"]) for i, c in enumerate(step)
            ),
        )
        for step in calls
    ]
    return ScriptedLLM([*replies, answer])


def _oracle_run(desk: ModuleType, case: TestCase) -> Trajectory:
    expected = [
        [{"name": c.name, "arguments": dict(c.arguments)}] for c in case.expected_tool_calls
    ]
    llm = _replaying(expected, f"Done: {case.expected}.")
    agent = Agent(llm, desk.SYSTEM_PROMPT, tools=desk.TOOLS, max_steps=4)
    return agent.run(case.input)


def test_an_agent_that_makes_the_expected_calls_scores_full_marks(desk: ModuleType) -> None:
    cases = datasets.load(DATA)
    metrics = metrics_of(
        [
            *(ToolCallMatch(mode, "exact") for mode in MatchMode),
            ToolCallF1("exact"),
            NormCompliance(desk.SupportDesk),
            FinalAnswer(ContainsEvaluator()),
        ]
    )
    for case in cases:
        run = _oracle_run(desk, case)
        # The real tools ran without error on every expected call.
        assert all(call.error is None for call in run.tool_calls), case.id
        scores = {m.name: m.score(run, case) for m in metrics}
        assert {name: s.score for name, s in scores.items()} == dict.fromkeys(scores, 1.0), (
            case.id,
            scores,
        )


def test_a_careless_agent_breaks_the_desks_norms_case_by_case(desk: ModuleType) -> None:
    cases = {case.id: case for case in datasets.load(DATA)}
    norms = NormCompliance(desk.SupportDesk)
    refund_first = _replaying(
        [[{"name": "issue_refund", "arguments": {"order_id": "A1002"}}]], "Refunded."
    )
    run = Agent(refund_first, tools=desk.TOOLS).run(cases["refund-A1002"].input)
    reason = norms.evaluate_trajectory(run, cases["refund-A1002"]).reason
    assert (
        "call 1: action 'issue_refund' is prohibited: No refund before the order is looked up"
        in reason
    )
    assert "obligatory action 'lookup_order' was not performed" in reason
    # A1005 is past the refund window: looking it up first is not enough.
    late = _replaying(
        [
            [{"name": "lookup_order", "arguments": {"order_id": "A1005"}}],
            [{"name": "issue_refund", "arguments": {"order_id": "A1005"}}],
        ],
        "Refunded.",
    )
    run = Agent(late, tools=desk.TOOLS).run(cases["refund-A1005"].input)
    result = norms.evaluate_trajectory(run, cases["refund-A1005"])
    assert result.score == 0.0
    assert result.reason.startswith(
        "call 2: action 'issue_refund' is prohibited: "
        "Never refund an order the policy does not allow"
    )
    assert (
        run.tool_calls[1].error == "ValueError: order A1005 cannot be refunded (status delivered)"
    )
    # Small talk with a needless lookup breaks no norm, but fails the strict match.
    chatty = _replaying([[{"name": "check_policy", "arguments": {"topic": "refunds"}}]], "Hi!")
    run = Agent(chatty, tools=desk.TOOLS).run(cases["talk-01"].input)
    assert norms.evaluate_trajectory(run, cases["talk-01"]).score == 1.0
    assert ToolCallMatch("strict").evaluate_trajectory(run, cases["talk-01"]).score == 0.0


def test_the_system_prompt_reaches_the_model(desk: ModuleType) -> None:
    llm = ScriptedLLM(default="Hello!")
    Agent(llm, desk.SYSTEM_PROMPT, tools=desk.TOOLS).run("Hi")
    assert llm.calls[0].messages[0] == Message("system", desk.SYSTEM_PROMPT)
