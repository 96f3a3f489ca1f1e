"""What an agent did for one input, step by step: model turns and tool calls.

The records live here, below every package that makes or reads them: an
``Agent`` builds a ``Trajectory`` (``tnsai_eval.agents``), the trajectory
evaluators score it (``tnsai_eval.scoring``) and a report could keep it, and
none of those may import another's package sideways. ``tnsai_eval.agents``
re-exports them, the import path users see.

A ``ToolCall`` serves twice: as a step (the call the agent ran, with its
result or error and how long it took) and as an expectation
(``TestCase.expected_tool_calls``: a name and arguments, nothing run).

>>> step = ToolCall("lookup_order", {"order_id": "A1"}, result="shipped")
>>> run = Trajectory("Where is A1?", steps=(ModelTurn(), step, ModelTurn("It shipped.")),
...                  output="It shipped.")
>>> run.actions, run.stop_reason.value
(['lookup_order'], 'answered')
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import Any, TypeAlias, TypeVar

from tnsai_eval._util.plain import json_ready
from tnsai_eval.errors import ConfigError

__all__ = ["ModelTurn", "Step", "StopReason", "ToolCall", "Trajectory", "tool_calls_from"]


_E = TypeVar("_E", bound=Enum)


def member(kinds: type[_E], value: object, what: str) -> _E:
    """``value`` as a member of ``kinds``; else a ``ConfigError`` naming it and the choices."""
    try:
        return kinds(value)
    except ValueError:
        names = ", ".join(kind.value for kind in kinds)
        raise ConfigError(f"{what} must be one of {names}; got {value!r}") from None


class StopReason(StrEnum):
    """Why an agent's run ended.

    ``answered``: the model gave a reply that asked for no tool (the final
    answer). ``max_steps``: the step cap was reached while the model still
    asked for tools (a looping agent); those tools were not run.
    ``length``: the final reply was cut at the token limit.
    """

    ANSWERED = "answered"
    MAX_STEPS = "max_steps"
    LENGTH = "length"


def _frozen_mapping(value: object, what: str) -> Mapping[str, Any]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what} must be a mapping of names to values, got {value!r}")
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True, repr=False)
class ToolCall:
    """One tool call: the tool's name and arguments, and (when it ran) its result or error.

    ``error`` is the failure as text (``"KeyError: 'A9'"``), ``None`` when the
    call succeeded or never ran; ``latency_s`` is the tool's own run time.
    ``arguments`` is read-only.

    >>> ToolCall("refund", {"order_id": "A1"}).arguments["order_id"]
    'A1'
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    error: str | None = None
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"ToolCall.name must be a non-blank str, got {self.name!r}")
        object.__setattr__(
            self, "arguments", _frozen_mapping(self.arguments, f"ToolCall({self.name!r}).arguments")
        )

    def __repr__(self) -> str:
        parts = [repr(self.name), repr(dict(self.arguments))]
        parts += [
            f"{name}={getattr(self, name)!r}"
            for name in ("result", "error")
            if getattr(self, name) is not None
        ]
        if self.latency_s:
            parts.append(f"latency_s={self.latency_s!r}")
        return f"ToolCall({', '.join(parts)})"

    def describe(self) -> str:
        """``name(key=value, ...)``, values as JSON: how reasons and judges show a call.

        >>> ToolCall("refund", {"order_id": "A1", "amount": 5}).describe()
        'refund(order_id="A1", amount=5)'
        """
        shown = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
            for key, value in self.arguments.items()
        )
        return f"{self.name}({shown})"

    def to_dict(self) -> dict[str, Any]:
        """The call as plain JSON data (a result JSON cannot carry is kept as its text)."""
        out: dict[str, Any] = {"name": self.name, "arguments": json_ready(self.arguments)}
        if self.result is not None:
            out["result"] = _plain(self.result)
        if self.error is not None:
            out["error"] = self.error
        if self.latency_s:
            out["latency_s"] = self.latency_s
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "tool call") -> ToolCall:
        """A call from ``{"name", "arguments"?, "result"?, "error"?, "latency_s"?}``.

        >>> ToolCall.from_dict({"name": "lookup_order", "arguments": {"order_id": "A1"}})
        ToolCall('lookup_order', {'order_id': 'A1'})
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ConfigError(f"{where} must be an object with a str 'name', got {data!r}")
        unknown = sorted(set(data) - {"name", "arguments", "result", "error", "latency_s"})
        if unknown:
            raise ConfigError(f"{where} has unknown key(s) {unknown}; expected name, arguments")
        error = data.get("error")
        latency = data.get("latency_s", 0.0)
        if error is not None and not isinstance(error, str):
            raise ConfigError(f"{where}: error must be a str or null, got {error!r}")
        if isinstance(latency, bool) or not isinstance(latency, int | float):
            raise ConfigError(f"{where}: latency_s must be a number, got {latency!r}")
        return cls(
            data["name"],
            _frozen_mapping(data.get("arguments"), f"{where}.arguments"),
            data.get("result"),
            error,
            float(latency),
        )


def tool_calls_from(
    items: Iterable[ToolCall | Mapping[str, Any]], what: str
) -> tuple[ToolCall, ...]:
    """``items`` as ``ToolCall``s: records kept, ``{"name", "arguments"}`` mappings read.

    >>> tool_calls_from([{"name": "a"}, ToolCall("b")], "calls")[1].name
    'b'
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise ConfigError(f"{what} must be a list of tool calls, got {items!r}")
    return tuple(
        item if isinstance(item, ToolCall) else ToolCall.from_dict(item, where=f"{what}[{i}]")
        for i, item in enumerate(items)
    )


