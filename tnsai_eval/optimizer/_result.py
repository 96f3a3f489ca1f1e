"""What ``PromptOptimizer.optimize`` returns, with DataFrame views."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tnsai_eval._util.stats import sign_test
from tnsai_eval.evaluation import DEFAULT_TEMPLATE, PromptVariant, demos_text
from tnsai_eval.llm import Message
from tnsai_eval.optimizer._chance import (
    DEGENERATE_SHARE,
    NO_LABEL,
    ConstantBaseline,
    answer_counts,
    confusion_frame,
    constant_flips,
)
from tnsai_eval.optimizer._records import (
    RoundRecord,
    StopReason,
    VariantRecord,
    VariantStatus,
)
from tnsai_eval.records import CaseRecord

if TYPE_CHECKING:  # pandas is imported by the views only, when they are used
    import pandas as pd

__all__ = ["CASE_COLUMNS", "VERDICTS", "OptimizationResult"]

#: The verdict words (``OptimizationResult.verdict``), the CI gate's words.
VERDICTS = ("improved", "dropped", "unchanged", "inconclusive")

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
    "case_id",
    "state",
    "error_type",
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
    ``validation_worse`` down). ``gain_interval`` is the ``1 - alpha``
    interval of the held-out gain (best minus initial) over the paired
    cases: Newcombe's interval for paired proportions when every score is 0
    or 1, else a paired bootstrap seeded by the run's seed.
    On a label task (``labels``), ``constant_baseline`` says what answering
    one label to every held-out case scores (the label chosen on the
    selection cases) and the held-out majority class's share. The
    properties and methods below (``headline``, ``verdict``, ``chance_flag``,
    ``confusion()``...) say what they read. ``best_prompt`` is the winning
    instruction text (inline demos included), ``best_spec`` the whole variant.
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
    case_results: tuple[CaseRecord, ...] = field(default=(), repr=False)
    rejected_rewrites: tuple[str, ...] = field(default=(), repr=False)
    #: What the scores are (``score_metric`` of the evaluator): "accuracy" or "score".
    metric: str = "score"
    gain_interval: tuple[float, float] | None = None
    alpha: float = 0.05
    labels: tuple[str, ...] | None = None
    constant_baseline: ConstantBaseline | None = None
    #: Racing's or halving's saving over exhaustive search, in a sentence
    #: ("racing saved 4 of 165 requests: every drop at the last look"); ``None``
    #: for exhaustive search or a run that raced no round.
    racing_report: str | None = None
    #: The held-out cases both prompts were scored on: the cases of the held-out
    #: means, flips and interval (fewer than ``validation_cases`` when a call
    #: failed after its retries).
    validation_scored: int = 0
    #: Why the held-out check was not run, when it could not have finished
    #: within what the budgets left ("max_tokens has 80 token(s) left; the
    #: held-out check needs about 300 ..."); the headline starts with it.
    validation_skipped: str | None = None
    #: What the run did with the part of the held-out reserve it did not need
    #: (the starting prompt stayed the best: that share went back to the search).
    budget_notes: tuple[str, ...] = ()

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

        The held-out means, the gain with its ``1 - alpha`` interval, the
        flipped cases and the paired test's p, and the verdict; on a label
        task the constant-answer baseline follows, and ``chance_flag`` when
        it applies.

        >>> from tnsai_eval.optimizer import PromptOptimizer, TestCase
        >>> from tnsai_eval.testing import ScriptedLLM
        >>> llm = ScriptedLLM(rules=[(r"only the answer", "4")], default="four")
        >>> cases = [TestCase(f"{i} + 0", "4") for i in range(10)]
        >>> optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"], rewrite=False)
        >>> print(optimizer.optimize("Add.", cases).headline)
        held-out 0.200 -> 1.000 on 3 cases: gain +0.800, 95% CI [+0.800, +0.800]; +3/-0 cases, p=0.25: inconclusive

        Here the scores are partial credit (the default evaluator), so the
        interval is a bootstrap of three equal differences: no spread to
        resample, hence no width. The verdict reads the paired test, which
        three cases cannot make significant.
        """  # noqa: E501
        # "held-out accuracy 0.500 -> ..." when the scores are accuracies.
        named = "" if self.metric == "score" else f" {self.metric}"
        if self.validation_score is None or self.initial_validation_score is None:
            if self.validation_skipped is not None:
                return (
                    f"held-out check not run: {self.validation_skipped}; training "
                    f"{self.training_change} on {self.selection_cases} cases"
                )
            if self.validation_cases:
                return (
                    f"held-out {self.metric} incomplete (budget or failed calls); training "
                    f"{self.training_change} on {self.selection_cases} cases"
                )
            return (
                f"training{named} {self.training_change} on "
                f"{self.selection_cases} cases (nothing held out)"
            )
        p = 1.0 if self.validation_p_value is None else self.validation_p_value
        gain = self.validation_score - self.initial_validation_score
        line = (
            f"held-out{named} {self.initial_validation_score:.3f} -> {self.validation_score:.3f} "
            f"on {self.validation_scored} cases"
        )
        left_out = self.validation_cases - self.validation_scored
        if left_out:
            line += f" ({left_out} of {self.validation_cases} left out: a call failed)"
        line += f": gain {gain:+.3f}"
        if self.gain_interval is not None:
            low, high = self.gain_interval
            line += f", {100 * (1 - self.alpha):g}% CI [{low:+.3f}, {high:+.3f}]"
        line += (
            f"; +{self.validation_better}/-{self.validation_worse} cases, p={p:.3g}: {self.verdict}"
        )
        if self.constant_baseline is not None:
            line += f"; {self.constant_baseline.describe()}"
        flag = self.chance_flag
        if flag is not None:
            line += f"; {flag}"
        return line

    @property
    def chance_flag(self) -> str | None:
        """Why the best prompt's held-out result is no skill, or ``None``.

        On a label task with a held-out score: "answers 'sports' to 12 of 12:
        no better than a constant answer" when 90% or more of its held-out
        replies name one label (``DEGENERATE_SHARE``); "no better than a
        constant answer ('sports' scores 0.333)" when its held-out score is no
        higher than the constant-answer baseline's; and "not shown better than
        a constant answer ('sports' 0.360: +3/-0 cases, p=0.25)" when it is
        higher but, case by case on the held-out cases, the paired sign test
        against the constant answer's scores (``constant_comparison``) is not
        significant at ``alpha``. A flagged prompt is never ``was_improved``.
        """
        baseline = self.constant_baseline
        if self.labels is None or baseline is None or self.validation_score is None:
            return None
        counts = answer_counts(self.labels, (r.output for r in self.best_validation_rows))
        answered = sum(counts.values())
        no_better = self.validation_score <= baseline.score
        top = next((label for label, _ in counts.most_common() if label != NO_LABEL), None)
        if top is not None and counts[top] >= DEGENERATE_SHARE * answered:
            verdict = "no better than" if no_better else "barely better than"
            return f"answers {top!r} to {counts[top]} of {answered}: {verdict} a constant answer"
        if no_better:
            return (
                f"no better than a constant answer ({baseline.label!r} scores {baseline.score:.3f})"
            )
        better, worse, p = self.constant_comparison or (0, 0, 1.0)
        if better <= worse or p > self.alpha:
            return (
                f"not shown better than a constant answer ({baseline.label!r} "
                f"{baseline.score:.3f}: +{better}/-{worse} cases, p={p:.3g})"
            )
        return None

    @property
    def constant_comparison(self) -> tuple[int, int, float] | None:
        """The best prompt against the constant answer, case by case: (better, worse, p).

        Over the held-out cases the best prompt was scored on (a label task
        with a constant-answer baseline only): the cases where it scored
        higher and lower than answering ``constant_baseline.label`` would,
        and the exact two-sided sign test's p-value over them.
        """
        baseline = self.constant_baseline
        if self.labels is None or baseline is None:
            return None
        rows = [r for r in self.best_validation_rows if r.score is not None]
        if not rows:
            return None
        better, worse = constant_flips(self.labels, baseline.label, rows)
        return better, worse, sign_test(better, worse)

    @property
    def best_validation_rows(self) -> tuple[CaseRecord, ...]:
        """The best prompt's rows on the held-out cases."""
        return tuple(
            r
            for r in self.case_results
            if r.split == "validation" and r.variant == self.best_variant
        )

    @property
    def verdict(self) -> str:
        """One of ``VERDICTS``, the CI gate's words, for the held-out comparison.

        ``improved``: a held-out gain significant at ``alpha`` (the paired
        sign test) by a prompt that also beats the constant answer, by the
        same paired test at ``alpha`` (no ``chance_flag``); ``dropped``: the
        held-out mean fell; ``unchanged``: the best is the starting prompt, or
        no held-out case flipped;
        ``inconclusive``: anything else, including no held-out score at all
        (nothing held out, or the budget ran out first). The words are the CI
        gate's (``reports.ChangeKind``); the gate, which guards against drops,
        calls a rise that is not significant ``unchanged``, while here, where
        the question is whether the search found something, such a rise (or
        one a constant answer matches) is ``inconclusive``.
        """
        best, initial = self.validation_score, self.initial_validation_score
        if best is None or initial is None:
            return "inconclusive"
        if self.best_variant == 0 or self.validation_better == self.validation_worse == 0:
            return "unchanged"
        if best < initial:
            return "dropped"
        p = self.validation_p_value
        if best > initial and p is not None and p <= self.alpha and self.chance_flag is None:
            return "improved"
        return "inconclusive"

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
        """Whether the best prompt is shown better on the held-out cases (``verdict``).

        True only for a held-out gain significant at ``alpha`` by a prompt
        that beats the constant answer on a label task; ``False`` without a
        held-out split. ``training_improved`` is the search's own view.
        """
        return self.verdict == "improved"

    @property
    def training_improved(self) -> bool:
        """Whether a prompt other than the initial one scored higher on the selection cases.

        Also when racing dropped the starting prompt as surely worse than (or
        unable to win against) the prompt that became the best: its mean over
        the few cases it was scored on is then no fair comparison. A training
        gain is what the search chose on, not evidence: see ``was_improved``.
        """
        if self.best_variant == 0:
            return False
        dropped = bool(self.variants) and self.variants[0].status is VariantStatus.DROPPED
        return dropped or self.score > self.initial_score

    def confusion(self) -> pd.DataFrame:
        """Expected by answered label for the initial and the best prompt (a label task).

        Indexed by (prompt, expected), prompt ``"initial"`` then ``"best"``;
        one column per label and ``"(none)"`` for replies naming no label or
        several; each cell counts cases. On the held-out cases when any were
        scored, else on the selection cases. Raises ``ConfigError`` when the
        run had no labels (``labels=`` or a ``LabelEvaluator``).
        """
        from tnsai_eval.errors import ConfigError

        if self.labels is None:
            raise ConfigError(
                "confusion() needs a label task: give labels= or a LabelEvaluator to the optimizer"
            )
        split = "validation" if any(r.split == "validation" for r in self.case_results) else "train"

        def rows(variant: int) -> list[CaseRecord]:
            return [r for r in self.case_results if r.split == split and r.variant == variant]

        return confusion_frame(
            self.labels, [("initial", rows(0)), ("best", rows(self.best_variant))]
        )

    def held_out_dataframe(self) -> pd.DataFrame:
        """The held-out figures as a table: one row per prompt or baseline.

        Rows: ``initial``, ``best``, ``gain`` (best minus initial, with its
        interval in ``low`` / ``high``), and on a label task
        ``constant answer`` and ``majority class`` (``answer`` names the
        label). Columns: what, answer, score, low, high, cases, p_value,
        verdict. Empty when nothing was held out.
        """
        import pandas as pd

        columns = ["what", "answer", "score", "low", "high", "cases", "p_value", "verdict"]
        best, initial = self.validation_score, self.initial_validation_score
        if best is None or initial is None:
            return pd.DataFrame([], columns=columns)
        n = self.validation_scored
        low, high = self.validation_interval or (None, None)
        gain_low, gain_high = self.gain_interval or (None, None)
        rows: list[tuple[object, ...]] = [
            ("initial", None, initial, None, None, n, None, None),
            ("best", None, best, low, high, n, None, None),
            ("gain", None, best - initial, gain_low, gain_high, n,
             self.validation_p_value, self.verdict),
        ]  # fmt: skip
        if self.constant_baseline is not None:
            c = self.constant_baseline
            rows.append(("constant answer", c.label, c.score, None, None, n, None, None))
            rows.append(("majority class", c.majority_label, c.majority_rate, None, None, n,
                         None, None))  # fmt: skip
        return pd.DataFrame(rows, columns=columns)

    def held_out_dict(self) -> dict[str, object]:
        """The held-out figures as JSON-ready data (``variants.json`` writes it)."""
        baseline = self.constant_baseline
        return {
            "cases": self.validation_cases,
            "scored": self.validation_scored,
            "skipped": self.validation_skipped,
            "initial_score": self.initial_validation_score,
            "best_score": self.validation_score,
            "best_interval": list(self.validation_interval) if self.validation_interval else None,
            "gain_interval": list(self.gain_interval) if self.gain_interval else None,
            "alpha": self.alpha,
            "better": self.validation_better,
            "worse": self.validation_worse,
            "p_value": self.validation_p_value,
            "verdict": self.verdict,
            "constant_baseline": None if baseline is None else baseline.to_dict(),
            "chance_flag": self.chance_flag,
            "constant_comparison": (
                None if self.constant_comparison is None else list(self.constant_comparison)
            ),
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per (round, variant, case) scored, in that order.

        Columns: ``CASE_COLUMNS``, the fields of each ``CaseRecord`` (``case`` is its
        ``index``, ``latency`` its ``latency_s``, ``case_id`` its ``id``). Failed calls are rows
        with a ``None`` output and score, the error's text and its type.
        ``details`` says what the variant carries beyond its instruction
        ("system message; 3 demo(s) as chat"; ``''`` for a bare instruction):
        the full variants are in ``variants_dataframe()``. ``reason`` is the
        evaluator's explanation of the score (a judge's reason) when it gave one.
        """
        import pandas as pd

        details = {v.id: v.details for v in self.variants}
        # Each column is the record's field of that name, but for these three.
        renamed = {"case": "index", "latency": "latency_s", "case_id": "id"}
        rows = [
            {
                **{c: getattr(r, renamed.get(c, c)) for c in CASE_COLUMNS if c != "details"},
                "details": details.get(r.variant, ""),
                "state": r.state.value,
            }
            for r in self.case_results
        ]
        return pd.DataFrame(rows, columns=list(CASE_COLUMNS))

    def rounds_dataframe(self) -> pd.DataFrame:
        """One row per round (0 is the initial prompt): best score so far and costs.

        Columns: the fields of ``RoundRecord``.
        """
        import pandas as pd

        columns = [f.name for f in dataclasses.fields(RoundRecord)]
        return pd.DataFrame([dataclasses.astuple(r) for r in self.history], columns=columns)

    def variants_dataframe(self) -> pd.DataFrame:
        """One row per variant tried, in the order they were made.

        Columns: the fields of ``VariantRecord`` (``status`` as its string value),
        then details. So that a table (or a CSV file) shows them, ``demos`` is text
        (``input -> output`` pairs, see ``demos_text``) and ``response_format`` JSON
        text; the records themselves (``variants``, ``VariantRecord.to_dict()``) keep
        them as data.
        """
        import pandas as pd

        columns = [f.name for f in dataclasses.fields(VariantRecord)] + ["details"]
        rows = []
        for v in self.variants:
            row = v.to_dict()  # its fields, the status's value and its details
            shape = row["response_format"]
            row.update(
                demos=demos_text(v.demos),
                response_format=None if shape is None else json.dumps(shape, sort_keys=True),
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
