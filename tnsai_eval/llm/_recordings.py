"""One recorded reply as JSON: encoding, masking and the checks made when it is read back.

``ResponseStore`` decides where entries live (cassette files, the older
per-reply files); this module decides what an entry holds. An entry is::

    {"request": {"model", "messages", "params", "sample"},
     "response": {"text", "model", "usage", "finish_reason", "tool_calls", "logprobs"?},
     "server": "<redacted address>" | null,
     "key_format": 2}          # only on replies migrated from format 1/2 (see _store)

Before an entry is written, every known secret in it is masked
(``masker()``, built on ``tnsai_eval._util.secrets.mask``): a server that
echoes the client's key back, in the reply text, the model name, a
log-probability token or a tool call, does not get it committed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

from tnsai_eval._util.secrets import known_secrets, mask
from tnsai_eval.errors import ConfigError, StoreError
from tnsai_eval.llm._types import Completion, TokenLogprob, ToolCall, Usage

__all__ = ["MAX_DEPTH", "decode_json", "dump_json", "encode_entry", "entry_completion", "masker"]

# A recording nested deeper than this is not one we wrote (ours are shallow,
# bar the schemas in a request's parameters).
MAX_DEPTH = 64


def encode_entry(
    request: dict[str, Any],
    completion: Completion,
    server: str | None,
    prompt_start: Callable[[], str],
) -> dict[str, Any]:
    """The entry recording ``completion`` as the reply to ``request`` (a ``to_dict()``),
    answered by ``server`` (an address already redacted).

    Not masked yet (``masker()`` does that before it is written); a NaN or
    infinite log-probability (not JSON) raises ``ConfigError`` naming the prompt
    (``prompt_start()``, asked only then: masking it reads the environment).
    """
    response: dict[str, Any] = {
        "text": completion.text,
        "model": completion.model,
        "usage": dataclasses.asdict(completion.usage),
        "finish_reason": completion.finish_reason,
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in completion.tool_calls
        ],
    }
    if completion.logprobs is not None:
        response["logprobs"] = [
            {
                "token": item.token,
                "logprob": _finite(item.logprob, prompt_start),
                "top_logprobs": [
                    [token, _finite(logprob, prompt_start)] for token, logprob in item.top_logprobs
                ],
            }
            for item in completion.logprobs
        ]
    return {
        "server": server or None,
        "request": request,
        "response": response,
    }


def _finite(value: float, prompt_start: Callable[[], str]) -> float:
    if not math.isfinite(value):
        raise ConfigError(
            f"the reply to {prompt_start()!r} cannot be recorded: log-probability {value!r} "
            "is not a JSON number"
        )
    return value


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {fn(str(k)): _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_map_strings(item, fn) for item in value]
    return value


def masker() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A function masking every secret known *now* in an entry (a copy; the same entry
    when there is nothing to mask).

    The secrets are looked up once (``known_secrets`` reads the environment),
    and an entry is first checked as one compact JSON text: JSON escapes a
    string character by character, so a secret occurs in a string exactly when
    its escaped form occurs in the text. Only an entry that holds one (or a
    ``scheme://...@`` that may carry a password) is walked and masked string by
    string, keys included, with ``mask`` itself.
    """
    secrets = known_secrets()
    escaped = [json.dumps(s, ensure_ascii=False)[1:-1] for s in secrets]

    def string(text: str) -> str:
        if "@" in text or any(secret in text for secret in secrets):
            return mask(text)
        return text

    def masked(entry: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(entry, ensure_ascii=False)
        if not any(e in text for e in escaped) and not ("@" in text and "://" in text):
            return entry
        copy: dict[str, Any] = _map_strings(entry, string)
        return copy

    return masked


# Levels laid out one item a line; below them each value is one compact line.
_EXPANDED_LEVELS = 5
_COMPACT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)