def _plain(value: Any) -> Any:
    """``value`` as JSON data; what JSON cannot carry becomes its ``str``."""
    value = json_ready(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One model call of a run: the reply's text and what it cost.

    The tool calls the reply asked for follow it in ``Trajectory.steps``.
    ``cached``: a response store (or the run's own cache) served it.
    """

    text: str = ""
    tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The turn as plain JSON data."""
        return {
            "text": self.text,
            "tokens": self.tokens,
            "latency_s": self.latency_s,
            "cached": self.cached,
            "finish_reason": self.finish_reason,
        }


Step: TypeAlias = ModelTurn | ToolCall


@dataclass(frozen=True, slots=True)
class Trajectory:
    """What an agent did for one input: the conversation, each step and the final output.

    ``messages`` is the conversation as sent on the wire (system prompt, user
    input, assistant turns with their tool calls, tool results), read-only;
    ``steps`` the model turns and tool calls in order; ``output`` the final
    reply; ``calls`` the model calls made and ``tokens`` their total;
    ``stop_reason`` why the run ended. A function target may build one by
    hand with only the parts it knows (``Trajectory(input, output=...)``).
    """

    input: str
    steps: tuple[Step, ...] = ()
    output: str = ""
    messages: tuple[Mapping[str, Any], ...] = ()
    calls: int = 0
    tokens: int = 0
    stop_reason: StopReason = StopReason.ANSWERED

    def __post_init__(self) -> None:
        if not isinstance(self.input, str) or not isinstance(self.output, str):
            raise ConfigError(
                f"Trajectory input and output must be str, got {self.input!r}, {self.output!r}"
            )
        steps = tuple(self.steps)
        for index, step in enumerate(steps):
            if not isinstance(step, ModelTurn | ToolCall):
                raise ConfigError(
                    f"Trajectory.steps[{index}] must be a ModelTurn or a ToolCall, got {step!r}"
                )
        object.__setattr__(self, "steps", steps)
        object.__setattr__(
            self,
            "messages",
            tuple(
                _frozen_mapping(m, f"Trajectory.messages[{i}]") for i, m in enumerate(self.messages)
            ),
        )
        object.__setattr__(self, "stop_reason", member(StopReason, self.stop_reason, "stop_reason"))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the run, in order (those the model asked for an unknown tool
        included, with their error)."""
        return tuple(step for step in self.steps if isinstance(step, ToolCall))

    @property
    def actions(self) -> list[str]:
        """The tools called, by name, in order: what ``NormEngine.check_agent`` reads."""
        return [call.name for call in self.tool_calls]

    @property
    def turns(self) -> tuple[ModelTurn, ...]:
        """The model turns of the run, in order."""
        return tuple(step for step in self.steps if isinstance(step, ModelTurn))

    def to_dict(self) -> dict[str, Any]:
        """The run as plain JSON data (``messages`` left out: the steps say what happened)."""
        return {
            "input": self.input,
            "output": self.output,
            "stop_reason": self.stop_reason.value,
            "calls": self.calls,
            "tokens": self.tokens,
            "steps": [
                {"tool_call": step.to_dict()}
                if isinstance(step, ToolCall)
                else {"model_turn": step.to_dict()}
                for step in self.steps
            ],
        }
