"""The model-written variant: ask a model to rewrite the best instruction from its failures."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tnsai_eval.optimizer._cases import TestCase
from tnsai_eval.optimizer._engine import Variant

__all__ = ["REWRITE_CASES", "clean_rewrite", "rewrite_request"]

#: How many cases the rewrite request shows: the best prompt's worst-scored first.
REWRITE_CASES = 4
#: How many earlier instructions (best score first) the request lists with their scores.
REWRITE_HISTORY = 4

_LABEL = re.compile(
    r"^\s*(?:here(?:'s| is)\s+)?(?:an?\s+|the\s+)?(?:improved|new|better|revised|rewritten)?"
    r"\s*prompt\s*:\s*",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
_QUOTES = ('"', "'", "“", "”")


def rewrite_request(
    best: Variant, cases: Sequence[TestCase], *, tried: Sequence[tuple[str, float]] = ()
) -> str:
    """The message asking for a better instruction (as OPRO and ProTeGi do).

    It shows the current instruction and its score, the instructions tried so
    far with their scores (best first, ``tried``), and the cases the current
    one does worst on (its failures first; the cases it got right only when
    there are no failures), with what it got and what was expected. Cases are
    selection cases only: the run never sees held-out ones.
    """
    mean = best.mean()
    lines = [
        "You improve prompts for a language model.",
        "",
        "Current instruction:",
        best.spec.instruction.strip(),
        "",
        f"Its score (0 to 1): {mean:.2f}" if mean is not None else "Its score: none yet",
    ]
    others = sorted(
        {
            (text.strip(), score)
            for text, score in tried
            if text.strip() != best.spec.instruction.strip()
        },
        key=lambda item: (-item[1], item[0]),
    )[:REWRITE_HISTORY]
    if others:
        lines += ["", "Other instructions tried, with their scores:"]
        lines += [f"- ({score:.2f}) {' '.join(text.split())}" for text, score in others]
    scored = [i for i in range(len(cases)) if i in best.scores]
    worst = sorted(scored, key=lambda i: (best.scores[i] is not None, best.scores[i] or 0.0, i))
    shown = worst[:REWRITE_CASES] or list(range(min(REWRITE_CASES, len(cases))))
    lines += ["", "Cases it got wrong or least right:"]
    for index in shown:
        case = cases[index]
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
        "Write one improved instruction that makes the model reply with exactly the "
        "expected output for inputs like these. Reply with the instruction only."
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
