"""Agent.run: one input, a new conversation, and the trajectory of what was done."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tnsai_eval.agents import Agent, ModelTurn, StopReason, ToolCall, Trajectory
from tnsai_eval.errors import ConfigError, LLMError
from tnsai_eval.llm import Completion, Usage
from tnsai_eval.llm import ToolCall as Request
from tnsai_eval.norms import NormEngine
from tnsai_eval.testing import ScriptedLLM


def asks(*calls: tuple[str, dict[str, Any]], text: str = "") -> Completion:
    """A reply asking for tools, as any client decodes one."""
    requests = tuple(Request(f"c{i}", name, args) for i, (name, args) in enumerate(calls))
    return Completion(text, usage=Usage(10, 2), tool_calls=requests, finish_reason="tool_calls")


ORDERS = {"A1": {"status": "shipped", "total": 30}}


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    if order_id not in ORDERS:
        raise KeyError(f"no order {order_id!r}")
    return ORDERS[order_id]


def issue_refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def test_run_records_each_model_turn_and_tool_call() -> None:
    llm = ScriptedLLM(
        [
            asks(("lookup_order", {"order_id": "A1"})),
            asks(("issue_refund", {"order_id": "A1"}), ("lookup_order", {"order_id": "Z9"})),
            Completion("Refunded A1.", usage=Usage(30, 4), finish_reason="stop"),
        ]
    )
    agent = Agent(
        llm, "You are a support desk.", tools=[lookup_order, issue_refund], send_tool_schemas=True
    )
    run = agent.run("Please refund A1")
    assert isinstance(run, Trajectory)
    assert [type(step).__name__ for step in run.steps] == [
        "ModelTurn", "ToolCall", "ModelTurn", "ToolCall", "ToolCall", "ModelTurn",
    ]  # fmt: skip
    assert (run.output, run.input) == ("Refunded A1.", "Please refund A1")
    assert (run.calls, run.tokens, run.stop_reason) == (3, 12 + 12 + 34, StopReason.ANSWERED)
    first, refund, missing = run.tool_calls
    assert (first.result, first.error) == ({"status": "shipped", "total": 30}, None)
    assert refund.result == "refunded A1"
    assert (missing.error, missing.result) == ("KeyError: \"no order 'Z9'\"", None)
    assert all(call.latency_s >= 0 for call in run.tool_calls)
    assert run.actions == ["lookup_order", "issue_refund", "lookup_order"] == agent.actions
    # The conversation as sent: system, user, assistant with calls, tool results, answer.
    roles = [m["role"] for m in run.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert run.messages[5]["content"] == "refunded A1"
    assert run.messages[6]["content"] == "error: KeyError: \"no order 'Z9'\""
    # The tools' schemas went with every call.
    assert [t["function"]["name"] for t in llm.calls[0].params["tools"]] == [
        "lookup_order",
        "issue_refund",
    ]


def test_each_run_starts_a_new_conversation() -> None:
    llm = ScriptedLLM(default="ok")
    agent = Agent(llm, "base")
    agent.run("first")
    agent.run("second")
    assert [m.content for m in llm.calls[1].messages] == ["base", "second"]


def test_a_looping_agent_stops_at_max_steps_with_a_typed_reason() -> None:
    llm = ScriptedLLM(fn=lambda messages, params: asks(("lookup_order", {"order_id": "A1"})))
    run = Agent(llm, tools=[lookup_order], max_steps=3).run("loop forever")
    assert run.stop_reason is StopReason.MAX_STEPS
    assert run.calls == 3 == len(llm.calls)
    # The last reply's tools were not run: two rounds of tools for three steps.
    assert len(run.tool_calls) == 2
    assert isinstance(run.steps[-1], ModelTurn)


def test_a_reply_cut_at_the_token_limit_stops_with_length() -> None:
    llm = ScriptedLLM([Completion("Your order is", finish_reason="length")])
    assert Agent(llm).run("q").stop_reason is StopReason.LENGTH


def test_unknown_tools_are_steps_with_an_error() -> None:
    llm = ScriptedLLM([asks(("delete_everything", {})), "sorry"])
    agent = Agent(llm, tools=[lookup_order])
    run = agent.run("q")
    (call,) = run.tool_calls
    assert call == ToolCall(
        "delete_everything",
        {},
        error="unknown tool 'delete_everything'; available tools: lookup_order",
    )
    assert agent.actions == []  # nothing ran
    assert run.actions == ["delete_everything"]  # but the model asked for it


def test_norms_check_a_trajectory_like_an_agent() -> None:
    from tnsai_eval.norms import NormEntry, NormType

    engine = NormEngine.of(NormEntry(NormType.PROHIBITION, "", "issue_refund", "No refunds"))
    llm = ScriptedLLM([asks(("issue_refund", {"order_id": "A1"})), "done"])
    run = Agent(llm, tools=[issue_refund]).run("refund")
    assert engine.check_agent(run, lambda condition: True).is_violation


def test_a_failed_call_raises_and_leaves_no_conversation() -> None:
    llm = ScriptedLLM([asks(("lookup_order", {"order_id": "A1"})), LLMError("down")])
    agent = Agent(llm, tools=[lookup_order])
    with pytest.raises(LLMError, match="down"):
        agent.run("q")
    assert agent.history == []
    assert agent.actions == ["lookup_order"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_steps": 0}, "max_steps must be an int >= 1, got 0"),
        ({"max_steps": True}, "max_steps must be an int >= 1, got True"),
        ({"max_tool_rounds": -1}, "max_tool_rounds must be an int >= 0, got -1"),
        ({"max_steps": 2, "max_tool_rounds": 3}, "max_steps=2 and max_tool_rounds=3 disagree"),
    ],
)
def test_bad_step_caps(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Agent(ScriptedLLM(), **kwargs)


def test_max_tool_rounds_is_max_steps_minus_one() -> None:
    assert Agent(ScriptedLLM(), max_tool_rounds=2).max_steps == 3
    assert Agent(ScriptedLLM(), max_steps=4, max_tool_rounds=3).max_tool_rounds == 3
    assert Agent(ScriptedLLM()).max_steps == 6


def test_one_agent_class_under_every_name() -> None:
    import tnsai_eval
    import tnsai_eval.feedback

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tnsai_eval.feedback.Agent is Agent is tnsai_eval.Agent
