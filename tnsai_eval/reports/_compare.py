"""Baseline comparison and text formatting of run reports (public via ``tnsai_eval.reports``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from tnsai_eval.errors import ConfigError
from tnsai_eval.reports._model import (
    SCHEMA_VERSION,
    MetricStats,
    Report,
    ReportSource,
    TestStatus,
    TrackedTest,
    read_report,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARISON_COLUMNS",
    "SCHEMA_VERSION",
    "ChangeKind",
    "Comparison",
    "MetricChange",
    "MetricStats",
    "Report",
    "TestStatus",
    "TrackedTest",
    "compare",
    "format_summary",
    "format_table",
    "load_report",
    "read_report",
    "report_dataframe",
]

# The epsilon keeps "dropped by exactly the tolerance" on the passing side
# despite binary floating point (0.9 - 0.05 is 0.8500000000000001).
_EPSILON = 1e-9


def load_report(source: ReportSource, *, long: bool = False) -> pd.DataFrame:
    """Read a report into a DataFrame (see ``report_dataframe`` for the columns)."""
    return report_dataframe(read_report(source), long=long)


def report_dataframe(source: ReportSource, *, long: bool = False) -> pd.DataFrame:
    """A report as a DataFrame.

    Wide (default): one row per test with ``nodeid, status, score, score_low,
    score_high, pass_rate, samples, iterations, calls, tokens, cache_hits,
    duration_s`` and one ``metric.<name>`` column (the mean) per metric.
    Long: one row per (test, metric) with ``mean, ci_low, ci_high, n, gate``.
    ``df.attrs`` carries ``schema_version`` and ``config``.
    """
    import pandas as pd

    report = read_report(source)
    rows: list[dict[str, Any]] = []
    for test in report.tests:
        if long:
            rows.extend(
                {
                    "nodeid": test.nodeid,
                    "metric": m.name,
                    "mean": m.mean,
                    "ci_low": m.ci_low,
                    "ci_high": m.ci_high,
                    "n": m.n,
                    "gate": m.gate,
                    "higher_is_better": m.higher_is_better,
                }
                for m in test.metrics.values()
            )
            continue
        score = test.score
        row: dict[str, Any] = {
            "nodeid": test.nodeid,
            "status": test.status.value,
            "score": None if score is None else score.mean,
            "score_low": None if score is None else score.ci_low,
            "score_high": None if score is None else score.ci_high,
            "pass_rate": test.pass_rate,
            "samples": test.samples,
            "iterations": test.iterations,
            "calls": test.calls,
            "tokens": test.tokens,
            "cache_hits": test.cache_hits,
            "duration_s": test.duration_s,
        }
        row.update({f"metric.{m.name}": m.mean for m in test.metrics.values()})
        rows.append(row)
    columns = (
        ["nodeid", "metric", "mean", "ci_low", "ci_high", "n", "gate", "higher_is_better"]
        if long
        else None
    )
    frame = pd.DataFrame(rows, columns=columns) if columns or rows else pd.DataFrame()
    frame.attrs["schema_version"] = report.schema_version
    frame.attrs["config"] = dict(report.config)
    return frame


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
    """How a gated metric moved against the baseline, beyond the tolerance or not."""

    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"


@dataclass(frozen=True, slots=True)
class MetricChange:
    """A gated metric present in both runs, and how it moved."""

    nodeid: str
    metric: str
    baseline: float
    current: float
    current_low: float
    current_high: float
    kind: ChangeKind

    @property
    def delta(self) -> float:
        """current - baseline (negative: the mean dropped)."""
        return self.current - self.baseline


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of ``compare``: what regressed, improved, appeared and vanished.

    ``new`` and ``vanished`` name tests (or ``nodeid :: metric`` for a metric
    added to or dropped from a test that exists in both runs); they are listed,
    never failed.
    """

    regressions: tuple[MetricChange, ...]
    improved: tuple[MetricChange, ...]
    unchanged: tuple[MetricChange, ...]
    new: tuple[str, ...]
    vanished: tuple[str, ...]
    tolerance: float

    @property
    def passed(self) -> bool:
        """True when nothing regressed (new and vanished tests do not count)."""
        return not self.regressions

    def to_dataframe(self) -> pd.DataFrame:
        """One row per metric in both runs (``COMPARISON_COLUMNS``), regressions first."""
        import pandas as pd

        changes = [*self.regressions, *self.improved, *self.unchanged]
        rows = [
            {**{name: getattr(c, name) for name in COMPARISON_COLUMNS}, "kind": c.kind.value}
            for c in changes
        ]
        return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))

    def format(self) -> str:
        """The human-readable summary printed by the plugin and ``tnsai-eval report``."""
        lines: list[str] = []
        if self.regressions:
            lines.append(
                f"{len(self.regressions)} regression(s) beyond tolerance {self.tolerance:g}:"
            )
            lines.append(_changes_table(self.regressions))
        else:
            lines.append(f"no regressions beyond tolerance {self.tolerance:g}")
        if self.improved:
            lines.append(f"{len(self.improved)} improvement(s):")
            lines.append(_changes_table(self.improved))
        for title, names in (("new (not in baseline)", self.new), ("vanished", self.vanished)):
            if names:
                lines.append(f"{title}: {len(names)}")
                lines.extend(f"  {name}" for name in names)
        return "\n".join(lines)


