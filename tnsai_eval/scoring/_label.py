"""Labels: 1.0 when the reply names the expected label and no other, and the constraint that
lets a model reply only with a label."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.scoring._answers import ExactMatchEvaluator, normalize_answer
from tnsai_eval.scoring._evaluator import ComparesExpected

__all__ = ["LabelEvaluator", "labels_response_format", "score_metric"]


class LabelEvaluator(ComparesExpected):
    """1.0 when the reply names the expected label and no other, else 0.0: a mean is accuracy.

    The reply's label is found after ``normalize_answer``: the whole reply when
    it is a label, else the one label that occurs in it as whole words ("The
    sentiment is positive." names ``positive``). A reply naming no label or
    several ("positive or negative") names none and scores 0.0. A JSON reply
    of the constrained form ``{"label": "..."}`` (see ``labels_response_format``)
    is read by its value.

    >>> judge = LabelEvaluator(["positive", "negative"])
    >>> judge.evaluate("The sentiment is Positive.", "positive")
    1.0
    >>> judge.evaluate("Positive or negative, hard to say", "positive")
    0.0
    >>> judge.label_of('{"label": "negative"}')
    'negative'
    """

    def __init__(self, labels: Iterable[str]) -> None:
        self.labels = tuple(labels)
        if len(self.labels) < 2:
            raise ConfigError(f"LabelEvaluator needs at least two labels, got {self.labels!r}")
        self._normalized = {normalize_answer(label): label for label in self.labels}
        if len(self._normalized) != len(self.labels) or "" in self._normalized:
            raise ConfigError(
                f"labels must be distinct and non-empty after normalizing, got {self.labels!r}"
            )

    def __repr__(self) -> str:
        return f"LabelEvaluator(labels={self.labels!r})"

    def label_of(self, reply: str) -> str | None:
        """The one label ``reply`` names, or ``None`` when it names none or several."""
        text = normalize_answer(_json_label(reply))
        if text in self._normalized:
            return self._normalized[text]
        padded = f" {text} "
        found = [label for norm, label in self._normalized.items() if f" {norm} " in padded]
        return found[0] if len(found) == 1 else None

    def evaluate(self, actual: str, expected: str) -> float:
        label = self.label_of(actual)
        return (
            1.0
            if label is not None and normalize_answer(label) == normalize_answer(expected)
            else 0.0
        )


def _json_label(reply: str) -> str:
    try:
        value = json.loads(reply)
    except ValueError:
        return reply
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.values()))
    return value if isinstance(value, str) else reply


def labels_response_format(labels: Iterable[str]) -> dict[str, Any]:
    """The OpenAI-shaped ``response_format`` that lets a model reply only with one of ``labels``.

    The reply is ``{"label": "<one of labels>"}``; ``LabelEvaluator`` reads it.

    >>> labels_response_format(["yes", "no"])["json_schema"]["schema"]["properties"]
    {'label': {'type': 'string', 'enum': ['yes', 'no']}}
    """
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "label",
            "schema": {
                "type": "object",
                "properties": {"label": {"type": "string", "enum": list(labels)}},
                "required": ["label"],
                "additionalProperties": False,
            },
        },
    }


def score_metric(evaluator: object) -> str:
    """What a mean of ``evaluator``'s scores is: ``"accuracy"`` when each case scores
    1 or 0 against one right answer (``LabelEvaluator``, ``ExactMatchEvaluator``),
    else ``"score"``. Reports and headlines name it.

    >>> from tnsai_eval.scoring import DefaultPromptEvaluator
    >>> score_metric(LabelEvaluator(["yes", "no"])), score_metric(DefaultPromptEvaluator())
    ('accuracy', 'score')
    """
    return "accuracy" if isinstance(evaluator, LabelEvaluator | ExactMatchEvaluator) else "score"
