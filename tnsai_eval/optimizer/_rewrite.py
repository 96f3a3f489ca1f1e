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

from tnsai_eval.evaluation import Variant
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
        case, output, score = cases[index], best.outputs.get(index), best.scores.get(index)
        lines += [
            f"Input: {case.input.strip()}",
            f"Expected: {case.expected.strip()}",
            f"Got: {output.strip() if output is not None else '(no reply: the call failed)'}",
            f"Score: {score:.2f}" if score is not None else "Score: none",
            "",
        ]
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


# What the rewrite request shows the model about grading: a proposal that
# repeats it ("The score is 0.00, which is the expected output") is talking
# to the grader, not instructing the model on the task.
_GRADING = re.compile(
    r"\bscor(?:e|es|ed|ing)\b"
    r"|\bexpected (?:output|answer|label|result|response|reply)s?\b"
    r"|\bgrad(?:e|es|ed|er|ers|ing)\b",
    re.IGNORECASE,
)
# A proposal holding this share (or more) of one case's content words, and at
# least _QUOTE_WORDS of them beyond the task's own, is about that case: a
# paraphrase ("a tennis star has withdrawn from the Tour de France") counts.
_QUOTE_SHARE = 0.5
_QUOTE_WORDS = 4
# A case's input or a model reply this long (in words) or longer, found word
# for word inside a proposal, is a copy, not an instruction.
_REPEAT_WORDS = 3


def _stem(word: str) -> str:
    # A crude stem: "classify" and "classification" share "class"; good
    # enough to tell "about the task" from "about nothing in it".
    return word[:5]


def task_words(task: str, cases: Iterable[TestCase] = ()) -> frozenset[str]:
    """The stems of the content words of a task: its prompt and the expected answers.

    >>> sorted(task_words("Classify the sentiment.", [TestCase("great!", "positive")]))
    ['class', 'posit', 'senti']
    """
    return frozenset(_content_words(" ".join([task, *(case.expected for case in cases)])))


def _content_words(text: str) -> list[str]:
    return [
        _stem(word)
        for word in normalize_answer(text).split()
        if len(word) >= 3 and word.isalpha() and word not in _COMMON
    ]


def _quoted_case(proposal: str, task: str, cases: Sequence[TestCase]) -> TestCase | None:
    """The first case whose input ``proposal`` quotes or closely paraphrases, if any."""
    said = set(_content_words(proposal))
    own = set(_content_words(task))
    for case in cases:
        words = set(_content_words(case.input))
        beyond = words - own
        if len(beyond) < _QUOTE_WORDS:
            continue
        if len(words & said) >= _QUOTE_SHARE * len(words) and len(beyond & said) >= _QUOTE_WORDS:
            return case
    return None


def _repeated(proposal: str, texts: Iterable[str], task: str) -> str | None:
    """The first of ``texts`` that ``proposal`` is, or holds word for word, if any.

    Compared after ``normalize_answer`` (case, punctuation and spacing aside).
    Equal to the proposal counts whatever its length; held inside it only
    from ``_REPEAT_WORDS`` words up and when the task's own prompt does not
    hold it (a prompt may well name the labels the model answers).
    """
    said = f" {normalize_answer(proposal)} "
    own = f" {normalize_answer(task)} "
    for text in texts:
        words = normalize_answer(text)
        if not words:
            continue
        if said.strip() == words:
            return text
        if len(words.split()) >= _REPEAT_WORDS and f" {words} " in said and f" {words} " not in own:
            return text
    return None


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


def check_rewrite(
    proposal: str, task: str, cases: Iterable[TestCase] = (), replies: Iterable[str] = ()
) -> str | None:
    """Why ``proposal`` is not a prompt for ``task``, or ``None`` when it may be one.

    Rejected: an empty proposal, a greeting or offer of help, a question back
    to the user, a proposal that shares no content word (crudely stemmed)
    with the task's prompt or its cases' expected answers, and, since a
    prompt must generalize beyond the cases it was written from, one that
    talks about scores, expected outputs or grading (words the rewrite
    request uses; allowed when the task's own prompt uses them) or that
    quotes or paraphrases a case's input (half or more of its content
    words, crudely stemmed, and at least four of them not in the task's
    prompt), or repeats a case's input or a reply the model gave to a case
    (``replies``) word for word: the whole proposal, or, from three words
    up, inside it (a small model asked for a prompt often answers with what
    it answered before: "Theft of the party / Output: technology").
    ``proposal`` should already be cleaned (``clean_rewrite``).

    >>> check_rewrite("I'm ready to help. What's your next prompt?", "Classify the sentiment.")
    'a greeting or offer of help, not a prompt'
    >>> check_rewrite("Say whether the review is positive or negative.",
    ...               "Classify the sentiment.", [TestCase("great!", "positive")]) is None
    True
    >>> check_rewrite("Write a poem about the sea.", "Classify the sentiment.")
    'shares no word with the task (class, senti)'
    >>> check_rewrite("Classify the sentiment. The expected output scores 1.0.",
    ...               "Classify the sentiment.")
    "talks about grading ('expected output'), not the task"
    >>> check_rewrite("Classify the sentiment: the plot was dull and far too long",
    ...               "Classify the sentiment.",
    ...               [TestCase("The plot was dull and far too long.", "negative")])
    "quotes a case's input ('The plot was dull and far too long.')"
    >>> check_rewrite("Theft of the party Output: technology", "Topic?",
    ...               [TestCase("Theft of the party", "technology")],
    ...               replies=["Theft of the party Output: technology"])
    "repeats the model's reply to a case ('Theft of the party Output: technology')"
    """
    cases = list(cases)
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
    own = {m.group(0).lower() for m in _GRADING.finditer(task)}
    grading = [m.group(0) for m in _GRADING.finditer(text) if m.group(0).lower() not in own]
    if grading:
        return f"talks about grading ({grading[0]!r}), not the task"
    reply = _repeated(text, replies, task)
    if reply is not None:
        return f"repeats the model's reply to a case ({_shown(reply)!r})"
    quoted = _quoted_case(text, task, cases)
    if quoted is not None:
        return f"quotes a case's input ({_shown(quoted.input)!r})"
    # A short input (too few words for the paraphrase test) copied word for word.
    copied = _repeated(text, (case.input for case in cases), task)
    if copied is not None:
        return f"repeats a case's input ({_shown(copied)!r})"
    return None
