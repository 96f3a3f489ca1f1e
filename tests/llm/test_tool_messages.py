"""How the embedded model is told about tools and how its reply is read (no model needed)."""

from __future__ import annotations

import json
from typing import Any

from tnsai_eval.llm._tools import check_tools, plain_messages, read_reply, reply_schema

TOOLS = check_tools(
    [
        {
            "type": "function",
            "function": {
                "name": "lookup_order",
                "description": "Look up an order.",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        },
        {"type": "function", "function": {"name": "check_policy"}},
    ]
)


def test_the_reply_schema_follows_tool_choice() -> None:
    auto = reply_schema(TOOLS)
    assert [b["properties"].get("tool", {}).get("const") for b in auto["anyOf"]] == [
        "lookup_order",
        "check_policy",
        None,
    ]
    assert auto["anyOf"][0]["properties"]["arguments"]["properties"] == {
        "order_id": {"type": "string"}
    }
    assert len(reply_schema(TOOLS, "required")["anyOf"]) == 2
    assert reply_schema(TOOLS, "none")["required"] == ["answer"]
    named = reply_schema(TOOLS, {"type": "function", "function": {"name": "check_policy"}})
    assert named["properties"]["tool"] == {"const": "check_policy"}


def test_a_conversation_with_calls_becomes_plain_turns() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a desk."},
        {"role": "user", "content": "Where is A1?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "lookup_order", "content": "shipped"},
        {"role": "assistant", "content": "It shipped."},
    ]
    plain = plain_messages(messages, TOOLS)
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "user", "assistant"]
    assert plain[0]["content"].startswith("You are a desk.\n\nYou can call these tools:\n")
    assert "- lookup_order(order_id): Look up an order." in plain[0]["content"]
    call = {"tool": "lookup_order", "arguments": {"order_id": "A1"}}
    assert json.loads(plain[2]["content"]) == call
    assert plain[3]["content"] == "Result of lookup_order: shipped"
    assert json.loads(plain[4]["content"]) == {"answer": "It shipped."}


def test_replies_are_read_into_calls_or_text() -> None:
    assert read_reply('{"answer": "Hi"}', 1) == ("Hi", ())
    text, (call,) = read_reply('{"tool": "lookup_order", "arguments": {"order_id": "A\n1"}}', 2)  # type: ignore[misc]
    assert (text, call.name, dict(call.arguments)) == ("", "lookup_order", {"order_id": "A\n1"})
    # The id depends on the request's length and the reply alone: a replay gets the same.
    assert read_reply('{"tool": "lookup_order", "arguments": {}}', 2) == read_reply(
        '{"tool": "lookup_order", "arguments": {}}', 2
    )
    assert read_reply('{"tool": "lookup_order", "argu', 2) is None  # cut at the token limit
    assert read_reply("[1]", 2) is None
