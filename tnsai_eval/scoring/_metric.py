"""What a mean of an evaluator's scores is called: an accuracy or a score."""

from __future__ import annotations

from tnsai_eval.scoring._exact import ExactMatchEvaluator
from tnsai_eval.scoring._label import LabelEvaluator

__all__ = ["score_metric"]


def score_metric(evaluator: object) -> str:
    """What a mean of ``evaluator``'s scores is: ``"accuracy"`` when each case scores
    1 or 0 against one right answer (``LabelEvaluator``, ``ExactMatchEvaluator``),
    else ``"score"``. Reports and headlines name it.

    >>> from tnsai_eval.scoring import DefaultPromptEvaluator
    >>> score_metric(LabelEvaluator(["yes", "no"])), score_metric(DefaultPromptEvaluator())
    ('accuracy', 'score')
    """
    return "accuracy" if isinstance(evaluator, LabelEvaluator | ExactMatchEvaluator) else "score"
