"""``llm_check``: a judge model scores the output against a question.

The grading itself is the library's one judge (``tnsai_eval.scoring.Judge``):
on clients that expose log-probabilities (``LocalLLM``, ``OpenAIClient``) the
score is P(yes) / (P(yes) + P(no)) of a one-token Yes/No answer; else a JSON
``{"score", "reason"}`` reply constrained by ``response_format``; else a
``SCORE: N`` line, read tolerantly (``Score: 85``, ``SCORE: 85/100``,
``**SCORE:** 85.5``; the last one counts). The check message says which was
used, the score, the threshold and the judge's reason when it gave one.

The threshold is either given (a share in [0, 1]) or calibrated: with
``good=`` and ``bad=`` example texts, the judge grades them once (on first
use) and the threshold is set where it best separates them, if that helps:
calibration needs at least 4 examples of each, and keeps the given threshold
(with a warning) unless the fitted one classifies the examples better when
each is left out of the fit (``JudgeCalibration``). A small model's
Yes share crowds into a narrow band (SmolLM2-135M: polite texts 0.26-0.69,
rude 0.14-0.53), so an absolute threshold would fail everything; a few
labelled examples place the threshold where that model draws the line.

A reply with no score fails the check; a judge call that raises fails the
check with the error as its message.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from tnsai_eval._util.scores import is_share, parse_score
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.records import CheckKind
from tnsai_eval.refinement._checks import Check, Verdict
from tnsai_eval.scoring import Judge, JudgeCalibration

__all__ = ["judge_check", "parse_score"]

_REPLY_CHARS = 300


def judge_check(
    client: LLMClient,
    question: str,
    threshold: float,
    *,
    good: Sequence[str] = (),
    bad: Sequence[str] = (),
    method: str = "auto",
) -> Check:
    """The ``llm_check`` check: ``client`` scores outputs against ``question``."""
    if not isinstance(question, str) or not question.strip():
        raise ConfigError(f"llm_check needs a non-empty question, got {question!r}")
    if not is_share(threshold):
        raise ConfigError(
            f"llm_check threshold must be a number in [0, 1] (a share, not a percentage), "
            f"got {threshold!r}"
        )
    good, bad = tuple(good), tuple(bad)
    if (good or bad) and not (good and bad):
        raise ConfigError(
            f"llm_check calibration needs both good= and bad= examples, got {len(good)} good "
            f"and {len(bad)} bad"
        )
    judge = Judge(client, method=method)
    calibrated: list[JudgeCalibration] = []
    lock = threading.Lock()

    def current_threshold() -> tuple[float, str]:
        if not good:
            return float(threshold), ""
        with lock:
            if not calibrated:
                calibrated.append(judge.calibrate(question, good, bad, uncalibrated=threshold))
        fit = calibrated[0]
        on = f"{len(good)} good and {len(bad)} bad examples"
        if fit.kept_uncalibrated:
            return fit.threshold, f" (calibrating on {on} did not help: {fit.checked})"
        return fit.threshold, f" (calibrated on {on}; {fit.checked})"

    def run(output: str) -> Verdict:
        try:
            limit, how = current_threshold()
            result = judge.grade(question, output)
        except Exception as exc:
            return Verdict(False, f"the judge call failed: {type(exc).__name__}: {exc}")
        if result.score is None:
            if result.method.value == "score_line":
                detail = f"the judge's reply has no 'SCORE: N' line: {_tail(result.reply)!r}"
            else:
                detail = f"the judge gave no score ({result.method.value}): {result.reason}"
            return Verdict(False, detail, tokens=result.tokens)
        passed = result.score >= limit
        relation = ">=" if passed else "<"
        reason = f": {result.reason}" if result.reason else ""
        return Verdict(
            passed,
            f"judge score {result.score:.2f} {relation} threshold {limit:.2f}{how} "
            f"[{result.method.value}]{reason}",
            score=result.score,
            tokens=result.tokens,
            reason=result.reason,
        )

    return Check(f"llm_check({question!r})", CheckKind.LLM, "llm_check", run)


def _tail(reply: str) -> str:
    return reply.strip()[-_REPLY_CHARS:]
