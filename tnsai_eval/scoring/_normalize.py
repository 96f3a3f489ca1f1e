"""How answers are compared: SQuAD's normalization, and the words it leaves."""

from __future__ import annotations

import re
import string

__all__ = ["answer_tokens", "normalize_answer"]

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
