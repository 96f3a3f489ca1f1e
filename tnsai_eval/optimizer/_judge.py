"""An evaluator that asks a model to grade the answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tnsai_eval._util.scores import parse_score
from tnsai_eval.llm import Completion, LLMClient, acall
from tnsai_eval.optimizer._evaluators import PromptEvaluator, normalize_answer

__all__ = ["LLMJudgeEvaluator", "parse_judge_score"]

_DEFAULT_TEMPLATE = (
    "Grade how well an answer matches the expected answer.\n"
    "Expected answer: {expected}\n"
    "Answer: {actual}\n"
    "Reply with one line: SCORE: <0-100>, where 100 means the same meaning."
)


def parse_judge_score(reply: str) -> float | None:
    """The grade in a judge's reply as a fraction in [0, 1], or ``None``.

    The library's one judge-score reader (``tnsai_eval._util.scores.parse_score``)
    without requiring the ``SCORE:`` label: a small model asked for one line
    often answers with ``85/100``, ``85%`` or a bare ``85``, and only a number
    in 0-100 counts, so that a year or a count in the prose is not a grade.

    >>> parse_judge_score("Score: 85 - close but vague")
    0.85
    >>> parse_judge_score("I'd give it 7/100") is not None
    True
    >>> parse_judge_score("no idea") is None
    True
    """
    return parse_score(reply, require_label=False)


class LLMJudgeEvaluator:
    """Asks ``llm`` to grade each answer on a 0-100 scale (``SCORE: <n>``).

    Answers equal to the expected one after ``normalize_answer`` score 1.0
    without a call: a small judge is least reliable exactly where the answer is
    obviously right. A reply with no readable number scores ``fallback``'s
    value when a fallback evaluator is given, else 0.0. A failed call raises
    its ``LLMError``; the optimizer then leaves that case out and counts it.

    ``template`` may use ``{actual}`` and ``{expected}``; ``params`` are passed
    to every call (default: ``temperature=0``, ``max_tokens=16``).

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> judge = LLMJudgeEvaluator(ScriptedLLM(default="SCORE: 70"))
    >>> judge.evaluate("Lyon", "Paris")
    0.7
    """

    def __init__(
        self,
        llm: LLMClient,
        *,
        template: str = _DEFAULT_TEMPLATE,
        params: Mapping[str, Any] | None = None,
        fallback: PromptEvaluator | None = None,
    ) -> None:
        self.llm = llm
        self.template = template
        self.params: dict[str, Any] = (
            {"temperature": 0.0, "max_tokens": 16} if params is None else dict(params)
        )
        self.fallback = fallback

    def __repr__(self) -> str:
        return f"LLMJudgeEvaluator(llm={self.llm!r})"

    def evaluate(self, actual: str, expected: str) -> float:
        if normalize_answer(actual) == normalize_answer(expected):
            return 1.0
        return self._grade(
            self.llm.chat(self._prompt(actual, expected), **self.params), actual, expected
        )

    async def aevaluate(self, actual: str, expected: str) -> float:
        if normalize_answer(actual) == normalize_answer(expected):
            return 1.0
        completion = await acall(self.llm, self._prompt(actual, expected), **self.params)
        return self._grade(completion, actual, expected)

    def _prompt(self, actual: str, expected: str) -> str:
        return self.template.format(actual=actual.strip(), expected=expected.strip())

    def _grade(self, completion: Completion, actual: str, expected: str) -> float:
        score = parse_judge_score(completion.text)
        if score is not None:
            return score
        return self.fallback.evaluate(actual, expected) if self.fallback is not None else 0.0
