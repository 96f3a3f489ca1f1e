"""Baseline comparison and text formatting of run reports (public via ``tnsai_eval.reports``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from tnsai_eval.errors import ConfigError
from tnsai_eval.reports._cases import (
    CaseChange,
    CaseComparison,
    GateMode,
    PromptChange,
    compare_cases,
)
from tnsai_eval.reports._decode import read_report
from tnsai_eval.reports._model import (
    CaseState,
    MetricStats,
    ReportSource,
    TestStatus,
    TrackedTest,
    was_run,
)
from tnsai_eval.reports._power import Detectability, detectability

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARISON_COLUMNS",
    "ChangeKind",
    "Comparison",
    "MetricChange",
    "Shortfall",
    "compare",
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


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Missing evidence that keeps a comparison from passing: what is missing, and where."""

    nodeid: str
    metric: str
    reason: str

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
    added to or dropped from a test that exists in both runs); they are listed,
    never failed. A test whose cases were all left unrun is not vanished: its
    metric is ``INCONCLUSIVE``. ``cases`` holds the case-level comparison of
    every metric with case records in both runs: flips are always listed and
    never fail the run by themselves. ``shortfalls`` is the missing evidence
    (cases not run or errored, too few cases in common) that keeps the
    comparison from passing even when nothing regressed.
    """

    regressions: tuple[MetricChange, ...]
    improved: tuple[MetricChange, ...]
    unchanged: tuple[MetricChange, ...]
    new: tuple[str, ...]
    vanished: tuple[str, ...]
    tolerance: float
    cases: tuple[CaseComparison, ...] = ()
    gate: GateMode = GateMode.TOLERANCE
    alpha: float = 0.05
    #: What the gate could not judge and why (a latency gate with no live calls to compare).
    notes: tuple[str, ...] = ()
    dropped: tuple[MetricChange, ...] = ()
    inconclusive: tuple[MetricChange, ...] = ()
    shortfalls: tuple[Shortfall, ...] = ()
    min_common: float = 0.8
    allow_unrecorded: bool = False

    @property
    def passed(self) -> bool:
        """True when nothing regressed and no evidence is missing.

        New and vanished tests do not count, and neither do dropped scores
        (not significant under the paired gate).
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
    def prompt_changes(self) -> tuple[PromptChange, ...]:
        """Prompts whose hash differs from the baseline's."""
        return tuple(cmp.prompt_change for cmp in self.cases if cmp.prompt_change is not None)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per metric in both runs (``COMPARISON_COLUMNS``), regressions first.

        A metric with nothing in common with the baseline has NaN as ``current``.
        """
        import pandas as pd

        changes = [
            *self.regressions,
            *self.inconclusive,
            *self.dropped,
            *self.improved,
            *self.unchanged,
        ]
        rows = [
            {**{name: getattr(c, name) for name in COMPARISON_COLUMNS}, "kind": c.kind.value}
            for c in changes
        ]
        return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))


def compare(
    current: ReportSource,
    baseline: ReportSource,
    tolerance: float = 0.05,
    *,
    gate: GateMode | str = GateMode.TOLERANCE,
    alpha: float = 0.05,
    gate_costs: float | None = None,
    gate_latency: float | None = None,
    min_common: float = 0.8,
    allow_unrecorded: bool = False,
) -> Comparison:
    """Compare every gated metric of ``current`` with ``baseline``, and their cases.

    ``tolerance`` is absolute (scores are in [0, 1]: 0.05 is five points),
    unless a metric declares its own (``MetricStats.tolerance``, absolute or
    relative). Under ``gate="tolerance"`` a metric regresses when even the
    favourable end of its 95% interval in this run is worse than the
    baseline's mean by more than the tolerance; with one sample the interval
    is the value, so this is a plain difference. Under ``gate="paired"`` a
    metric with case records in both runs regresses only when, in addition,
    the one-sided exact sign test on its flipped cases gives p < ``alpha``;
    a drop beyond the tolerance that is not significant is ``DROPPED``.
    Metrics with case records are compared on the cases both runs recorded.

    No pass without evidence: a test with cases this run did not run
    (unrecorded, or refused by the call budget; ``allow_unrecorded=True``
    accepts them) or cases that errored, or whose cases in common with the
    baseline are fewer than ``min_common`` of the baseline's cases
    (``INCONCLUSIVE``), is a shortfall, and ``passed`` is False. Metrics
    without case records (``tnsai_record``) keep the tolerance rule alone.

    ``gate_costs`` (a relative tolerance, e.g. 0.2) also gates each test's
    token and call counts and, where both runs have declared prices, its
    estimated cost (lower is better); by default they are only shown.

    ``gate_latency`` (a ratio, e.g. 0.5: the median may grow by half) gates
    each test's median latency of live calls (``latency_p50_s``). A test
    either run did not time (every reply replayed from a store) is skipped,
    with a note in ``Comparison.notes``: replayed replies have no latency.
    """
    _check_fraction("tolerance", tolerance, upper=None)
    _check_fraction("alpha", alpha, upper=1.0)
    _check_fraction("min_common", min_common, upper=None)
    if min_common > 1:
        raise ConfigError(f"min_common must be a share in [0, 1], got {min_common!r}")
    if gate_costs is not None:
        _check_fraction("gate_costs", gate_costs, upper=None)
    if gate_latency is not None:
        _check_fraction("gate_latency", gate_latency, upper=None)
    try:
        mode = GateMode(gate)
    except ValueError:
        raise ConfigError(
            f"gate must be one of {', '.join(m.value for m in GateMode)}, got {gate!r}"
        ) from None
    now, before = read_report(current), read_report(baseline)
    rules = _Rules(float(tolerance), mode, float(alpha), float(min_common), allow_unrecorded)
    buckets: dict[ChangeKind, list[MetricChange]] = {kind: [] for kind in ChangeKind}
    new: list[str] = []
    vanished: list[str] = []
    shortfalls: list[Shortfall] = []
    case_comparisons: list[CaseComparison] = []
    notes: list[str] = []
    before_by_id = {t.nodeid: t for t in before.tests}
    now_ids = {t.nodeid for t in now.tests}
    for test in now.tests:
        old = before_by_id.get(test.nodeid)
        shortfalls.extend(_unrun(test, allow_unrecorded))
        if old is None:
            new.append(test.nodeid)
            continue
        by_metric: dict[str, CaseComparison] = {}
        for name in dict.fromkeys(c.metric for c in test.cases):
            cases = _cases_of(test, old, name)
            if cases is not None:
                by_metric[name] = cases
                case_comparisons.append(cases)
        for name, gone in old.metrics.items():
            cases = by_metric.get(name)
            if not gone.gate or name in test.metrics or cases is None:
                continue
            # Every case of this metric went unrun, so the run recorded no mean:
            # the test did not vanish, it proved nothing.
            change = _inconclusive(test.nodeid, gone, cases, rules)
            buckets[change.kind].append(change)
            shortfalls.append(Shortfall(test.nodeid, name, _common_reason(cases, rules)))
        for name, metric in test.metrics.items():
            old_metric = old.metrics.get(name)
            cases = by_metric.get(name)
            if not metric.gate:
                continue
            if old_metric is None:
                new.append(f"{test.nodeid} :: {name}")
                continue
            if cases is not None and _too_few(cases, rules):
                change = _inconclusive(test.nodeid, old_metric, cases, rules)
                shortfalls.append(Shortfall(test.nodeid, name, _common_reason(cases, rules)))
            else:
                change = _judge(test.nodeid, metric, old_metric.mean, cases, rules)
            buckets[change.kind].append(change)
        if gate_costs is not None:
            for name in ("tokens", "calls", "cost"):
                cost = _judge_cost(test, old, name, gate_costs)
                if cost is not None:
                    buckets[cost.kind].append(cost)
        if gate_latency is not None:
            latency = _judge_latency(test, old, gate_latency, notes)
            if latency is not None:
                buckets[latency.kind].append(latency)
        missing = [
            name
            for name, m in old.metrics.items()
            if m.gate and name not in test.metrics and name not in by_metric
        ]
        if test.status is TestStatus.ERROR:
            # It never got to score (a crashed xdist worker's test among
            # them): missing evidence, not a metric someone removed.
            shortfalls.extend(
                Shortfall(test.nodeid, name, "the test errored before it recorded this score")
                for name in missing
            )
        else:
            vanished.extend(f"{test.nodeid} :: {name}" for name in missing)
    vanished.extend(t.nodeid for t in before.tests if t.nodeid not in now_ids)
    return Comparison(
        regressions=tuple(buckets[ChangeKind.REGRESSED]),
        improved=tuple(buckets[ChangeKind.IMPROVED]),
        unchanged=tuple(buckets[ChangeKind.UNCHANGED]),
        new=tuple(new),
        vanished=tuple(vanished),
        tolerance=float(tolerance),
        cases=tuple(case_comparisons),
        gate=mode,
        alpha=float(alpha),
        notes=tuple(notes),
        dropped=tuple(buckets[ChangeKind.DROPPED]),
        inconclusive=tuple(buckets[ChangeKind.INCONCLUSIVE]),
        shortfalls=_merged(shortfalls),
        min_common=float(min_common),
        allow_unrecorded=allow_unrecorded,
    )


@dataclass(frozen=True, slots=True)
class _Rules:
    tolerance: float
    mode: GateMode
    alpha: float
    min_common: float
    allow_unrecorded: bool


def _merged(shortfalls: list[Shortfall]) -> tuple[Shortfall, ...]:
    """One shortfall per test metric, its reasons joined in the order found."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for s in shortfalls:
        reasons.setdefault((s.nodeid, s.metric), []).append(s.reason)
    return tuple(Shortfall(n, m, "; ".join(r)) for (n, m), r in reasons.items())


