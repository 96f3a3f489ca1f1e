"""An agent: a model, a system prompt that learns from feedback, and tools."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback._collector import FeedbackCollector
from tnsai_eval.feedback._tools import (
    Tool,
    ToolsInput,
    build_registry,
    tool_result_text,
    tool_schema,
)
from tnsai_eval.feedback._types import Feedback, FeedbackType
from tnsai_eval.llm import LLMClient, ToolCall

__all__ = ["DEFAULT_MAX_LEARNED_ITEMS", "Agent", "learned_behavior_section"]


# How many items each section of the learned prompt keeps (the most recent distinct ones).
DEFAULT_MAX_LEARNED_ITEMS = 20


def learned_behavior_section(
    feedback: Iterable[Feedback], *, max_items: int = DEFAULT_MAX_LEARNED_ITEMS
) -> str:
    """The ``# Learned Behavior`` block for ``feedback`` ('' when it adds nothing).

    CORRECTION content becomes ``## Rules``, PREFERENCE content ``## Preferences``,
    each item as given. Each section keeps the ``max_items`` most recent
    distinct texts (a text given twice is kept once, at its newest position),
    oldest first, so the prompt stays bounded however much feedback arrives.
    A subsection with no items is left out, and so is the whole block when
    both are empty: POSITIVE and NEGATIVE feedback (tool calls among them)
    never reach the prompt.

    >>> from tnsai_eval.feedback import Feedback
    >>> items = [Feedback.correction(t) for t in ("a", "b", "a", "c")]
    >>> print(learned_behavior_section(items, max_items=2))
    # Learned Behavior
    <BLANKLINE>
    ## Rules
    - a
    - c
    """
    items = list(feedback)
    rules = _recent_distinct(
        [fb.content for fb in items if fb.type is FeedbackType.CORRECTION], max_items
    )
    preferences = _recent_distinct(
        [fb.content for fb in items if fb.type is FeedbackType.PREFERENCE], max_items
    )
    return _section(rules, preferences)


def _recent_distinct(texts: Sequence[str], limit: int) -> list[str]:
    """The last ``limit`` distinct texts, oldest first; scans from the newest and stops early."""
    kept: dict[str, None] = {}
    for text in reversed(texts):
        if len(kept) >= limit:
            break
        kept.setdefault(text, None)
    return list(reversed(kept))


def _section(rules: Sequence[str], preferences: Sequence[str]) -> str:
    parts = []
    for title, lines in (("## Rules", rules), ("## Preferences", preferences)):
        if lines:
            parts.append(title + "\n" + "\n".join(f"- {line}" for line in lines))
    if not parts:
        return ""
    return "# Learned Behavior\n\n" + "\n\n".join(parts)


class Agent:
    """A conversational agent over any ``LLMClient``, with tools and feedback.

    ``chat(message)`` sends the effective system prompt (``system_prompt``)
    and the conversation so far, and returns the reply text. Tools are plain
    callables, registered by name (a dict) or by ``__name__`` (a list). When a
    reply asks for tools (``Completion.tool_calls``, which every client
    decodes and the response store keeps, so a replay acts as the live run
    did), the agent runs the tools, sends their
    results as ``tool`` messages and asks again, for at most
    ``max_tool_rounds`` rounds; a reply that still asks for tools after that
    is returned as it is, its tools not run. Tool failures are sent back to
    the model as text rather than raised. ``llm_params`` go with every call
    (e.g. ``{"temperature": 0}``). ``send_tool_schemas=True`` also sends the
    tools' JSON schemas as the ``tools`` parameter, which servers with
    function calling (OpenAI, vLLM, the llama.cpp server) need in order to
    offer them to the model; it is off by default because clients that take
    only plain chat parameters (``LocalLLM``) reject it.

    Feedback goes to ``feedback_collector``; with ``learning=False`` it is a
    no-op collector and the prompt never changes. One Agent holds one
    conversation and is not meant to be shared between threads.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> def lookup_order(order_id: str) -> str:
    ...     return f"order {order_id}: shipped"
    >>> agent = Agent(ScriptedLLM(default="Hello!"), "You are a support agent.",
    ...               tools=[lookup_order])
    >>> agent.chat("hi")
    'Hello!'
    >>> agent.call_tool("lookup_order", order_id="A1")
    'order A1: shipped'
    >>> _ = agent.feedback_collector.record_user_feedback("correction", "Greet by name.")
    >>> print(agent.system_prompt)
    You are a support agent.
    <BLANKLINE>
    # Learned Behavior
    <BLANKLINE>
    ## Rules
    - Greet by name.
    >>> agent.actions
    ['lookup_order']
    """

    def __init__(
        self,
        llm: LLMClient,
        system_prompt: str = "",
        tools: ToolsInput = None,
        learning: bool = True,
        *,
        max_tool_rounds: int = 5,
        llm_params: Mapping[str, Any] | None = None,
        send_tool_schemas: bool = False,
        session_id: str | None = None,
        max_learned_items: int = DEFAULT_MAX_LEARNED_ITEMS,
    ) -> None:
        if not callable(getattr(llm, "chat", None)):
            raise ConfigError(
                f"llm must be an LLMClient (an object with chat(messages, **params)), "
                f"got {type(llm).__name__}"
            )
        if not isinstance(system_prompt, str):
            raise ConfigError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        if isinstance(max_tool_rounds, bool) or not isinstance(max_tool_rounds, int):
            raise ConfigError(f"max_tool_rounds must be an int >= 0, got {max_tool_rounds!r}")
        if max_tool_rounds < 0:
            raise ConfigError(f"max_tool_rounds must be an int >= 0, got {max_tool_rounds!r}")
        if isinstance(max_learned_items, bool) or not isinstance(max_learned_items, int):
            raise ConfigError(f"max_learned_items must be an int >= 1, got {max_learned_items!r}")
        if max_learned_items < 1:
            raise ConfigError(f"max_learned_items must be an int >= 1, got {max_learned_items!r}")
        self.max_learned_items = max_learned_items
        # (collector version, max items) -> the learned section built for it.
        self._section_cache: tuple[tuple[int, int], str] | None = None
        self.llm = llm
        self.base_system_prompt = system_prompt
        self.learning = learning
        self.max_tool_rounds = max_tool_rounds
        self.llm_params = dict(llm_params or {})
        self.send_tool_schemas = send_tool_schemas
        self._tools = build_registry(tools)
        self._collector = FeedbackCollector(session_id=session_id, enabled=learning)
        self._history: list[dict[str, Any]] = []
        self._actions: list[str] = []

    def __repr__(self) -> str:
        return (
            f"Agent(llm={self.llm!r}, tools={sorted(self._tools)}, "
            f"learning={self.learning}, turns={len(self._history)})"
        )

    @property
    def feedback_collector(self) -> FeedbackCollector:
        """Where this agent's feedback and tool calls are recorded."""
        return self._collector

    @property
    def system_prompt(self) -> str:
        """The effective system prompt: the base prompt plus what was learned.

        Built from the collected CORRECTION and PREFERENCE feedback, with no
        model call: each section holds the ``max_learned_items`` (default 20)
        most recent distinct texts, so the prompt stays bounded. The section
        is rebuilt only when the collector changes.
        """
        section = self._learned_section()
        if not section:
            return self.base_system_prompt
        if not self.base_system_prompt:
            return section
        return f"{self.base_system_prompt.rstrip()}\n\n{section}"

    def _learned_section(self) -> str:
        key = (self._collector.version, self.max_learned_items)
        cached = self._section_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        limit = self.max_learned_items
        section = _section(
            self._collector.recent_contents(FeedbackType.CORRECTION, limit),
            self._collector.recent_contents(FeedbackType.PREFERENCE, limit),
        )
        self._section_cache = (key, section)
        return section

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The registered tools by name (read-only)."""
        return MappingProxyType(self._tools)

    @property
    def actions(self) -> list[str]:
        """Names of the tools run so far, in order (failed runs included)."""
        return list(self._actions)

    @property
    def history(self) -> list[dict[str, Any]]:
        """The conversation so far (user, assistant and tool messages), a copy."""
        return [dict(message) for message in self._history]

    def reset(self) -> None:
        """Start a new conversation; feedback and actions are kept."""
        self._history.clear()

    def register_tool(self, tool: Tool, name: str | None = None) -> None:
        """Add one tool, named ``name`` or its ``__name__``."""
        key = name if name is not None else getattr(tool, "__name__", "")
        for new_name, new_tool in build_registry({key: tool}).items():
            if new_name in self._tools:
                raise ConfigError(f"a tool named {new_name!r} is already registered")
            self._tools[new_name] = new_tool

    def call_tool(self, name: str, **kwargs: Any) -> Any:
        """Run tool ``name`` with ``kwargs`` and return its result.

        The call is appended to ``actions`` and recorded as POSITIVE feedback,
        or as NEGATIVE feedback carrying the error, which is then re-raised.
        An unknown name raises ``ConfigError`` naming the known tools.
        """
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none registered"
            raise ConfigError(f"unknown tool {name!r}; known tools: {known}")
        self._actions.append(name)
        try:
            result = tool(**kwargs)
        except Exception as error:
            self._collector.record_tool_call(
                name, ok=False, error=f"{type(error).__name__}: {error}"
            )
            raise
        self._collector.record_tool_call(name, ok=True)
        return result

    def chat(self, message: str) -> str:
        """Send ``message`` in the running conversation and return the reply text.

        If the model call fails the conversation is left as it was before
        this turn (tools already run stay in ``actions``) and the error is
        raised.
        """
        if not isinstance(message, str):
            raise ConfigError(f"message must be a str, got {type(message).__name__}")
        turn_start = len(self._history)
        self._history.append({"role": "user", "content": message})
        try:
            return self._run_turn()
        except BaseException:
            del self._history[turn_start:]
            raise

    def _run_turn(self) -> str:
        params = dict(self.llm_params)
        if self.send_tool_schemas and self._tools:
            params.setdefault("tools", [tool_schema(n, t) for n, t in self._tools.items()])
        rounds = 0
        while True:
            completion = self.llm.chat(self._messages(), **params)
            requests = completion.tool_calls
            if not requests or rounds >= self.max_tool_rounds:
                self._history.append({"role": "assistant", "content": completion.text})
                return completion.text
            rounds += 1
            self._history.append(
                {
                    "role": "assistant",
                    "content": completion.text,
                    "tool_calls": [_wire_call(request) for request in requests],
                }
            )
            for request in requests:
                self._history.append(
                    {
                        "role": "tool",
                        "tool_call_id": request.id,
                        "name": request.name,
                        "content": self._answer_tool_call(request),
                    }
                )

    def _messages(self) -> list[dict[str, Any]]:
        prompt = self.system_prompt
        system = [{"role": "system", "content": prompt}] if prompt else []
        return system + [dict(message) for message in self._history]

    def _answer_tool_call(self, request: ToolCall) -> str:
        # The model's mistakes go back to it as text so it can correct itself.
        if request.name not in self._tools:
            known = ", ".join(sorted(self._tools)) or "none"
            return f"error: unknown tool {request.name!r}; available tools: {known}"
        try:
            return tool_result_text(self.call_tool(request.name, **request.arguments))
        except Exception as error:
            return f"error: {type(error).__name__}: {error}"


def _wire_call(call: ToolCall) -> dict[str, Any]:
    """A tool call as the chat-completions wire format carries it in an assistant message."""
    return {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(dict(call.arguments), ensure_ascii=False, default=str),
        },
    }
