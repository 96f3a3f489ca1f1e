"""Baseline comparison and text formatting of run reports (public via ``tnsai_eval.reports``)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from tnsai_eval.reports._cases import (
    CaseChange,
    CaseComparison,
    GateMode,
    PromptChange,
    compare_cases,
    runs_by_case,
)
from tnsai_eval.reports._decode import read_report
from tnsai_eval.reports._gate import _DEFAULT_MODE, GateSettings
from tnsai_eval.reports._model import (
    CaseRecord,
    CaseState,
    MetricStats,
    ReportSource,
    TestStatus,
    TrackedTest,
    was_run,
)
from tnsai_eval.reports._power import Detectability, detectability
from tnsai_eval.settings import DEFAULT_ALPHA, DEFAULT_MIN_COMMON

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARISON_COLUMNS",
    "ChangeKind",
    "Comparison",
    "EvidenceKind",
    "MetricChange",
    "Shortfall",
    "compare",
    "count_labels",
    "error_label",
    "load_report",
]

# The epsilon keeps "dropped by exactly the tolerance" on the passing side
# despite binary floating point (0.9 - 0.05 is 0.8500000000000001).
_EPSILON = 1e-9


def load_report(source: ReportSource, *, long: bool = False) -> pd.DataFrame:
    """``read_report(source).to_dataframe(long=long)`` (see ``Report.to_dataframe``)."""
    return read_report(source).to_dataframe(long=long)


#: The columns of ``Comparison.to_dataframe``: the fields of ``MetricChange``,
#: with ``delta`` (current - baseline) and ``kind`` as its value string.
COMPARISON_COLUMNS = (
    "nodeid",
    "metric",
    "baseline",
    "current",
    "current_low",
    "current_high",
    "delta",
    "kind",
)


class ChangeKind(StrEnum):
    """How a gated metric moved against the baseline, beyond the tolerance or not.

    ``DROPPED`` (paired gate only): the mean fell beyond the tolerance, but the
    sign test on the flipped cases is not significant at alpha, so the drop
    does not fail the run; the comparison says how large a suite would see it.
    A rise that is not significant stays ``UNCHANGED``. ``INCONCLUSIVE``: too
    few cases in common with the baseline (``min_common``) to judge at all;
    it never passes.
    """

    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    DROPPED = "dropped"
    INCONCLUSIVE = "inconclusive"


class EvidenceKind(StrEnum):
    """Why a gated score has no evidence (a ``Shortfall``), in the words the reports use.

    ``not run``: cases with no recorded reply or refused by the call budget;
    ``errored``: cases whose call failed or whose evaluator raised (left out
    of every mean and flip, like unrun ones); ``inconclusive``: too few cases
    in common with the baseline; ``did not run``: a gated score of the
    baseline this run does not have (the test was skipped, deselected,
    deleted, renamed or not collected); ``test error``: the test errored
    before it recorded the score. Only ``did not run`` can be accepted
    (a pull request's accept label: the test was removed on purpose).
    """

    NOT_RUN = "not run"
    ERRORED = "errored"
    INCONCLUSIVE = "inconclusive"
    ABSENT = "did not run"
    TEST_ERROR = "test error"


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Missing evidence that keeps a comparison from passing: what is missing, and where.

    ``cases`` counts the cases concerned (0 when the whole score is missing);
    ``errors`` labels each errored case's failure (``ServerError HTTP 500``).
    """

    nodeid: str
    metric: str
    reason: str
    kind: EvidenceKind = EvidenceKind.NOT_RUN
    cases: int = 0
    errors: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.nodeid} ({self.metric}): {self.reason}"


