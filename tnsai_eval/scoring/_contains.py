"""Containment: 1.0 when the expected answer appears in the reply as whole words."""

from __future__ import annotations

from tnsai_eval.scoring._evaluator import ComparesExpected
from tnsai_eval.scoring._normalize import normalize_answer

__all__ = ["ContainsEvaluator"]


class ContainsEvaluator(ComparesExpected):
    """1.0 when the expected answer appears in the answer as whole words, else 0.0.

    Both sides are normalized first, so "The capital is Paris." contains
    "paris" but "Parisian" does not. An empty expected answer always matches.

    >>> ContainsEvaluator().evaluate("The capital is Paris.", "Paris")
    1.0
    """

    def evaluate(self, actual: str, expected: str) -> float:
        needle = normalize_answer(expected)
        if not needle:
            return 1.0
        return 1.0 if f" {needle} " in f" {normalize_answer(actual)} " else 0.0
