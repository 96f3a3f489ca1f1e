"""The records an optimizer run makes per variant and per round (per case: ``CaseRecord``)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tnsai_eval.evaluation import Demo, PromptVariant, StopReason, VariantStatus
from tnsai_eval.records import CaseRecord

__all__ = [
    "EventKind",
    "ProgressEvent",
    "RoundRecord",
    "StopReason",
    "VariantRecord",
    "VariantStatus",
]


@dataclass(frozen=True, slots=True)
class VariantRecord:
    """One prompt tried during a run.

    ``id`` counts variants across the run (0 is the initial prompt); ``parent``
    is the id of the prompt it was derived from. ``strategy`` is a
    ``PromptStrategy`` value, ``"rewrite"`` (the model's rewrite) or
    ``"initial"``. ``score`` is the mean over the scored cases, set only for a
    fully scored variant (also one racing dropped after scoring it on every
    case: an incumbent that lost the lead); ``partial_score`` is that mean over
    however many cases were scored (also for dropped and incomplete variants),
    ``None`` when none were. ``duplicate_of`` names the earlier variant with the same text.
    Beyond its instruction a variant may carry a ``system`` message,
    ``demos`` (shown as ``demo_style`` ``"chat"`` turns or ``"inline"`` text:
    inline demos are part of ``prompt``) and a ``response_format``; ``spec``
    is the whole variant, ready to send (``spec.messages(case_input)``).

    >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> optimizer = PromptOptimizer(ScriptedLLM(default="Paris"))
    >>> result = optimizer.optimize("Capital?", [TestCase("France", "Paris")])
    >>> initial = result.variants[0]
    >>> initial.strategy, initial.status.value, initial.score, initial.calls
    ('initial', 'scored', 1.0, 1)
    """

    id: int
    round: int
    strategy: str
    prompt: str
    parent: int | None
    status: VariantStatus
    score: float | None
    partial_score: float | None
    cases_scored: int
    cases_failed: int
    calls: int
    tokens: int
    became_best: bool = False
    duplicate_of: int | None = None
    system: str | None = None
    demos: tuple[Demo, ...] = ()
    demo_style: str | None = None
    response_format: Mapping[str, Any] | None = field(default=None, hash=False)

    @property
    def details(self) -> str:
        """What the variant carries beyond its instruction, in a few words ('' for nothing).

        ``spec.describe()``: "system message; 3 demo(s) as chat, 3 bootstrapped".
        """
        return self.spec.describe()

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-able data: its fields, the status's value, the whole variant.

        >>> from tnsai_eval.optimizer import PromptOptimizer, PromptVariant, TestCase
        >>> from tnsai_eval.testing import ScriptedLLM
        >>> start = PromptVariant("Capital?", system="Answer in one word.")
        >>> result = PromptOptimizer(ScriptedLLM(default="Paris")).optimize(
        ...     start, [TestCase("France", "Paris")]
        ... )
        >>> record = result.variants[0].to_dict()
        >>> record["status"], record["system"], record["spec"]["system"], record["details"]
        ('scored', 'Answer in one word.', 'Answer in one word.', 'system message')
        """
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        spec = self.spec.to_dict()
        data.update(
            status=self.status.value,
            demos=spec["demos"],
            response_format=spec["response_format"],
            details=self.details,
            spec=spec,
        )
        return data

    @property
    def spec(self) -> PromptVariant:
        """The full variant (instruction, system message, demos, response format)."""
        instruction = self.prompt
        if self.demo_style == "inline" and self.demos:
            # ``prompt`` shows inline demos; the instruction is what precedes them.
            shown = PromptVariant("", demos=self.demos, demo_style="inline").prompt_text()
            instruction = self.prompt[: len(self.prompt) - len(shown)].rstrip()
        return PromptVariant(
            instruction,
            system=self.system,
            demos=self.demos,
            demo_style="inline" if self.demo_style == "inline" else "chat",
            response_format=self.response_format,
        )


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """The state after one round (round 0 is scoring the initial prompt).

    ``racing_note`` says what racing decided that round: which variants it
    dropped (challengers, or the round's starting best) and why, and how many
    it declined to eliminate because the bound was too wide (``None`` in
    exhaustive search). In racing, round 0 scores the initial prompt on the
    first rung's cases only (its note says so), so its ``best_score`` is a
    mean over those cases.

    >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> optimizer = PromptOptimizer(ScriptedLLM(default="Paris"))
    >>> result = optimizer.optimize("Capital?", [TestCase("France", "Paris")])
    >>> first = result.history[0]
    >>> first.round, first.best_score, first.calls
    (0, 1.0, 1)
    """

    round: int
    best_score: float
    best_variant: int
    improved: bool
    variants: int
    calls: int
    tokens: int
    failed_calls: int
    elapsed_s: float
    racing_note: str | None = None


class EventKind(enum.Enum):
    """What a ``ProgressEvent`` reports: one scored case or one finished round.

    >>> [kind.value for kind in EventKind]
    ['case', 'round']
    """

    CASE = "case"
    ROUND = "round"


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Sent to the ``progress`` callback after every scored case and every round.

    ``calls`` and ``best_score`` are the run's totals so far; ``case`` is set for
    ``EventKind.CASE`` and ``round_record`` for ``EventKind.ROUND``.

    >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> events = []
    >>> optimizer = PromptOptimizer(ScriptedLLM(default="Paris"), progress=events.append)
    >>> _ = optimizer.optimize("Capital?", [TestCase("France", "Paris")])
    >>> [(e.kind.value, e.round, e.calls, e.best_score) for e in events]
    [('case', 0, 1, 1.0), ('round', 0, 1, 1.0)]
    """

    kind: EventKind
    round: int
    calls: int
    best_score: float | None
    case: CaseRecord | None = None
    round_record: RoundRecord | None = None
