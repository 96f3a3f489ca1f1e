"""One case of one prompt, from the engine that scored it to the report that keeps it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tnsai_eval._util.secrets import mask
from tnsai_eval.records._summary import TrajectorySummary
from tnsai_eval.records._trajectory import member

__all__ = ["CaseMetric", "CaseRecord", "CaseState", "case_ids"]


class CaseState(StrEnum):
    """What happened to one case.

    ``scored``: the reply was scored. ``error``: the call or the evaluator
    failed (``CaseRecord.error`` says how). ``unrecorded``: a response store in
    replay mode had no recording of the request (``ReplayMissError``).
    ``not_run``: the call budget (``max_calls``, ``--llm-max-calls``) was spent
    before the case was sent. The last two were never asked: they have no
    score, never a score of 0, and every mean leaves them out.

    >>> CaseState("not_run").asked, CaseState.ERROR.asked
    (False, True)
    """

    SCORED = "scored"
    ERROR = "error"
    UNRECORDED = "unrecorded"
    NOT_RUN = "not_run"

    @property
    def asked(self) -> bool:
        """Whether the model (or a store) answered: ``scored`` or ``error``."""
        return self in (CaseState.SCORED, CaseState.ERROR)


@dataclass(frozen=True, slots=True)
class CaseMetric:
    """One metric's verdict on one case: its score, pass or fail at the metric's own
    threshold, its reason, and (a norm metric) each norm the run violated.

    ``score`` and ``passed`` are ``None`` when the metric could not score the
    case (the target or the evaluator failed; ``reason`` then says how).

    >>> CaseMetric("norms", 0.0, False, "call 1: refund prohibited",
    ...            ("call 1: refund prohibited",)).to_dict()["passed"]
    False
    """

    name: str
    score: float | None = None
    passed: bool | None = None
    reason: str | None = None
    violations: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The verdict as the report writes it (keyed by ``name`` there), texts masked."""
        return {
            "score": self.score,
            "passed": self.passed,
            "reason": _masked(self.reason),
            "violations": [mask(v) for v in self.violations],
        }


@dataclass(frozen=True, slots=True)
class CaseRecord:
    """One case of one prompt: what was asked, expected and answered, its score and cost.

    The engine fills what it knows: the case's stable ``id`` (the dataset's
    own id, else a hash of input and expected answer) and its ``index`` in the
    list, the reply, the score and the evaluator's ``reason``, ``tokens`` and
    ``latency_s`` (0 for a reply reused from earlier in the same run, marked
    ``cached``, which also marks replies a response store served), ``error``
    and ``error_type`` when the call or the evaluator failed, and where an
    optimizer run made it (``round``, ``variant``, ``strategy``, ``split``:
    ``"train"`` for selection cases, ``"validation"`` for held-out ones).

    The report adds its context: ``metric`` (``score``, ``score_2``... so
    that a test evaluating two prompts keeps their cases apart), ``sample``
    (the ``--tnsai-repeat`` sample) and ``passed`` (``score >=`` the case
    threshold; ``None`` unless the case was asked).

    A target's case (``score_target``) also carries ``trajectory``, the
    summary of what its run did (``None`` for a plain output or a run that
    never finished), and ``metric_scores``, each metric's own verdict (the
    case's ``score`` combines them).

    ``score`` is ``None`` exactly when the case was not scored (see
    ``CaseState``).

    >>> CaseRecord("a1", "2+2", "4", output="4", score=1.0, passed=True).state.value
    'scored'
    >>> CaseRecord("a1", "2+2", "4", state="sideways")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tnsai_eval.errors.ConfigError: state must be one of scored, error, ...; got 'sideways'
    """

    id: str
    input: str
    expected: str
    output: str | None = None
    score: float | None = None
    passed: bool | None = None
    state: CaseState = CaseState.SCORED
    cached: bool = False
    tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None
    metric: str = "score"
    sample: int = 0
    reason: str | None = None
    """The evaluator's explanation of ``score`` when it gives one (``LLMJudgeEvaluator``)."""
    error_type: str | None = None
    """The class name of the exception behind ``error`` (``None`` without one)."""
    index: int = 0
    round: int = 0
    variant: int = 0
    strategy: str = "initial"
    split: str = "train"
    trajectory: TrajectorySummary | None = None
    """What the target's run did, step by step (``None``: no trajectory)."""
    metric_scores: tuple[CaseMetric, ...] = ()
    """Each metric's verdict, in the evaluation's order (empty: one plain evaluator)."""

    def __post_init__(self) -> None:
        given: object = self.state  # a str from JSON or a caller, or already a CaseState
        if not isinstance(given, CaseState):
            object.__setattr__(self, "state", member(CaseState, given, "state"))

    @property
    def asked(self) -> bool:
        """Whether the model (or a store) answered: state ``scored`` or ``error``."""
        return self.state.asked

    def passes(self, threshold: float) -> bool:
        """Whether the case was scored at ``threshold`` or above.

        >>> CaseRecord("a", "q", "x", score=0.4).passes(0.5)
        False
        """
        return self.score is not None and self.score >= threshold

    def verdict(self, threshold: float) -> bool | None:
        """Pass or fail at ``threshold``; ``None`` for a case that was never asked.

        A case that failed to run (state ``error``) was asked and fails.

        >>> CaseRecord("a", "q", "x", score=0.7).verdict(0.5)
        True
        >>> CaseRecord("a", "q", "x", state=CaseState.NOT_RUN).verdict(0.5) is None
        True
        """
        return self.passes(threshold) if self.asked else None

    @property
    def violations(self) -> tuple[str, ...]:
        """Every norm the run violated, over its metrics, in order."""
        return tuple(v for m in self.metric_scores for v in m.violations)

    def to_dict(self) -> dict[str, Any]:
        """The record as the report writes it, every text masked for secrets."""
        return {
            "id": mask(self.id),
            "metric": mask(self.metric),
            "sample": self.sample,
            "state": self.state.value,
            "input": mask(self.input),
            "expected": mask(self.expected),
            "output": _masked(self.output),
            "score": self.score,
            "passed": self.passed,
            "cached": self.cached,
            "tokens": self.tokens,
            "latency_s": self.latency_s,
            "error": _masked(self.error),
            "error_type": self.error_type,
            "reason": _masked(self.reason),
            # Only for a target's case: a prompt's records keep the fields they had.
            **({"trajectory": self.trajectory.to_dict()} if self.trajectory is not None else {}),
            **(
                {"metric_scores": {mask(m.name): m.to_dict() for m in self.metric_scores}}
                if self.metric_scores
                else {}
            ),
        }


def _masked(text: str | None) -> str | None:
    return None if text is None else mask(text)


def case_ids(cases: Iterable[tuple[str, str, str | None]]) -> list[str]:
    """Stable ids for ``(input, expected, dataset_id)`` triples, in order.

    A dataset's own ``id`` is used as given; otherwise the id is a hash of the
    input and the expected answer, so it survives reordering and edits to
    other cases. The second and later copies of an id get ``#2``, ``#3``...

    >>> case_ids([("2+2", "4", None), ("2+2", "4", None), ("x", "y", "c7")])[1:]
    ['...#2', 'c7']
    """
    seen: dict[str, int] = {}
    out: list[str] = []
    for text, expected, given in cases:
        base = (
            given
            or hashlib.sha256(
                json.dumps([text, expected], ensure_ascii=False).encode("utf-8", "surrogatepass")
            ).hexdigest()[:12]
        )
        count = seen[base] = seen.get(base, 0) + 1
        out.append(base if count == 1 else f"{base}#{count}")
    return out
