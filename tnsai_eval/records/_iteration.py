"""One checked output of a refinement run, and the outcome of each check on it."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from tnsai_eval._util.secrets import mask, mask_then_cut

__all__ = ["CheckKind", "CheckOutcome", "IterationRecord"]

#: How much of an iteration's output and revision the report keeps (masked first).
REPORTED_CHARS = 500


class CheckKind(enum.Enum):
    """What a check costs to run; checks run in this order (cheapest first).

    ``DETERMINISTIC``: string, regex, JSON and count checks (microseconds).
    ``CUSTOM``: a user predicate (in process, cost unknown).
    ``COMMAND``: an external command (compiler, tests, linter): a process.
    ``LLM``: a judge model call: the slowest and the only one that costs tokens.
    """

    DETERMINISTIC = "deterministic"
    CUSTOM = "custom"
    COMMAND = "command"
    LLM = "llm"

    @property
    def cost_rank(self) -> int:
        """0 for the cheapest kind, 3 for a judge call (the members are in cost order)."""
        return list(CheckKind).index(self)


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """The result of running one check on one output.

    Attributes:
        name: the check's unique name within its criteria, e.g. ``must_contain('id')``.
        passed: whether the output passed.
        message: why it failed (for commands: the tail of their output); on a
            pass, a short confirmation or ''.
        score: the judge's score in [0, 1] for ``llm_check``; ``None`` otherwise.
        kind: ``CheckKind`` (deterministic, custom, command, llm).
        source: the builder method that made the check (``"compiler_check"``...).
        duration_s: wall time of the check in seconds.
        skipped: an ``llm_check`` that did not run because a cheaper check failed
            (it counts as failed).
        tokens: tokens the check spent (judge calls only).
        reason: the judge's own explanation for ``llm_check``, when its method
            gives one (a JSON ``reason``, the text before ``SCORE:``); ''
            otherwise. ``message`` quotes it too.
    """

    name: str
    passed: bool
    message: str
    kind: CheckKind
    source: str
    duration_s: float = 0.0
    score: float | None = None
    skipped: bool = False
    tokens: int = 0
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The outcome as the report writes it (texts masked, the message cut)."""
        return {
            "name": mask(self.name),
            "passed": self.passed,
            "message": mask_then_cut(self.message, REPORTED_CHARS),
            "kind": self.kind.value,
            "source": self.source,
            "duration_s": self.duration_s,
            "score": self.score,
            "skipped": self.skipped,
            "tokens": self.tokens,
            "reason": mask(self.reason),
        }


@dataclass(frozen=True, slots=True)
class IterationRecord:
    """One checked output and the revision call made from it (if any).

    The refinement loop makes it; the pytest plugin keeps the same record in
    the report, with ``metric`` naming the test's refinement
    (``refine_score``, ``refine_score_2``...).

    Attributes:
        iteration: 1-based; iteration 1 checks the draft.
        output: the output that was checked.
        checks: each check's outcome, in declaration order.
        score: share of checks passed.
        improved: beat every earlier score and is not a repeat (False for the draft).
        repeated: identical to an earlier checked output.
        tokens: tokens spent in this iteration: judge checks plus the revision call.
        tokens_estimated: some of ``tokens`` were estimated (the client reported none).
        latency_s: wall time of the revision call (0.0 when none was made).
        checks_duration_s: wall time of running the checks.
        revision: the reply of the revision call, fences stripped (None if no call
            succeeded); it is the next iteration's ``output``.
        metric: the report's name for the run this iteration belongs to ('' outside a report).

    >>> from tnsai_eval.records import CheckKind, CheckOutcome
    >>> ok = CheckOutcome("must_contain('b')", True, "", CheckKind.DETERMINISTIC, "must_contain")
    >>> record = IterationRecord(1, "b", (ok,), 1.0, improved=False, repeated=False)
    >>> record.passed, [c.name for c in record.passed_checks]
    (True, ["must_contain('b')"])
    """

    iteration: int
    output: str
    checks: tuple[CheckOutcome, ...]
    score: float
    improved: bool
    repeated: bool
    tokens: int = 0
    tokens_estimated: bool = False
    latency_s: float = 0.0
    checks_duration_s: float = 0.0
    revision: str | None = None
    metric: str = ""

    @property
    def passed(self) -> bool:
        """Every check passed."""
        return all(check.passed for check in self.checks)

    @property
    def failed_checks(self) -> tuple[CheckOutcome, ...]:
        """The outcomes of the checks that failed, in declaration order."""
        return tuple(check for check in self.checks if not check.passed)

    @property
    def passed_checks(self) -> tuple[CheckOutcome, ...]:
        """The outcomes of the checks that passed, in declaration order."""
        return tuple(check for check in self.checks if check.passed)

    def to_dict(self) -> dict[str, Any]:
        """The record as the report writes it: texts masked, then cut to 500 characters.

        ``passed_checks``, ``failed_checks`` and ``reasons`` (check name to the
        judge's reason) repeat what ``checks`` holds, for readers of older reports.
        """
        return {
            "metric": mask(self.metric),
            "iteration": self.iteration,
            "score": self.score,
            "output": mask_then_cut(self.output, REPORTED_CHARS),
            "improved": self.improved,
            "repeated": self.repeated,
            "tokens": self.tokens,
            "tokens_estimated": self.tokens_estimated,
            "latency_s": self.latency_s,
            "checks_duration_s": self.checks_duration_s,
            "revision": None
            if self.revision is None
            else mask_then_cut(self.revision, REPORTED_CHARS),
            "checks": [check.to_dict() for check in self.checks],
            "passed_checks": [mask(c.name) for c in self.passed_checks],
            "failed_checks": [mask(c.name) for c in self.failed_checks],
            "reasons": {mask(c.name): mask(c.reason) for c in self.checks if c.reason},
        }
