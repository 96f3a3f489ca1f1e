"""What a refinement run returns: status, per-iteration records, metrics."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from tnsai_eval.records import IterationRecord

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RefinementMetrics", "RefinementResult", "RefinementStatus"]


class RefinementStatus(enum.Enum):
    """How a refinement run ended."""

    SUCCESS = "success"  # every check passed
    MAX_ITERATIONS = "max_iterations"  # max_iterations outputs checked, none passed
    TIMEOUT = "timeout"  # the time budget ran out before the next check
    STOPPED = "stopped"  # the stop hook ended the run
    ERROR = "error"  # the revision call raised


@dataclass(frozen=True, slots=True)
class RefinementMetrics:
    """Totals of a run.

    ``scores`` has one score per checked output, oldest first; it is stored as
    a tuple so that the record stays immutable, and ``score_progression``
    returns it as a fresh ``list`` (the type API.md names; mutating it changes
    nothing here). ``total_iterations`` and ``final_score`` are derived from
    it. ``total_tokens`` counts revision calls and judge (``llm_check``) calls:
    what the client reported when nonzero, else an estimate;
    ``tokens_estimated`` says whether any revision call had to be estimated.

    >>> metrics = RefinementMetrics(total_duration_ms=12.0, total_tokens=40, scores=(0.0, 0.5))
    >>> metrics.score_progression, metrics.total_iterations, metrics.final_score
    ([0.0, 0.5], 2, 0.5)
    """

    total_duration_ms: float
    total_tokens: int
    scores: tuple[float, ...]
    tokens_estimated: bool = False

    @property
    def score_progression(self) -> list[float]:
        """The score of each checked output, oldest first (a new list each time)."""
        return list(self.scores)

    @property
    def total_iterations(self) -> int:
        """How many outputs were checked."""
        return len(self.scores)

    @property
    def final_score(self) -> float:
        """The score of the last checked output (0.0 when none was checked)."""
        return self.scores[-1] if self.scores else 0.0


@dataclass(frozen=True, slots=True)
class RefinementResult:
    """The outcome of ``RefinementLoop.execute``.

    ``final_output`` is the last checked output, except for ``MAX_ITERATIONS``
    (the reply to the last revision call, returned unchecked as in the
    original) and ``TIMEOUT`` (the latest output, which the time budget left
    unchecked when it came from a revision). ``final_score`` is the score of the
    last *checked* output. ``best_output`` / ``best_score`` are the
    highest-scoring checked output (the earliest on ties).

    >>> from tnsai_eval.refinement import CompletionCriteria, RefinementLoop
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> criteria = CompletionCriteria.builder().must_contain("b").build()
    >>> result = RefinementLoop("Say b.", criteria).execute(ScriptedLLM(["b"]), "a")
    >>> result.status, result.final_score, result.best_output
    (<RefinementStatus.SUCCESS: 'success'>, 1.0, 'b')
    >>> list(result.to_dataframe()["score"])
    [0.0, 1.0]
    """

    final_output: str
    iteration_count: int
    status: RefinementStatus
    total_duration: timedelta
    metrics: RefinementMetrics
    iterations: tuple[IterationRecord, ...] = ()
    reason: str = ""
    error: BaseException | None = None

    @property
    def is_success(self) -> bool:
        """The run ended with every check passing."""
        return self.status is RefinementStatus.SUCCESS

    @property
    def final_score(self) -> float:
        """The score of the last checked output (``metrics.final_score``)."""
        return self.metrics.final_score

    @property
    def best_output(self) -> str:
        """The highest-scoring checked output (the earliest on ties)."""
        best = self._best()
        return self.final_output if best is None else best.output

    @property
    def best_score(self) -> float:
        """The score of ``best_output`` (0.0 when nothing was checked)."""
        best = self._best()
        return 0.0 if best is None else best.score

    def _best(self) -> IterationRecord | None:
        # max() keeps the first of equal scores: the earliest on ties.
        return max(self.iterations, key=lambda record: record.score, default=None)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per checked iteration."""
        import pandas as pd

        rows = [
            {
                "iteration": r.iteration,
                "score": r.score,
                "passed": r.passed,
                "checks": len(r.checks),
                "failed": len(r.failed_checks),
                "failed_checks": ", ".join(c.name for c in r.failed_checks),
                "improved": r.improved,
                "repeated": r.repeated,
                "tokens": r.tokens,
                "tokens_estimated": r.tokens_estimated,
                "latency_s": r.latency_s,
                "checks_duration_s": r.checks_duration_s,
                "output": r.output,
            }
            for r in self.iterations
        ]
        return pd.DataFrame(rows, columns=_ITERATION_COLUMNS)

    def checks_dataframe(self) -> pd.DataFrame:
        """One row per (iteration, check)."""
        import pandas as pd

        rows = [
            {
                "iteration": r.iteration,
                "check": c.name,
                "kind": c.kind.value,
                "source": c.source,
                "passed": c.passed,
                "skipped": c.skipped,
                "score": c.score,
                "message": c.message,
                "reason": c.reason,
                "duration_s": c.duration_s,
                "tokens": c.tokens,
            }
            for r in self.iterations
            for c in r.checks
        ]
        return pd.DataFrame(rows, columns=_CHECK_COLUMNS)


_ITERATION_COLUMNS = [
    "iteration",
    "score",
    "passed",
    "checks",
    "failed",
    "failed_checks",
    "improved",
    "repeated",
    "tokens",
    "tokens_estimated",
    "latency_s",
    "checks_duration_s",
    "output",
]
_CHECK_COLUMNS = [
    "iteration",
    "check",
    "kind",
    "source",
    "passed",
    "skipped",
    "score",
    "message",
    "reason",
    "duration_s",
    "tokens",
]
