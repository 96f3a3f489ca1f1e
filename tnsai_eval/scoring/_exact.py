"""Exact match: 1.0 for the expected answer, else 0.0."""

from __future__ import annotations

from tnsai_eval.scoring._evaluator import ComparesExpected
from tnsai_eval.scoring._normalize import normalize_answer

__all__ = ["ExactMatchEvaluator"]


class ExactMatchEvaluator(ComparesExpected):
    """1.0 when the answer equals the expected one, else 0.0.

    With ``normalize=True`` (the default) both sides are compared after
    ``normalize_answer``; with ``False``, after stripping surrounding whitespace.

    >>> ExactMatchEvaluator().evaluate("Paris.", "paris")
    1.0
    """

    def __init__(self, *, normalize: bool = True) -> None:
        self.normalize = normalize

    def __repr__(self) -> str:
        return f"ExactMatchEvaluator(normalize={self.normalize})"

    def evaluate(self, actual: str, expected: str) -> float:
        if self.normalize:
            return 1.0 if normalize_answer(actual) == normalize_answer(expected) else 0.0
        return 1.0 if actual.strip() == expected.strip() else 0.0
