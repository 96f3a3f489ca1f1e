"""The chat-completions wire format: request bodies out, ``Completion`` in.

Pure functions, no I/O, shared by the sync and async paths of ``OpenAIClient``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm._types import Completion, Message, MessagesInput, Usage, normalize_messages

__all__ = ["ReplyProblem", "decode_completion", "encode_request", "error_text"]


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
    # Validates every message (naming the bad one); the wire form keeps mapping
    # items whole so that fields we do not model (tool_calls, name) go through.
    normalize_messages(messages)
    wire: list[Mapping[str, Any]]
    if isinstance(messages, str):
        wire = [{"role": "user", "content": messages}]
    else:
        wire = [m.to_dict() if isinstance(m, Message) else dict(m) for m in messages]
    body: dict[str, Any] = {"model": default_model}
    body.update((k, v) for k, v in params.items() if v is not None)
    body["messages"] = wire
    model = body["model"]
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a non-empty str, got {model!r}")
    try:
        content = json.dumps(body, ensure_ascii=False, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"request parameters are not JSON-serializable: {exc}") from exc
    return model, content


def decode_completion(content: bytes, *, model: str, latency_s: float) -> Completion:
    """Read a 2xx chat-completion body; raise ReplyProblem saying what is wrong with it.

    ``model`` is used when the reply names none; a missing or odd ``usage``
    gives ``Usage()``; ``content: null`` (a tool-call-only reply) gives ``""``.
    """
    try:
        data = json.loads(content)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        raise ReplyProblem(
            f"the body is not JSON: {content[:200].decode(errors='replace')!r}"
        ) from None
    if not isinstance(data, dict):
        raise ReplyProblem(f"the body is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        if "error" in data:
            raise ReplyProblem(f"the body is an error: {error_text(data)}")
        raise ReplyProblem(f"the body has no choices[0].message: {json.dumps(data)[:200]}")
    text = message.get("content")
    if text is None:
        text = ""
    elif not isinstance(text, str):
        raise ReplyProblem(f"choices[0].message.content is a {type(text).__name__}, not a str")
    reply_model = data.get("model")
    return Completion(
        text=text,
        usage=_usage(data.get("usage")),
        model=reply_model if isinstance(reply_model, str) and reply_model else model,
        latency_s=latency_s,
        raw=data,
    )


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
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
