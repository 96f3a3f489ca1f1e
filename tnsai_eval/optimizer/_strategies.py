"""Prompt strategies: deterministic rewrites of a prompt that need no model call.

The four strategies of the original module (chain of thought, chain of
verification, confidence weighting, structured thinking) suit large models.
Small models such as the embedded SmolLM2-135M do better with the opposite:
short, direct prompts, worked examples and a plain "answer with only ..."
instruction, hence ``FEW_SHOT``, ``CONCISE``, ``ANSWER_ONLY`` and ``ROLE``;
for a classification task, ``LABELS`` states the answer format from the
task's own labels ("Answer with one word: positive or negative.").
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence

from tnsai_eval._util.enums import parse_member
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import Demo, examples_block
from tnsai_eval.scoring import TestCase

__all__ = [
    "DEFAULT_STRATEGIES",
    "MAX_LABELS",
    "SMALL_MODEL_STRATEGIES",
    "PromptStrategy",
    "answer_labels",
    "suggest_strategies",
]

# Instructions appended to the prompt (or, for ROLE, put before it).
_SUFFIXES: dict[str, str] = {
    "chain_of_thought": "Think step by step, then give the final answer on the last line.",
    "chain_of_verification": (
        "First draft an answer. Then check it with one or two verification questions, "
        "answer them, and give the corrected final answer."
    ),
    "confidence_weighted": (
        "Give your answer, then your confidence from 0 to 100%. "
        "If you are unsure, say what you are unsure about."
    ),
    "structured_thinking": (
        "Structure your reply:\n1. What is asked\n2. The key facts\n3. The answer"
    ),
    "concise": "Be brief: answer in as few words as possible.",
    "answer_only": "Reply with only the answer itself: no explanation, no full sentence.",
}
_ROLE_PREFIX = "You are a precise expert who answers correctly."


class PromptStrategy(enum.Enum):
    """A way to rewrite a prompt; ``apply`` returns the rewritten prompt.

    ``apply`` is idempotent: applying a strategy to a prompt that already
    carries its instruction returns the prompt unchanged, so the optimizer
    sees a duplicate and does not score it again.

    >>> print(PromptStrategy.ANSWER_ONLY.apply("What is the capital of the country?"))
    What is the capital of the country?
    <BLANKLINE>
    Reply with only the answer itself: no explanation, no full sentence.
    >>> PromptStrategy.parse("chain-of-thought")
    <PromptStrategy.CHAIN_OF_THOUGHT: 'chain_of_thought'>
    """

    CHAIN_OF_THOUGHT = "chain_of_thought"
    CHAIN_OF_VERIFICATION = "chain_of_verification"
    CONFIDENCE_WEIGHTED = "confidence_weighted"
    STRUCTURED_THINKING = "structured_thinking"
    FEW_SHOT = "few_shot"
    CONCISE = "concise"
    ANSWER_ONLY = "answer_only"
    ROLE = "role"
    LABELS = "labels"

    @classmethod
    def parse(cls, name: str | PromptStrategy) -> PromptStrategy:
        """The strategy named ``name`` in any case, with ``-``, ``_`` or spaces."""
        return parse_member(cls, name, what="prompt strategy")

    def apply(
        self,
        prompt: str,
        cases: Sequence[TestCase] = (),
        *,
        examples: int = 3,
        labels: Sequence[str] | None = None,
    ) -> str:
        """Rewrite ``prompt``.

        ``FEW_SHOT`` appends the first ``examples`` of ``cases`` as worked
        examples (``Input: ...`` / ``Output: ...``); with no cases it returns the
        prompt unchanged. ``LABELS`` appends the answer format: one of
        ``labels`` (a dataset's declared labels), else of the expected answers
        of ``cases`` when they are a closed set (see ``answer_labels``); with
        neither it returns the prompt unchanged. The other strategies ignore
        ``cases`` and ``labels``. (Inside the optimizer, ``FEW_SHOT`` becomes a
        variant with inline ``Demo``s, so that no case is scored with itself as
        an example.)

        >>> print(PromptStrategy.LABELS.apply("Classify.", labels=["positive", "negative"]))
        Classify.
        <BLANKLINE>
        Answer with one word: positive or negative.
        """
        if not isinstance(prompt, str):
            raise ConfigError(f"prompt must be a str, got {type(prompt).__name__}")
        base = prompt.rstrip()
        if self is PromptStrategy.ROLE:
            if base.startswith(_ROLE_PREFIX):
                return prompt
            return f"{_ROLE_PREFIX}\n\n{base}" if base else _ROLE_PREFIX
        if self is PromptStrategy.FEW_SHOT:
            block = examples_block([Demo(c.input, c.expected) for c in cases[: max(0, examples)]])
            if not block or block in prompt:
                return prompt
            return _append(base, block)
        if self is PromptStrategy.LABELS:
            found = list(labels) if labels else answer_labels(cases)
            suffix = _labels_instruction(found) if len(found) >= 2 else ""
        else:
            suffix = _SUFFIXES[self.value]
        if not suffix or suffix in prompt:
            return prompt
        return _append(base, suffix)


#: ``answer_labels`` treats expected answers as labels when there are at most this many.
MAX_LABELS = 10


def answer_labels(cases: Sequence[TestCase]) -> list[str]:
    """The distinct expected answers of ``cases`` when they look like labels, else ``[]``.

    Labels: between 2 and ``MAX_LABELS`` distinct answers, each of at most
    three words, and fewer distinct answers than cases (a label repeats).

    >>> answer_labels([TestCase("a", "positive"), TestCase("b", "negative"),
    ...                TestCase("c", "positive")])
    ['positive', 'negative']
    >>> answer_labels([TestCase("1 + 1", "2"), TestCase("2 + 2", "4")])
    []
    """
    found = list(dict.fromkeys(c.expected.strip() for c in cases))
    if not 2 <= len(found) <= MAX_LABELS or len(found) >= len(cases):
        return []
    if any(not label or len(label.split()) > 3 for label in found):
        return []
    return found


def _labels_instruction(labels: Sequence[str]) -> str:
    listed = ", ".join(labels[:-1]) + f" or {labels[-1]}"
    if all(len(label.split()) == 1 for label in labels):
        return f"Answer with one word: {listed}."
    return f"Answer with only one of these labels: {listed}."


def _append(base: str, addition: str) -> str:
    return f"{base}\n\n{addition}" if base else addition


#: The candidates of the original module, the optimizer's default.
DEFAULT_STRATEGIES: tuple[PromptStrategy, ...] = (
    PromptStrategy.CHAIN_OF_THOUGHT,
    PromptStrategy.CHAIN_OF_VERIFICATION,
    PromptStrategy.CONFIDENCE_WEIGHTED,
    PromptStrategy.STRUCTURED_THINKING,
)

#: The candidates that help a small model such as the embedded one: the demo and
#: the benchmarks search with these (``candidate_strategies=``, ``--strategies``).
SMALL_MODEL_STRATEGIES: tuple[PromptStrategy, ...] = (
    PromptStrategy.FEW_SHOT,
    PromptStrategy.ANSWER_ONLY,
    PromptStrategy.CONCISE,
)

_S = PromptStrategy
# (word pattern, strategies); kept in step with the table in suggest_strategies' docstring.
_KEYWORDS: tuple[tuple[str, tuple[PromptStrategy, ...]], ...] = (
    (r"analy[sz]", (_S.CHAIN_OF_THOUGHT, _S.STRUCTURED_THINKING)),
    (r"reason|explain|why\b", (_S.CHAIN_OF_THOUGHT,)),
    (r"calculat|comput|math|solve|arithmetic", (_S.CHAIN_OF_THOUGHT, _S.CHAIN_OF_VERIFICATION)),
    (r"verif|check|fact|accura", (_S.CHAIN_OF_VERIFICATION, _S.CONFIDENCE_WEIGHTED)),
    (r"uncertain|confiden|estimat|predict|risk", (_S.CONFIDENCE_WEIGHTED,)),
    (r"plan|design|structur|organi[sz]|compar", (_S.STRUCTURED_THINKING,)),
    (r"classif|categori|label|sentiment|extract|format|json", (_S.FEW_SHOT, _S.ANSWER_ONLY)),
    (r"short|brief|concise|one word|answer only|lookup|capital", (_S.CONCISE, _S.ANSWER_ONLY)),
    (r"expert|professional|formal", (_S.ROLE,)),
)


def suggest_strategies(task_description: str) -> list[PromptStrategy]:
    """Strategies worth trying for a task, from keywords in its description.

    Matching is case-insensitive and on word starts, so "Analyse" and
    "analysis" both hit ``analy[sz]``:

    ==========================================  ==========================================
    keywords (word starts)                      strategies suggested
    ==========================================  ==========================================
    analyze, analyse, analysis                  CHAIN_OF_THOUGHT, STRUCTURED_THINKING
    reason, explain, why                        CHAIN_OF_THOUGHT
    calculate, compute, math, solve, arithmetic CHAIN_OF_THOUGHT, CHAIN_OF_VERIFICATION
    verify, check, fact, accurate               CHAIN_OF_VERIFICATION, CONFIDENCE_WEIGHTED
    uncertain, confidence, estimate, predict,   CONFIDENCE_WEIGHTED
    risk
    plan, design, structure, organize, compare  STRUCTURED_THINKING
    classify, categorize, label, sentiment,     FEW_SHOT, ANSWER_ONLY
    extract, format, json
    short, brief, concise, one word,            CONCISE, ANSWER_ONLY
    answer only, lookup, capital
    expert, professional, formal                ROLE
    (nothing matched)                           CHAIN_OF_THOUGHT
    ==========================================  ==========================================

    The result has no duplicates and follows the enum's order.

    >>> [s.name for s in suggest_strategies("Analyze the quarterly report")]
    ['CHAIN_OF_THOUGHT', 'STRUCTURED_THINKING']
    """
    if not isinstance(task_description, str):
        raise ConfigError(
            f"task_description must be a str, got {type(task_description).__name__}: "
            f"{task_description!r}"
        )
    text = task_description.lower()
    found: set[PromptStrategy] = set()
    for pattern, strategies in _KEYWORDS:
        if re.search(rf"\b(?:{pattern})", text):
            found.update(strategies)
    if not found:
        return [PromptStrategy.CHAIN_OF_THOUGHT]
    return [strategy for strategy in PromptStrategy if strategy in found]
