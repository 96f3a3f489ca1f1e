"""Tool calls for a model that has no native tool format: the embedded model.

Callers pass tools in OpenAI's wire format (``[{"type": "function",
"function": {"name", "description", "parameters"}}]``) and get
``Completion.tool_calls`` back, as from any server. The embedded model's chat
template knows nothing of tools, so ``LocalLLM``:

1. tells the model about the tools in the system message (``tool_prompt``),
   and shows its earlier calls and their results as plain turns
   (``plain_messages``);
2. constrains the reply with a grammar compiled from ``reply_schema``: one
   JSON object that is either ``{"tool": NAME, "arguments": {...}}`` for a
   declared tool, its arguments following that tool's ``parameters`` schema,
   or ``{"answer": "..."}``, the final answer. ``tool_choice`` narrows it as
   OpenAI's does: ``"auto"`` (either), ``"required"`` (a tool call),
   ``"none"`` (an answer) or ``{"type": "function", "function": {"name"}}``
   (that tool);
3. reads the reply back (``read_reply``) into a text or one ``ToolCall``.

So a reply is always a valid call of a declared tool or an answer; whether it
is the right call is what the trajectory evaluators measure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm._types import ToolCall

__all__ = ["ToolSpec", "check_tools", "plain_messages", "read_reply", "reply_schema", "tool_prompt"]

_ANY_OBJECT: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One declared tool: its name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


def check_tools(tools: object) -> list[ToolSpec]:
    """``tools`` (OpenAI's wire format) as ``ToolSpec``s; a malformed entry is named.

    >>> check_tools([{"type": "function", "function": {"name": "lookup_order"}}])[0].name
    'lookup_order'
    """
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise ConfigError(f"tools must be a list of OpenAI tool entries, got {tools!r}")
    specs: list[ToolSpec] = []
    for index, entry in enumerate(tools):
        where = f"tools[{index}]"
        function = entry.get("function") if isinstance(entry, Mapping) else None
        if not isinstance(entry, Mapping) or entry.get("type", "function") != "function":
            raise ConfigError(
                f"{where} must be {{'type': 'function', 'function': ...}}, got {entry!r}"
            )
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ConfigError(
                f"{where}.function must be an object with a str 'name', got {function!r}"
            )
        name = function["name"]
        if not name or any(spec.name == name for spec in specs):
            raise ConfigError(f"{where}: tool name {name!r} is blank or given twice")
        parameters = function.get("parameters", _ANY_OBJECT)
        if not isinstance(parameters, Mapping):
            raise ConfigError(f"{where}.function.parameters must be a JSON schema object")
        description = function.get("description", "")
        specs.append(
            ToolSpec(name, description if isinstance(description, str) else "", parameters)
        )
    if not specs:
        raise ConfigError("tools is empty; leave it out for a plain reply")
    return specs


def _chosen(specs: Sequence[ToolSpec], tool_choice: object) -> tuple[list[ToolSpec], bool]:
    """The tools a reply may call, and whether it may answer instead."""
    if tool_choice is None or tool_choice == "auto":
        return list(specs), True
    if tool_choice == "required":
        return list(specs), False
    if tool_choice == "none":
        return [], True
    function = tool_choice.get("function") if isinstance(tool_choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    for spec in specs:
        if spec.name == name:
            return [spec], False
    known = ", ".join(spec.name for spec in specs)
    raise ConfigError(
        f"tool_choice must be 'auto', 'required', 'none' or "
        f"{{'type': 'function', 'function': {{'name': one of {known}}}}}, got {tool_choice!r}"
    )


def reply_schema(specs: Sequence[ToolSpec], tool_choice: object = None) -> dict[str, Any]:
    """The JSON schema a reply must follow: a call of one of the tools, or an answer.

    >>> schema = reply_schema(check_tools([{"type": "function", "function": {"name": "t"}}]))
    >>> [branch["required"] for branch in schema["anyOf"]]
    [['tool', 'arguments'], ['answer']]
    """
    tools, may_answer = _chosen(specs, tool_choice)
    branches = [_closed(tool={"const": s.name}, arguments=dict(s.parameters)) for s in tools]
    if may_answer:
        branches.append(_closed(answer={"type": "string"}))
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _closed(**properties: Any) -> dict[str, Any]:
    """An object schema with exactly ``properties``, each required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def tool_prompt(specs: Sequence[ToolSpec], tool_choice: object = None) -> str:
    """The system text that tells the model which tools it has and how to reply."""
    tools, may_answer = _chosen(specs, tool_choice)
    lines = ["You can call these tools:"]
    for spec in tools:
        properties = spec.parameters.get("properties")
        names = ", ".join(properties) if isinstance(properties, Mapping) else ""
        about = f": {spec.description}" if spec.description else ""
        lines.append(f"- {spec.name}({names}){about}")
    lines.append("")
    lines.append('To call a tool, reply with JSON: {"tool": "<name>", "arguments": {...}}.')
    if may_answer:
        lines.append('To answer the user, reply with JSON: {"answer": "<your answer>"}.')
    return "\n".join(lines)


def plain_messages(
    messages: Sequence[Mapping[str, Any]], specs: Sequence[ToolSpec], tool_choice: object = None
) -> list[dict[str, str]]:
    """``messages`` (wire format) as plain role/content turns the chat template can show.

    The tool instructions go first in the system message; an assistant turn
    that called tools shows the calls as the JSON the model writes; a tool
    result becomes a user turn naming the tool.
    """
    out: list[dict[str, str]] = []
    instructions = tool_prompt(specs, tool_choice)
    for message in messages:
        role = str(message.get("role", ""))
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "system":
            instructions = f"{text.rstrip()}\n\n{instructions}" if text.strip() else instructions
            continue
        if role == "assistant" and message.get("tool_calls"):
            calls = [_call_text(call) for call in message["tool_calls"]]
            out.append({"role": "assistant", "content": "\n".join(calls)})
        elif role == "tool":
            name = message.get("name") or "the tool"
            out.append({"role": "user", "content": f"Result of {name}: {text}"})
        elif role == "assistant":
            out.append({"role": "assistant", "content": json.dumps({"answer": text})})
        else:
            out.append({"role": role, "content": text})
    return [{"role": "system", "content": instructions}, *out]


def _call_text(call: object) -> str:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping):
        raise ConfigError(f"an assistant message's tool call must carry a 'function', got {call!r}")
    arguments = function.get("arguments", "{}")
    try:
        decoded = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        decoded = arguments
    return json.dumps({"tool": function.get("name"), "arguments": decoded}, ensure_ascii=False)


def read_reply(text: str, call_index: int) -> tuple[str, tuple[ToolCall, ...]] | None:
    """The answer text and tool calls of a grammar-constrained reply; ``None`` when it is
    not one (a reply cut at the token limit).

    ``call_index`` makes the call's id: derived from the request, so that a
    replayed reply carries the id the live one did.

    >>> read_reply('{"tool": "lookup_order", "arguments": {"order_id": "A1"}}', 3)[1][0].name
    'lookup_order'
    >>> read_reply('{"answer": "Done."}', 0)
    ('Done.', ())
    """
    try:
        # strict=False: the grammar lets a string hold a raw newline, which JSON
        # proper escapes; the value is still what the model meant.
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("answer"), str):
        return value["answer"], ()
    name, arguments = value.get("tool"), value.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        return None
    digest = hashlib.sha256(f"{call_index}:{text}".encode()).hexdigest()[:12]
    return "", (ToolCall(f"call_{digest}", name, arguments),)
