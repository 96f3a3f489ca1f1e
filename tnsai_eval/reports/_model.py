"""The report's records: what a run measured, and how it is read from and written to JSON.

Public through ``tnsai_eval.reports``; kept apart so that each module stays small.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval._util.secrets import frozen_secrets, mask, mask_deep
from tnsai_eval._util.stats import mean_interval, percentile, t_critical_95
from tnsai_eval._util.text import no_surrogates, one_line
from tnsai_eval.errors import ConfigError
from tnsai_eval.records import CaseRecord, CaseState, IterationRecord, case_ids

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MAX_METRIC_VALUE",
    "MERGE",
    "SCHEMA_VERSION",
    "CaseRecord",
    "CaseState",
    "IterationRecord",
    "MergeRule",
    "MetricStats",
    "PromptRecord",
    "Report",
    "ReportSource",
    "TestStatus",
    "TrackedTest",
    "case_ids",
    "latency_figures",
    "masked",
    "prompt_hash",
    "score_interval",
    "shown_text",
    "strip_model",
    "was_run",
]

#: Bumped whenever a field changes meaning or disappears; adding fields does not bump it.
#: Version 2 added per-case records and prompts, and replaced ``pass_rate`` by
#: ``case_pass_rate`` and ``sample_pass_rate``. Version 3 added a target's case
#: its ``trajectory`` (a ``TrajectorySummary``) and ``metric_scores`` (each
#: metric's ``CaseMetric``), and made the gate read them: a baseline rewritten
#: by a version-2 reader would lose them silently, so such a reader refuses it
#: by its version instead. Version 1 and 2 files are still read.
SCHEMA_VERSION = 3
#: The largest magnitude a metric's sample may have: squares and sums of
#: samples this size still fit a float, so every interval can be computed.
MAX_METRIC_VALUE = 1e100

ReportSource: TypeAlias = "Report | str | os.PathLike[str]"


class TestStatus(StrEnum):
    """The outcome pytest gave a test."""

    __test__ = False  # not a pytest test class despite the name

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class MetricStats:
    """One tracked metric of one test: every sample it took, and their summary.

    With ``--tnsai-repeat N`` a metric has N samples; ``ci_low``/``ci_high`` are
    the 95% confidence interval of the mean (Student's t), which is what the
    baseline gate compares. With one sample the interval is the value itself.

    >>> MetricStats("score", (1.0, 0.0)).ci_high > 1.0
    True
    """

    name: str
    samples: tuple[float, ...]
    gate: bool = True
    higher_is_better: bool = True
    #: This metric's own allowed drop (``None``: the run's ``--tnsai-tolerance``).
    tolerance: float | None = None
    #: Whether ``tolerance`` is a share of the baseline (0.1: ten percent) rather than absolute.
    relative: bool = False

    def __post_init__(self) -> None:
        if self.tolerance is not None and (
            isinstance(self.tolerance, bool)
            or not isinstance(self.tolerance, int | float)
            or not math.isfinite(self.tolerance)
            or self.tolerance < 0
        ):
            raise ConfigError(
                f"metric {self.name!r}: tolerance must be a finite number >= 0, "
                f"got {self.tolerance!r}"
            )
        if not self.samples:
            raise ConfigError(f"metric {self.name!r} has no samples")
        for value in self.samples:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConfigError(f"metric {self.name!r}: sample {value!r} is not a number")
            if not math.isfinite(value):
                # NaN compares False with everything: the gate could never fail it.
                raise ConfigError(f"metric {self.name!r}: sample {value!r} is not finite")
            if abs(value) > MAX_METRIC_VALUE:
                # Means and intervals of such values overflow a float.
                raise ConfigError(
                    f"metric {self.name!r}: sample {value!r} is beyond +-{MAX_METRIC_VALUE:g}"
                )

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def mean(self) -> float:
        return math.fsum(self.samples) / len(self.samples)

    @property
    def stdev(self) -> float:
        if self.n < 2:
            return 0.0
        mean = self.mean
        return math.sqrt(math.fsum((x - mean) ** 2 for x in self.samples) / (self.n - 1))

    @property
    def half_width(self) -> float:
        if self.n < 2:
            return 0.0
        return t_critical_95(self.n - 1) * self.stdev / math.sqrt(self.n)

    @property
    def ci_low(self) -> float:
        return self.mean - self.half_width

    @property
    def ci_high(self) -> float:
        return self.mean + self.half_width

    def to_dict(self) -> dict[str, Any]:
        # The summary is derived, but written out so that a reviewer reading the
        # committed JSON does not have to compute it.
        return {
            "mean": self.mean,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "samples": list(self.samples),
            "gate": self.gate,
            "higher_is_better": self.higher_is_better,
            "tolerance": self.tolerance,
            "relative": self.relative,
        }

    def allowed_drop(self, baseline: float, default: float) -> float:
        """How far this metric may move the wrong way from ``baseline`` before it regresses."""
        tolerance = default if self.tolerance is None else self.tolerance
        return tolerance * abs(baseline) if self.relative else tolerance


def was_run(record: CaseRecord) -> bool:
    """Whether the case was asked: scored, or failed while running (state ``error``).

    Any other state (``unrecorded``: no reply in the store; a case the call
    budget refused) was never run: it has no score, not 0, and is left out of
    every number.
    """
    return record.state.asked


@dataclass(frozen=True, slots=True)
class PromptRecord:
    """A prompt a test evaluated: its text, the hash of everything sent with it, its file.

    ``hash`` covers the prompt, the template, the call parameters
    (``response_format`` included), system message and demos: everything sent
    except the case input, so a changed hash means the model saw something
    different. ``file`` is set when ``evaluate_prompt`` was given a path.
    """

    metric: str
    text: str
    hash: str
    file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": mask(self.metric),
            "text": masked(self.text),
            "hash": self.hash,
            "file": masked(self.file),
        }


def masked(text: str | None) -> str | None:
    """``text`` with known secrets masked (``None`` stays ``None``)."""
    return None if text is None else mask(text)


def shown_text(text: str, limit: int = 50) -> str:
    """``text`` masked, on one line, cut to ``limit`` characters with "..." when longer.

    Masked before it is cut, so a secret straddling the cut cannot leak its start.

    >>> shown_text("a  long input text", 10)
    'a long ...'
    """
    # Control characters (ESC) become spaces before whitespace is collapsed.
    flat = no_surrogates(" ".join(one_line(mask(text)).split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def prompt_hash(*parts: object) -> str:
    """A short stable hash of what is sent with every case (8 hex digits).

    >>> len(prompt_hash("Answer briefly.", {"temperature": 0}))
    8
    """
    blob = json.dumps(parts, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:8]


class MergeRule(StrEnum):
    """How a field of two records of one test combines (``TrackedTest.merge``)."""

    SUM = "sum"
    FIRST = "first"
    CONCATENATE = "concatenate"
    WORST = "worst"


#: The metadata key under which a ``TrackedTest`` field names its ``MergeRule``.
MERGE = "merge"
_SUM = {MERGE: MergeRule.SUM}
_FIRST = {MERGE: MergeRule.FIRST}
_CONCAT = {MERGE: MergeRule.CONCATENATE}
_WORST = {MERGE: MergeRule.WORST}
# Which status stands when two runs (or two phases) of one test differ: the
# worst, where a skip is worse than a pass (that run gave no evidence).
_STATUS_RANK = {"error": 3, "failed": 2, "skipped": 1, "passed": 0}


def _sum(a: Any, b: Any, first: Any) -> Any:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _first(a: Any, b: Any, first: Any) -> Any:
    if isinstance(a, tuple) and b:  # prompts: the first of each metric
        kept: dict[str, Any] = {}
        for prompt in (*a, *b):
            kept.setdefault(prompt.metric, prompt)
        return tuple(kept.values())
    return a or b


def _worst(a: Any, b: Any, first: Any) -> Any:
    if isinstance(a, TestStatus):
        return max(a, b, key=lambda s: _STATUS_RANK[s.value])
    return max((v for v in (a, b) if v is not None), default=None)


def _concatenate(a: Any, b: Any, first: Any) -> Any:
    if isinstance(a, Mapping):  # metrics: one metric's samples follow one another
        merged = dict(a)
        for name, stats in b.items():
            before = merged.get(name)
            merged[name] = stats if before is None else replace(
                before, samples=before.samples + stats.samples
            )  # fmt: skip
        return merged
    # The later run's cases are later samples, numbered after the first run's.
    later = (replace(c, sample=c.sample + first.samples) if isinstance(c, CaseRecord) else c
             for c in b)  # fmt: skip
    return (*a, *later)


_MERGE = {
    MergeRule.SUM: _sum,
    MergeRule.FIRST: _first,
    MergeRule.CONCATENATE: _concatenate,
    MergeRule.WORST: _worst,
}


@dataclass(frozen=True, slots=True)
class TrackedTest:
    """What one test measured and cost in one run.

    Each field declares how two records of one test combine (``merge``: the
    xdist workers of ``--dist each``, each a run of the test): counts add up
    (``sum``), lists follow one another (``concatenate``: a later run's
    metric samples and cases are later samples), the worst status and
    latency stand (``worst``: error, failed, skipped, passed), and the rest
    is the first record's (``first``; prompts: the first of each metric).
    The plugin builds each test's own record by the same rules, from a part
    per thing the test did (``pytest._session``).
    """

    nodeid: str = field(metadata=_FIRST)
    status: TestStatus = field(metadata=_WORST)
    metrics: Mapping[str, MetricStats] = field(default_factory=dict, metadata=_CONCAT)
    samples: int = field(default=1, metadata=_SUM)
    passed_samples: int = field(default=0, metadata=_SUM)
    calls: int = field(default=0, metadata=_SUM)
    tokens: int = field(default=0, metadata=_SUM)
    cache_hits: int = field(default=0, metadata=_SUM)
    iterations: int | None = field(default=None, metadata=_SUM)
    duration_s: float = field(default=0.0, metadata=_SUM)
    message: str = field(default="", metadata=_FIRST)
    cases: tuple[CaseRecord, ...] = field(default=(), metadata=_CONCAT)
    prompts: tuple[PromptRecord, ...] = field(default=(), metadata=_FIRST)
    refinements: tuple[IterationRecord, ...] = field(default=(), metadata=_CONCAT)
    #: The named model this record ran against (``--tnsai-model``); None without one.
    model: str | None = field(default=None, metadata=_FIRST)
    #: Input (prompt) and output (completion) tokens of its calls, replayed ones included.
    tokens_in: int = field(default=0, metadata=_SUM)
    tokens_out: int = field(default=0, metadata=_SUM)
    #: Estimated cost of those tokens at the model's declared prices (None: no price).
    cost: float | None = field(default=None, metadata=_SUM)
    #: Calls that reached a model (replayed and stored replies are not counted).
    live_calls: int = field(default=0, metadata=_SUM)
    #: Median and 95th percentile of those live calls' wall time, in seconds (None: none).
    latency_p50_s: float | None = field(default=None, metadata=_WORST)
    latency_p95_s: float | None = field(default=None, metadata=_WORST)

    def merge(self, other: TrackedTest) -> TrackedTest:
        """This record and ``other`` (a later run of the same test) as one, field by field."""
        values = {
            f.name: _MERGE[f.metadata[MERGE]](getattr(self, f.name), getattr(other, f.name), self)
            for f in fields(self)
        }
        return TrackedTest(**values)

    @property
    def score(self) -> MetricStats | None:
        """The test's headline score: the metric named ``score``, else its first gated one."""
        if "score" in self.metrics:
            return self.metrics["score"]
        return next((m for m in self.metrics.values() if m.gate), None)

    @property
    def sample_pass_rate(self) -> float:
        """Share of repeat samples (``--tnsai-repeat``) in which the test passed."""
        return self.passed_samples / self.samples if self.samples else 0.0

    @property
    def case_pass_rate(self) -> float | None:
        """Share of asked cases that passed (unrecorded and not run ones left out); None without
        cases."""
        judged = [c for c in self.cases if c.state.asked]
        if not judged:
            return None
        return sum(c.passed is True for c in judged) / len(judged)

    @property
    def unrecorded(self) -> tuple[CaseRecord, ...]:
        """Cases that had no recorded reply (replay miss)."""
        return tuple(c for c in self.cases if c.state is CaseState.UNRECORDED)

    @property
    def not_run(self) -> tuple[CaseRecord, ...]:
        """Cases the call budget (--llm-max-calls) left unsent."""
        return tuple(c for c in self.cases if c.state is CaseState.NOT_RUN)

    def to_dict(self) -> dict[str, Any]:
        return {
            # A test id, a metric name or a case id can hold a secret too (a
            # parametrized test over keys): every string written is masked.
            "nodeid": mask(self.nodeid),
            "status": self.status.value,
            "samples": self.samples,
            "passed_samples": self.passed_samples,
            "sample_pass_rate": self.sample_pass_rate,
            "case_pass_rate": self.case_pass_rate,
            "calls": self.calls,
            "tokens": self.tokens,
            "cache_hits": self.cache_hits,
            "iterations": self.iterations,
            "duration_s": self.duration_s,
            "message": mask(self.message),
            "metrics": {mask(name): m.to_dict() for name, m in self.metrics.items()},
            "prompts": [p.to_dict() for p in self.prompts],
            "cases": [c.to_dict() for c in self.cases],
            "refinements": [r.to_dict() for r in self.refinements],
            # Only for a record of a named model: other reports (and their
            # committed baselines) keep the fields they always had.
            **(
                {
                    "model": self.model,
                    "tokens_in": self.tokens_in,
                    "tokens_out": self.tokens_out,
                    "cost": self.cost,
                }
                if self.model is not None or self.cost is not None
                else {}
            ),
            # Only for a run with live calls: a replayed run has no latency to record.
            **(
                {
                    "live_calls": self.live_calls,
                    "latency_p50_s": self.latency_p50_s,
                    "latency_p95_s": self.latency_p95_s,
                }
                if self.live_calls
                else {}
            ),
        }


def latency_figures(latencies: Iterable[float]) -> tuple[int, float | None, float | None]:
    """``(live calls, p50, p95)`` of the wall times of live calls (no calls: ``(0, None, None)``).

    >>> latency_figures([0.2, 0.1, 0.3, 0.4, 1.0])
    (5, 0.3, 0.88)
    >>> latency_figures([])
    (0, None, None)
    """
    values = [float(v) for v in latencies]
    if not values:
        return 0, None, None
    return len(values), round(percentile(values, 50), 6), round(percentile(values, 95), 6)


#: The columns of ``Report.to_dataframe(long=True)``: one row per (test, metric).
_LONG_COLUMNS = ("nodeid", "metric", "mean", "ci_low", "ci_high", "n", "gate", "higher_is_better")


@dataclass(frozen=True, slots=True)
class Report:
    """One run: its configuration and every tracked test.

    ``config`` records what produced the numbers (model, record mode, repeat),
    so that two reports can be judged comparable.
    """

    tests: tuple[TrackedTest, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    schema_version: int = SCHEMA_VERSION

    def get(self, nodeid: str) -> TrackedTest | None:
        return next((t for t in self.tests if t.nodeid == nodeid), None)

    @property
    def models(self) -> tuple[str, ...]:
        """The named models this run's records carry, in the order the run listed them."""
        listed = [str(m) for m in self.config.get("models") or () if isinstance(m, str)]
        return tuple(dict.fromkeys([*listed, *(t.model for t in self.tests if t.model)]))

    @property
    def cost(self) -> float | None:
        """The estimated cost of every priced record (None when no record has a price)."""
        costs = [t.cost for t in self.tests if t.cost is not None]
        return math.fsum(costs) if costs else None

    def for_model(self, model: str) -> Report:
        """The records of ``model`` alone, with the model taken out of their node ids.

        With two or more models the plugin puts the model in each test id
        (``test_a[small]``); here it comes out again (``test_a``), so that two
        models' views of one run compare like two runs of one model:
        ``compare(report.for_model("new"), report.for_model("old"))``.
        An unknown name is a ``ConfigError`` naming the models present.
        """
        if model not in self.models:
            raise ConfigError(
                f"model {model!r} is not in this report; its models are "
                f"{', '.join(self.models) or '(none)'}"
            )
        tests = tuple(
            replace(t, nodeid=strip_model(t.nodeid, model)) for t in self.tests if t.model == model
        )
        config = {**self.config, "model": model, "models": [model]}
        return Report(tests, config, self.created, self.schema_version)

    @property
    def timed(self) -> bool:
        """Whether any record made live calls (so has latency figures to show)."""
        return any(t.live_calls for t in self.tests)

    @property
    def totals(self) -> dict[str, int]:
        return {
            "tests": len(self.tests),
            "failed": sum(t.status in (TestStatus.FAILED, TestStatus.ERROR) for t in self.tests),
            "calls": sum(t.calls for t in self.tests),
            "tokens": sum(t.tokens for t in self.tests),
            "cache_hits": sum(t.cache_hits for t in self.tests),
            "tokens_in": sum(t.tokens_in for t in self.tests),
            "tokens_out": sum(t.tokens_out for t in self.tests),
            "live_calls": sum(t.live_calls for t in self.tests),
        }

    def to_dict(self) -> dict[str, Any]:
        with frozen_secrets():  # every string is masked: read the secrets once
            return {
                "schema_version": self.schema_version,
                "created": self.created,
                "config": mask_deep(dict(self.config)),
                "totals": self.totals,
                "tests": [t.to_dict() for t in self.tests],
            }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the report as JSON (atomically: a crash never leaves half a file)."""
        return atomic_write_text(path, self.to_json())

    def to_dataframe(self, *, long: bool = False) -> pd.DataFrame:
        """A report as a DataFrame.

        Wide (default): one row per test with ``nodeid, status, score, score_low,
        score_high, case_pass_rate, sample_pass_rate, cases, unrecorded, samples,
        iterations, calls, tokens, cache_hits, duration_s`` (then ``model, tokens_in,
        tokens_out, cost`` for a run against named models; then ``live_calls,
        latency_p50_s, latency_p95_s`` for a run with live calls) and one ``metric.<name>``
        column (the mean) per metric. ``score_low``/``score_high`` are the 95%
        interval of ``score_interval``.
        Long: one row per (test, metric) with ``mean, ci_low, ci_high, n, gate``.
        ``df.attrs`` carries ``schema_version`` and ``config``.
        """
        import pandas as pd

        by_model = bool(self.models) or self.cost is not None
        timed = self.timed
        rows: list[dict[str, Any]] = []
        for test in self.tests:
            if long:
                # After the test and the metric's name, each column is a MetricStats field.
                rows.extend(
                    {"nodeid": test.nodeid, "metric": m.name}
                    | {name: getattr(m, name) for name in _LONG_COLUMNS[2:]}
                    for m in test.metrics.values()
                )
                continue
            interval = score_interval(test)
            row: dict[str, Any] = {
                "nodeid": test.nodeid,
                "status": test.status.value,
                "score": None if interval is None else interval[0],
                "score_low": None if interval is None else interval[1],
                "score_high": None if interval is None else interval[2],
                "case_pass_rate": test.case_pass_rate,
                "sample_pass_rate": test.sample_pass_rate,
                "cases": len({(c.metric, c.id) for c in test.cases}),
                "unrecorded": len({(c.metric, c.id) for c in test.unrecorded}),
                "samples": test.samples,
                "iterations": test.iterations,
                "calls": test.calls,
                "tokens": test.tokens,
                "cache_hits": test.cache_hits,
                "duration_s": test.duration_s,
            }
            if by_model:
                # Only for runs against named models: other frames keep their columns.
                row.update(
                    model=test.model,
                    tokens_in=test.tokens_in,
                    tokens_out=test.tokens_out,
                    cost=test.cost,
                )
            if timed:
                # Only for runs with live calls: a replayed run has no latency to show.
                row.update(
                    live_calls=test.live_calls,
                    latency_p50_s=test.latency_p50_s,
                    latency_p95_s=test.latency_p95_s,
                )
            row.update({f"metric.{m.name}": m.mean for m in test.metrics.values()})
            rows.append(row)
        columns = list(_LONG_COLUMNS) if long else None
        frame = pd.DataFrame(rows, columns=columns) if columns or rows else pd.DataFrame()
        frame.attrs["schema_version"] = self.schema_version
        frame.attrs["config"] = dict(self.config)
        return frame


def score_interval(test: TrackedTest) -> tuple[float, float, float] | None:
    """``(mean, low, high)`` of a test's headline score, with a 95% interval.

    With ``--tnsai-repeat`` the interval is over the samples; otherwise, for a
    score that has case records, it is over the scored cases (Student's t),
    so every run shows how far its mean can be trusted.
    """
    score = test.score
    if score is None:
        return None
    if score.n > 1:
        return score.mean, score.ci_low, score.ci_high
    scores = [
        0.0 if c.score is None else c.score
        for c in test.cases
        if c.metric == score.name and c.state.asked
    ]
    if len(scores) > 1:
        _, low, high = mean_interval(scores)
        return score.mean, max(low, 0.0), min(high, 1.0)
    return score.mean, score.mean, score.mean


def strip_model(nodeid: str, model: str) -> str:
    """``nodeid`` without the ``model`` part of its parameter id (as the plugin added it).

    >>> strip_model("t.py::test_a[small]", "small")
    't.py::test_a'
    >>> strip_model("t.py::test_a[x1-small]", "small")
    't.py::test_a[x1]'
    >>> strip_model("t.py::test_a[small-x1]", "small")
    't.py::test_a[x1]'
    >>> strip_model("t.py::test_a", "small")
    't.py::test_a'
    """
    if not nodeid.endswith("]") or "[" not in nodeid:
        return nodeid
    head, _, inner = nodeid[:-1].partition("[")
    parts = inner.split("-")
    if model in parts:
        parts.remove(model)
    elif inner.endswith("-" + model) or inner == model:
        parts = inner[: -len(model)].rstrip("-").split("-")
    elif inner.startswith(model + "-"):
        parts = inner[len(model) + 1 :].split("-")
    left = "-".join(p for p in parts if p)
    return f"{head}[{left}]" if left else head
