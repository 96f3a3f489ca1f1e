"""Evaluators: how close a model's answer is to the expected one, in [0, 1]."""

from __future__ import annotations

import itertools
import json
import re
import string
from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from tnsai_eval.errors import ConfigError

__all__ = [
    "ContainsEvaluator",
    "DefaultPromptEvaluator",
    "ExactMatchEvaluator",
    "LabelEvaluator",
    "PromptEvaluator",
    "TokenF1Evaluator",
    "labels_response_format",
    "normalize_answer",
    "score_metric",
]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# Words that carry no content of their own; left out of "keywords" only.
_STOPWORDS = frozenset(
    {
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "it",
        "its",
        "they",
        "them",
        "their",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "and",
        "or",
        "but",
        "not",
        "no",
        "so",
        "if",
        "then",
        "than",
        "that",
        "this",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "how",
    }
)


@runtime_checkable
class PromptEvaluator(Protocol):
    """Anything with ``evaluate(actual, expected) -> float`` in [0, 1].

    An evaluator may also define ``async aevaluate(actual, expected)``; the
    optimizer awaits it instead, so that evaluators which call a model (such as
    ``LLMJudgeEvaluator``) do not block the other cases.
    It may also define ``explain(actual, expected)``, returning a text or a
    record with a ``reason`` attribute (``LLMJudgeEvaluator``: the judge's
    ``JudgeResult``); a non-blank reason is kept in the case's record
    (``CaseResult.reason``, ``CaseScore.reason``, the report's case records).

    >>> class StartsWith:
    ...     def evaluate(self, actual: str, expected: str) -> float:
    ...         return 1.0 if actual.startswith(expected) else 0.0
    >>> isinstance(StartsWith(), PromptEvaluator)
    True
    """

    def evaluate(self, actual: str, expected: str) -> float: ...


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


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


class ExactMatchEvaluator:
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


class ContainsEvaluator:
    """1.0 when the expected answer appears in the answer as whole words, else 0.0.

    Both sides are normalized first, so "The capital is Paris." contains
    "paris" but "Parisian" does not. An empty expected answer always matches.

    >>> ContainsEvaluator().evaluate("The capital is Paris.", "Paris")
    1.0
    """

    def __repr__(self) -> str:
        return "ContainsEvaluator()"

    def evaluate(self, actual: str, expected: str) -> float:
        needle = normalize_answer(expected)
        if not needle:
            return 1.0
        return 1.0 if f" {needle} " in f" {normalize_answer(actual)} " else 0.0


class TokenF1Evaluator:
    """SQuAD's token F1: harmonic mean of token precision and recall.

    Tokens are the words of the normalized texts, counted with multiplicity.
    Two empty answers score 1.0; one empty answer scores 0.0.

    >>> round(TokenF1Evaluator().evaluate("Paris France", "Paris"), 3)
    0.667
    """

    def __repr__(self) -> str:
        return "TokenF1Evaluator()"

    def evaluate(self, actual: str, expected: str) -> float:
        got, want = _tokens(actual), _tokens(expected)
        if not got or not want:
            return 1.0 if got == want else 0.0
        common = sum((Counter(got) & Counter(want)).values())
        if common == 0:
            return 0.0
        precision, recall = common / len(got), common / len(want)
        return 2 * precision * recall / (precision + recall)


class DefaultPromptEvaluator:
    """The original module's scorer, with every term defined.

    Both texts are normalized with ``normalize_answer`` (lowercase, no
    punctuation, no articles, single spaces) and split into words.

    * **match**: equal normalized texts score ``1.0``. Otherwise the score is
      ``0.5 * keyword + 0.2 * length + 0.3 * phrase``:
    * **keyword overlap**: the share of the expected answer's distinct
      keywords (words not in a short stopword list; all its words when every
      one is a stopword) that occur among the answer's words.
    * **length similarity**: ``min(a, e) / max(a, e)`` for the word counts
      ``a`` of the answer and ``e`` of the expected answer (0 when one is 0).
    * **phrase overlap**: the share of the expected answer's distinct word
      bigrams that occur among the answer's bigrams; for a one-word expected
      answer, 1 when that word occurs in the answer, else 0.

    An empty expected answer is only matched by an empty answer (1.0, else 0.0).

    >>> DefaultPromptEvaluator().evaluate("paris!", "Paris")
    1.0
    >>> round(DefaultPromptEvaluator().evaluate("The capital of France is Paris.", "Paris"), 3)
    0.84
    """

    def __repr__(self) -> str:
        return "DefaultPromptEvaluator()"

    def evaluate(self, actual: str, expected: str) -> float:
        got, want = _tokens(actual), _tokens(expected)
        if got == want:
            return 1.0
        if not want or not got:
            return 0.0
        return (
            0.5 * keyword_overlap(got, want)
            + 0.2 * length_similarity(got, want)
            + 0.3 * phrase_overlap(got, want)
        )


def keyword_overlap(got: list[str], want: list[str]) -> float:
    """Share of ``want``'s distinct keywords found in ``got`` (see DefaultPromptEvaluator)."""
    keywords = {w for w in want if w not in _STOPWORDS} or set(want)
    return len(keywords & set(got)) / len(keywords)


def length_similarity(got: list[str], want: list[str]) -> float:
    """``min / max`` of the two word counts (see DefaultPromptEvaluator)."""
    longest = max(len(got), len(want))
    return min(len(got), len(want)) / longest if longest else 1.0


def phrase_overlap(got: list[str], want: list[str]) -> float:
    """Share of ``want``'s distinct bigrams found in ``got`` (see DefaultPromptEvaluator)."""
    if len(want) == 1:
        return 1.0 if want[0] in got else 0.0
    wanted = set(itertools.pairwise(want))
    found = set(itertools.pairwise(got))
    return len(wanted & found) / len(wanted)


class LabelEvaluator:
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

    >>> score_metric(LabelEvaluator(["yes", "no"])), score_metric(DefaultPromptEvaluator())
    ('accuracy', 'score')
    """
    return "accuracy" if isinstance(evaluator, LabelEvaluator | ExactMatchEvaluator) else "score"
