"""Learning rules, preferences and examples from stored feedback.

Two strategies ask the model, one call each; the third needs no call.
PROMPT_ADJUSTMENT reads the CORRECTION and NEGATIVE feedback and asks for
``RULE:`` lines; PREFERENCE_LEARNING reads the PREFERENCE and CORRECTION
feedback and asks for ``PREFERENCE:`` lines; EXAMPLE_COLLECTION keeps the
POSITIVE content as given.

The extraction prompts are our own. Each is a short few-shot chat written so
that the embedded SmolLM2-135M follows it (large models do too): a system
message with the task and the line format, one example exchange answered in
exactly that format (a 135M model copies a shown format far more reliably
than it follows a described one), then the real feedback as a bulleted list:
the most recent ``max_items_per_call`` items of the types read, each trimmed
to ``max_item_chars``. The example is from another domain so that its answers
are never mistaken for real rules. Calls use ``temperature=0`` and a bounded
``max_tokens``. This is exactly what is sent for rules (long lines wrapped
here for width):

>>> import textwrap
>>> from tnsai_eval.testing import ScriptedLLM
>>> learner = FeedbackLearner(ScriptedLLM(), FeedbackStore.in_memory())
>>> feedback = [Feedback.correction("Refunds take 5 days, not 1."),
...             Feedback.thumbs_down("You ignored my question.")]
>>> for message in learner.extraction_messages("prompt_adjustment", feedback):
...     print(f"[{message['role']}]")
...     for line in message["content"].splitlines():
...         print(textwrap.fill(line, 76))
[system]
Turn each piece of user feedback into a rule for the assistant. Write one
line per feedback item, starting with 'RULE:'. Keep the user's own words
where you can. Write nothing else.
[user]
Feedback:
- The museum opens at 10, not 8. Check the timetable first.
- Way too long, I only wanted the price.
- Never call me 'mate'.
[assistant]
RULE: Check the timetable first; the museum opens at 10, not 8.
RULE: Give only the price when asked for the price.
RULE: Never call users 'mate'.
[user]
Feedback:
- Refunds take 5 days, not 1.
- You ignored my question.

and for preferences:

>>> for message in learner.extraction_messages("preference_learning", feedback)[:3]:
...     print(f"[{message['role']}]")
...     for line in message["content"].splitlines():
...         print(textwrap.fill(line, 76))
[system]
Turn each piece of user feedback into a rule for the assistant about how the
user likes to be answered. Write one line per feedback item, starting with
'PREFERENCE:'. Keep the user's own words where you can. Write nothing else.
[user]
Feedback:
- The museum opens at 10, not 8. Check the timetable first.
- I like bullet points better than paragraphs.
- Never call me 'mate'.
[assistant]
PREFERENCE: Check the timetable first.
PREFERENCE: Use bullet points rather than paragraphs.
PREFERENCE: Never call the user 'mate'.

The reply is read line by line and only lines starting with the prefix are
kept, tolerantly: leading whitespace, bullets (``-``, ``*``, ``+``, ``•``),
numbering (``1.``, ``1)``), bold or code markers (``**RULE:**``), any case of
the prefix and a number after it (``Rule 2:``). Dropped: duplicates (ignoring
case, spacing and a final full stop), copies of the example answers (small
models sometimes repeat them), items with no letter, and the last line of a
reply cut off by ``max_tokens``. A failed call (any ``Exception``) leaves only its
own list empty; the error is listed in ``LearningResult.errors``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tnsai_eval._util.checks import whole
from tnsai_eval._util.enums import ParsedEnum
from tnsai_eval._util.secrets import mask
from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback._store import FeedbackStore
from tnsai_eval.feedback._types import Feedback, FeedbackType
from tnsai_eval.llm import LLMClient

__all__ = [
    "FeedbackLearner",
    "LearningResult",
    "LearningStrategy",
    "extract_prefixed_lines",
]


class LearningStrategy(ParsedEnum):
    """What ``FeedbackLearner.learn`` derives from feedback."""

    PROMPT_ADJUSTMENT = "prompt_adjustment"
    PREFERENCE_LEARNING = "preference_learning"
    EXAMPLE_COLLECTION = "example_collection"


@dataclass(frozen=True, slots=True)
class LearningResult:
    """What one ``learn()`` produced.

    ``errors`` names each strategy whose model call failed, and why.

    >>> LearningResult(["Quote the order number."], [], [], 4).has_learnings
    True
    >>> LearningResult().has_learnings
    False
    """

    prompt_adjustments: Sequence[str] = ()
    preferences: Sequence[str] = ()
    good_examples: Sequence[str] = ()
    feedback_analyzed: int = 0
    errors: Sequence[str] = ()

    def __post_init__(self) -> None:
        # Stored as tuples so that a frozen result is frozen all the way down.
        for name in ("prompt_adjustments", "preferences", "good_examples", "errors"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def has_learnings(self) -> bool:
        """Whether any rule, preference or example was learned."""
        return bool(self.prompt_adjustments or self.preferences or self.good_examples)


@dataclass(frozen=True, slots=True)
class _Extraction:
    """One model-backed strategy: which feedback it reads and how it asks."""

    prefix: str
    reads: tuple[FeedbackType, ...]
    system: str
    example_feedback: tuple[str, ...]
    example_answer: tuple[str, ...]


# The wording below was tuned against SmolLM2-135M-Instruct at temperature 0:
# "one line per feedback item" plus "keep the user's own words" makes a small
# model rewrite each item instead of inventing rules, and example feedback
# from another domain (a museum) keeps its answers from being mistaken for
# real rules. Large models follow it as well.
_RULES = _Extraction(
    prefix="RULE",
    reads=(FeedbackType.CORRECTION, FeedbackType.NEGATIVE),
    system=(
        "Turn each piece of user feedback into a rule for the assistant. "
        "Write one line per feedback item, starting with 'RULE:'. "
        "Keep the user's own words where you can. Write nothing else."
    ),
    example_feedback=(
        "The museum opens at 10, not 8. Check the timetable first.",
        "Way too long, I only wanted the price.",
        "Never call me 'mate'.",
    ),
    example_answer=(
        "RULE: Check the timetable first; the museum opens at 10, not 8.",
        "RULE: Give only the price when asked for the price.",
        "RULE: Never call users 'mate'.",
    ),
)

_PREFERENCES = _Extraction(
    prefix="PREFERENCE",
    reads=(FeedbackType.PREFERENCE, FeedbackType.CORRECTION),
    system=(
        "Turn each piece of user feedback into a rule for the assistant about how "
        "the user likes to be answered. Write one line per feedback item, starting "
        "with 'PREFERENCE:'. Keep the user's own words where you can. Write nothing else."
    ),
    example_feedback=(
        "The museum opens at 10, not 8. Check the timetable first.",
        "I like bullet points better than paragraphs.",
        "Never call me 'mate'.",
    ),
    example_answer=(
        "PREFERENCE: Check the timetable first.",
        "PREFERENCE: Use bullet points rather than paragraphs.",
        "PREFERENCE: Never call the user 'mate'.",
    ),
)

_EXTRACTIONS = {
    LearningStrategy.PROMPT_ADJUSTMENT: _RULES,
    LearningStrategy.PREFERENCE_LEARNING: _PREFERENCES,
}

_MARKUP = re.compile(r"\*\*|__|`")
_BULLET = r"(?:[-*+•]|\d{1,3}[.)])"


def _normalized(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".!")


def extract_prefixed_lines(reply: str, prefix: str, *, exclude: Iterable[str] = ()) -> list[str]:
    """The text after ``prefix:`` on each line of ``reply`` that has it.

    Tolerates leading whitespace, a bullet or number, bold or code markers,
    any case, and a number after the prefix; drops empty items, duplicates
    (case- and space-insensitive) and anything in ``exclude``.

    >>> extract_prefixed_lines("1. **Rule:** Be brief.\\n- rule: be brief\\nnoise", "RULE")
    ['Be brief.']
    """
    pattern = re.compile(
        rf"^\s*(?:{_BULLET}\s*)?{re.escape(prefix)}\s*\d*\s*:\s*(?P<text>.*)$", re.IGNORECASE
    )
    seen = {_normalized(text) for text in exclude}
    found: list[str] = []
    for line in reply.splitlines():
        match = pattern.match(_MARKUP.sub("", line))
        if match is None:
            continue
        text = match.group("text").strip().strip("\"'").strip()
        key = _normalized(text)
        # Needs a letter: "RULE: ..." or "RULE: -" is a model stumbling, not a rule.
        if not re.search(r"[^\W\d_]", key) or key in seen:
            continue
        seen.add(key)
        found.append(text)
    return found


class FeedbackLearner:
    """Derives rules, preferences and good examples from a feedback store.

    ``learn()`` does nothing (an empty ``LearningResult``) while the store
    holds fewer than ``min_feedback_for_learning`` items. Otherwise each
    chosen strategy runs: see the module docstring for the prompts. ``llm``
    is any ``LLMClient``; ``llm_params`` are added to each call.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> store = FeedbackStore.in_memory()
    >>> llm = ScriptedLLM(["RULE: Quote the order number.", "PREFERENCE: Short answers."])
    >>> learner = FeedbackLearner(llm, store)
    >>> learner.record_feedback(Feedback.correction("You forgot my order number."))
    >>> learner.record_feedback(Feedback.preference("Keep it short."))
    >>> learner.record_feedback(Feedback.thumbs_up("Thanks, that fixed it!"))
    >>> result = learner.learn()
    >>> result.prompt_adjustments, result.preferences, result.good_examples
    (('Quote the order number.',), ('Short answers.',), ('Thanks, that fixed it!',))
    """

    def __init__(
        self,
        llm: LLMClient,
        feedback_store: FeedbackStore,
        strategies: Iterable[LearningStrategy | str] = tuple(LearningStrategy),
        min_feedback_for_learning: int = 3,
        *,
        max_items_per_call: int = 20,
        max_item_chars: int = 300,
        max_tokens: int = 200,
        llm_params: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(feedback_store, FeedbackStore):
            raise ConfigError(
                f"feedback_store must be a FeedbackStore, got {type(feedback_store).__name__}"
            )
        whole("min_feedback_for_learning", min_feedback_for_learning, 0)
        whole("max_items_per_call", max_items_per_call, 1)
        whole("max_item_chars", max_item_chars, 1)
        whole("max_tokens", max_tokens, 1)
        self.llm = llm
        self.feedback_store = feedback_store
        # dict.fromkeys: parsed, de-duplicated, in the order given.
        self.strategies = tuple(dict.fromkeys(LearningStrategy.parse(s) for s in strategies))
        self.min_feedback_for_learning = min_feedback_for_learning
        self.max_items_per_call = max_items_per_call
        self.max_item_chars = max_item_chars
        self.max_tokens = max_tokens
        self.llm_params = dict(llm_params or {})

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.strategies)
        return f"FeedbackLearner(strategies=[{names}], min={self.min_feedback_for_learning})"

    def record_feedback(self, feedback: Feedback) -> None:
        """Save ``feedback`` to the store."""
        self.feedback_store.save(feedback)

    def learn(self) -> LearningResult:
        """Run every strategy over the stored feedback."""
        feedback = self.feedback_store.get_all()
        if len(feedback) < self.min_feedback_for_learning:
            return LearningResult()
        errors: list[str] = []
        rules: list[str] = []
        preferences: list[str] = []
        examples: list[str] = []
        for strategy in self.strategies:
            if strategy is LearningStrategy.EXAMPLE_COLLECTION:
                examples = [fb.content for fb in feedback if fb.type is FeedbackType.POSITIVE]
                continue
            try:
                found = self._extract(strategy, feedback)
            except Exception as error:
                # Any failure (a client's RuntimeError, an undecodable reply)
                # empties only this list; never a BaseException such as Ctrl-C.
                errors.append(f"{strategy.value}: {type(error).__name__}: {mask(str(error))}")
                continue
            if strategy is LearningStrategy.PROMPT_ADJUSTMENT:
                rules = found
            else:
                preferences = found
        return LearningResult(rules, preferences, examples, len(feedback), errors)

    def extraction_messages(
        self, strategy: LearningStrategy | str, feedback: Sequence[Feedback]
    ) -> list[dict[str, str]] | None:
        """The messages ``learn()`` would send for ``strategy`` (``None``: no call).

        Useful to see, test or tune the prompts.
        """
        extraction = _EXTRACTIONS.get(LearningStrategy.parse(strategy))
        if extraction is None:
            return None
        relevant = [fb for fb in feedback if fb.type in extraction.reads]
        if not relevant:
            return None
        items = [self._trim(fb.content) for fb in relevant[-self.max_items_per_call :]]
        return [
            {"role": "system", "content": extraction.system},
            {"role": "user", "content": _feedback_list(extraction.example_feedback)},
            {"role": "assistant", "content": "\n".join(extraction.example_answer)},
            {"role": "user", "content": _feedback_list(items)},
        ]

    def _extract(self, strategy: LearningStrategy, feedback: Sequence[Feedback]) -> list[str]:
        extraction = _EXTRACTIONS[strategy]
        messages = self.extraction_messages(strategy, feedback)
        if messages is None:
            return []  # nothing to read: no call
        params = {"temperature": 0, "max_tokens": self.max_tokens, **self.llm_params}
        completion = self.llm.chat(messages, **params)
        reply = completion.text
        if completion.finish_reason == "length":
            # Cut off by max_tokens: the last line is unfinished, not a rule.
            reply = reply.rsplit("\n", 1)[0] if "\n" in reply else ""
        examples = [line.split(":", 1)[1] for line in extraction.example_answer]
        return extract_prefixed_lines(reply, extraction.prefix, exclude=examples)

    def _trim(self, content: str) -> str:
        text = " ".join(content.split())
        if len(text) <= self.max_item_chars:
            return text
        return text[: self.max_item_chars - 3].rstrip() + "..."


def _feedback_list(items: Iterable[str]) -> str:
    return "Feedback:\n" + "\n".join(f"- {item}" for item in items)
