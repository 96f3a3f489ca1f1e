"""SQuAD's token F1 between the reply and the expected answer."""

from __future__ import annotations

from collections import Counter

from tnsai_eval.scoring._evaluator import ComparesExpected
from tnsai_eval.scoring._normalize import answer_tokens

__all__ = ["TokenF1Evaluator"]


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
