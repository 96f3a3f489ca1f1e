"""Model against model: the gate's paired verdict between two models of one run.

A run with ``--tnsai-model old --tnsai-model new`` holds each test once per
model, on the same cases. Comparing the two is comparing two runs: each
model's records become a report of their own (``Report.for_model``), and
``compare`` judges the candidate against the baseline model with the gate's
own rules and words (regressed, improved, unchanged, and whatever else the
gate knows), the sign test on the flipped cases and the paired interval. What
is added here is what a model swap is also about: each side's calls, tokens
and estimated cost.

>>> from tnsai_eval.reports._model import CaseRecord, MetricStats, Report, TestStatus, TrackedTest
>>> def run(model, outputs):
...     cases = tuple(CaseRecord(str(i), "q", "a", o, float(o == "a"), o == "a")
...                   for i, o in enumerate(outputs))
...     score = MetricStats("score", (sum(c.score for c in cases) / len(cases),))
...     return TrackedTest(f"t.py::test_q[{model}]", TestStatus.PASSED, {"score": score},
...                        cases=cases, model=model, tokens_in=10, tokens_out=2)
>>> report = Report((run("old", "aaaa"), run("new", "aabb")), {"models": ["old", "new"]})
>>> result = compare_report_models(report, "old", "new")
>>> [(row.nodeid, row.verdict) for row in result.rows]
[('t.py::test_q', 'regressed')]
>>> [c.id for c in result.comparison.flipped]
['2', '3']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tnsai_eval._util.text import shown_label
from tnsai_eval.reports._compare import Comparison, MetricChange, compare
from tnsai_eval.reports._costs import format_cost
from tnsai_eval.reports._model import ReportSource, TrackedTest

__all__ = [
    "ModelComparison",
    "ModelRow",
    "compare_report_models",
    "format_model_changes",
    "format_model_comparison",
    "model_changes",
]


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One test under both models: the verdict on its headline score, and each side's cost."""

    nodeid: str
    verdict: str
    metric: str | None
    baseline_score: float | None
    candidate_score: float | None
    delta_low: float | None
    delta_high: float | None
    p_value: float | None
    broken: int
    fixed: int
    baseline: TrackedTest | None
    candidate: TrackedTest | None


@dataclass(frozen=True, slots=True)
class ModelComparison:
    """``candidate`` judged against ``baseline`` (two model names) on one run's records."""

    baseline: str
    candidate: str
    comparison: Comparison
    rows: tuple[ModelRow, ...]

    @property
    def passed(self) -> bool:
        """The gate's answer: True when the candidate model regressed on no test."""
        return self.comparison.passed


def compare_report_models(
    report: ReportSource, baseline: str, candidate: str, **gate: Any
) -> ModelComparison:
    """``candidate`` against ``baseline`` on every test both ran, with ``compare``'s rules.

    ``gate`` is passed to ``compare`` as it is (``tolerance``, ``gate``,
    ``alpha``, ``gate_costs``...). Either name missing from the report is a
    ``ConfigError`` naming the models it holds; so is comparing a model with itself.
    """
    from tnsai_eval.errors import ConfigError
    from tnsai_eval.reports._decode import read_report

    run = read_report(report)
    if baseline == candidate:
        raise ConfigError(f"compare models: both names are {baseline!r}; name two models")
    old, new = run.for_model(baseline), run.for_model(candidate)
    comparison = compare(new, old, **gate)
    changes: dict[str, list[MetricChange]] = {}
    for change in comparison.judged:
        changes.setdefault(change.nodeid, []).append(change)
    rows = []
    for nodeid in dict.fromkeys([*(t.nodeid for t in old.tests), *(t.nodeid for t in new.tests)]):
        found = changes.get(nodeid, [])
        rows.append(_row(nodeid, old.get(nodeid), new.get(nodeid), found, comparison))
    return ModelComparison(baseline, candidate, comparison, tuple(rows))


