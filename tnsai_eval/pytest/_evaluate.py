"""``evaluate_prompt``: score one prompt on a set of cases, for regression tests.

Each case's input is put into the prompt with the same template and call
parameters the ``PromptOptimizer`` uses (so a score here means what it means
there), sent to the model, and the reply is scored against the
expected answer by an evaluator (``DefaultPromptEvaluator`` unless given). A
case whose call fails scores nothing and is reported with its error; the
other cases are still scored. A case whose reply was never recorded (replay
mode, or ``--llm-max-calls`` spent) is *unrecorded*: it has no score at all,
rather than a score of 0, and is left out of the mean.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from tnsai_eval.errors import ConfigError, LLMError, ReplayMissError
from tnsai_eval.llm import LLMClient
from tnsai_eval.optimizer import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    DefaultPromptEvaluator,
    PromptEvaluator,
    TestCase,
)
from tnsai_eval.reports import (
    CaseRecord,
    CaseState,
    PromptRecord,
    case_ids,
    format_table,
    prompt_hash,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CaseScore",
    "PromptEvaluation",
    "declared_threshold",
    "evaluate",
    "excerpt",
    "load_cases",
    "load_prompt",
]

CasesInput: TypeAlias = (
    "str | os.PathLike[str] | Iterable[TestCase | tuple[str, str] | Mapping[str, Any]]"
)


@dataclass(frozen=True, slots=True)
class CaseScore:
    """One case: what was asked, expected and answered, and its score.

    ``score`` is ``None`` when the call failed (``state`` ``"error"``;
    ``error`` says why) or when no reply was recorded for it (``state``
    ``"unrecorded"``). ``passed`` is ``score >= case_threshold``.
    """

    input: str
    expected: str
    output: str | None
    score: float | None
    tokens: int = 0
    cached: bool = False
    error: str | None = None
    id: str = ""
    state: str = "scored"
    passed: bool | None = None
    latency_s: float = 0.0

    def record(self) -> CaseRecord:
        """This case as a report record."""
        return CaseRecord(
            id=self.id,
            input=self.input,
            expected=self.expected,
            output=self.output,
            score=self.score,
            passed=self.passed,
            state=CaseState(self.state),
            cached=self.cached,
            tokens=self.tokens,
            latency_s=self.latency_s,
            error=self.error,
        )


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
    prompt_hash: str = ""
    prompt_file: str | None = None
    case_threshold: float = 0.5

    def prompt_record(self) -> PromptRecord:
        """The evaluated prompt as a report record (text, hash, file)."""
        return PromptRecord("score", self.prompt, self.prompt_hash or "-", self.prompt_file)

    @property
    def recorded(self) -> tuple[CaseScore, ...]:
        """The cases that were asked (scored or failed); unrecorded ones left out."""
        return tuple(c for c in self.cases if c.state != "unrecorded")

    @property
    def scores(self) -> tuple[float, ...]:
        """Per-case scores of the recorded cases, in case order; a failed case counts as 0.0."""
        return tuple(0.0 if c.score is None else c.score for c in self.recorded)

    @property
    def mean_score(self) -> float:
        """The mean of ``scores`` (0.0 with no recorded case)."""
        scores = self.scores
        return math.fsum(scores) / len(scores) if scores else 0.0

    score = mean_score

    @property
    def case_pass_rate(self) -> float:
        """Share of recorded cases that passed (score >= ``case_threshold``)."""
        recorded = self.recorded
        return sum(c.passed is True for c in recorded) / len(recorded) if recorded else 0.0

    @property
    def errors(self) -> tuple[CaseScore, ...]:
        """The cases whose call (or judge) failed."""
        return tuple(c for c in self.cases if c.state == "error")

    @property
    def unrecorded(self) -> tuple[CaseScore, ...]:
        """The cases with no recorded reply: never asked, so never scored."""
        return tuple(c for c in self.cases if c.state == "unrecorded")

    @property
    def tokens(self) -> int:
        """Tokens used by every case's call together."""
        return sum(c.tokens for c in self.cases)

    def worst(self, n: int = 5) -> list[CaseScore]:
        """The ``n`` lowest-scoring recorded cases, worst first (failed calls count as 0)."""
        ranked = sorted(self.recorded, key=lambda c: -1.0 if c.score is None else c.score)
        return ranked[:n]

    def to_dataframe(self) -> pd.DataFrame:
        """One row per case: input, expected, output, score, passed, state, id, tokens,
        cached, latency_s, error."""
        import pandas as pd

        columns = ["input", "expected", "output", "score", "passed", "state", "id", "tokens",
                   "cached", "latency_s", "error"]  # fmt: skip
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
            f"over {len(self.recorded)} case(s)"
        ]
        lines.extend(self._case_lines(self.worst(limit), f"worst {min(limit, len(self.recorded))}"))
        return "\n".join(lines)

    def unrecorded_message(self, command: str, reason: str) -> str:
        """One message for every unrecorded case: which, why, and the command that records."""
        missing = self.unrecorded
        lines = [
            f"{len(missing)} of {len(self.cases)} case(s) unrecorded ({reason}); they are not "
            f"scored. Record them with:\n    {command}",
        ]
        lines.extend(f"  - {c.id}: {excerpt(c.input, 60)!r}" for c in missing[:20])
        if len(missing) > 20:
            lines.append(f"  ... and {len(missing) - 20} more")
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


