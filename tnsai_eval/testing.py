"""Fakes shipped for users' own tests (and ours): a scripted model client.

``ScriptedLLM`` is a real ``LLMClient``: every component accepts it, exactly as
they accept ``OpenAIClient`` or ``LocalLLM``.

>>> llm = ScriptedLLM(["first", "second"], rules=[(r"capital of France", "Paris")])
>>> llm.chat("What is the capital of France?").text   # the queue comes first
'first'
>>> llm.chat("hi").text
'second'
>>> llm.chat("What is the capital of France?").text   # queue empty: rules
'Paris'
>>> len(llm.calls)
3
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from tnsai_eval.errors import LLMError
from tnsai_eval.llm import (
    Completion,
    Message,
    MessagesInput,
    Usage,
    check_response_format,
    estimate_tokens,
    normalize_messages,
)

__all__ = ["ScriptExhausted", "ScriptedCall", "ScriptedLLM"]

Reply: TypeAlias = str | Completion | BaseException | type[BaseException]
ReplyFn: TypeAlias = Callable[[list[Message], dict[str, Any]], "str | Completion"]
RuleReply: TypeAlias = str | Completion | BaseException | Callable[["re.Match[str]"], str]


class ScriptExhausted(LLMError):
    """ScriptedLLM was called but had no queued reply, matching rule or function.

    It is an ``LLMError`` so components treat it like any failed call.
    """


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One recorded call: the normalized messages and the parameters passed."""

    messages: tuple[Message, ...]
    params: Mapping[str, Any]

    @property
    def prompt(self) -> str:
        """The last user message of the call ('' when there is none)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""

    @property
    def system(self) -> str:
        """The system message of the call ('' when there is none)."""
        return next((m.content for m in self.messages if m.role == "system"), "")


class ScriptedLLM:
    """A deterministic fake model.

    Each call is answered by the first of these that applies:

    1. the next item of ``replies`` (a str, a ``Completion``, or an exception
       instance or class, which is raised to simulate a failure);
    2. the first of ``rules`` whose regex matches (``re.search``) the last user
       message; the reply may be a str, a ``Completion``, an exception, or a
       function of the match;
    3. ``fn(messages, params)``;
    4. ``default``.

    Otherwise ``ScriptExhausted`` is raised. Every call is recorded in
    ``calls``. ``usage`` sets the token figures of str replies: ``None`` reports
    none (zeros, like a server without ``usage``), ``"estimate"`` estimates
    them from the text, a ``Usage`` is reported as given. ``latency_s`` makes
    each call take that long (for concurrency tests). Thread-safe.
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        rules: Sequence[tuple[str, RuleReply]] | Mapping[str, RuleReply] = (),
        fn: ReplyFn | None = None,
        default: str | None = None,
        usage: Usage | Literal["estimate"] | None = None,
        model: str = "scripted",
        latency_s: float = 0.0,
    ) -> None:
        self._queue: deque[Reply] = deque(replies)
        items = rules.items() if isinstance(rules, Mapping) else rules
        self._rules = [(re.compile(pattern), reply) for pattern, reply in items]
        self._fn = fn
        self._default = default
        self._usage = usage
        self.model = model
        self.latency_s = latency_s
        self.calls: list[ScriptedCall] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"ScriptedLLM(model={self.model!r}, queued={len(self._queue)}, calls={len(self.calls)})"
        )

    @property
    def prompts(self) -> list[str]:
        """The last user message of every call so far, in order."""
        return [call.prompt for call in self.calls]

    def add_replies(self, *replies: Reply) -> None:
        """Queue more replies."""
        with self._lock:
            self._queue.extend(replies)

    def chat(
        self,
        messages: MessagesInput,
        *,
        response_format: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Completion:
        """The next scripted reply (queue, then rules, then ``fn``, then ``default``).

        ``response_format`` is checked like a real client does and recorded in
        the call's ``params``; the scripted reply is not made to match it.

        >>> llm = ScriptedLLM(default='{"a": 1}')
        >>> _ = llm.chat("json please", response_format={"type": "json_object"})
        >>> llm.calls[0].params
        {'response_format': {'type': 'json_object'}}
        """
        if self.latency_s:
            time.sleep(self.latency_s)
        return self._answer(messages, _with_format(params, response_format))

    async def achat(
        self,
        messages: MessagesInput,
        *,
        response_format: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Completion:
        """Like ``chat``, awaiting ``latency_s`` instead of sleeping."""
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return self._answer(messages, _with_format(params, response_format))

    def _answer(self, messages: MessagesInput, params: dict[str, Any]) -> Completion:
        normalized = normalize_messages(messages)
        call = ScriptedCall(tuple(normalized), dict(params))
        with self._lock:
            self.calls.append(call)
            reply = self._pick(normalized, call.prompt, params)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, type) and issubclass(reply, BaseException):
            raise reply()
        if isinstance(reply, Completion):
            return reply
        return Completion(text=reply, usage=self._usage_for(normalized, reply), model=self.model)

    def _pick(self, messages: list[Message], prompt: str, params: dict[str, Any]) -> Reply:
        if self._queue:
            return self._queue.popleft()
        for pattern, rule_reply in self._rules:
            match = pattern.search(prompt)
            if match is None:
                continue
            if callable(rule_reply) and not isinstance(rule_reply, BaseException):
                return rule_reply(match)
            return rule_reply
        if self._fn is not None:
            return self._fn(messages, params)
        if self._default is not None:
            return self._default
        return ScriptExhausted(
            f"ScriptedLLM has no reply left for prompt {prompt[:60]!r}", model=self.model
        )

    def _usage_for(self, messages: list[Message], text: str) -> Usage:
        if self._usage is None:
            return Usage()
        if isinstance(self._usage, Usage):
            return self._usage
        prompt_tokens = sum(estimate_tokens(m.content) for m in messages)
        return Usage(prompt_tokens, estimate_tokens(text))


def _with_format(
    params: dict[str, Any], response_format: Mapping[str, Any] | None
) -> dict[str, Any]:
    if response_format is None:
        return params
    return {**params, "response_format": check_response_format(response_format)}
