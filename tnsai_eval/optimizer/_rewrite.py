"""The model-written variant: ask a model to rewrite the best instruction from its failures.

A small model asked for a better prompt often answers as a chat assistant
("I'm ready to help. What's your next prompt?"). Scored as a prompt, such a
reply is a wasted variant at best and, on a leaderboard, a misleading one, so
every proposal passes ``check_rewrite`` first: the one validation shared by
every place that asks a model for a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from tnsai_eval.optimizer._engine import Variant
from tnsai_eval.scoring import TestCase, normalize_answer

__all__ = ["REWRITE_CASES", "check_rewrite", "clean_rewrite", "rewrite_request", "task_words"]

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


_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|greetings|good (?:morning|afternoon|evening)|welcome)\b"
    r"|\b(?:i'?m|i am) (?:ready|happy|glad|here) to (?:help|assist)"
    r"|\bhow (?:can|may) i (?:help|assist)",
    re.IGNORECASE,
)
# Questions addressed to the person running the optimizer, not to the model.
_ASKS_USER = re.compile(
    r"\b(?:what|which|how) (?:would|do|can|should) you (?:like|want|need)\b"
    r"|\byour next\b"
    r"|\b(?:could|can|would) you (?:please )?(?:provide|share|clarify|give me|tell me|specify)\b"
    r"|\bwhat(?:'s| is) your\b"
    r"|\bdo you (?:want|need|have)\b",
    re.IGNORECASE,
)
# Words too common to show that a proposal is about the task.
_COMMON = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "your",
        "you",
        "are",
        "was",
        "were",
        "will",
        "would",
        "should",
        "could",
        "can",
        "not",
        "but",
        "its",
        "into",
        "only",
        "then",
        "than",
        "what",
        "which",
        "who",
        "how",
        "reply",
        "answer",
        "respond",
        "response",
        "text",
        "output",
        "input",
        "prompt",
        "model",
        "please",
        "give",
        "write",
        "word",
        "words",
        "one",
    }
)


def _stem(word: str) -> str:
    # A crude stem: "classify" and "classification" share "class"; good
    # enough to tell "about the task" from "about nothing in it".
    return word[:5]


def task_words(task: str, cases: Iterable[TestCase] = ()) -> frozenset[str]:
    """The stems of the content words of a task: its prompt and the expected answers.

    >>> sorted(task_words("Classify the sentiment.", [TestCase("great!", "positive")]))
    ['class', 'posit', 'senti']
    """
    text = " ".join([task, *(case.expected for case in cases)])
    return frozenset(
        _stem(word)
        for word in normalize_answer(text).split()
        if len(word) >= 3 and word.isalpha() and word not in _COMMON
    )


def check_rewrite(proposal: str, task: str, cases: Iterable[TestCase] = ()) -> str | None:
    """Why ``proposal`` is not a prompt for ``task``, or ``None`` when it may be one.

    Rejected: an empty proposal, a greeting or offer of help, a question back
    to the user, and a proposal that shares no content word (crudely stemmed)
    with the task's prompt or its cases' expected answers. ``proposal`` should
    already be cleaned (``clean_rewrite``).

    >>> check_rewrite("I'm ready to help. What's your next prompt?", "Classify the sentiment.")
    'a greeting or offer of help, not a prompt'
    >>> check_rewrite("Say whether the review is positive or negative.",
    ...               "Classify the sentiment.", [TestCase("great!", "positive")]) is None
    True
    >>> check_rewrite("Write a poem about the sea.", "Classify the sentiment.")
    'shares no word with the task (class, senti)'
    """
    text = proposal.strip()
    if not text:
        return "empty"
    if _GREETING.search(text):
        return "a greeting or offer of help, not a prompt"
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    if sentences and sentences[-1].rstrip().endswith("?") and _ASKS_USER.search(sentences[-1]):
        return "a question back to the user, not a prompt"
    wanted = task_words(task, cases)
    if wanted and not wanted & task_words(text):
        return f"shares no word with the task ({', '.join(sorted(wanted)[:8])})"
    return None