def declared_threshold(cases: CasesInput) -> float:
    """The case threshold a dataset declares, else 0.5."""
    # TEMPORARY: reads the dataset's NAME.meta.json threshold once i13's load_meta lands.
    return 0.5


def load_prompt(prompt: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``(text, file)``: a ``str`` is the prompt itself; a ``pathlib.Path`` is a prompt file."""
    if isinstance(prompt, os.PathLike):
        path = Path(prompt)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read prompt file {str(path)!r}: {exc}") from exc
        if not text.strip():
            raise ConfigError(f"prompt file {str(path)!r} is empty")
        return text, path.as_posix()
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(
            f"evaluate_prompt needs a non-empty prompt str or a pathlib.Path, got {prompt!r}"
        )
    return prompt, None


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
            given = item.get("id")
            out.append(
                TestCase(
                    str(item["input"]), str(item["expected"]), None if given is None else str(given)
                )
            )
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
    prompt: str | os.PathLike[str],
    cases: CasesInput,
    *,
    evaluator: PromptEvaluator | None = None,
    template: str | None = None,
    concurrency: int = 4,
    params: Mapping[str, Any] | None = None,
    case_threshold: float = 0.5,
) -> PromptEvaluation:
    """Run ``prompt`` on every case (``concurrency`` calls at a time) and score the replies.

    ``prompt`` is the text, or a ``pathlib.Path`` to a prompt file. A case
    passes when its score is at least ``case_threshold``.
    """
    text, prompt_file = load_prompt(prompt)
    prompt = text
    if (
        isinstance(case_threshold, bool)
        or not isinstance(case_threshold, int | float)
        or not 0.0 <= case_threshold <= 1.0
    ):
        raise ConfigError(f"case_threshold must be a number in [0, 1], got {case_threshold!r}")
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
    ids = case_ids((c.input, c.expected, c.id) for c in resolved)
    judge: PromptEvaluator = evaluator

    def run(pair: tuple[str, TestCase]) -> CaseScore:
        case_id, case = pair
        message = chosen.format(prompt=prompt.rstrip(), input=case.input)
        started = time.perf_counter()
        try:
            completion = llm.chat(message, **call_params)
        except ReplayMissError as exc:
            # Never asked: no score at all, rather than a 0 that would look like a failure.
            return CaseScore(
                case.input,
                case.expected,
                None,
                None,
                error=_describe(exc),
                id=case_id,
                state="unrecorded",
            )
        except LLMError as exc:
            return CaseScore(
                case.input, case.expected, None, None, error=_describe(exc), id=case_id,
                state="error", passed=False,
            )  # fmt: skip
        latency = completion.latency_s or time.perf_counter() - started
        output = completion.text
        try:
            score = float(judge.evaluate(output.strip(), case.expected))
        except LLMError as exc:  # a judge model failed; the reply is kept
            return CaseScore(
                case.input, case.expected, output, None, error=f"evaluator {_describe(exc)}",
                id=case_id, state="error", passed=False, latency_s=latency,
            )  # fmt: skip
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
            id=case_id,
            passed=score >= case_threshold,
            latency_s=latency,
        )

    pairs = list(zip(ids, resolved, strict=True))
    if concurrency == 1 or len(resolved) == 1:
        results = [run(pair) for pair in pairs]
    else:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(resolved))) as pool:
            results = list(pool.map(run, pairs))
    # Everything sent except the case input: the prompt, the template, the call's
    # parameters (response_format included). A changed hash means the model saw
    # something different, even when the prompt text reads the same.
    digest = prompt_hash(prompt.rstrip(), chosen, call_params)
    return PromptEvaluation(
        prompt,
        tuple(results),
        prompt_hash=digest,
        prompt_file=prompt_file,
        case_threshold=float(case_threshold),
    )


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
