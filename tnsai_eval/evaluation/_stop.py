"""Why a run stopped, and what became of a variant: shared by scoring and the search."""

from __future__ import annotations

import enum

__all__ = ["StopReason", "VariantStatus"]


class StopReason(enum.Enum):
    """Why a run ended (``OptimizationResult.stop_reason``, ``PromptEvaluation.stop_reason``).

    >>> StopReason("max_calls")
    <StopReason.MAX_CALLS: 'max_calls'>
    """

    TARGET_REACHED = "target_reached"
    """The best prompt scored at least ``target_score``."""
    MAX_ITERATIONS = "max_iterations"
    """``max_iterations`` rounds ran."""
    CONVERGED = "converged"
    """The best scores of the last three rounds were within 0.01 of each other."""
    MAX_CALLS = "max_calls"
    """The ``max_calls`` budget was spent."""
    MAX_TOKENS = "max_tokens"
    """The ``max_tokens`` budget was spent."""
    MAX_SECONDS = "max_seconds"
    """The ``max_seconds`` budget was spent."""
    STOPPED = "stopped"
    """The caller set the ``stop_event`` given to ``optimize`` (a dashboard's
    Stop button): the run ended at the next call boundary, keeping every score."""
    ALL_CASES_FAILED = "all_cases_failed"
    """Every case of the initial prompt failed (the model call or the evaluator
    raised): there is no score to improve on. Each case's error is in the
    ``error`` column of ``to_dataframe()``."""


class VariantStatus(enum.Enum):
    """What happened to a variant (``VariantRecord.status``).

    >>> VariantStatus("dropped").name
    'DROPPED'
    """

    SCORED = "scored"
    """Scored on every case (failed calls left out)."""
    DROPPED = "dropped"
    """Racing stopped scoring it: it could no longer win, or was surely worse
    than the leader. The starting prompt races too, so it may be dropped after
    only some of the cases (its score is then a mean over those)."""
    DUPLICATE = "duplicate"
    """Same text as an earlier variant (or the prompt itself): not scored again."""
    INCOMPLETE = "incomplete"
    """The budget ran out before every case was scored; it cannot become best."""
