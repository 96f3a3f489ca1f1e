"""LocalLLM(tools=...): the embedded model calls tools through a grammar (real llama.cpp calls)."""

from __future__ import annotations

from typing import Any

import pytest

from tnsai_eval.agents import Agent, ModelTurn, StopReason
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LocalLLM

pytestmark = pytest.mark.local_model


def _tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": kind} for key, kind in properties.items()},
                "required": list(properties),
            },
        },
    }


TOOLS = [
    _tool("lookup_order", "Look up an order by its id.", order_id="string"),
    _tool("check_policy", "Read the shop's policy on a topic.", topic="string"),
]
ASK = [
    {"role": "system", "content": "You are the support desk of a shop."},
    {"role": "user", "content": "Where is my order A1001?"},
]


@pytest.fixture(scope="module")
def llm() -> LocalLLM:
    return LocalLLM()


def test_required_gives_a_valid_call_of_a_declared_tool(llm: LocalLLM) -> None:
    reply = llm.chat(ASK, tools=TOOLS, tool_choice="required", max_tokens=48)
    (call,) = reply.tool_calls
    assert call.name in {"lookup_order", "check_policy"}
    # The grammar follows the tool's parameters: its one required argument, a string.
    required = "order_id" if call.name == "lookup_order" else "topic"
    assert list(call.arguments) == [required]
    assert isinstance(call.arguments[required], str)
    assert (reply.text, reply.finish_reason) == ("", "tool_calls")
    assert call.id.startswith("call_")
    # Deterministic: the same request, the same call and id (replay keys rely on it).
    assert llm.chat(ASK, tools=TOOLS, tool_choice="required", max_tokens=48).tool_calls == (call,)


def test_a_named_tool_choice_calls_that_tool_and_none_answers(llm: LocalLLM) -> None:
    named = {"type": "function", "function": {"name": "check_policy"}}
    (call,) = llm.chat(ASK, tools=TOOLS, tool_choice=named, max_tokens=48).tool_calls
    assert call.name == "check_policy"
    answer = llm.chat(ASK, tools=TOOLS, tool_choice="none", max_tokens=48)
    assert answer.tool_calls == ()
    assert answer.text.strip()
    assert not answer.text.lstrip().startswith("{")  # the answer, unwrapped from its JSON


def test_an_agent_runs_the_embedded_models_calls(llm: LocalLLM) -> None:
    orders = {"A1001": "shipped"}

    def lookup_order(order_id: str) -> str:
        """Look up an order by its id."""
        return orders.get(order_id, "no such order")

    def check_policy(topic: str) -> str:
        """Read the shop's policy on a topic."""
        return "Refunds within 30 days."

    agent = Agent(
        llm,
        "You are the support desk of a shop.",
        tools=[lookup_order, check_policy],
        max_steps=3,
        llm_params={"max_tokens": 48},
        send_tool_schemas=True,
    )
    run = agent.run("Where is my order A1001?")
    assert 1 <= run.calls <= 3
    assert isinstance(run.steps[0], ModelTurn)
    assert run.stop_reason in set(StopReason)
    # Every call the model made was of a declared tool, and it ran.
    for call in run.tool_calls:
        assert call.name in {"lookup_order", "check_policy"}
        assert call.error is None or "TypeError" in call.error
    assert run.tokens > 0
    again = Agent(
        llm,
        "You are the support desk of a shop.",
        tools=[lookup_order, check_policy],
        max_steps=3,
        llm_params={"max_tokens": 48},
        send_tool_schemas=True,
    ).run("Where is my order A1001?")
    assert (again.actions, again.output) == (run.actions, run.output)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tools": []}, "tools is empty"),
        ({"tools": [{"type": "function"}]}, r"tools\[0\]\.function must be an object"),
        ({"tools": TOOLS + TOOLS[:1]}, "given twice"),
        ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice must be"),
        ({"tool_choice": "auto"}, "tool_choice was given without tools"),
        ({"tools": TOOLS, "response_format": {"type": "json_object"}}, "not both"),
    ],
)
def test_bad_tool_requests_are_named(llm: LocalLLM, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        llm.chat(ASK, **kwargs)
