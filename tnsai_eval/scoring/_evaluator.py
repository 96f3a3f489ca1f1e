"""What an evaluator is: anything that scores an answer against the expected one."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["PromptEvaluator"]


@runtime_checkable
class PromptEvaluator(Protocol):
    """Anything with ``evaluate(actual, expected) -> float`` in [0, 1].

    An evaluator may also define ``async aevaluate(actual, expected)``; the
    optimizer awaits it instead, so that evaluators which call a model (such as
    ``LLMJudgeEvaluator``) do not block the other cases.
    It may also define ``explain(actual, expected)``, returning a text or a
    record with a ``reason`` attribute (``LLMJudgeEvaluator``: the judge's
    ``JudgeResult``); a non-blank reason is kept in the case's record
    (``CaseRecord.reason``, from the engine to the report).

    >>> class StartsWith:
    ...     def evaluate(self, actual: str, expected: str) -> float:
    ...         return 1.0 if actual.startswith(expected) else 0.0
    >>> isinstance(StartsWith(), PromptEvaluator)
    True
    """

    def evaluate(self, actual: str, expected: str) -> float: ...
