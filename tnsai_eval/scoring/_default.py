"""The original module's scorer: keyword, length and phrase overlap, every term defined."""

from __future__ import annotations

import itertools

from tnsai_eval.scoring._answers import answer_tokens
from tnsai_eval.scoring._evaluator import ComparesExpected

__all__ = ["DefaultPromptEvaluator", "keyword_overlap", "length_similarity", "phrase_overlap"]

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


class DefaultPromptEvaluator(ComparesExpected):
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

    def evaluate(self, actual: str, expected: str) -> float:
        got, want = answer_tokens(actual), answer_tokens(expected)
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
