"""An evaluator that asks a model to grade the answer."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tnsai_eval._util.scores import parse_score
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.scoring._answers import normalize_answer
from tnsai_eval.scoring._calibration import MIN_CALIBRATION_EXAMPLES, JudgeCalibration
from tnsai_eval.scoring._evaluator import PromptEvaluator
from tnsai_eval.scoring._judge import Judge, JudgeMethod, JudgeResult

__all__ = ["LLMJudgeEvaluator", "parse_judge_score"]

_QUESTION = "Does the answer have the same meaning as the expected answer?"


def _pair(actual: str, expected: str) -> str:
    return f"Expected answer: {expected.strip()}\nAnswer: {actual.strip()}"


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
    """Asks ``llm`` whether each answer means the same as the expected one; a score in [0, 1].

    The grading is the library's one judge (``tnsai_eval.scoring.Judge``): the
    probability share of "Yes" in a one-token Yes/No answer where the client
    exposes log-probabilities (``LocalLLM``, ``OpenAIClient``), else a JSON
    ``{"score", "reason"}`` reply, else a ``SCORE: <0-100>`` line. A given
    ``template`` (with ``{actual}`` and ``{expected}``) is always read as a
    ``SCORE:`` reply, as before. ``methods_used`` counts which method scored
    each answer; ``explain(actual, expected)`` returns the last grading of a
    pair (score, method, reason) for case records.

    Answers equal to the expected one after ``normalize_answer`` score 1.0
    without a call: a small judge is least reliable exactly where the answer is
    obviously right. A reply with no readable score scores ``fallback``'s
    value when a fallback evaluator is given, else 0.0. A failed call raises
    its ``LLMError``; the optimizer then leaves that case out and counts it.

    ``calibrate(good, bad)`` grades known-right and known-wrong ``(actual,
    expected)`` pairs (at least 4 of each) and sets ``threshold`` where it
    best separates them, when that beats the current threshold (0.5 when
    none) on the examples left out of the fit one at a time; else it keeps
    the current one and warns (``JudgeCalibration``);
    with a threshold, an answer scores 1.0 at or above it and 0.0 below, so a
    mean is an accuracy (a small judge's raw scores crowd into a narrow band).

    ``params`` are passed to every call (default: ``temperature=0``, ``max_tokens=64``).

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> judge = LLMJudgeEvaluator(ScriptedLLM(default="SCORE: 70"))
    >>> judge.evaluate("Lyon", "Paris")
    0.7
    >>> judge.methods_used
    Counter({'score_line': 1})
    """

    def __init__(
        self,
        llm: LLMClient,
        *,
        template: str | None = None,
        params: Mapping[str, Any] | None = None,
        fallback: PromptEvaluator | None = None,
        method: str = "auto",
        threshold: float | None = None,
    ) -> None:
        self.llm = llm
        self.template = template
        # Room for a SCORE line after a short reason; the logprobs and JSON
        # methods set their own max_tokens.
        self.params: dict[str, Any] = (
            {"temperature": 0.0, "max_tokens": 64} if params is None else dict(params)
        )
        self.fallback = fallback
        self.threshold = threshold
        if template is not None:
            method = JudgeMethod.SCORE_LINE.value
        self._judge = Judge(llm, method=method, params=self.params)
        self.methods_used: Counter[str] = Counter()
        self._explained: dict[tuple[str, str], JudgeResult] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLMJudgeEvaluator(llm={self.llm!r}, threshold={self.threshold!r})"

    @property
    def uses_expected(self) -> bool:
        """Whether grading reads the expected answer: always, unless a ``template``
        of one's own leaves ``{expected}`` out (a rubric such as "is it polite?")."""
        return self.template is None or "{expected}" in self.template

    def evaluate(self, actual: str, expected: str) -> float:
        if normalize_answer(actual) == normalize_answer(expected):
            return 1.0
        return self._score(self._grade(actual, expected), actual, expected)

    async def aevaluate(self, actual: str, expected: str) -> float:
        if normalize_answer(actual) == normalize_answer(expected):
            return 1.0
        if self.template is not None:
            result = await self._judge.agrade_prompt(self._prompt(actual, expected))
        else:
            result = await self._judge.agrade(_QUESTION, _pair(actual, expected))
        return self._score(self._note(result, actual, expected), actual, expected)

    def explain(self, actual: str, expected: str) -> JudgeResult | None:
        """The last grading of this pair (``None``: never graded, e.g. an exact match)."""
        with self._lock:
            return self._explained.get((actual, expected))

    def calibrate(
        self, good: Sequence[tuple[str, str]], bad: Sequence[tuple[str, str]]
    ) -> JudgeCalibration:
        """Set ``threshold`` from right (``good``) and wrong (``bad``) ``(actual, expected)`` pairs.

        Returns the calibration (threshold, the examples' scores and both
        accuracies). Fewer than 4 pairs of either kind, or a pair the judge
        gives no score, raise ``ConfigError``.
        """
        if min(len(good), len(bad)) < MIN_CALIBRATION_EXAMPLES:
            # Refused before any call (the same error JudgeCalibration.fit raises).
            JudgeCalibration.fit([0.0] * len(good), [0.0] * len(bad))
        scores: dict[str, list[float]] = {"good": [], "bad": []}
        for label, pairs in (("good", good), ("bad", bad)):
            for actual, expected in pairs:
                result = self._grade(actual, expected)
                if result.score is None:
                    raise ConfigError(
                        f"the judge gave no score to the {label} example {actual[:60]!r}: "
                        f"{result.reason}"
                    )
                scores[label].append(result.score)
        uncalibrated = 0.5 if self.threshold is None else self.threshold
        fit = JudgeCalibration.fit(scores["good"], scores["bad"], uncalibrated=uncalibrated)
        if not fit.kept_uncalibrated:
            self.threshold = fit.threshold
        return fit

    def _prompt(self, actual: str, expected: str) -> str:
        # A custom template is the whole prompt: the judge adds nothing.
        assert self.template is not None
        return self.template.format(actual=actual.strip(), expected=expected.strip())

    def _grade(self, actual: str, expected: str) -> JudgeResult:
        if self.template is not None:
            result = self._judge.grade_prompt(self._prompt(actual, expected))
        else:
            result = self._judge.grade(_QUESTION, _pair(actual, expected))
        return self._note(result, actual, expected)

    def _note(self, result: JudgeResult, actual: str, expected: str) -> JudgeResult:
        with self._lock:
            self.methods_used[result.method.value] += 1
            self._explained[(actual, expected)] = result
        return result

    def _score(self, result: JudgeResult, actual: str, expected: str) -> float:
        if result.score is None:
            return self.fallback.evaluate(actual, expected) if self.fallback is not None else 0.0
        if self.threshold is not None:
            return 1.0 if result.score >= self.threshold else 0.0
        return result.score
