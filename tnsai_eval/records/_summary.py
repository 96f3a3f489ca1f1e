"""What a report keeps of an agent's run: its steps, bounded and masked.

A ``Trajectory`` holds everything the run produced (whole tool results, the
conversation as sent); a report keeps one per case for thousands of cases and
is committed as a baseline, so it keeps a ``TrajectorySummary`` instead: each
step's kind, the tool's name, its arguments as JSON text, its result or
error, the model turn's text, each text masked for secrets *before* it is cut
(a key straddling the cut cannot leave its start), and at most ``MAX_STEPS``
steps (``dropped`` counts the rest). The gate, the comment, the HTML page and
the frames read tool sequences and divergences from it.

>>> from tnsai_eval.records._trajectory import ModelTurn, ToolCall, Trajectory
>>> run = Trajectory("Refund A1", steps=(
...     ModelTurn(tokens=9), ToolCall("lookup_order", {"order_id": "A1"}, result={"paid": 5}),
...     ToolCall("issue_refund", {"order_id": "A1"}, error="KeyError: 'A1'"),
...     ModelTurn("Sorry.")), output="Sorry.", calls=2, tokens=20)
>>> summary = TrajectorySummary.of(run)
>>> summary.tools, summary.steps[1].arguments, summary.steps[1].result
(('lookup_order', 'issue_refund'), '{"order_id": "A1"}', '{"paid": 5}')
>>> [step.error for step in summary.errors], summary.stop_reason.value
(["KeyError: 'A1'"], 'answered')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tnsai_eval._util.plain import json_ready
from tnsai_eval._util.secrets import mask, mask_then_cut
from tnsai_eval.records._trajectory import ModelTurn, StopReason, ToolCall, Trajectory, member

__all__ = [
    "MAX_STEPS",
    "STEP_TEXT_CHARS",
    "TOOL_NAME_CHARS",
    "StepKind",
    "StepSummary",
    "TrajectorySummary",
]

#: The most steps a summary keeps (the first ones: where a run goes wrong is
#: usually early, and a looping agent's tail repeats itself).
MAX_STEPS = 60
#: The most characters kept of a step's arguments, result, error or text.
STEP_TEXT_CHARS = 300
#: The most characters kept of a tool's name (a name is an identifier; a
#: model asking for an unknown tool may still invent a long one).
TOOL_NAME_CHARS = 100


class StepKind(StrEnum):
    """What a step of a run was: a model turn or a tool call."""

    MODEL_TURN = "model_turn"
    TOOL_CALL = "tool_call"


@dataclass(frozen=True, slots=True)
class StepSummary:
    """One step of a run as a report keeps it.

    A tool call has its ``name``, ``arguments`` (JSON text), and ``result``
    (JSON text; ``None`` when it failed or returned nothing) or ``error``; a
    model turn has the reply's ``text`` and ``tokens``. Every text is masked,
    then cut to ``STEP_TEXT_CHARS`` ("..." marks a cut).
    """

    kind: StepKind
    name: str = ""
    arguments: str = ""
    result: str | None = None
    error: str | None = None
    text: str = ""
    tokens: int = 0
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", member(StepKind, self.kind, "step kind"))

    @classmethod
    def of(cls, step: ModelTurn | ToolCall) -> StepSummary:
        """The summary of one step of a ``Trajectory``."""
        if isinstance(step, ModelTurn):
            return cls(
                StepKind.MODEL_TURN,
                text=_cut(step.text),
                tokens=step.tokens,
                latency_s=step.latency_s,
            )
        data = step.to_dict()
        result = data.get("result")
        return cls(
            StepKind.TOOL_CALL,
            name=mask_then_cut(step.name, TOOL_NAME_CHARS),
            arguments=_cut(_json_text(data["arguments"])),
            result=None if result is None else _cut(_json_text(result)),
            error=None if step.error is None else _cut(step.error),
            latency_s=step.latency_s,
        )

    @property
    def is_tool_call(self) -> bool:
        return self.kind is StepKind.TOOL_CALL

    def describe(self) -> str:
        """``name(arguments)`` for a tool call, the reply's text for a model turn.

        >>> StepSummary(StepKind.TOOL_CALL, "refund", '{"order_id": "A1"}').describe()
        'refund({"order_id": "A1"})'
        """
        if self.is_tool_call:
            arguments = "" if self.arguments in ("", "{}") else self.arguments
            return f"{self.name}({arguments})"
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """The step as the report writes it (texts masked again: the secrets known now)."""
        if self.is_tool_call:
            return {
                "kind": self.kind.value,
                "name": mask(self.name),
                "arguments": mask(self.arguments),
                "result": None if self.result is None else mask(self.result),
                "error": None if self.error is None else mask(self.error),
                "latency_s": self.latency_s,
            }
        return {
            "kind": self.kind.value,
            "text": mask(self.text),
            "tokens": self.tokens,
            "latency_s": self.latency_s,
        }


@dataclass(frozen=True, slots=True)
class TrajectorySummary:
    """What a report keeps of one case's run: its first ``MAX_STEPS`` steps, why it
    stopped, its model calls and tokens; ``dropped`` steps were left out."""

    steps: tuple[StepSummary, ...] = ()
    stop_reason: StopReason = StopReason.ANSWERED
    calls: int = 0
    tokens: int = 0
    dropped: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "stop_reason", member(StopReason, self.stop_reason, "stop_reason"))

    @classmethod
    def of(cls, trajectory: Trajectory) -> TrajectorySummary:
        """The summary of ``trajectory``: masked, cut and bounded for a report."""
        kept = trajectory.steps[:MAX_STEPS]
        return cls(
            tuple(StepSummary.of(step) for step in kept),
            trajectory.stop_reason,
            trajectory.calls,
            trajectory.tokens,
            len(trajectory.steps) - len(kept),
        )

    @property
    def tool_calls(self) -> tuple[StepSummary, ...]:
        """The tool-call steps kept, in order."""
        return tuple(step for step in self.steps if step.is_tool_call)

    @property
    def tools(self) -> tuple[str, ...]:
        """The names of the tools called, in order (of the steps kept)."""
        return tuple(step.name for step in self.steps if step.is_tool_call)

    @property
    def errors(self) -> tuple[StepSummary, ...]:
        """The tool calls that failed, in order."""
        return tuple(step for step in self.steps if step.is_tool_call and step.error is not None)

    def to_dict(self) -> dict[str, Any]:
        """The summary as the report writes it."""
        return {
            "stop_reason": self.stop_reason.value,
            "calls": self.calls,
            "tokens": self.tokens,
            "dropped": self.dropped,
            "steps": [step.to_dict() for step in self.steps],
        }


def _cut(text: str) -> str:
    return mask_then_cut(text, STEP_TEXT_CHARS)


def _json_text(value: object) -> str:
    """``value`` as compact JSON text (a str result stays as it is)."""
    if isinstance(value, str):
        return value
    plain = json_ready(value) if isinstance(value, Mapping | list | tuple) else value
    return json.dumps(plain, ensure_ascii=False, default=str)
