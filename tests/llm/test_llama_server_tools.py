"""Tool calls through OpenAIClient against the llama.cpp server (llama-cpp-python 0.3.x).

What the server does with ``tools``, found here: with the GGUF's own chat
template (which knows no tools) a named ``tool_choice`` gets a native tool
call, constrained to the tool's parameters, while ``"auto"`` gets plain text;
with the ``chatml-function-calling`` handler ``"auto"`` gets native tool calls
too. OpenAIClient sends ``tools`` as given and reads ``tool_calls`` back, and
an Agent runs them like any client's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import LlamaServer
from tnsai_eval.agents import Agent
from tnsai_eval.datasets import load_cases
from tnsai_eval.evaluation import score_target
from tnsai_eval.llm import FrontClient, OpenAIClient
from tnsai_eval.records import CaseState
from tnsai_eval.scoring import NormCompliance, ToolCallF1, ToolCallMatch

REPO = Path(__file__).resolve().parents[2]

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


def test_the_support_desk_suite_runs_on_the_servers_native_tool_calls(
    llama_tool_server: LlamaServer,
) -> None:
    # The suite bench/support_desk.py and the plugin run on the embedded model,
    # here through OpenAIClient and the server's own tool calling: the same
    # agent, data set rows and metrics; every case scored, every call a declared tool.
    sys.path.insert(0, str(REPO / "datasets"))
    try:
        import make_support_desk as desk
    finally:
        sys.path.remove(str(REPO / "datasets"))
    rows = load_cases(REPO / "datasets" / "support_desk.jsonl")
    (case,) = [c for c in rows if c.id == "where-A1001"]
    with OpenAIClient(
        llama_tool_server.model, base_url=llama_tool_server.base_url, timeout=120
    ) as server:
        llm = FrontClient(server)  # the calls are the case's: counted and attributed

        def factory() -> Agent:
            return Agent(llm, desk.SYSTEM_PROMPT, tools=desk.TOOLS, max_steps=2, learning=False,
                         llm_params={"temperature": 0.0, "max_tokens": 48},
                         send_tool_schemas=True)  # fmt: skip

        result = score_target(
            factory,
            [case],
            evaluator=[
                ToolCallMatch("any_order", "subset"),
                ToolCallF1("subset"),
                NormCompliance(desk.SupportDesk),
            ],
        )
    assert [c.state for c in result.cases] == [CaseState.SCORED], result.errors
    assert set(result.metric_cases) == {"tool_calls_any_order", "tool_call_f1", "norms"}
    (run,) = result.trajectories
    assert run is not None
    assert 1 <= result.calls == run.calls <= 2
    assert result.cases[0].tokens > 0
    # Where an order is: the server's model looks it up, by a declared tool's name.
    assert run.tool_calls[0].name == "lookup_order"
    assert {call.name for call in run.tool_calls} <= {t.__name__ for t in desk.TOOLS}
