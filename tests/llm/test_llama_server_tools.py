"""Tool calls through OpenAIClient against the llama.cpp server (llama-cpp-python 0.3.x).

What the server does with ``tools``, found here: with the GGUF's own chat
template (which knows no tools) a named ``tool_choice`` gets a native tool
call, constrained to the tool's parameters, while ``"auto"`` gets plain text;
with the ``chatml-function-calling`` handler ``"auto"`` gets native tool calls
too. OpenAIClient sends ``tools`` as given and reads ``tool_calls`` back, and
an Agent runs them like any client's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.llm.conftest import LlamaServer
from tnsai_eval.agents import Agent
from tnsai_eval.llm import OpenAIClient

pytestmark = pytest.mark.local_model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]
ASK: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support desk."},
    {"role": "user", "content": "Where is my order A1001?"},
]
NAMED = {"type": "function", "function": {"name": "lookup_order"}}


def test_the_gguf_template_calls_a_named_tool_natively(llama_server: LlamaServer) -> None:
    with OpenAIClient(llama_server.model, base_url=llama_server.base_url, timeout=120) as llm:
        named = llm.chat(ASK, tools=TOOLS, tool_choice=NAMED, max_tokens=48, temperature=0)
        auto = llm.chat(ASK, tools=TOOLS, tool_choice="auto", max_tokens=16, temperature=0)
    (call,) = named.tool_calls
    assert (call.name, list(call.arguments), named.finish_reason) == (
        "lookup_order",
        ["order_id"],
        "tool_calls",
    )
    assert auto.tool_calls == ()  # the template has no tools: plain text
    assert auto.text.strip()


def test_the_function_calling_handler_calls_tools_on_auto_and_an_agent_runs_them(
    llama_tool_server: LlamaServer,
) -> None:
    looked_up: list[str] = []

    def lookup_order(order_id: str) -> str:
        """Look up an order by its id."""
        looked_up.append(order_id)
        return "shipped"

    with OpenAIClient(
        llama_tool_server.model, base_url=llama_tool_server.base_url, timeout=120
    ) as llm:
        reply = llm.chat(ASK, tools=TOOLS, tool_choice="auto", max_tokens=48, temperature=0)
        (call,) = reply.tool_calls
        assert call.name == "lookup_order"
        run = Agent(
            llm,
            "You are a support desk.",
            tools=[lookup_order],
            max_steps=2,
            llm_params={"temperature": 0, "max_tokens": 48},
            send_tool_schemas=True,
        ).run("Where is my order A1001?")
    assert run.actions[:1] == ["lookup_order"]
    assert looked_up == [run.tool_calls[0].arguments["order_id"]]
    assert run.calls <= 2