def _unrun(test: TrackedTest, allow_unrecorded: bool) -> list[Shortfall]:
    """Cases of ``test`` that were not run or errored, one shortfall per metric."""
    out: list[Shortfall] = []
    for metric in dict.fromkeys(c.metric for c in test.cases):
        records = [c for c in test.cases if c.metric == metric]
        ids = dict.fromkeys(c.id for c in records)
        ran = {c.id for c in records if was_run(c)}
        errored = dict.fromkeys(c.id for c in records if c.state is CaseState.ERROR)
        unrun = [i for i in ids if i not in ran]
        parts = []
        if unrun and not allow_unrecorded:
            parts.append(
                f"{len(unrun)} of {len(ids)} case(s) not run (unrecorded or refused by the "
                "call budget)"
            )
        if errored:
            parts.append(f"{len(errored)} of {len(ids)} case(s) errored")
        if parts:
            out.append(Shortfall(test.nodeid, metric, "; ".join(parts)))
    return out


def _too_few(cases: CaseComparison, rules: _Rules) -> bool:
    # Exact in integers: common / baseline_count < min_common.
    return cases.baseline_count > 0 and cases.common < rules.min_common * cases.baseline_count


def _common_reason(cases: CaseComparison, rules: _Rules) -> str:
    return (
        f"only {cases.common} of the baseline's {cases.baseline_count} case(s) in common "
        f"(needs {rules.min_common:.0%}): inconclusive"
    )


def _inconclusive(
    nodeid: str, old: MetricStats, cases: CaseComparison, rules: _Rules
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


def _check_fraction(name: str, value: object, *, upper: float | None) -> None:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)  # NaN would pass every comparison
        or value < 0
        or (upper is not None and not 0 < value < upper)
    ):
        expected = "a finite number >= 0" if upper is None else f"a number in (0, {upper:g})"
        raise ConfigError(f"{name} must be {expected}, got {value!r}")


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
    )


def _judge(
    nodeid: str,
    metric: MetricStats,
    baseline: float,
    cases: CaseComparison | None,
    rules: _Rules,
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
        if rules.mode is GateMode.PAIRED:
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
    elif dropped and rules.mode is GateMode.PAIRED and paired:
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