def _changes_table(changes: Sequence[MetricChange]) -> str:
    rows = [
        (
            c.nodeid,
            c.metric,
            f"{c.baseline:.3f}",
            f"{c.current:.3f}"
            + (
                ""
                if c.current_low == c.current_high
                else f" [{c.current_low:.3f}, {c.current_high:.3f}]"
            ),
            f"{c.delta:+.3f}",
        )
        for c in changes
    ]
    return format_table(("test", "metric", "baseline", "current", "delta"), rows, indent=2)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, indent: int = 0) -> str:
    """A plain fixed-width text table (left-aligned columns, a dashed rule under the header)."""
    body = [tuple(str(cell) for cell in row) for row in rows]
    widths = [len(h) for h in headers]
    for row in body:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    pad = " " * indent

    def line(cells: Sequence[str]) -> str:
        return pad + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join(
        [line(headers), pad + "  ".join("-" * w for w in widths), *(line(r) for r in body)]
    )


def format_summary(report: Report) -> str:
    """One row per tracked test: score, status, iterations, calls, tokens, cache hits."""
    rows = []
    for test in report.tests:
        score = test.score
        if score is None:
            shown = "-"
        elif score.n > 1:
            shown = f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]"
        else:
            shown = f"{score.mean:.3f}"
        status = test.status.value
        if test.samples > 1:
            status += f" ({test.passed_samples}/{test.samples})"
        rows.append(
            (
                test.nodeid,
                shown,
                status,
                "-" if test.iterations is None else str(test.iterations),
                str(test.calls),
                str(test.tokens),
                str(test.cache_hits),
            )
        )
    totals = report.totals
    rows.append(
        (
            f"TOTAL ({totals['tests']} tests, {totals['failed']} failed)",
            "",
            "",
            "",
            str(totals["calls"]),
            str(totals["tokens"]),
            str(totals["cache_hits"]),
        )
    )
    headers = ("test", "score", "status", "iterations", "calls", "tokens", "cache hits")
    return format_table(headers, rows)


def compare(current: ReportSource, baseline: ReportSource, tolerance: float = 0.05) -> Comparison:
    """Compare every gated metric of ``current`` with ``baseline``.

    ``tolerance`` is absolute (scores are in [0, 1]: 0.05 is five points). A
    metric regresses when even the favourable end of its 95% interval in this
    run is worse than the baseline's mean by more than the tolerance; with one
    sample the interval is the value, so this is a plain difference. It
    improves when the unfavourable end is better by more than the tolerance.
    """
    if (
        not isinstance(tolerance, int | float)
        or isinstance(tolerance, bool)
        or not math.isfinite(tolerance)  # NaN would pass every comparison
        or tolerance < 0
    ):
        raise ConfigError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    now, before = read_report(current), read_report(baseline)
    regressions: list[MetricChange] = []
    improved: list[MetricChange] = []
    unchanged: list[MetricChange] = []
    new: list[str] = []
    vanished: list[str] = []
    before_by_id = {t.nodeid: t for t in before.tests}
    now_ids = {t.nodeid for t in now.tests}
    for test in now.tests:
        old = before_by_id.get(test.nodeid)
        if old is None:
            new.append(test.nodeid)
            continue
        for name, metric in test.metrics.items():
            if not metric.gate:
                continue
            old_metric = old.metrics.get(name)
            if old_metric is None:
                new.append(f"{test.nodeid} :: {name}")
                continue
            change = _judge(test.nodeid, metric, old_metric.mean, tolerance)
            {
                ChangeKind.REGRESSED: regressions,
                ChangeKind.IMPROVED: improved,
                ChangeKind.UNCHANGED: unchanged,
            }[change.kind].append(change)
        vanished.extend(
            f"{test.nodeid} :: {name}"
            for name, m in old.metrics.items()
            if m.gate and name not in test.metrics
        )
    vanished.extend(t.nodeid for t in before.tests if t.nodeid not in now_ids)
    return Comparison(
        regressions=tuple(regressions),
        improved=tuple(improved),
        unchanged=tuple(unchanged),
        new=tuple(new),
        vanished=tuple(vanished),
        tolerance=float(tolerance),
    )


def _judge(nodeid: str, metric: MetricStats, baseline: float, tolerance: float) -> MetricChange:
    # Orient everything so that "up is good", then judge on the interval's ends.
    sign = 1.0 if metric.higher_is_better else -1.0
    best = max(sign * metric.ci_low, sign * metric.ci_high)
    worst = min(sign * metric.ci_low, sign * metric.ci_high)
    reference = sign * baseline
    # The epsilon keeps "dropped by exactly the tolerance" on the passing side
    # despite binary floating point (0.9 - 0.05 is 0.8500000000000001).
    if best < reference - tolerance - _EPSILON:
        kind = ChangeKind.REGRESSED
    elif worst > reference + tolerance + _EPSILON:
        kind = ChangeKind.IMPROVED
    else:
        kind = ChangeKind.UNCHANGED
    return MetricChange(
        nodeid=nodeid,
        metric=metric.name,
        baseline=baseline,
        current=metric.mean,
        current_low=metric.ci_low,
        current_high=metric.ci_high,
        kind=kind,
    )
