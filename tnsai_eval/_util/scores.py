"""Reading a judge model's 0-100 grade out of its reply.

One parser for every judge in the library (``llm_check`` in the refinement
loop, ``LLMJudgeEvaluator`` in the optimizer), so that the same reply gets the
same score wherever it is read. Small models decorate the verdict, so it is
read tolerantly: ``SCORE: 85``, ``Score: 85``, ``**SCORE:** 85.5``,
``score = 7/10`` (a denominator, when given, is honoured), ``SCORE: 85%``.
When the reply holds several labelled scores, the last one counts (models
often restate the instruction first). Without ``require_label``, a reply with
no label may still give its grade as ``85/100``, ``85%`` or a bare number in
0-100 (the first such). The value is divided by 100 (or the denominator) and
clamped to [0, 1].
"""

from __future__ import annotations

import re
from typing import TypeGuard

__all__ = ["is_share", "parse_score"]

# "score", then any decoration (markdown bold, colon, equals, spaces), then a
# number, optionally "/ denominator", "out of N" or "%". "score of 8" does not
# match: a word between "score" and the number means prose, not the verdict.
_LABELLED = re.compile(
    r"\bscore\b[\s*_:=#>-]*(\d+(?:\.\d+)?)\s*(?:(?:/|out\s+of)\s*(\d+(?:\.\d+)?)|%)?",
    re.IGNORECASE,
)
# Unlabelled forms, tried in this order.
_OUT_OF_100 = re.compile(r"(\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*100\b", re.IGNORECASE)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
# A number not glued to other digits; a sentence's final period may follow it.
_BARE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)(?!\.?\d)")


def is_share(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a number in [0, 1]: a score, a threshold, a target.

    The one check behind every such option, so that each rejects the same
    values: a bool (``True`` is not a score), NaN, a percentage, a string.

    >>> [is_share(v) for v in (0.5, 1, 0, True, float("nan"), 80, "0.5")]
    [True, True, True, False, False, False, False]
    """
    return not isinstance(value, bool) and isinstance(value, int | float) and 0.0 <= value <= 1.0


def parse_score(reply: str, *, require_label: bool = True) -> float | None:
    """The grade in ``reply`` as a fraction in [0, 1], or ``None`` when it states none.

    >>> parse_score("Good work.\\n**SCORE:** 85.5")
    0.855
    >>> parse_score("SCORE: 85/100"), parse_score("score = 7/10"), parse_score("no verdict")
    (0.85, 0.7, None)
    >>> parse_score("I'd give it 85."), parse_score("I'd give it 85.", require_label=False)
    (None, 0.85)
    """
    labelled = list(_LABELLED.finditer(reply))
    if labelled:
        value_text, denominator_text = labelled[-1].group(1), labelled[-1].group(2)
        denominator = float(denominator_text) if denominator_text else 100.0
        if denominator <= 0:
            return None
        return _clamp(float(value_text) / denominator)
    if require_label:
        return None
    for pattern in (_OUT_OF_100, _PERCENT):
        match = pattern.search(reply)
        if match is not None:
            return _clamp(float(match.group(1)) / 100.0)
    for match in _BARE.finditer(reply):
        value = float(match.group(1))
        # A year or a count in the prose is not a grade.
        if value <= 100.0:
            return value / 100.0
    return None


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))