@dataclass(frozen=True, slots=True)
class MetricChange:
    """A gated metric present in both runs, and how it moved.

    For a metric with case records in both runs, ``baseline`` and ``current``
    are means over the cases both runs recorded (unrecorded ones left out),
    and ``p_value`` is the one-sided sign test on the flipped cases.
    """

    nodeid: str
    metric: str
    baseline: float
    current: float
    current_low: float
    current_high: float
    kind: ChangeKind
    allowed: float = 0.0
    p_value: float | None = None
    #: Under the paired gate, for a dropped or unchanged score with case
    #: records: what the sign test could have seen (see ``Detectability``).
    detectability: Detectability | None = None

    @property
    def delta(self) -> float:
        """current - baseline (negative: the mean dropped)."""
        return self.current - self.baseline


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of ``compare``: what regressed, improved, appeared and vanished.

    ``new`` and ``vanished`` name tests (or ``nodeid :: metric`` for a metric
    added to or dropped from a test that exists in both runs); a new one is
    listed, a vanished *gated* score is also missing evidence (a shortfall of
    kind ``did not run``). A test whose cases were all left unrun is not
    vanished: its metric is ``INCONCLUSIVE``. ``cases`` holds the case-level comparison of
    every metric with case records in both runs: flips are always listed and
    never fail the run by themselves. ``shortfalls`` is the missing evidence
    (cases not run or errored, too few cases in common, gated scores that did
    not run) that keeps the comparison from passing even when nothing regressed.
    """

    regressions: tuple[MetricChange, ...]
    improved: tuple[MetricChange, ...]
    unchanged: tuple[MetricChange, ...]
    new: tuple[str, ...]
    vanished: tuple[str, ...]
    tolerance: float
    cases: tuple[CaseComparison, ...] = ()
    gate: GateMode = _DEFAULT_MODE
    alpha: float = DEFAULT_ALPHA
    #: What the gate could not judge and why (a latency gate with no live calls to compare).
    notes: tuple[str, ...] = ()
    dropped: tuple[MetricChange, ...] = ()
    inconclusive: tuple[MetricChange, ...] = ()
    shortfalls: tuple[Shortfall, ...] = ()
    min_common: float = DEFAULT_MIN_COMMON
    allow_unrecorded: bool = False
    #: The rules it was judged by, with where each came from.
    settings: GateSettings = field(default_factory=GateSettings)
    #: ``(nodeid, case id, error)`` of every case of this run whose call or
    #: evaluator failed: left out of every mean and flip, and listed.
    errored: tuple[tuple[str, str, str], ...] = ()

    @property
    def passed(self) -> bool:
        """True when nothing regressed and no evidence is missing.

        New tests do not count, and neither do dropped scores (not significant
        under the paired gate); a vanished gated score is missing evidence.
        """
        return not self.regressions and not self.shortfalls

    @property
    def flipped(self) -> tuple[CaseChange, ...]:
        """Every flipped case of every test, broken ones first (worst first)."""
        broken = sorted((c for cmp in self.cases for c in cmp.broken), key=lambda c: c.delta)
        fixed = sorted((c for cmp in self.cases for c in cmp.fixed), key=lambda c: -c.delta)
        return (*broken, *fixed)

    @property
    def unrecorded(self) -> tuple[tuple[str, str], ...]:
        """``(nodeid, case id)`` of every case left out because it had no recorded reply."""
        return tuple((cmp.nodeid, i) for cmp in self.cases for i in cmp.unrecorded)

    @property
    def judged(self) -> tuple[MetricChange, ...]:
        """Every metric the gate judged, whatever it called it: regressions first, then
        inconclusive, dropped, improved and unchanged ones."""
        return (
            *self.regressions,
            *self.inconclusive,
            *self.dropped,
            *self.improved,
            *self.unchanged,
        )

    @property
    def prompt_changes(self) -> tuple[PromptChange, ...]:
        """Prompts whose hash differs from the baseline's."""
        return tuple(cmp.prompt_change for cmp in self.cases if cmp.prompt_change is not None)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per metric in both runs (``COMPARISON_COLUMNS``), regressions first.

        A metric with nothing in common with the baseline has NaN as ``current``.
        """
        import pandas as pd

        rows = [
            {**{name: getattr(c, name) for name in COMPARISON_COLUMNS}, "kind": c.kind.value}
            for c in self.judged
        ]
        return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))


def compare(
    current: ReportSource,
    baseline: ReportSource,
    tolerance: float | None = None,
    *,
    gate: GateMode | str | None = None,
    alpha: float | None = None,
    gate_costs: float | None = None,
    gate_latency: float | None = None,
    min_common: float | None = None,
    allow_unrecorded: bool | None = None,
    settings: GateSettings | None = None,
) -> Comparison:
    """Compare every gated metric of ``current`` with ``baseline``, and their cases.

    The rules are ``settings`` (a ``GateSettings``), else the keyword
    arguments given, each defaulting as ``GateSettings`` does.
    ``tolerance`` is absolute (scores are in [0, 1]: 0.05 is five points),
    unless a metric declares its own (``MetricStats.tolerance``, absolute or
    relative). Under ``gate="tolerance"`` a metric regresses when even the
    favourable end of its 95% interval in this run is worse than the
    baseline's mean by more than the tolerance; with one sample the interval
    is the value, so this is a plain difference. Under ``gate="paired"`` a
    metric with case records in both runs regresses only when, in addition,
    the one-sided exact sign test on its flipped cases gives p < ``alpha``;
    a drop beyond the tolerance that is not significant is ``DROPPED``.
    Metrics with case records are compared on the cases both runs scored.

    No pass without evidence (``Comparison.shortfalls``): a test with cases
    this run did not run (unrecorded, or refused by the call budget;
    ``allow_unrecorded=True`` accepts them) or that errored (left out of
    means and flips: an outage is not a prompt regression), a score whose
    cases in common with the baseline are fewer than ``min_common`` of the
    baseline's (``INCONCLUSIVE``), and a gated score of the baseline that
    this run lacks (its test was skipped, deselected, deleted, renamed or
    not collected). Metrics without case records (``tnsai_record``) keep
    the tolerance rule alone.

    ``gate_costs`` (a relative tolerance, e.g. 0.2) also gates each test's
    token and call counts and, where both runs have declared prices, its
    estimated cost (lower is better); by default they are only shown.

    ``gate_latency`` (a ratio, e.g. 0.5: the median may grow by half) gates
    each test's median latency of live calls (``latency_p50_s``). A test
    either run did not time (every reply replayed from a store) is skipped,
    with a note in ``Comparison.notes``: replayed replies have no latency.
    """
    if settings is None:
        given = {
            "gate": gate,
            "tolerance": tolerance,
            "alpha": alpha,
            "min_common": min_common,
            "allow_unrecorded": allow_unrecorded,
            "gate_costs": gate_costs,
            "gate_latency": gate_latency,
        }
        settings = GateSettings.given({k: v for k, v in given.items() if v is not None})
    now, before = read_report(current), read_report(baseline)
    found = _Found(settings)
    before_by_id = {t.nodeid: t for t in before.tests}
    for test in now.tests:
        found.shortfalls.extend(_unrun(test, settings.allow_unrecorded))
        found.errored.extend(
            (test.nodeid, c.id, c.error or error_label(c))
            for c in test.cases
            if c.state is CaseState.ERROR
        )
        old = before_by_id.get(test.nodeid)
        if old is None:
            found.new.append(test.nodeid)
        else:
            _compare_test(test, old, found)
    now_ids = {t.nodeid for t in now.tests}
    for old in before.tests:
        if old.nodeid not in now_ids:
            found.vanished.append(old.nodeid)
            found.absent(old, sorted(n for n, m in old.metrics.items() if m.gate), None)
    return found.comparison()


@dataclass(slots=True)
class _Found:
    """What ``compare`` has found so far (mutable while it walks the tests)."""

    settings: GateSettings
    buckets: dict[ChangeKind, list[MetricChange]] = field(
        default_factory=lambda: {kind: [] for kind in ChangeKind}
    )
    new: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    shortfalls: list[Shortfall] = field(default_factory=list)
    cases: list[CaseComparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errored: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, change: MetricChange | None) -> None:
        if change is not None:
            self.buckets[change.kind].append(change)

    def absent(self, old: TrackedTest, names: list[str], now: TrackedTest | None) -> None:
        """Gated scores of the baseline's ``old`` that this run (``now``) did not record."""
        if now is None:
            reason = (
                "did not run (not in this run: skipped, deselected, deleted, renamed or "
                "not collected)"
            )
            kind = EvidenceKind.ABSENT
        elif now.status is TestStatus.ERROR:
            # It never got to score (a crashed xdist worker's test among them).
            reason, kind = "the test errored before it recorded this score", EvidenceKind.TEST_ERROR
        elif now.status is TestStatus.SKIPPED:
            reason, kind = "did not run (the test was skipped)", EvidenceKind.ABSENT
        else:
            reason = "did not run (the test no longer records this score: renamed or removed)"
            kind = EvidenceKind.ABSENT
        self.shortfalls.extend(Shortfall(old.nodeid, name, reason, kind) for name in names)

    def comparison(self) -> Comparison:
        settings = self.settings
        return Comparison(
            regressions=tuple(self.buckets[ChangeKind.REGRESSED]),
            improved=tuple(self.buckets[ChangeKind.IMPROVED]),
            unchanged=tuple(self.buckets[ChangeKind.UNCHANGED]),
            new=tuple(self.new),
            vanished=tuple(self.vanished),
            tolerance=settings.tolerance,
            cases=tuple(self.cases),
            gate=settings.gate,
            alpha=settings.alpha,
            notes=tuple(self.notes),
            dropped=tuple(self.buckets[ChangeKind.DROPPED]),
            inconclusive=tuple(self.buckets[ChangeKind.INCONCLUSIVE]),
            shortfalls=tuple(self.shortfalls),
            min_common=settings.min_common,
            allow_unrecorded=settings.allow_unrecorded,
            settings=settings,
            errored=tuple(dict.fromkeys(self.errored)),
        )


