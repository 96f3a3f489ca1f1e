"""The model-written variant: ask the model to rewrite the best prompt from its results."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._engine import Variant

__all__ = ["REWRITE_CASES", "clean_rewrite", "rewrite_request"]

#: How many cases (the first ones, in the order given) the rewrite request shows.
REWRITE_CASES = 3

_LABEL = re.compile(
    r"^\s*(?:here(?:'s| is)\s+)?(?:an?\s+|the\s+)?(?:improved|new|better|revised|rewritten)?"
    r"\s*prompt\s*:\s*",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_QUOTES = ('"', "'", "“", "”")


def rewrite_request(best: Variant, cases: Sequence[TestCase]) -> str:
    """The message asking for a better prompt, showing the best prompt's first results."""
    lines = [
        "You improve prompts for a language model.",
        "",
        "Current prompt:",
        best.prompt.strip(),
        "",
        "Its results (score from 0 to 1):",
    ]
    for index, case in enumerate(cases[:REWRITE_CASES]):
        output = best.outputs.get(index)
        score = best.scores.get(index)
        lines.append(f"Input: {case.input.strip()}")
        lines.append(f"Expected: {case.expected.strip()}")
        lines.append(
            f"Got: {output.strip() if output is not None else '(no reply: the call failed)'}"
        )
        lines.append(f"Score: {score:.2f}" if score is not None else "Score: none")
        lines.append("")
    lines.append(
        "Write an improved prompt that makes the model reply with exactly the expected "
        "output. Reply with the new prompt only."
    )
    return "\n".join(lines)


def clean_rewrite(text: str) -> str:
    """The prompt in a rewrite reply: code fences, a "New prompt:" label and
    surrounding quotes removed.

    >>> clean_rewrite('Improved prompt: "Name the capital city only."')
    'Name the capital city only.'
    """
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    text = _LABEL.sub("", text, count=1).strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1].strip()
    return text