def dump_json(value: Any, *, level: int = 0) -> str:
    """``value`` as indented JSON with sorted keys, whose innermost values sit one per line.

    >>> message = {"role": "user", "content": "hi"}
    >>> print(dump_json({"replies": {"k1": {"request": {"messages": [message], "sample": 0}}}}))
    {
      "replies": {
        "k1": {
          "request": {
            "messages": [
              {"content": "hi", "role": "user"}
            ],
            "sample": 0
          }
        }
      }
    }

    In a cassette that puts each message, each tool call and each
    log-probability token of a reply on a line of its own, which is what a
    reviewer diffs. It is also faster than ``json.dumps(indent=2)``, whose
    indentation turns off the json module's C encoder: writing a cassette was
    most of what recording cost per reply. A NaN or infinity raises ``ValueError``.
    """
    if isinstance(value, str):
        return _COMPACT.encode(value)
    if value is None or isinstance(value, bool):
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int):
        return int.__repr__(value)
    if level >= _EXPANDED_LEVELS or not isinstance(value, dict | list) or not value:
        return _COMPACT.encode(value)
    inner = "\n" + "  " * (level + 1)
    if isinstance(value, dict):
        items = [
            _COMPACT.encode(str(key)) + ": " + dump_json(value[key], level=level + 1)
            for key in sorted(value)
        ]
        return "{" + inner + ("," + inner).join(items) + "\n" + "  " * level + "}"
    items = [dump_json(item, level=level + 1) for item in value]
    return "[" + inner + ("," + inner).join(items) + "\n" + "  " * level + "]"


def decode_json(data: bytes, where: str) -> Any:
    """The JSON value in ``data``; a StoreError naming ``where`` and what is wrong."""

    def bad(problem: str) -> StoreError:
        return StoreError(f"recorded response {where!r} {problem}", location=where)

    try:
        # Only a hand edit or a bad merge can make a file unreadable; writes are atomic.
        value = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise bad(f"is not UTF-8 (byte {exc.start})") from exc
    except RecursionError as exc:
        raise bad("is nested too deeply") from exc
    except ValueError as exc:
        raise bad(f"is not valid JSON: {exc}") from exc
    if _depth(value) > MAX_DEPTH:
        raise bad("is nested too deeply")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if not isinstance(value, dict | list):
        return level
    children = value.values() if isinstance(value, dict) else value
    return max((_depth(v, level + 1) for v in children), default=level + 1)


def entry_completion(response: Any, where: str) -> Completion:
    """A ``Completion`` (``cached=True``) from a stored ``response``; StoreError names the field."""

    def bad(field: str, value: Any, expected: str) -> StoreError:
        return StoreError(
            f"recorded response {where!r}: response.{field} must be {expected}, got {value!r:.80}",
            location=where,
        )

    if not isinstance(response, dict):
        raise bad("", response, "an object")
    text = response.get("text")
    if not isinstance(text, str):
        raise bad("text", text, "a string")
    model = response.get("model", "")
    if not isinstance(model, str):
        raise bad("model", model, "a string")
    usage = response.get("usage") or {}
    if not isinstance(usage, dict):
        raise bad("usage", usage, "an object")
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        count = usage.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise bad(f"usage.{name}", count, "an int >= 0")
        counts.append(count)
    finish = response.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise bad("finish_reason", finish, "a string or null")
    calls = response.get("tool_calls") or []
    if not isinstance(calls, list):
        raise bad("tool_calls", calls, "a list")
    tool_calls = []
    for i, call in enumerate(calls):
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("arguments", {}), dict)
        ):
            raise bad(f"tool_calls[{i}]", call, "{id: str, name: str, arguments: object}")
        tool_calls.append(ToolCall(call["id"], call["name"], call.get("arguments", {})))
    return Completion(
        text=text,
        usage=Usage(*counts),
        model=model,
        cached=True,
        finish_reason=finish,
        tool_calls=tuple(tool_calls),
        logprobs=_logprobs(response.get("logprobs"), bad),
        attempts=0,
    )


def _logprobs(value: Any, bad: Any) -> tuple[TokenLogprob, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise bad("logprobs", value, "a list or null")
    out = []
    for i, item in enumerate(value):
        top = item.get("top_logprobs", []) if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("token"), str)
            or not _is_number(item.get("logprob"))
            or not isinstance(top, list)
            or not all(
                isinstance(pair, list)
                and len(pair) == 2
                and isinstance(pair[0], str)
                and _is_number(pair[1])
                for pair in top
            )
        ):
            raise bad(
                f"logprobs[{i}]",
                item,
                "{token: str, logprob: number, top_logprobs: [[str, number]]}",
            )
        pairs = tuple((str(t), float(lp)) for t, lp in top)
        out.append(TokenLogprob(item["token"], float(item["logprob"]), pairs))
    return tuple(out)


def _is_number(value: Any) -> bool:
    # A finite float: 10**400 in a hand-edited file is refused here, by name,
    # rather than overflowing later in a caller's arithmetic.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