def _compare_test(test: TrackedTest, old: TrackedTest, found: _Found) -> None:
    """Every step for one test that both runs have, in the order the reports list them."""
    # The case-level comparison of each metric with case records in both runs.
    by_metric = {
        name: cases
        for name in dict.fromkeys(c.metric for c in test.cases)
        if (cases := _cases_of(test, old, name)) is not None
    }
    found.cases.extend(by_metric.values())
    _judge_unscored(test, old, by_metric, found)
    _judge_scores(test, old, by_metric, found)
    _judge_costs(test, old, found)
    missing = [
        name
        for name, m in old.metrics.items()
        if m.gate and name not in test.metrics and name not in by_metric
    ]
    if missing:
        found.vanished.extend(f"{test.nodeid} :: {name}" for name in missing)
        found.absent(old, missing, test)


def _judge_unscored(
    test: TrackedTest, old: TrackedTest, by_metric: dict[str, CaseComparison], found: _Found
) -> None:
    """Gated metrics whose every case went unrun: the run recorded no mean.

    The test did not vanish, it proved nothing: inconclusive, never a pass.
    """
    rules = found.settings
    for name, gone in old.metrics.items():
        cases = by_metric.get(name)
        if not gone.gate or name in test.metrics or cases is None:
            continue
        found.add(_inconclusive(test.nodeid, gone, cases, rules))
        found.shortfalls.append(_common_shortfall(test.nodeid, name, cases, rules))


