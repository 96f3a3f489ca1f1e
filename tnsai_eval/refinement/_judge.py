"""``llm_check``: a judge model scores the output against a question.

The judge is asked to end its reply with ``SCORE: <0-100>``. The score is read
tolerantly, because small models decorate it: ``Score: 85``, ``SCORE: 85/100``,
``**SCORE:** 85.5``, ``score = 7/10`` (a denominator, when given, is honoured).
When the reply holds several, the last one counts (models often restate the
instruction first). The value is divided by 100 (or its denominator), clamped
to [0, 1] and compared with the threshold. A reply with no score fails the
check; a judge call that raises fails the check with the error as its message.
"""

from __future__ import annotations

from tnsai_eval._util.scores import parse_score
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient, call_tokens
from tnsai_eval.refinement._checks import Check, CheckKind, Verdict

__all__ = ["judge_check", "parse_score"]

_JUDGE_PROMPT = """You are a strict reviewer. Judge the text below against this question:

{question}

<<<TEXT
{output}
TEXT>>>

Explain your judgement in one or two sentences, then end with a line of the form
SCORE: N
where N is a number from 0 (does not satisfy it at all) to 100 (fully satisfies it)."""


def judge_check(client: LLMClient, question: str, threshold: float) -> Check:
    """The ``llm_check`` check: ``client`` scores outputs against ``question``."""
    if not isinstance(question, str) or not question.strip():
        raise ConfigError(f"llm_check needs a non-empty question, got {question!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ConfigError(f"llm_check threshold must be a number in [0, 1], got {threshold!r}")
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(
            f"llm_check threshold must be in [0, 1] (a share, not a percentage), got {threshold!r}"
        )

    def run(output: str) -> Verdict:
        prompt = _JUDGE_PROMPT.format(question=question, output=output)
        try:
            completion = client.chat(prompt)
        except Exception as exc:
            return Verdict(False, f"the judge call failed: {type(exc).__name__}: {exc}")
        reply = completion.text
        tokens = call_tokens(completion, prompt)
        score = parse_score(reply)
        if score is None:
            return Verdict(
                False,
                f"the judge's reply has no 'SCORE: N' line: {reply.strip()[-300:]!r}",
                tokens=tokens,
            )
        passed = score >= threshold
        relation = ">=" if passed else "<"
        return Verdict(
            passed,
            f"judge score {score:.2f} {relation} threshold {threshold:.2f}: {reply.strip()[-300:]}",
            score=score,
            tokens=tokens,
        )

    return Check(f"llm_check({question!r})", CheckKind.LLM, "llm_check", run)
