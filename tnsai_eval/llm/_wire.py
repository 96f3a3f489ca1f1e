"""The chat-completions wire format: request bodies out, ``Completion`` in.

Pure functions, no I/O, shared by the sync and async paths of ``OpenAIClient``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from tnsai_eval._util.plain import MAX_JSON_COUNT
from tnsai_eval._util.secrets import mask_then_cut
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm._types import (
    Completion,
    Message,
    MessagesInput,
    TokenLogprob,
    ToolCall,
    Usage,
    clamp_logprob,
    normalize_messages,
)

__all__ = [
    "MAX_PARAM_DEPTH",
    "ReplyProblem",
    "check_params",
    "completion_from_body",
    "decode_completion",
    "encode_request",
    "error_text",
    "wire_messages",
]

# How much of a bad body a ReplyProblem quotes. The client masks secrets and
# then cuts the message much shorter, so a key straddling this first cut lies
# beyond the final one and never shows.
_SHOWN = 4096
# How much of a tool call's unparsable arguments a ReplyProblem quotes.
_QUOTED = 200


# How deep call parameters (a response_format's schema, tools) may nest. A
# real schema is a few levels deep; a cyclic dict or a schema 500 objects deep
# (1,000 levels) would otherwise end in a bare RecursionError in the encoder
# or in any code that walks the parameters.
MAX_PARAM_DEPTH = 200


def check_params(params: Mapping[str, Any]) -> None:
    """ConfigError, before anything walks ``params``, when they nest too deep or hold a cycle.

    Depth first and without recursion, so a cycle is caught after
    ``MAX_PARAM_DEPTH`` steps down it.

    >>> loop = {"type": "object"}
    >>> loop["properties"] = {"self": loop}
    >>> check_params({"response_format": loop})
    Traceback (most recent call last):
    ...
    tnsai_eval.errors.ConfigError: request parameters nest deeper than 200 levels (a schema ...
    """
    stack: list[tuple[object, int]] = [(params, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth >= MAX_PARAM_DEPTH:
            raise ConfigError(
                f"request parameters nest deeper than {MAX_PARAM_DEPTH} levels (a schema "
                "that contains itself, or one nested far deeper than any model needs)"
            )
        stack.extend((child, depth + 1) for child in children)


class ReplyProblem(Exception):
    """Why a 2xx body is not a usable completion (the client turns it into BadResponseError)."""


def encode_request(
    default_model: str, messages: MessagesInput, params: Mapping[str, Any]
) -> tuple[str, bytes]:
    """The request's model and its JSON body.

    Bad input raises ConfigError, before any I/O. Parameters pass through
    unchanged, except that ``None`` values are left out and ``model=``
    replaces ``default_model``.

    >>> encode_request("m", "hi", {"temperature": 0, "seed": None})[1]
    b'{"model": "m", "temperature": 0, "messages": [{"role": "user", "content": "hi"}]}'
    """
    if params.get("stream"):
        raise ConfigError("stream=True is not supported: OpenAIClient returns whole replies")
    check_params(params)
    # Validates every message (naming the bad one) before the wire form is built.
    normalize_messages(messages)
    body: dict[str, Any] = {"model": default_model}
    body.update((k, v) for k, v in params.items() if v is not None)
    body["messages"] = wire_messages(messages)
    model = body["model"]
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a non-empty str, got {model!r}")
    try:
        content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise ConfigError(f"request parameters are not JSON-serializable: {exc}") from exc
    return model, content


def wire_messages(messages: MessagesInput) -> list[dict[str, Any]]:
    """``messages`` in the wire format; mapping items are kept whole, so that fields
    ``Message`` does not model (``tool_calls``, ``name``) go through."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [m.to_dict() if isinstance(m, Message) else dict(m) for m in messages]


def decode_completion(
    content: bytes, *, model: str, latency_s: float, attempts: int = 1
) -> Completion:
    """Read a 2xx chat-completion body; raise ReplyProblem saying what is wrong with it.

    ``model`` is used when the reply names none; a missing or odd ``usage``
    gives ``Usage()``; ``content: null`` (a tool-call-only reply) gives ``""``.
    See ``completion_from_body`` for the other fields.
    """
    try:
        data = json.loads(content)
    except RecursionError:
        raise ReplyProblem("the body is JSON nested too deeply to decode") from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        raise ReplyProblem(
            f"the body is not JSON: {content[:_SHOWN].decode(errors='replace')!r}"
        ) from None
    if not isinstance(data, dict):
        raise ReplyProblem(f"the body is a JSON {type(data).__name__}, not an object")
    return completion_from_body(data, model=model, latency_s=latency_s, attempts=attempts)


def completion_from_body(
    data: Mapping[str, Any], *, model: str, latency_s: float, attempts: int = 1
) -> Completion:
    """A ``Completion`` from a decoded OpenAI-shaped body (the server's or llama.cpp's).

    Decodes once what callers need, so none reads ``raw``: the text, usage,
    ``finish_reason`` (a string or ``None``), ``tool_calls`` (each with its
    arguments decoded from their JSON string) and ``logprobs`` (OpenAI's
    ``choices[0].logprobs.content``, or ``None`` when the reply has none). A
    part that is present but cannot be decoded raises ReplyProblem.

    >>> body = {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c1",
    ...     "function": {"name": "lookup", "arguments": '{"id": 7}'}}]},
    ...     "finish_reason": "tool_calls"}]}
    >>> reply = completion_from_body(body, model="m", latency_s=0.0)
    >>> reply.finish_reason, reply.tool_calls[0].name, dict(reply.tool_calls[0].arguments)
    ('tool_calls', 'lookup', {'id': 7})
    """
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        if "error" in data:
            raise ReplyProblem(f"the body is an error: {error_text(data)}")
        raise ReplyProblem(f"the body has no choices[0].message: {_dump(data)}")
    assert isinstance(choice, dict)
    text = message.get("content")
    if text is None:
        text = ""
    elif not isinstance(text, str):
        raise ReplyProblem(f"choices[0].message.content is a {type(text).__name__}, not a str")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise ReplyProblem(f"choices[0].finish_reason is a {type(finish).__name__}, not a str")
    reply_model = data.get("model")
    return Completion(
        text=text,
        usage=_usage(data.get("usage")),
        model=reply_model if isinstance(reply_model, str) and reply_model else model,
        latency_s=latency_s,
        raw=data,
        finish_reason=finish,
        tool_calls=_tool_calls(message.get("tool_calls")),
        logprobs=_logprobs(choice.get("logprobs")),
        attempts=attempts,
    )


def _dump(data: Any) -> str:
    try:
        return json.dumps(data)[:_SHOWN]
    except (ValueError, RecursionError):
        return "(undisplayable)"


def _tool_calls(value: object) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ReplyProblem(f"choices[0].message.tool_calls is a {type(value).__name__}, not a list")
    calls = []
    for index, call in enumerate(value):
        where = f"choices[0].message.tool_calls[{index}]"
        if not isinstance(call, dict):
            raise ReplyProblem(f"{where} is a {type(call).__name__}, not an object")
        function = call.get("function")
        if not isinstance(function, dict):
            raise ReplyProblem(f"{where} has no function object")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise ReplyProblem(f"{where}.function.name is {name!r}, not a tool name")
        call_id = call.get("id")
        # Some servers leave the id out; one is made so tool messages can refer to it.
        call_id = call_id if isinstance(call_id, str) and call_id else f"call_{index}"
        calls.append(ToolCall(call_id, name, _arguments(function.get("arguments"), where)))
    return tuple(calls)


def _arguments(value: object, where: str) -> dict[str, Any]:
    # OpenAI sends a JSON string; some servers send the object itself.
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        text = value
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            # Masked before it is cut: a key the server echoed must not leave its start.
            raise ReplyProblem(
                f"{where}.function.arguments is not valid JSON ({exc}): "
                f"{mask_then_cut(text, _QUOTED)!r}"
            ) from None
    if not isinstance(value, dict):
        raise ReplyProblem(
            f"{where}.function.arguments must be a JSON object, got {type(value).__name__}"
        )
    return value


def _logprobs(value: object) -> tuple[TokenLogprob, ...] | None:
    if value is None:
        return None
    content = value.get("content") if isinstance(value, dict) else None
    if content is None:
        return None
    if not isinstance(content, list):
        raise ReplyProblem("choices[0].logprobs.content is not a list")
    out = []
    for index, item in enumerate(content):
        where = f"choices[0].logprobs.content[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            raise ReplyProblem(f"{where} has no token")
        top = item.get("top_logprobs") or []
        if not isinstance(top, list):
            raise ReplyProblem(f"{where}.top_logprobs is not a list")
        pairs = []
        for alternative in top:
            if not isinstance(alternative, dict) or not isinstance(alternative.get("token"), str):
                raise ReplyProblem(f"{where}.top_logprobs holds an item without a token")
            pairs.append((alternative["token"], _logprob(alternative.get("logprob"), where)))
        out.append(TokenLogprob(item["token"], _logprob(item.get("logprob"), where), tuple(pairs)))
    return tuple(out)


def _logprob(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReplyProblem(f"{where}: logprob {value!r} is not a number")
    number = clamp_logprob(value)  # 10**400 (no float holds it) included
    if math.isnan(number):
        raise ReplyProblem(f"{where}: logprob {value!r} is not a number")
    return number


def error_text(data: Mapping[str, Any]) -> str:
    """The human part of an error body: OpenAI's ``{"error": {"message"}}`` and kin."""
    error = data.get("error", data.get("detail"))
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error) if error is not None else json.dumps(data)


def _usage(value: object) -> Usage:
    if not isinstance(value, dict):
        return Usage()
    return Usage(_count(value.get("prompt_tokens")), _count(value.get("completion_tokens")))


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    # A negative count or one past any real count (10**400 overflows a cost) is odd usage.
    return value if 0 <= value <= MAX_JSON_COUNT else 0