def _judge_scores(
    test: TrackedTest, old: TrackedTest, by_metric: dict[str, CaseComparison], found: _Found
) -> None:
    """Each gated metric this run recorded, against the baseline's."""
    rules = found.settings
    for name, metric in test.metrics.items():
        if not metric.gate:
            continue
        old_metric = old.metrics.get(name)
        if old_metric is None:
            found.new.append(f"{test.nodeid} :: {name}")
            continue
        cases = by_metric.get(name)
        if cases is not None and _too_few(cases, rules):
            found.add(_inconclusive(test.nodeid, old_metric, cases, rules))
            found.shortfalls.append(_common_shortfall(test.nodeid, name, cases, rules))
        else:
            found.add(_judge(test.nodeid, metric, old_metric.mean, cases, rules))


def _judge_costs(test: TrackedTest, old: TrackedTest, found: _Found) -> None:
    """Tokens, calls and cost (``gate_costs``) and median latency (``gate_latency``)."""
    rules = found.settings
    if rules.gate_costs is not None:
        for name in ("tokens", "calls", "cost"):
            found.add(_judge_cost(test, old, name, rules.gate_costs))
    if rules.gate_latency is not None:
        found.add(_judge_latency(test, old, rules.gate_latency, found.notes))


def _unrun(test: TrackedTest, allow_unrecorded: bool) -> list[Shortfall]:
    """Cases of ``test`` that were not run or errored: a shortfall per metric and kind."""
    out: list[Shortfall] = []
    for metric in dict.fromkeys(c.metric for c in test.cases):
        records = [c for c in test.cases if c.metric == metric]
        ids = dict.fromkeys(c.id for c in records)
        ran = {c.id for c in records if was_run(c)}
        unrun = [i for i in ids if i not in ran]
        if unrun and not allow_unrecorded:
            reason = (
                f"{len(unrun)} of {len(ids)} case(s) not run (unrecorded or refused by the "
                "call budget)"
            )
            out.append(Shortfall(test.nodeid, metric, reason, EvidenceKind.NOT_RUN, len(unrun)))
        errored: dict[str, str] = {}
        for c in records:
            if c.state is CaseState.ERROR:
                errored.setdefault(c.id, error_label(c))
        if errored:
            labels = tuple(errored.values())
            reason = f"{len(labels)} errored ({count_labels(labels)})"
            out.append(
                Shortfall(test.nodeid, metric, reason, EvidenceKind.ERRORED, len(labels), labels)
            )
    return out


