"""Scoring one prompt on a set of cases (``score_prompt``): the optimizer's ``Engine``
without the search, so the template, call parameters, in-run cache, budgets and error
rules are the optimizer's and the pytest plugin's. A case whose call or evaluator fails
(or returns a value outside [0, 1]) is recorded with the error's type and message; the
other cases keep their scores.

>>> from tnsai_eval.testing import ScriptedLLM
>>> llm = ScriptedLLM(rules=[(r"France", "Paris")], default="Rome")
>>> result = score_prompt(llm, "Capital?", [TestCase("France", "Paris"), TestCase("Peru", "Lima")])
>>> result.scores, result.mean_score
((1.0, 0.2), 0.6)
>>> result.cases[1].output
'Rome'
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tnsai_eval._util.aio import blocking
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation._engine import (
    DEFAULT_CALL_PARAMS,
    DEFAULT_TEMPLATE,
    Budget,
    Clock,
    Engine,
    Variant,
    check_concurrency,
    check_max_calls,
    check_template,
)
from tnsai_eval.evaluation._stop import StopReason
from tnsai_eval.evaluation._variant import PromptVariant
from tnsai_eval.llm import CallBudget, LLMClient
from tnsai_eval.records import CaseRecord, CaseState
from tnsai_eval.scoring import DefaultPromptEvaluator, PromptEvaluator, TestCase, check_cases

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PromptEvaluation", "ascore_prompt", "score_prompt"]


@dataclass(frozen=True, slots=True)
class PromptEvaluation:
    """The result of scoring one prompt on a set of cases (``score_prompt``).

    ``cases`` are in the order given. ``calls`` counts the model calls made
    (a repeated case reuses the earlier reply); ``stop_reason`` is set when a
    budget left cases unsent.

    >>> result = PromptEvaluation("p", (CaseRecord("a", "2+2", "4", "4", 1.0),
    ...                                 CaseRecord("b", "3+3", "6", "9", 0.2)))
    >>> result.mean_score, result.scores
    (0.6, (1.0, 0.2))
    >>> result.worst(1)[0].input
    '3+3'
    """

    prompt: str
    cases: tuple[CaseRecord, ...]
    calls: int = 0
    stop_reason: StopReason | None = None

    @property
    def scores(self) -> tuple[float, ...]:
        """Per-case scores, in case order; a failed case counts as 0.0, one never asked
        (unrecorded, or not run: budget) is left out."""
        return tuple(0.0 if c.score is None else c.score for c in self.cases if c.asked)

    @property
    def mean_score(self) -> float:
        """The mean of ``scores`` (0.0 with no recorded case)."""
        scores = self.scores
        return math.fsum(scores) / len(scores) if scores else 0.0

    score = mean_score

    @property
    def errors(self) -> tuple[CaseRecord, ...]:
        """The cases whose call (or evaluator) failed."""
        return tuple(c for c in self.cases if c.state is CaseState.ERROR)

    @property
    def unrecorded(self) -> tuple[CaseRecord, ...]:
        """The cases replay mode had no recording of."""
        return tuple(c for c in self.cases if c.state is CaseState.UNRECORDED)

    @property
    def not_run(self) -> tuple[CaseRecord, ...]:
        """The cases the call budget left unsent."""
        return tuple(c for c in self.cases if c.state is CaseState.NOT_RUN)

    def case_pass_rate(self, threshold: float = 0.5) -> float:
        """Share of the recorded cases scored at ``threshold`` or above (0.0 with none)."""
        recorded = [c for c in self.cases if c.asked]
        return sum(c.passes(threshold) for c in recorded) / len(recorded) if recorded else 0.0

    @property
    def tokens(self) -> int:
        """Tokens used by every case's call together."""
        return sum(c.tokens for c in self.cases)

    def worst(self, n: int = 5) -> list[CaseRecord]:
        """The ``n`` lowest-scoring recorded cases, worst first (failed ones count as 0)."""
        recorded = [c for c in self.cases if c.asked]
        return sorted(recorded, key=lambda c: -1.0 if c.score is None else c.score)[:n]

    def to_dataframe(self) -> pd.DataFrame:
        """One row per case: input, expected, output, score, reason, tokens, cached, error."""
        import pandas as pd

        columns = ["input", "expected", "output", "score", "reason", "tokens", "cached", "error"]
        rows = [{name: getattr(case, name) for name in columns} for case in self.cases]
        return pd.DataFrame(rows, columns=columns)

    @property
    def dataframe(self) -> pd.DataFrame:
        """``to_dataframe()`` as a property."""
        return self.to_dataframe()


