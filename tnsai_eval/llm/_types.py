"""The records and the protocol that every model client shares."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from tnsai_eval.errors import ConfigError

__all__ = [
    "LOGPROB_FLOOR",
    "AsyncLLMClient",
    "Completion",
    "LLMClient",
    "Message",
    "MessagesInput",
    "TokenLogprob",
    "ToolCall",
    "Usage",
    "acall",
    "call_tokens",
    "call_usage",
    "clamp_logprob",
    "estimate_tokens",
    "last_user_message",
    "normalize_messages",
]

_ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. ``role`` is system, user, assistant or tool."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ConfigError(
                f"message role {self.role!r} is not one of {', '.join(sorted(_ROLES))}"
            )
        if not isinstance(self.content, str):
            raise ConfigError(f"message content must be a str, got {type(self.content).__name__}")

    def to_dict(self) -> dict[str, str]:
        """The ``{"role", "content"}`` mapping of the chat-completions wire format."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call, as the server reported them (or estimated)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model asked for: its id, the tool's name and its arguments.

    ``arguments`` is the decoded JSON object (the wire carries it as a string);
    a reply whose arguments are not a JSON object is a ``BadResponseError``.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token, its log-probability and the most likely alternatives.

    ``top_logprobs`` holds ``(token, logprob)`` pairs, most likely first, when
    the call asked for them (plain floats, so they store and replay as JSON).
    """

    token: str
    logprob: float
    top_logprobs: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        # Normalized here, whoever builds it (a live reply, a replayed one, a
        # fake): every log-probability lies in [LOGPROB_FLOOR, 0].
        top = tuple((token, clamp_logprob(value)) for token, value in self.top_logprobs)
        object.__setattr__(self, "logprob", clamp_logprob(self.logprob))
        object.__setattr__(self, "top_logprobs", top)


# A log-probability of -inf (probability 0) is stored as this: JSON has no
# infinity, and e**-9999 is 0 for every use the judge makes of it.
LOGPROB_FLOOR = -9999.0


def clamp_logprob(value: float) -> float:
    """``value`` as a log-probability in [LOGPROB_FLOOR, 0]; NaN stays NaN (callers refuse it).

    Rounding can put a certain token a hair above 0; a hostile server can send
    10**400, which no float holds.

    >>> clamp_logprob(1e-9), clamp_logprob(-10**400), clamp_logprob(10**400)
    (0.0, -9999.0, 0.0)
    """
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        return number
    return min(max(number, LOGPROB_FLOOR), 0.0)


@dataclass(frozen=True, slots=True)
class Completion:
    """The reply to one chat call, normalized once so no caller reads provider JSON.

    ``finish_reason`` is the server's (``"stop"``, ``"length"``, ``"tool_calls"``
    ...) or ``None`` when unknown; ``tool_calls`` the calls the model asked for;
    ``logprobs`` the generated tokens' log-probabilities when the call asked for
    them. ``attempts`` counts the HTTP attempts the call took (1 plus retries; 0
    for a reply served from a response store). ``raw`` keeps the server's decoded
    JSON body for debugging only: it is not stored, so nothing may depend on it.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    latency_s: float = 0.0
    cached: bool = False
    raw: Mapping[str, Any] | None = None
    _: KW_ONLY
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    logprobs: tuple[TokenLogprob, ...] | None = None
    attempts: int = 1


MessagesInput: TypeAlias = str | Sequence[Message | Mapping[str, Any]]


@runtime_checkable
class LLMClient(Protocol):
    """Anything with ``chat(messages, **params) -> Completion`` is a model client.

    The library's clients also take ``response_format=`` (OpenAI's shape:
    ``{"type": "json_schema", "json_schema": {"name", "schema"}}`` or
    ``{"type": "json_object"}``) among the parameters, and constrain the reply
    to it; ``logprobs=True`` with ``top_logprobs=k`` asks for
    ``Completion.logprobs``.
    """

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        """One reply to ``messages`` (a str is one user message); ``params`` are
        sampling parameters such as ``temperature``, ``max_tokens`` or
        ``response_format``."""
        ...


@runtime_checkable
class AsyncLLMClient(LLMClient, Protocol):
    """A client that also has a native ``achat``; used for concurrency."""

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        """Like ``chat`` without blocking the event loop."""
        ...


def normalize_messages(messages: MessagesInput) -> list[Message]:
    """Turn a str or a sequence of Message / ``{"role", "content"}`` into Messages.

    Raises ConfigError naming the offending item when one is malformed.
    """
    if isinstance(messages, str):
        return [Message("user", messages)]
    out: list[Message] = []
    for i, item in enumerate(messages):
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, Mapping):
            if "role" not in item or "content" not in item:
                raise ConfigError(
                    f"message {i} must have 'role' and 'content' keys, got {sorted(item)!r}"
                )
            content = item["content"]
            out.append(Message(str(item["role"]), "" if content is None else str(content)))
        else:
            raise ConfigError(
                f"message {i} must be a Message or a mapping, got {type(item).__name__}"
            )
    if not out:
        raise ConfigError("messages must not be empty")
    return out


def last_user_message(messages: MessagesInput) -> str:
    """The content of the last user message ('' when there is none)."""
    for message in reversed(normalize_messages(messages)):
        if message.role == "user":
            return message.content
    return ""


def estimate_tokens(text: str) -> int:
    """A rough token count (about 4 characters a token) for clients that report none."""
    return (len(text) + 3) // 4


def call_usage(completion: Completion, messages: MessagesInput) -> Usage:
    """The tokens one call used: the reply's reported usage, else an estimate of both sides.

    The library's one counting rule (the scoring engine, the refinement loop,
    judges and every ``CallEvent``), so that a call counts the same
    everywhere even when a server reports no usage.

    >>> call_usage(Completion(text="Paris", usage=Usage(7, 2)), "Capital?")
    Usage(prompt_tokens=7, completion_tokens=2)
    >>> call_usage(Completion(text="Paris"), "Capital of France?")
    Usage(prompt_tokens=5, completion_tokens=2)
    """
    if completion.usage.total_tokens > 0:
        return completion.usage
    if isinstance(messages, str):
        sent = messages
    else:
        sent = "".join(f"{m.role}:{m.content}" for m in normalize_messages(messages))
    return Usage(estimate_tokens(sent), estimate_tokens(completion.text))


def call_tokens(completion: Completion, prompt: str) -> int:
    """``call_usage``'s total: the tokens one call used.

    >>> call_tokens(Completion(text="Paris"), "Capital of France?")
    7
    """
    return call_usage(completion, prompt).total_tokens


async def acall(client: LLMClient, messages: MessagesInput, **params: Any) -> Completion:
    """Call ``client`` without blocking the event loop.

    Uses the client's own ``achat`` when it has one, else runs ``chat`` in a
    worker thread, as API.md promises for clients that are sync only.
    """
    achat = getattr(client, "achat", None)
    if achat is not None and asyncio.iscoroutinefunction(achat):
        result: Completion = await achat(messages, **params)
        return result
    return await asyncio.to_thread(client.chat, messages, **params)
