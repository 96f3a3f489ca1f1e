"""What ``PromptOptimizer.optimize`` returns, with DataFrame views."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tnsai_eval.llm import Message
from tnsai_eval.optimizer._records import (
    CaseResult,
    RoundRecord,
    StopReason,
    VariantRecord,
    VariantStatus,
)
from tnsai_eval.optimizer._variant import (
    DEFAULT_TEMPLATE,
    PromptVariant,
    demos_text,
    json_ready,
)

if TYPE_CHECKING:  # pandas is imported by the views only, when they are used
    import pandas as pd

__all__ = ["CASE_COLUMNS", "OptimizationResult"]

#: The columns of ``OptimizationResult.to_dataframe()``: one row per (round, variant, case).
CASE_COLUMNS = (
    "round",
    "variant",
    "strategy",
    "case",
    "input",
    "expected",
    "output",
    "score",
    "tokens",
    "latency",
    "cached",
    "error",
    "split",
    "details",
    "reason",
)


@dataclass(frozen=True, slots=True)
class OptimizationResult:
    """The outcome of one optimizer run.

    ``score`` is the best prompt's mean score on the training cases and
    ``initial_score`` the starting prompt's (over ``initial_cases`` of them:
    fewer than all when racing dropped it early; ``training_change`` shows
    both). ``rounds`` counts rounds run,
    ``calls`` the HTTP attempts the optimizer's model calls took (case calls
    and rewrite requests, every retry included: what ``max_calls`` bounds;
    replies reused from the run's cache are not calls), ``retries`` how many
    of them were retries, ``cache_hits`` the replies a client served from its
    response store without a request (never counted as calls), ``tokens``
    what the calls used, ``failed_calls`` the calls that raised an ``Exception``
    (an ``LLMError`` after its retries) (their cases were left out).

    Held out: the best prompt is chosen on ``selection_cases`` cases only
    (``score`` and ``initial_score`` are training figures); ``validation_score``
    and ``initial_validation_score`` are the best and the initial prompt's
    means on the ``validation_cases`` held-out cases (``None`` when nothing
    was held out, or the budget ran out before every held-out case was
    scored), ``validation_interval`` the best's 95% interval there, and
    ``validation_p_value`` the exact two-sided sign test over the held-out
    cases where the two prompts differ (``validation_better`` cases up,
    ``validation_worse`` down). ``headline`` says it in one line.
    ``best_prompt`` is the winning instruction text (inline demos included);
    ``best_spec`` the whole winning variant and ``best_messages(input)`` its
    messages for one input.
    ``rejected_rewrites`` holds, for each model rewrite that was not a prompt
    for the task (a greeting, a question back, empty, off the task: see
    ``check_rewrite``), why it was rejected; rejected rewrites are never scored.

    >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> llm = ScriptedLLM(default="Paris")
    >>> result = PromptOptimizer(llm).optimize("Capital?", [TestCase("France", "Paris")])
    >>> result.score, result.stop_reason.value, result.calls
    (1.0, 'target_reached', 1)
    """

    best_prompt: str
    score: float
    initial_prompt: str
    initial_score: float
    rounds: int
    calls: int
    tokens: int
    failed_calls: int
    stop_reason: StopReason
    search: str
    elapsed_s: float
    best_variant: int = 0
    retries: int = 0
    cache_hits: int = 0
    validation_score: float | None = None
    initial_validation_score: float | None = None
    validation_p_value: float | None = None
    validation_interval: tuple[float, float] | None = None
    validation_better: int = 0
    validation_worse: int = 0
    selection_cases: int = 0
    validation_cases: int = 0
    best_spec: PromptVariant | None = field(default=None, repr=False)
    template: str = field(default=DEFAULT_TEMPLATE, repr=False)
    # Left out of repr: a run's rows would drown the summary in a notebook.
    variants: tuple[VariantRecord, ...] = field(default=(), repr=False)
    history: tuple[RoundRecord, ...] = field(default=(), repr=False)
    case_results: tuple[CaseResult, ...] = field(default=(), repr=False)
    rejected_rewrites: tuple[str, ...] = field(default=(), repr=False)
    #: What the scores are (``score_metric`` of the evaluator): "accuracy" or "score".
    metric: str = "score"

    def best_messages(self, case_input: str) -> list[Message]:
        """The winning variant's messages for ``case_input``, ready to send as is.

        ``best_prompt`` is only the instruction text (with inline demos); this
        is the full variant: system message, demo turns, the case.

        >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
        >>> from tnsai_eval.testing import ScriptedLLM
        >>> result = PromptOptimizer(ScriptedLLM(default="Paris")).optimize(
        ...     "Capital?", [TestCase("France", "Paris")]
        ... )
        >>> [(m.role, m.content) for m in result.best_messages("Spain")]
        [('user', 'Capital?\\n\\nSpain')]
        """
        spec = self.best_spec or PromptVariant(self.best_prompt)
        return spec.messages(case_input, template=self.template)

    @property
    def headline(self) -> str:
        """The held-out result in one line (the training score when nothing was held out).

        >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
        >>> from tnsai_eval.testing import ScriptedLLM
        >>> llm = ScriptedLLM(rules=[(r"only the answer", "4")], default="four")
        >>> cases = [TestCase(f"{i} + 0", "4") for i in range(10)]
        >>> optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"], rewrite=False)
        >>> optimizer.optimize("Add.", cases).headline
        'held-out 0.200 -> 1.000 [1.000, 1.000] on 3 cases: +3/-0 cases, p=0.25'
        """
        # "held-out accuracy 0.500 -> ..." when the scores are accuracies.
        named = "" if self.metric == "score" else f" {self.metric}"
        if self.validation_score is None or self.initial_validation_score is None:
            if self.validation_cases:
                return (
                    f"held-out {self.metric} incomplete (budget); training "
                    f"{self.training_change} on {self.selection_cases} cases"
                )
            return (
                f"training{named} {self.training_change} on "
                f"{self.selection_cases} cases (nothing held out)"
            )
        low, high = self.validation_interval or (self.validation_score, self.validation_score)
        p = 1.0 if self.validation_p_value is None else self.validation_p_value
        return (
            f"held-out{named} {self.initial_validation_score:.3f} -> {self.validation_score:.3f} "
            f"[{low:.3f}, {high:.3f}] on {self.validation_cases} cases: "
            f"+{self.validation_better}/-{self.validation_worse} cases, p={p:.3g}"
        )

    @property
    def initial_cases(self) -> int:
        """How many selection cases ``initial_score`` is a mean over.

        Every one (``selection_cases``), unless racing dropped the starting
        prompt before scoring it on all of them (or the budget ran out first):
        racing scores it on the first rung's cases, then further only while it
        survives.

        >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
        >>> from tnsai_eval.testing import ScriptedLLM
        >>> llm = ScriptedLLM(rules=[(r"only the answer", "4")], default="four")
        >>> cases = [TestCase(f"{i} + 0", "4") for i in range(40)]
        >>> optimizer = PromptOptimizer(
        ...     llm, candidate_strategies=["answer_only"], rewrite=False, search="racing",
        ...     split=None,
        ... )
        >>> result = optimizer.optimize("Add.", cases)
        >>> result.initial_cases, result.selection_cases, result.variants[0].status.value
        (8, 40, 'dropped')
        >>> result.training_change
        '0.200 (on 8 of 40 cases) -> 1.000'
        """
        if not self.variants:
            return self.selection_cases
        initial = self.variants[0]
        return initial.cases_scored + initial.cases_failed

    @property
    def training_change(self) -> str:
        """``initial_score -> score`` as text, saying when the first is over fewer cases.

        "0.060 -> 0.270"; "0.125 (on 12 of 70 cases) -> 0.270" when racing
        dropped the starting prompt after 12 of the 70 selection cases
        (``initial_cases``).
        """
        initial = f"{self.initial_score:.3f}"
        if self.initial_cases < self.selection_cases:
            initial += f" (on {self.initial_cases} of {self.selection_cases} cases)"
        return f"{initial} -> {self.score:.3f}"

    @property
    def was_improved(self) -> bool:
        """Whether a prompt other than the initial one scored higher than it.

        Also when racing dropped the starting prompt as surely worse than (or
        unable to win against) the prompt that became the best: its mean over
        the few cases it was scored on is then no fair comparison.
        """
        if self.best_variant == 0:
            return False
        dropped = bool(self.variants) and self.variants[0].status is VariantStatus.DROPPED
        return dropped or self.score > self.initial_score

    def to_dataframe(self) -> pd.DataFrame:
        """One row per (round, variant, case) scored, in that order.

        Columns: round, variant, strategy, case, input, expected, output,
        score, tokens, latency, cached, error, split, details, reason. Failed
        calls are rows with a ``None`` output and score and the error's text.
        ``details`` says what the variant carries beyond its instruction
        ("system message; 3 demo(s) as chat"; ``''`` for a bare instruction):
        the full variants are in ``variants_dataframe()``. ``reason`` is the
        evaluator's explanation of the score (a judge's reason) when it gave one.
        """
        import pandas as pd

        details = {v.id: v.details for v in self.variants}

        rows = [
            (
                r.round,
                r.variant,
                r.strategy,
                r.case,
                r.input,
                r.expected,
                r.output,
                r.score,
                r.tokens,
                r.latency_s,
                r.cached,
                r.error,
                r.split,
                details.get(r.variant, ""),
                r.reason,
            )
            for r in self.case_results
        ]
        return pd.DataFrame(rows, columns=list(CASE_COLUMNS))

    def rounds_dataframe(self) -> pd.DataFrame:
        """One row per round (0 is the initial prompt): best score so far and costs.

        Columns, the fields of ``RoundRecord``: round, best_score, best_variant,
        improved, variants, calls, tokens, failed_calls, elapsed_s.
        """
        import pandas as pd

        columns = [f.name for f in dataclasses.fields(RoundRecord)]
        return pd.DataFrame([dataclasses.astuple(r) for r in self.history], columns=columns)

    def variants_dataframe(self) -> pd.DataFrame:
        """One row per variant tried, in the order they were made.

        Columns, the fields of ``VariantRecord`` (``status`` as its string value):
        id, round, strategy, prompt, parent, status, score, partial_score,
        cases_scored, cases_failed, calls, tokens, became_best, duplicate_of,
        system, demos, demo_style, response_format; then details. So that a
        table (or a CSV file) shows them, ``demos`` is text (``input -> output``
        pairs, see ``demos_text``) and ``response_format`` JSON text; the
        records themselves (``variants``, ``VariantRecord.to_dict()``) keep them
        as data.
        """
        import pandas as pd

        columns = [f.name for f in dataclasses.fields(VariantRecord)] + ["details"]
        rows = []
        for v in self.variants:
            row = {name: getattr(v, name) for name in columns}
            row.update(
                status=v.status.value,
                demos=demos_text(v.demos),
                response_format=(
                    None
                    if v.response_format is None
                    else json.dumps(json_ready(v.response_format), sort_keys=True)
                ),
            )
            rows.append(row)
        return pd.DataFrame(rows, columns=columns)

    def leaderboard(self) -> list[VariantRecord]:
        """The variants that were scored, best first (ties: earlier first).

        Fully scored variants come first, by score; dropped and incomplete ones
        follow, by their partial score. Duplicates are left out.
        """
        ranked = [v for v in self.variants if v.partial_score is not None]
        return sorted(
            ranked,
            key=lambda v: (
                v.score is None,
                -(v.score if v.score is not None else (v.partial_score or 0.0)),
                v.id,
            ),
        )
