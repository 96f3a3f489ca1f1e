"""An agent: a model, a prompt that learns from feedback, and tools; each run a trajectory."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from tnsai_eval._util.checks import whole
from tnsai_eval.agents._tools import (
    Tool,
    ToolsInput,
    build_registry,
    tool_result_text,
    tool_schema,
)
from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback import FeedbackCollector
from tnsai_eval.llm import Completion, LLMClient
from tnsai_eval.llm import ToolCall as ToolRequest
from tnsai_eval.records import ModelTurn, Step, StopReason, ToolCall, Trajectory

__all__ = ["Agent"]

# Model calls per input when neither max_steps nor max_tool_rounds is given:
# five rounds of tools, then the answer.
_DEFAULT_MAX_STEPS = 6


class Agent:
    """A conversational agent over any ``LLMClient``, with tools and feedback.

    ``chat(message)`` sends the effective system prompt (``system_prompt``)
    and the conversation so far, and returns the reply text; ``run(input)``
    does the same in a new conversation and returns the whole ``Trajectory``
    (each model turn and tool call, the final output, calls, tokens and why it
    stopped). Tools are plain callables, registered by name (a dict) or by
    ``__name__`` (a list). When a reply asks for tools
    (``Completion.tool_calls``, which every client decodes and the response
    store keeps, so a replay acts as the live run did), the agent runs the
    tools, sends their results as ``tool`` messages and asks again. One input
    gets at most ``max_steps`` model calls (default 6): a reply that still asks
    for tools at the cap is kept as it is, its tools not run, and the run stops
    with ``StopReason.MAX_STEPS``. (``max_tool_rounds=n``, the older name, means
    ``max_steps=n + 1``.) Tool failures, and calls of tools that do not exist,
    go back to the model as text rather than raised. ``llm_params`` go with
    every call (e.g. ``{"temperature": 0}``). ``send_tool_schemas=True``
    also sends the tools' JSON schemas as the ``tools`` parameter (OpenAI's
    format, which ``OpenAIClient``, ``LocalLLM`` and the function-calling
    servers take), with ``tool_choice="auto"`` unless ``llm_params`` says
    otherwise: that is what lets the model call them. It is off by default so
    that an agent which calls its tools itself (``call_tool``) keeps getting
    plain replies; with tools offered, ``LocalLLM`` answers in the tool
    format.

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
        max_steps: int | None = None,
        max_tool_rounds: int | None = None,
        llm_params: Mapping[str, Any] | None = None,
        send_tool_schemas: bool = False,
        session_id: str | None = None,
        max_learned_items: int | None = None,
    ) -> None:
        if not callable(getattr(llm, "chat", None)):
            raise ConfigError(
                f"llm must be an LLMClient (an object with chat(messages, **params)), "
                f"got {type(llm).__name__}"
            )
        if not isinstance(system_prompt, str):
            raise ConfigError(f"system_prompt must be a str, got {type(system_prompt).__name__}")
        if max_steps is not None:
            whole("max_steps", max_steps, 1)
        if max_tool_rounds is not None:
            whole("max_tool_rounds", max_tool_rounds, 0)
            if max_steps is not None and max_steps != max_tool_rounds + 1:
                raise ConfigError(
                    f"max_steps={max_steps} and max_tool_rounds={max_tool_rounds} disagree "
                    "(max_tool_rounds=n means max_steps=n + 1); give one of them"
                )
            max_steps = max_tool_rounds + 1
        self.max_steps: int = _DEFAULT_MAX_STEPS if max_steps is None else max_steps
        self.llm = llm
        self.base_system_prompt = system_prompt
        self.learning = learning
        self.llm_params = dict(llm_params or {})
        self.send_tool_schemas = send_tool_schemas
        self._tools = build_registry(tools)
        learned = {} if max_learned_items is None else {"max_learned_items": max_learned_items}
        self._collector = FeedbackCollector(session_id=session_id, enabled=learning, **learned)
        self._history: list[dict[str, Any]] = []
        self._actions: list[str] = []

    def __repr__(self) -> str:
        return (
            f"Agent(llm={self.llm!r}, tools={sorted(self._tools)}, "
            f"learning={self.learning}, turns={len(self._history)})"
        )

    @property
    def max_tool_rounds(self) -> int:
        """Rounds of tool calls one input may take: ``max_steps - 1``."""
        return self.max_steps - 1

    @property
    def max_learned_items(self) -> int:
        """How many items each section of the learned prompt keeps (default 20)."""
        return self._collector.max_learned_items

    @property
    def feedback_collector(self) -> FeedbackCollector:
        """Where this agent's feedback and tool calls are recorded."""
        return self._collector

    @property
    def system_prompt(self) -> str:
        """The effective system prompt: the base prompt plus what was learned.

        Built from the collected CORRECTION and PREFERENCE feedback, with no
        model call: each section holds the ``max_learned_items`` (default 20)
        most recent distinct texts, so the prompt stays bounded
        (``FeedbackCollector.learned_section``).
        """
        section = self._collector.learned_section()
        if not section:
            return self.base_system_prompt
        if not self.base_system_prompt:
            return section
        return f"{self.base_system_prompt.rstrip()}\n\n{section}"

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
        return self._turn(message).output

    def run(self, input: str) -> Trajectory:
        """Answer ``input`` in a new conversation and return what was done, step by step.

        >>> from tnsai_eval.llm import Completion, ToolCall as Request
        >>> from tnsai_eval.testing import ScriptedLLM
        >>> llm = ScriptedLLM([Completion("", tool_calls=(Request("c1", "lookup_order",
        ...     {"order_id": "A1"}),)), "A1 has shipped."])
        >>> agent = Agent(llm, tools={"lookup_order": lambda order_id: "shipped"})
        >>> run = agent.run("Where is A1?")
        >>> run.output, run.actions, run.calls, run.stop_reason.value
        ('A1 has shipped.', ['lookup_order'], 2, 'answered')
        >>> run.tool_calls[0].result
        'shipped'

        A failed model call raises, as ``chat`` does; the conversation is then empty.
        """
        self.reset()
        return self._turn(input)

    def _turn(self, message: str) -> Trajectory:
        if not isinstance(message, str):
            raise ConfigError(f"message must be a str, got {type(message).__name__}")
        turn_start = len(self._history)
        self._history.append({"role": "user", "content": message})
        done = False
        try:
            trajectory = self._run_steps(message)
            done = True
        finally:
            # A failed call (or an interrupt) leaves the conversation as it was.
            if not done:
                del self._history[turn_start:]
        return trajectory

    def _run_steps(self, message: str) -> Trajectory:
        params = dict(self.llm_params)
        if self.send_tool_schemas and self._tools:
            params.setdefault("tools", [tool_schema(n, t) for n, t in self._tools.items()])
            # OpenAI's default, said out loud: llama-cpp-python's function-calling
            # handler offers no tool at all when tool_choice is left out.
            params.setdefault("tool_choice", "auto")
        steps: list[Step] = []
        tokens = 0
        while True:
            completion = self.llm.chat(self._messages(), **params)
            tokens += completion.usage.total_tokens
            steps.append(_turn_of(completion))
            calls = sum(isinstance(step, ModelTurn) for step in steps)
            requests = completion.tool_calls
            if not requests or calls >= self.max_steps:
                self._history.append({"role": "assistant", "content": completion.text})
                if requests:
                    stop = StopReason.MAX_STEPS
                elif completion.finish_reason == "length":
                    stop = StopReason.LENGTH
                else:
                    stop = StopReason.ANSWERED
                return Trajectory(
                    message,
                    steps=tuple(steps),
                    output=completion.text,
                    messages=tuple(self._messages()),
                    calls=calls,
                    tokens=tokens,
                    stop_reason=stop,
                )
            self._history.append(
                {
                    "role": "assistant",
                    "content": completion.text,
                    "tool_calls": [_wire_call(request) for request in requests],
                }
            )
            for request in requests:
                step = self._run_tool(request)
                steps.append(step)
                self._history.append(
                    {
                        "role": "tool",
                        "tool_call_id": request.id,
                        "name": request.name,
                        "content": _tool_message(step),
                    }
                )

    def _messages(self) -> list[dict[str, Any]]:
        prompt = self.system_prompt
        system = [{"role": "system", "content": prompt}] if prompt else []
        return system + [dict(message) for message in self._history]

    def _run_tool(self, request: ToolRequest) -> ToolCall:
        # The model's mistakes go back to it as text so it can correct itself.
        arguments = dict(request.arguments)
        if request.name not in self._tools:
            known = ", ".join(sorted(self._tools)) or "none"
            error = f"unknown tool {request.name!r}; available tools: {known}"
            return ToolCall(request.name, arguments, error=error)
        started = time.perf_counter()
        try:
            result = self.call_tool(request.name, **arguments)
        except Exception as exc:
            elapsed = time.perf_counter() - started
            return ToolCall(
                request.name, arguments, error=f"{type(exc).__name__}: {exc}", latency_s=elapsed
            )
        return ToolCall(request.name, arguments, result, latency_s=time.perf_counter() - started)


def _turn_of(completion: Completion) -> ModelTurn:
    return ModelTurn(
        completion.text,
        completion.usage.total_tokens,
        completion.latency_s,
        completion.cached,
        completion.finish_reason,
    )


def _tool_message(step: ToolCall) -> str:
    """What the model is shown for one tool call: its result, or the error."""
    if step.error is not None:
        return f"error: {step.error}"
    return tool_result_text(step.result)


def _wire_call(call: ToolRequest) -> dict[str, Any]:
    """A tool call as the chat-completions wire format carries it in an assistant message."""
    return {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(dict(call.arguments), ensure_ascii=False, default=str),
        },
    }