# "HTTP 500" in a failed call's message: the status says more than the class.
_HTTP_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_ERROR_PREFIX = re.compile(r"([A-Z][A-Za-z0-9_]*(?:Error|Exception|Exceeded|Timeout)):")


def error_label(case: CaseRecord) -> str:
    """A short name for how ``case`` failed: ``ServerError HTTP 500``, ``evaluator ValueError``.

    >>> from tnsai_eval.records import CaseRecord
    >>> error_label(CaseRecord("a", "q", "x", state="error", error_type="ServerError",
    ...                        error="ServerError: http://h/v1 answered HTTP 500: down"))
    'ServerError HTTP 500'
    """
    error = case.error or ""
    # A record from the engine names the exception; an older one only says it
    # in the message's "Type: ..." prefix.
    named = _ERROR_PREFIX.match(error.removeprefix("evaluator "))
    kind = case.error_type or (named.group(1) if named else "error")
    if error.startswith("evaluator "):
        return f"evaluator {kind}"
    status = _HTTP_STATUS.search(error)
    return f"{kind} HTTP {status.group(1)}" if status else kind


def count_labels(labels: Iterable[str]) -> str:
    """``labels`` counted, most frequent first: ``ServerError HTTP 500`` or ``2 A, 1 B``.

    >>> count_labels(["B", "A", "A"])
    '2 A, 1 B'
    """
    counts = Counter(labels)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{n} {label}" for label, n in counts.most_common())


def _too_few(cases: CaseComparison, rules: GateSettings) -> bool:
    # Exact in integers: common / baseline_count < min_common.
    return cases.baseline_count > 0 and cases.common < rules.min_common * cases.baseline_count


def _common_shortfall(
    nodeid: str, metric: str, cases: CaseComparison, rules: GateSettings
) -> Shortfall:
    reason = (
        f"only {cases.common} of the baseline's {cases.baseline_count} case(s) in common "
        f"(needs {rules.min_common:.0%}): inconclusive"
    )
    return Shortfall(nodeid, metric, reason, EvidenceKind.INCONCLUSIVE)


def _inconclusive(
    nodeid: str, old: MetricStats, cases: CaseComparison, rules: GateSettings
) -> MetricChange:
    """A metric with too little in common with the baseline (``old``) to judge."""
    common = bool(cases.changes)
    current = cases.current_mean if common else math.nan
    return MetricChange(
        nodeid=nodeid,
        metric=old.name,
        baseline=cases.baseline_mean if common else old.mean,
        current=current,
        current_low=current,
        current_high=current,
        kind=ChangeKind.INCONCLUSIVE,
        allowed=old.allowed_drop(old.mean, rules.tolerance),
    )


