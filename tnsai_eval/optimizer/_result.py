"""What ``PromptOptimizer.optimize`` returns, with DataFrame views."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tnsai_eval.optimizer._records import (
    CaseResult,
    RoundRecord,
    StopReason,
    VariantRecord,
)

if TYPE_CHECKING:  # pandas is imported by the views only, when they are used
    import pandas as pd

__all__ = ["OptimizationResult"]

CASE_COLUMNS = (
    "round",
    "variant",
    "strategy",
    "case",
    "input",
    "expected",
    "output",
    "score",
    "tokens",
    "latency",
    "cached",
    "error",
    "split",
)


@dataclass(frozen=True, slots=True)
class OptimizationResult:
    """The outcome of one optimizer run.

    ``score`` is the best prompt's mean score on the training cases and
    ``initial_score`` the starting prompt's. ``rounds`` counts rounds run,
    ``calls`` the model calls the optimizer sent (case calls and rewrite
    requests; replies reused from the run's cache are not calls), ``tokens``
    what they used, ``failed_calls`` those that raised an ``Exception`` (their
    cases were left out). ``validation_score`` / ``initial_validation_score``
    are set when ``validation_cases`` were given (``None`` when the budget ran
    out before every validation case was scored). ``rejected_rewrites`` holds,
    for each model rewrite that was not a prompt for the task (a greeting, a
    question back, empty, off the task: see ``check_rewrite``), why it was
    rejected; rejected rewrites are never scored.

    >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> llm = ScriptedLLM(default="Paris")
    >>> result = PromptOptimizer(llm).optimize("Capital?", [TestCase("France", "Paris")])
    >>> result.score, result.stop_reason.value, result.calls
    (1.0, 'target_reached', 1)
    """

    best_prompt: str
    score: float
    initial_prompt: str
    initial_score: float
    rounds: int
    calls: int
    tokens: int
    failed_calls: int
    stop_reason: StopReason
    search: str
    elapsed_s: float
    best_variant: int = 0
    validation_score: float | None = None
    initial_validation_score: float | None = None
    # Left out of repr: a run's rows would drown the summary in a notebook.
    variants: tuple[VariantRecord, ...] = field(default=(), repr=False)
    history: tuple[RoundRecord, ...] = field(default=(), repr=False)
    case_results: tuple[CaseResult, ...] = field(default=(), repr=False)
    rejected_rewrites: tuple[str, ...] = field(default=(), repr=False)

    @property
    def was_improved(self) -> bool:
        """Whether a prompt other than the initial one scored higher than it."""
        return self.best_variant != 0 and self.score > self.initial_score

    def to_dataframe(self) -> pd.DataFrame:
        """One row per (round, variant, case) scored, in that order.

        Columns: round, variant, strategy, case, input, expected, output,
        score, tokens, latency, cached, error, split. Failed calls are rows with
        a ``None`` output and score and the error's text.
        """
        import pandas as pd

        rows = [
            (
                r.round,
                r.variant,
                r.strategy,
                r.case,
                r.input,
                r.expected,
                r.output,
                r.score,
                r.tokens,
                r.latency_s,
                r.cached,
                r.error,
                r.split,
            )
            for r in self.case_results
        ]
        return pd.DataFrame(rows, columns=list(CASE_COLUMNS))

    def rounds_dataframe(self) -> pd.DataFrame:
        """One row per round (0 is the initial prompt): best score so far and costs.

        Columns, the fields of ``RoundRecord``: round, best_score, best_variant,
        improved, variants, calls, tokens, failed_calls, elapsed_s.
        """
        import pandas as pd

        columns = [f.name for f in dataclasses.fields(RoundRecord)]
        return pd.DataFrame([dataclasses.astuple(r) for r in self.history], columns=columns)

    def variants_dataframe(self) -> pd.DataFrame:
        """One row per variant tried, in the order they were made.

        Columns, the fields of ``VariantRecord`` (``status`` as its string value):
        id, round, strategy, prompt, parent, status, score, partial_score,
        cases_scored, cases_failed, calls, tokens, became_best, duplicate_of.
        """
        import pandas as pd

        columns = [f.name for f in dataclasses.fields(VariantRecord)]
        rows = [
            {name: getattr(v, name) for name in columns} | {"status": v.status.value}
            for v in self.variants
        ]
        return pd.DataFrame(rows, columns=columns)

    def leaderboard(self) -> list[VariantRecord]:
        """The variants that were scored, best first (ties: earlier first).

        Fully scored variants come first, by score; dropped and incomplete ones
        follow, by their partial score. Duplicates are left out.
        """
        ranked = [v for v in self.variants if v.partial_score is not None]
        return sorted(
            ranked,
            key=lambda v: (
                v.score is None,
                -(v.score if v.score is not None else (v.partial_score or 0.0)),
                v.id,
            ),
        )