async def ascore_prompt(
    llm: LLMClient,
    prompt: str,
    cases: Sequence[TestCase],
    *,
    evaluator: PromptEvaluator | None = None,
    template: str = DEFAULT_TEMPLATE,
    params: Mapping[str, Any] | None = None,
    concurrency: int = 4,
    max_calls: int | None = None,
    on_case: Callable[[CaseRecord], None] | None = None,
    clock: Clock = time.monotonic,
    budget: CallBudget | None = None,
    judge_budget: CallBudget | None = None,
) -> PromptEvaluation:
    """Score ``prompt`` on every case, ``concurrency`` calls at a time.

    Each case's message is ``template`` filled with the prompt and the case's
    input, sent with ``params`` (the optimizer's ``DEFAULT_CALL_PARAMS`` unless
    given); the reply is scored by ``evaluator`` (``DefaultPromptEvaluator``).
    ``max_calls`` bounds the calls (HTTP attempts, retries included; cases
    beyond it are ``not_run``), and so does ``budget``, an ``llm.CallBudget``
    shared with other work (the pytest plugin's ``--llm-max-calls``). An
    evaluator's calls (a judge's) draw on the same budgets, or on
    ``judge_budget`` alone when given. ``on_case`` receives each case as it
    is scored. A client that can grow its pool (``OpenAIClient``,
    ``FrontClient``) gets room for ``concurrency`` requests in flight.
    ``score_prompt`` is the same for synchronous callers; it works inside a
    running event loop (a notebook) by running in a thread.
    """
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"prompt must be a non-empty str, got {prompt!r}")
    checked = check_cases(cases, "cases")
    check_template(template)
    check_concurrency(concurrency)
    check_max_calls(max_calls)
    if evaluator is None:
        evaluator = DefaultPromptEvaluator()
    elif not callable(getattr(evaluator, "evaluate", None)):
        raise ConfigError(
            f"evaluator must have evaluate(actual, expected) -> float, got {evaluator!r}"
        )
    if params is not None and not isinstance(params, Mapping):
        raise ConfigError(f"params must be a mapping of call parameters, got {params!r}")

    for name, given in (("budget", budget), ("judge_budget", judge_budget)):
        if given is not None and not isinstance(given, CallBudget):
            raise ConfigError(f"{name} must be an llm.CallBudget or None, got {given!r}")
    spent = Budget(max_calls=max_calls, clock=clock, shared=budget, judge=judge_budget)
    engine = Engine(
        llm,
        evaluator=evaluator,
        budget=spent,
        concurrency=concurrency,
        params=DEFAULT_CALL_PARAMS if params is None else params,
        template=template,
        on_case=on_case,
    )
    variant = Variant(id=0, round=0, strategy="initial", spec=PromptVariant(prompt), parent=None)
    await engine.score(variant, range(len(checked)), checked)
    by_index = {row.index: row for row in variant.rows}
    ids = engine.case_ids(checked)
    scored = tuple(
        by_index.get(i)
        or CaseRecord(ids[i], case.input, case.expected, state=CaseState.NOT_RUN, index=i)
        for i, case in enumerate(checked)
    )
    return PromptEvaluation(prompt, scored, calls=spent.calls, stop_reason=spent.stop_reason)


score_prompt = blocking(ascore_prompt)