def _cases_of(test: TrackedTest, old: TrackedTest, metric: str) -> CaseComparison | None:
    now_cases = [c for c in test.cases if c.metric == metric]
    old_cases = [c for c in old.cases if c.metric == metric]
    if not now_cases or not old_cases:
        return None  # a version 1 baseline, or a metric without cases (tnsai_record)
    return compare_cases(
        test.nodeid,
        metric,
        now_cases,
        old_cases,
        current_prompts=test.prompts,
        baseline_prompts=old.prompts,
        current_runs=runs_by_case(test.cases, metric),
        baseline_runs=runs_by_case(old.cases, metric),
    )


def _judge(
    nodeid: str,
    metric: MetricStats,
    baseline: float,
    cases: CaseComparison | None,
    rules: GateSettings,
) -> MetricChange:
    current, low, high = metric.mean, metric.ci_low, metric.ci_high
    p_value: float | None = None
    paired = cases is not None and bool(cases.changes)
    if cases is not None and paired:
        # Same cases on both sides: unrecorded, new and vanished ones left out.
        baseline = cases.baseline_mean
        current = cases.current_mean
        low, high = current - metric.half_width, current + metric.half_width
    allowed = metric.allowed_drop(baseline, rules.tolerance)
    # Orient everything so that "up is good", then judge on the interval's ends.
    sign = 1.0 if metric.higher_is_better else -1.0
    best = max(sign * low, sign * high)
    worst = min(sign * low, sign * high)
    reference = sign * baseline
    # The epsilon keeps "dropped by exactly the tolerance" on the passing side
    # despite binary floating point (0.9 - 0.05 is 0.8500000000000001).
    dropped = best < reference - allowed - _EPSILON
    regressed = dropped
    improved = worst > reference + allowed + _EPSILON
    power: Detectability | None = None
    if cases is not None and paired:
        worse_p, better_p = cases.p_worse, cases.p_better
        broken, fixed = len(cases.broken), len(cases.fixed)
        if not metric.higher_is_better:
            worse_p, better_p = better_p, worse_p
            broken, fixed = fixed, broken
        p_value = worse_p if sign * (current - baseline) <= 0 else better_p
        if rules.gate is GateMode.PAIRED:
            regressed = dropped and worse_p < rules.alpha
            improved = improved and better_p < rules.alpha
            if not regressed and not improved:
                power = detectability(
                    broken=broken, fixed=fixed, common=cases.common, alpha=rules.alpha
                )
    if regressed:
        kind = ChangeKind.REGRESSED
    elif improved:
        kind = ChangeKind.IMPROVED
    elif dropped and rules.gate is GateMode.PAIRED and paired:
        kind = ChangeKind.DROPPED
    else:
        kind = ChangeKind.UNCHANGED
    return MetricChange(
        nodeid=nodeid,
        metric=metric.name,
        baseline=baseline,
        current=current,
        current_low=low,
        current_high=high,
        kind=kind,
        allowed=allowed,
        p_value=p_value,
        detectability=power,
    )


def _judge_latency(
    test: TrackedTest, old: TrackedTest, ratio: float, notes: list[str]
) -> MetricChange | None:
    untimed = [side for side, t in (("baseline", old), ("this run", test)) if not t.live_calls]
    if untimed:
        notes.append(
            f"latency gate skipped for {test.nodeid}: no live calls in {' and '.join(untimed)} "
            "(replayed replies have no latency)"
        )
        return None
    return _judge_cost(test, old, "latency_p50_s", ratio)


def _judge_cost(
    test: TrackedTest, old: TrackedTest, name: str, relative: float
) -> MetricChange | None:
    now_raw, old_raw = getattr(test, name), getattr(old, name)
    if now_raw is None or old_raw is None:
        return None  # a cost needs declared prices on both sides
    now_value, old_value = float(now_raw), float(old_raw)
    if old_value == 0 and now_value == 0:
        return None
    allowed = relative * old_value
    kind = ChangeKind.UNCHANGED
    if now_value > old_value + allowed + _EPSILON:
        kind = ChangeKind.REGRESSED
    elif now_value < old_value - allowed - _EPSILON:
        kind = ChangeKind.IMPROVED
    return MetricChange(
        nodeid=test.nodeid,
        metric=name,
        baseline=old_value,
        current=now_value,
        current_low=now_value,
        current_high=now_value,
        kind=kind,
        allowed=allowed,
    )
