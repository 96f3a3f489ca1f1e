"""What an evaluator is: anything that scores an answer against the expected one."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ComparesExpected", "PromptEvaluator", "uses_expected"]


@runtime_checkable
class PromptEvaluator(Protocol):
    """Anything with ``evaluate(actual, expected) -> float`` in [0, 1].

    An evaluator may also define ``async aevaluate(actual, expected)``; the
    optimizer awaits it instead, so that evaluators which call a model (such as
    ``LLMJudgeEvaluator``) do not block the other cases.
    It may say whether it reads ``expected`` with a ``uses_expected`` bool
    attribute (see ``uses_expected``): the shipped reference evaluators do, so
    that cases without an expected answer are refused before any call.
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


class ComparesExpected:
    """Base of the shipped evaluators that compare each reply with the expected answer
    (``uses_expected``); its ``repr`` names the class (one with options names them)."""

    uses_expected = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def uses_expected(evaluator: object) -> bool:
    """Whether ``evaluator`` compares each reply with the case's expected answer.

    Read from its ``uses_expected`` attribute: the shipped evaluators that
    compare (exact, contains, token F1, label, the default, the LLM judge
    without a template of its own) say ``True``. An evaluator that does not
    say is taken not to: it gets ``""`` for a case without one, and decides.

    >>> from tnsai_eval.scoring import ExactMatchEvaluator
    >>> uses_expected(ExactMatchEvaluator())
    True
    >>> class Short:
    ...     def evaluate(self, actual: str, expected: str) -> float:
    ...         return float(len(actual.split()) <= 5)
    >>> uses_expected(Short())
    False
    """
    return getattr(evaluator, "uses_expected", False) is True