def _row(
    nodeid: str,
    old: TrackedTest | None,
    new: TrackedTest | None,
    changes: Sequence[MetricChange],
    comparison: Comparison,
) -> ModelRow:
    headline = None
    if new is not None and new.score is not None:
        headline = next((c for c in changes if c.metric == new.score.name), None)
    cases = None
    if headline is not None:
        cases = next(
            (c for c in comparison.cases if c.nodeid == nodeid and c.metric == headline.metric),
            None,
        )
    if headline is None:
        verdict = "new" if old is None else "vanished" if new is None else "-"
    else:
        verdict = headline.kind.value
    low, high = (None, None) if cases is None or not cases.changes else cases.delta_interval
    return ModelRow(
        nodeid=nodeid,
        verdict=verdict,
        metric=None if headline is None else headline.metric,
        baseline_score=None if headline is None else headline.baseline,
        candidate_score=None if headline is None else headline.current,
        delta_low=low,
        delta_high=high,
        p_value=None if headline is None else headline.p_value,
        broken=0 if cases is None else len(cases.broken),
        fixed=0 if cases is None else len(cases.fixed),
        baseline=old,
        candidate=new,
    )


def _side(test: TrackedTest | None) -> tuple[str, str, str]:
    if test is None:
        return "-", "-", "-"
    return str(test.calls), f"{test.tokens_in}/{test.tokens_out}", format_cost(test.cost)


_HEADERS = (
    "test",
    "verdict",
    "score A -> B",
    "delta [95% CI]",
    "sign test p",
    "broken/fixed",
    "calls A/B",
    "tokens in/out A | B",
    "cost A/B",
)


def format_model_comparison(result: ModelComparison, *, markdown: bool = False) -> str:
    """The verdict table (A = baseline model, B = candidate), then the flipped cases."""
    from tnsai_eval.reports._text import _name, _table, format_comparison

    rows = []
    for row in result.rows:
        score = delta = "-"
        if row.baseline_score is not None and row.candidate_score is not None:
            score = f"{row.baseline_score:.3f} -> {row.candidate_score:.3f}"
            delta = f"{row.candidate_score - row.baseline_score:+.3f}"
            if row.delta_low is not None and row.delta_high is not None:
                delta += f" [{row.delta_low:+.3f}, {row.delta_high:+.3f}]"
        a, b = _side(row.baseline), _side(row.candidate)
        rows.append(
            (
                # Masked and on one line; markdown_table escapes every cell on top.
                shown_label(row.nodeid),
                row.verdict,
                score,
                delta,
                "-" if row.p_value is None else f"{row.p_value:.3g}",
                f"{row.broken}/{row.fixed}",
                f"{a[0]}/{b[0]}",
                f"{a[1]} | {b[1]}",
                f"{a[2]}/{b[2]}",
            )
        )
    title = (
        f"model {_name(result.candidate, markdown)} (B) against "
        f"{_name(result.baseline, markdown)} (A)"
    )
    lines = [f"**{title}**" if markdown else title]
    lines.append(_table(_HEADERS, rows, markdown))
    lines.append(format_comparison(result.comparison, markdown=markdown))
    return ("\n\n" if markdown else "\n").join(lines)


def model_changes(current: ReportSource, baseline: ReportSource) -> list[tuple[str, str, str]]:
    """``(nodeid, baseline model, current model)`` of every test whose named model changed.

    A swap gated against a baseline of the other model (one ``--tnsai-model``
    each time, so the test ids match) is listed beside the gate's verdict, as
    a changed prompt is.

    >>> from tnsai_eval.reports._model import Report, TestStatus
    >>> old = Report((TrackedTest("t::a", TestStatus.PASSED, model="big"),))
    >>> new = Report((TrackedTest("t::a", TestStatus.PASSED, model="small"),))
    >>> model_changes(new, old)
    [('t::a', 'big', 'small')]
    """
    from tnsai_eval.reports._decode import read_report

    before = {t.nodeid: t.model for t in read_report(baseline).tests}
    return [
        (t.nodeid, before[t.nodeid] or "-", t.model or "-")
        for t in read_report(current).tests
        if t.nodeid in before and before[t.nodeid] != t.model
    ]


def format_model_changes(changes: Sequence[tuple[str, str, str]], *, markdown: bool = False) -> str:
    """One line per test whose model changed (empty when none did); ids and names
    masked, on one line, escaped in Markdown (a list item each)."""
    from tnsai_eval.reports._text import _name

    bullet = "- " if markdown else ""
    return "\n".join(
        f"{bullet}model changed: {_name(nodeid, markdown)} "
        f"({_name(old, markdown)} -> {_name(new, markdown)})"
        for nodeid, old, new in changes
    )
