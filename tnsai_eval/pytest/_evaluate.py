"""``evaluate_prompt``: score one prompt on a set of cases, for regression tests.

Each case's input is put into the prompt with the same template and call
parameters the ``PromptOptimizer`` uses (so a score here means what it means
there), sent to the model, and the reply is scored against the
expected answer by an evaluator (``DefaultPromptEvaluator`` unless given). A
case whose call fails scores nothing and is reported with its error; the
other cases are still scored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from tnsai_eval.errors import ConfigError, LLMError
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    DefaultPromptEvaluator,
    PromptEvaluator,
    TestCase,
)
from tnsai_eval.reports import format_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CaseScore", "PromptEvaluation", "evaluate", "excerpt", "load_cases"]

CasesInput: TypeAlias = (
    "str | os.PathLike[str] | Iterable[TestCase | tuple[str, str] | Mapping[str, Any]]"
)


@dataclass(frozen=True, slots=True)
class CaseScore:
    """One case: what was asked, expected and answered, and its score.

    ``score`` is ``None`` when the call failed; ``error`` then says why.
    """

    input: str
    expected: str
    output: str | None
    score: float | None
    tokens: int = 0
    cached: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PromptEvaluation:
    """The result of ``evaluate_prompt``.

    >>> result = PromptEvaluation("p", (CaseScore("2+2", "4", "4", 1.0),
    ...                                 CaseScore("3+3", "6", "9", 0.2)))
    >>> result.mean_score, result.scores
    (0.6, (1.0, 0.2))
    >>> result.worst(1)[0].input
    '3+3'
    """

    prompt: str
    cases: tuple[CaseScore, ...]

    @property
    def scores(self) -> tuple[float, ...]:
        """Per-case scores, in case order; a failed case counts as 0.0."""
        return tuple(0.0 if c.score is None else c.score for c in self.cases)

    @property
    def mean_score(self) -> float:
        """The mean of ``scores`` (0.0 with no cases)."""
        return sum(self.scores) / len(self.scores) if self.cases else 0.0

    score = mean_score

    @property
    def errors(self) -> tuple[CaseScore, ...]:
        """The cases whose call (or judge) failed."""
        return tuple(c for c in self.cases if c.error is not None)

    @property
    def tokens(self) -> int:
        """Tokens used by every case's call together."""
        return sum(c.tokens for c in self.cases)

    def worst(self, n: int = 5) -> list[CaseScore]:
        """The ``n`` lowest-scoring cases, worst first (failed calls count as 0)."""
        ranked = sorted(self.cases, key=lambda c: -1.0 if c.score is None else c.score)
        return ranked[:n]

    def to_dataframe(self) -> pd.DataFrame:
        """One row per case: input, expected, output, score, tokens, cached, error."""
        import pandas as pd

        columns = ["input", "expected", "output", "score", "tokens", "cached", "error"]
        return pd.DataFrame(
            [{name: getattr(case, name) for name in columns} for case in self.cases],
            columns=columns,
        )

    @property
    def dataframe(self) -> pd.DataFrame:
        """``to_dataframe()`` as a property."""
        return self.to_dataframe()

    def failure_message(self, min_score: float, *, limit: int = 5) -> str:
        """Why the evaluation failed, with its worst cases."""
        lines = [
            f"prompt scored {self.mean_score:.3f} < min_score {min_score:g} "
            f"over {len(self.cases)} case(s)"
        ]
        lines.extend(self._case_lines(self.worst(limit), f"worst {min(limit, len(self.cases))}"))
        return "\n".join(lines)

    def error_message(self) -> str:
        """Which cases failed to run, and why."""
        errors = self.errors
        lines = [f"{len(errors)} of {len(self.cases)} case(s) failed to run"]
        lines.extend(f"  - {c.input[:60]!r}: {c.error}" for c in errors)
        return "\n".join(lines)

    @staticmethod
    def _case_lines(cases: Sequence[CaseScore], title: str) -> list[str]:
        rows = [
            (
                excerpt(c.input),
                excerpt(c.expected),
                excerpt(c.output if c.output is not None else f"<error: {c.error}>"),
                "-" if c.score is None else f"{c.score:.3f}",
            )
            for c in cases
        ]
        return [f"{title}:", format_table(("input", "expected", "output", "score"), rows, indent=2)]


def excerpt(text: str, limit: int = 50) -> str:
    """``text`` on one line, cut to ``limit`` characters with "..." when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def load_cases(cases: CasesInput) -> list[TestCase]:
    """``TestCase``s from a dataset name or path, or an iterable of cases/pairs/mappings."""
    if isinstance(cases, str | os.PathLike):
        from tnsai_eval import datasets

        return datasets.load(cases)
    out: list[TestCase] = []
    for i, item in enumerate(cases):
        if isinstance(item, TestCase):
            out.append(item)
        elif isinstance(item, Mapping) and "input" in item and "expected" in item:
            out.append(TestCase(str(item["input"]), str(item["expected"])))
        elif isinstance(item, tuple) and len(item) == 2:
            out.append(TestCase(str(item[0]), str(item[1])))
        else:
            raise ConfigError(
                f"case {i} must be a TestCase, an (input, expected) pair or a mapping with "
                f"'input' and 'expected', got {item!r}"
            )
    if not out:
        raise ConfigError("evaluate_prompt needs at least one case, got none")
    return out


def evaluate(
    llm: LLMClient,
    prompt: str,
    cases: CasesInput,
    *,
    evaluator: PromptEvaluator | None = None,
    template: str | None = None,
    concurrency: int = 4,
    params: Mapping[str, Any] | None = None,
) -> PromptEvaluation:
    """Run ``prompt`` on every case (``concurrency`` calls at a time) and score the replies."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"evaluate_prompt needs a non-empty prompt str, got {prompt!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency must be an int >= 1, got {concurrency!r}")
    if evaluator is None:
        evaluator = DefaultPromptEvaluator()
    elif not callable(getattr(evaluator, "evaluate", None)):
        raise ConfigError(
            f"evaluator must have evaluate(actual, expected) -> float, got {evaluator!r}"
        )
    chosen = template or DEFAULT_TEMPLATE
    call_params = dict(DEFAULT_CALL_PARAMS if params is None else params)
    resolved = load_cases(cases)
    judge: PromptEvaluator = evaluator

    def run(case: TestCase) -> CaseScore:
        message = chosen.format(prompt=prompt.rstrip(), input=case.input)
        try:
            completion = llm.chat(message, **call_params)
        except LLMError as exc:
            return CaseScore(case.input, case.expected, None, None, error=_describe(exc))
        output = completion.text
        try:
            score = float(judge.evaluate(output.strip(), case.expected))
        except LLMError as exc:  # a judge model failed; the reply is kept
            return CaseScore(
                case.input, case.expected, output, None, error=f"evaluator {_describe(exc)}"
            )
        if not 0.0 <= score <= 1.0:
            raise ConfigError(
                f"evaluator {judge!r} returned {score!r} for {output[:40]!r}; expected [0, 1]"
            )
        return CaseScore(
            case.input,
            case.expected,
            output,
            score,
            tokens=completion.usage.total_tokens,
            cached=completion.cached,
        )

    if concurrency == 1 or len(resolved) == 1:
        results = [run(case) for case in resolved]
    else:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(resolved))) as pool:
            results = list(pool.map(run, resolved))
    return PromptEvaluation(prompt, tuple(results))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
