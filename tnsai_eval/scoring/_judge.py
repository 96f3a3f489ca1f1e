"""One judge for every place that asks a model to grade text (``llm_check``, ``LLMJudgeEvaluator``).

A small model asked to end its reply with ``SCORE: N`` rarely does (SmolLM2-135M:
0 of 20 replies), and asked for a JSON score it gives every text the same one.
What it does carry is a preference between "Yes" and "No" as the next token:
measured on 10 polite and 10 rude texts, P(yes) / (P(yes) + P(no)) ranks them
with an AUC of about 0.9. So the judge reads, in this order, whichever the
client offers:

1. ``logprobs``: one token, Yes or No, with the top alternatives' log-probabilities;
   the score is the share of the probability mass on Yes (as in G-Eval, a
   probability-weighted answer instead of the sampled one);
2. ``json_schema``: ``{"score": 0-100, "reason": "..."}`` enforced with ``response_format``;
3. ``score_line``: free text ending with ``SCORE: N``.

The first method is chosen from the client (logprobs for ``LocalLLM``,
``OpenAIClient`` and a ``FrontClient`` whose model offers them, the score
line for anything else, such as fakes); every call is metered
(``llm.metered_call``), so a judge's calls draw on the active call budgets; a method
that gives no score falls through to the next, and one the client or server
rejects is not tried again by that judge. ``JudgeResult.method`` says which
was used.

The Yes share of a small model is not a probability that the text is polite:
its values crowd together (polite 0.26-0.69, rude 0.14-0.53 on
``bench/judge.py``'s texts), so an absolute threshold such as 0.7 fails
everything. ``calibrate`` sets the threshold from a few known-good and
known-bad texts instead.

What the log-probability score is, and why (measured on SmolLM2-135M with
``bench/judge.py``: AUC over 24 polite and rude texts, held-out accuracy
after calibrating on 4):

* the text first and the question last (``_request``): 0.93, 17/20; the
  question first 0.86, 15/20;
* the mass of every spelling of the answer among the top 20 alternatives
  (" Yes", "yes", "YES"...); the top 10 alone gave 0.86;
* tried and left out: contrasting with the Yes share for the negated
  question ("Is the text rude?", AUC 0.77) or for a neutral question about
  the same text (0.75), and the calibration examples as few-shot turns
  (0.75). Each removes some bias of the model and adds more noise.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeAlias

from tnsai_eval._util.scores import parse_score
from tnsai_eval._util.secrets import mask_then_cut
from tnsai_eval.errors import ConfigError, LLMError
from tnsai_eval.llm import (
    Completion,
    FrontClient,
    LLMClient,
    LocalLLM,
    OpenAIClient,
    ametered_call,
    estimate_tokens,
    json_schema_format,
    metered_call,
)
from tnsai_eval.scoring._calibration import MIN_CALIBRATION_EXAMPLES, JudgeCalibration

__all__ = ["Judge", "JudgeMethod", "JudgeResult"]

_YES = frozenset({"yes", "y", "true"})
_NO = frozenset({"no", "n", "false"})
# How much of a reply a reason quotes when the reply gave no score.
_QUOTED = 120
# The most alternatives OpenAI's API and LocalLLM return. More alternatives
# catch more spellings of the answer (" Yes", "yes", "YES"...): on SmolLM2-135M
# and bench/judge.py's 24 polite/rude texts, 20 instead of 10 raised the AUC
# from 0.86 to 0.93 with the text-first layout below.
_TOP_LOGPROBS = 20

_SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 200},
        "score": {"type": "integer"},
    },
    "required": ["reason", "score"],
    "additionalProperties": False,
}

_YES_NO_SYSTEM = "You judge texts. Answer only Yes or No."
_SCORE_HEAD = "You are a strict reviewer. Judge the text below against this question:\n\n"
_JSON_TAIL = (
    "\n\nReply in JSON: a short reason, then a score from 0 (no, not at all) to "
    '100 (yes, fully), as {"reason": "...", "score": N}.'
)
_SCORE_TAIL = (
    "\n\nExplain your judgement in one or two sentences, then end with a line of the form\n"
    "SCORE: N\n"
    "where N is a number from 0 (does not satisfy it at all) to 100 (fully satisfies it)."
)


class JudgeMethod(StrEnum):
    """How a judge's score was read."""

    LOGPROBS = "logprobs"
    """P(yes) / (P(yes) + P(no)) of a one-token Yes/No answer."""
    JSON_SCHEMA = "json_schema"
    """A ``{"score", "reason"}`` reply constrained by ``response_format``."""
    SCORE_LINE = "score_line"
    """A ``SCORE: N`` line in a free-text reply."""


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One grading: the score in [0, 1] (``None`` when no method gave one), how
    it was read, the judge's reason when it gave one, its raw reply and the
    tokens its calls used.

    >>> JudgeResult(0.8, JudgeMethod.SCORE_LINE, "clear", "clear SCORE: 80").describe()
    'score 0.80 (score_line): clear'
    """

    score: float | None
    method: JudgeMethod
    reason: str = ""
    reply: str = ""
    tokens: int = 0

    def describe(self) -> str:
        """``score S (method): reason`` for check messages and case records."""
        head = "no score" if self.score is None else f"score {self.score:.2f}"
        return f"{head} ({self.method.value})" + (f": {self.reason}" if self.reason else "")


class Judge:
    """Grades a described task on [0, 1] with whatever the client offers (see the module doc).

    ``method`` forces one method instead of ``"auto"``; ``params`` go to every
    call (default ``temperature=0``).

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> judge = Judge(ScriptedLLM(default="Polite enough.\\nSCORE: 80"))
    >>> judge.grade("Is the text polite?", "Thanks a lot!").describe()
    'score 0.80 (score_line): Polite enough.'
    """

    def __init__(
        self,
        llm: LLMClient,
        *,
        method: JudgeMethod | str = "auto",
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.llm = llm
        self.params: dict[str, Any] = {"temperature": 0.0} if params is None else dict(params)
        if method == "auto":
            self.methods = list(_methods_for(llm))
        else:
            try:
                self.methods = [JudgeMethod(method)]
            except ValueError:
                raise ConfigError(
                    f"judge method must be 'auto' or one of "
                    f"{', '.join(m.value for m in JudgeMethod)}, got {method!r}"
                ) from None

    def __repr__(self) -> str:
        return f"Judge({self.llm!r}, methods={[m.value for m in self.methods]})"

    def grade(self, question: str, text: str) -> JudgeResult:
        """The score of ``text`` against a yes/no ``question``, trying each method in turn."""
        return self._grade(lambda method: _request(method, question, text, self.params))

    async def agrade(self, question: str, text: str) -> JudgeResult:
        """Like ``grade`` without blocking the event loop."""
        return await self._agrade(lambda method: _request(method, question, text, self.params))

    def grade_prompt(self, prompt: str) -> JudgeResult:
        """The score read from the reply to ``prompt`` as it is (a user's own template)."""
        return self._grade(lambda method: _raw_request(method, prompt, self.params))

    async def agrade_prompt(self, prompt: str) -> JudgeResult:
        """Like ``grade_prompt`` without blocking the event loop."""
        return await self._agrade(lambda method: _raw_request(method, prompt, self.params))

    def _grade(self, build: Callable[[JudgeMethod], _Request]) -> JudgeResult:
        result: JudgeResult | None = None
        for method in list(self.methods):
            messages, params = build(method)
            try:
                completion = metered_call(self.llm, messages, **params)
            except Exception as exc:
                self._give_up(method, exc)
                continue
            result = _read(method, completion, messages)
            if result.score is not None:
                return result
        return result or JudgeResult(None, self.methods[-1], "no method gave a score")

    async def _agrade(self, build: Callable[[JudgeMethod], _Request]) -> JudgeResult:
        result: JudgeResult | None = None
        for method in list(self.methods):
            messages, params = build(method)
            try:
                completion = await ametered_call(self.llm, messages, **params)
            except Exception as exc:
                self._give_up(method, exc)
                continue
            result = _read(method, completion, messages)
            if result.score is not None:
                return result
        return result or JudgeResult(None, self.methods[-1], "no method gave a score")

    def calibrate(
        self,
        question: str,
        good: Sequence[str],
        bad: Sequence[str],
        *,
        uncalibrated: float = 0.5,
    ) -> JudgeCalibration:
        """Grade known-good and known-bad texts against ``question`` and fit a threshold.

        ``JudgeCalibration.fit`` checks it: at least ``MIN_CALIBRATION_EXAMPLES``
        of each, and the fitted threshold is kept only when its leave-one-out
        accuracy beats ``uncalibrated`` (the threshold used without
        calibration); else ``uncalibrated`` is kept, with a warning. A text
        that gets no score raises ``ConfigError``: a calibration on fewer
        examples than given would be silently weaker.
        """
        good, bad = tuple(good), tuple(bad)
        if len(good) < MIN_CALIBRATION_EXAMPLES or len(bad) < MIN_CALIBRATION_EXAMPLES:
            # Before any call: a refused calibration should cost nothing.
            JudgeCalibration.fit([0.0] * len(good), [0.0] * len(bad))
        scores: dict[str, list[float]] = {"good": [], "bad": []}
        for label, texts in (("good", good), ("bad", bad)):
            for text in texts:
                result = self.grade(question, text)
                if result.score is None:
                    raise ConfigError(
                        f"the judge gave no score to the {label} example {text[:60]!r}: "
                        f"{result.reason}"
                    )
                scores[label].append(result.score)
        return JudgeCalibration.fit(scores["good"], scores["bad"], uncalibrated=uncalibrated)

    def _give_up(self, method: JudgeMethod, exc: Exception) -> None:
        """Drop ``method`` for good when the client refused it; re-raise anything else.

        The last method left is never dropped: its failure is the caller's to report.
        """
        refused = isinstance(exc, ConfigError) or (
            isinstance(exc, LLMError) and _names_parameter(str(exc), method)
        )
        if not refused or len(self.methods) == 1:
            raise exc
        self.methods.remove(method)


def _methods_for(llm: LLMClient) -> tuple[JudgeMethod, ...]:
    # A front client knows whether its model offers log-probabilities, made or not.
    if isinstance(llm, LocalLLM | OpenAIClient) or (
        isinstance(llm, FrontClient) and llm.offers_logprobs
    ):
        return (JudgeMethod.LOGPROBS, JudgeMethod.JSON_SCHEMA, JudgeMethod.SCORE_LINE)
    return (JudgeMethod.SCORE_LINE,)


def _names_parameter(message: str, method: JudgeMethod) -> bool:
    words = {JudgeMethod.LOGPROBS: ("logprobs",), JudgeMethod.JSON_SCHEMA: ("response_format",)}
    return any(word in message for word in words.get(method, ()))


_Request: TypeAlias = tuple[list[dict[str, str]], dict[str, Any]]


def _request(method: JudgeMethod, question: str, text: str, params: Mapping[str, Any]) -> _Request:
    """The messages and parameters that ask ``question`` about ``text`` by ``method``.

    For log-probabilities, a system message asks for Yes or No and the user
    message is the bare text, then the question, so that the question is the
    last thing the model reads before it answers. Measured on SmolLM2-135M with
    ``bench/judge.py`` (24 polite and rude texts, top 20 alternatives): this
    layout ranked them with an AUC of 0.93 (17 of 20 held out right after
    calibrating on 4); the question first, then "The text:" and the text 0.86
    (15/20); "Text: ... Question: ..." 0.74; the question in the system
    message and the text alone 0.66. The layout matters as much as the method.
    """
    question = question.strip()
    if method is JudgeMethod.LOGPROBS:
        messages = [
            {"role": "system", "content": _YES_NO_SYSTEM},
            {"role": "user", "content": f"{text}\n\n{question}"},
        ]
        extra: dict[str, Any] = {"max_tokens": 1, "logprobs": True, "top_logprobs": _TOP_LOGPROBS}
        return messages, {**params, **extra}
    fenced = f"{question}\n\n<<<TEXT\n{text}\nTEXT>>>"
    if method is JudgeMethod.JSON_SCHEMA:
        extra = {"max_tokens": 80, "response_format": json_schema_format(_SCORE_SCHEMA, "grade")}
        return [{"role": "user", "content": fenced + _JSON_TAIL}], {**params, **extra}
    return [{"role": "user", "content": _SCORE_HEAD + fenced + _SCORE_TAIL}], dict(params)


def _raw_request(method: JudgeMethod, prompt: str, params: Mapping[str, Any]) -> _Request:
    extra: dict[str, Any] = {}
    if method is JudgeMethod.LOGPROBS:
        extra = {"max_tokens": 1, "logprobs": True, "top_logprobs": _TOP_LOGPROBS}
    elif method is JudgeMethod.JSON_SCHEMA:
        extra = {"max_tokens": 80, "response_format": json_schema_format(_SCORE_SCHEMA, "grade")}
    return [{"role": "user", "content": prompt}], {**params, **extra}


def _read(
    method: JudgeMethod, completion: Completion, messages: list[dict[str, str]]
) -> JudgeResult:
    reply = completion.text
    reported = completion.usage.total_tokens
    sent = sum(estimate_tokens(m["content"]) for m in messages)
    tokens = reported if reported > 0 else sent + estimate_tokens(reply)
    if method is JudgeMethod.LOGPROBS:
        score = _yes_share(completion)
        why = "" if score is not None else "the reply carries no Yes/No log-probabilities"
        return JudgeResult(score, method, why, reply, tokens)
    if method is JudgeMethod.JSON_SCHEMA:
        score, reason = _json_score(reply)
        return JudgeResult(score, method, reason, reply, tokens)
    score = parse_score(reply)
    reason = _before_score(reply) if score is not None else "the reply has no 'SCORE: N' line"
    return JudgeResult(score, method, reason, reply, tokens)


def _yes_share(completion: Completion) -> float | None:
    if not completion.logprobs:
        return None
    first = completion.logprobs[0]
    alternatives = dict(first.top_logprobs)
    alternatives.setdefault(first.token, first.logprob)
    # A log-probability is at most 0 (TokenLogprob clamps it; this holds for
    # any other builder too): exp never overflows. NaN says nothing.
    alternatives = {t: min(lp, 0.0) for t, lp in alternatives.items() if not math.isnan(lp)}
    if not alternatives:
        return None
    yes = no = 0.0
    for token, logprob in alternatives.items():
        word = token.strip().lower()
        if word in _YES:
            yes += math.exp(logprob)
        elif word in _NO:
            no += math.exp(logprob)
    if yes + no <= 0:
        return None
    if yes == 0 or no == 0:
        # One answer is missing from the alternatives: its probability is at
        # most the least likely one listed, not 0. Counting it at that bound
        # keeps a truncated list from reading as certainty (a share of 0 or 1).
        floor = math.exp(min(alternatives.values()))
        yes, no = max(yes, floor), max(no, floor)
    return yes / (yes + no)


def _json_score(reply: str) -> tuple[float | None, str]:
    shown = mask_then_cut(reply.strip(), _QUOTED)
    try:
        value = json.loads(reply)
    except ValueError:  # JSONDecodeError, and an integer past the digit limit
        return None, f"the reply is not JSON: {shown!r}"
    except RecursionError:
        return None, f"the reply is JSON nested too deeply to read: {shown!r}"
    if not isinstance(value, dict):
        return None, f"the reply is not a JSON object: {shown!r}"
    score = value.get("score")
    reason = value.get("reason")
    reason_text = reason.strip() if isinstance(reason, str) else ""
    if isinstance(score, bool) or not isinstance(score, int | float):
        return None, f"the reply has no numeric score: {shown!r}"
    try:
        number = float(score)
    except OverflowError:  # an integer such as 10**400, beyond any float
        number = math.inf
    if not math.isfinite(number):
        return None, f"the reply has no numeric score: {shown!r}"
    return min(1.0, max(0.0, number / 100.0)), reason_text


def _before_score(reply: str) -> str:
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    kept = [line for line in lines if "score" not in line.lower()]
    return " ".join(kept)[:300]
