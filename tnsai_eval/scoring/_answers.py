"""How answers are compared: SQuAD's normalization, the words it leaves, and the
evaluators that compare a normalized reply with the expected answer (exact, contains, token F1)."""

from __future__ import annotations

import re
import string
from collections import Counter

from tnsai_eval.scoring._evaluator import ComparesExpected

__all__ = [
    "ContainsEvaluator",
    "ExactMatchEvaluator",
    "TokenF1Evaluator",
    "answer_tokens",
    "normalize_answer",
]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalization: lowercase, drop punctuation and the
    articles a/an/the, collapse whitespace.

    >>> normalize_answer("  The Eiffel-Tower!  ")
    'eiffeltower'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """The words of ``text`` after ``normalize_answer``, in order, with repeats."""
    return normalize_answer(text).split()


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


class TokenF1Evaluator(ComparesExpected):
    """SQuAD's token F1: harmonic mean of token precision and recall.

    Tokens are the words of the normalized texts, counted with multiplicity.
    Two empty answers score 1.0; one empty answer scores 0.0.

    >>> round(TokenF1Evaluator().evaluate("Paris France", "Paris"), 3)
    0.667
    """

    def evaluate(self, actual: str, expected: str) -> float:
        got, want = answer_tokens(actual), answer_tokens(expected)
        if not got or not want:
            return 1.0 if got == want else 0.0
        common = sum((Counter(got) & Counter(want)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(got), common / len(want)
        return 2 * precision * recall / (precision + recall)
