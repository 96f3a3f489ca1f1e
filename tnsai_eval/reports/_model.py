"""The report's records: what a run measured, and how it is read from and written to JSON.

Public through ``tnsai_eval.reports``; kept apart so that each module stays small.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from tnsai_eval._util.stats import t_critical_95
from tnsai_eval.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SCHEMA_VERSION",
    "MetricStats",
    "Report",
    "ReportSource",
    "TestStatus",
    "TrackedTest",
    "read_report",
]

#: Bumped whenever a field changes meaning or disappears; adding fields does not bump it.
SCHEMA_VERSION = 1

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

    def __post_init__(self) -> None:
        if not self.samples:
            raise ConfigError(f"metric {self.name!r} has no samples")
        for value in self.samples:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ConfigError(f"metric {self.name!r}: sample {value!r} is not a number")
            if not math.isfinite(value):
                # NaN compares False with everything: the gate could never fail it.
                raise ConfigError(f"metric {self.name!r}: sample {value!r} is not finite")

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
        }

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> MetricStats:
        samples = data.get("samples")
        if not isinstance(samples, list):
            raise ConfigError(f"metric {name!r}: 'samples' must be a list, got {samples!r}")
        return cls(
            name,
            tuple(float(x) for x in samples),
            gate=bool(data.get("gate", True)),
            higher_is_better=bool(data.get("higher_is_better", True)),
        )


@dataclass(frozen=True, slots=True)
class TrackedTest:
    """What one test measured and cost in one run."""

    nodeid: str
    status: TestStatus
    metrics: Mapping[str, MetricStats] = field(default_factory=dict)
    samples: int = 1
    passed_samples: int = 0
    calls: int = 0
    tokens: int = 0
    cache_hits: int = 0
    iterations: int | None = None
    duration_s: float = 0.0
    message: str = ""

    @property
    def score(self) -> MetricStats | None:
        """The test's headline score: the metric named ``score``, else its first gated one."""
        if "score" in self.metrics:
            return self.metrics["score"]
        return next((m for m in self.metrics.values() if m.gate), None)

    @property
    def pass_rate(self) -> float:
        return self.passed_samples / self.samples if self.samples else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "status": self.status.value,
            "samples": self.samples,
            "passed_samples": self.passed_samples,
            "pass_rate": self.pass_rate,
            "calls": self.calls,
            "tokens": self.tokens,
            "cache_hits": self.cache_hits,
            "iterations": self.iterations,
            "duration_s": self.duration_s,
            "message": self.message,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrackedTest:
        try:
            nodeid = str(data["nodeid"])
            status = TestStatus(data["status"])
        except KeyError as exc:
            raise ConfigError(f"report test entry lacks {exc.args[0]!r}: {dict(data)!r}") from exc
        except ValueError as exc:
            raise ConfigError(
                f"report test {data.get('nodeid')!r}: status {data['status']!r} is not one of "
                f"{', '.join(s.value for s in TestStatus)}"
            ) from exc
        metrics_data = data.get("metrics", {})
        if not isinstance(metrics_data, Mapping):
            raise ConfigError(f"report test {nodeid!r}: 'metrics' must be an object")
        iterations = data.get("iterations")
        return cls(
            nodeid=nodeid,
            status=status,
            metrics={k: MetricStats.from_dict(k, v) for k, v in metrics_data.items()},
            samples=int(data.get("samples", 1)),
            passed_samples=int(data.get("passed_samples", 0)),
            calls=int(data.get("calls", 0)),
            tokens=int(data.get("tokens", 0)),
            cache_hits=int(data.get("cache_hits", 0)),
            iterations=None if iterations is None else int(iterations),
            duration_s=float(data.get("duration_s", 0.0)),
            message=str(data.get("message", "")),
        )


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
    def totals(self) -> dict[str, int]:
        return {
            "tests": len(self.tests),
            "failed": sum(t.status in (TestStatus.FAILED, TestStatus.ERROR) for t in self.tests),
            "calls": sum(t.calls for t in self.tests),
            "tokens": sum(t.tokens for t in self.tests),
            "cache_hits": sum(t.cache_hits for t in self.tests),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "created": self.created,
            "config": dict(self.config),
            "totals": self.totals,
            "tests": [t.to_dict() for t in self.tests],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the report as JSON (atomically: a crash never leaves half a file)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
        tmp.write_text(self.to_json(), encoding="utf-8")
        tmp.replace(target)
        return target

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        version = data.get("schema_version")
        if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
            raise ConfigError(
                f"report schema_version {version!r} is not supported "
                f"(expected an integer from 1 to {SCHEMA_VERSION})"
            )
        tests = data.get("tests", [])
        if not isinstance(tests, list):
            raise ConfigError(f"report 'tests' must be a list, got {type(tests).__name__}")
        return cls(
            tests=tuple(TrackedTest.from_dict(t) for t in tests),
            config=dict(data.get("config", {})),
            created=str(data.get("created", "")),
            schema_version=version,
        )

    def to_dataframe(self, *, long: bool = False) -> pd.DataFrame:
        """See ``tnsai_eval.reports.report_dataframe``."""
        from tnsai_eval.reports import report_dataframe

        return report_dataframe(self, long=long)


def read_report(source: ReportSource) -> Report:
    """A ``Report`` from a JSON file written by ``--tnsai-report`` (or a Report, as is)."""
    if isinstance(source, Report):
        return source
    path = Path(source)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"report file {str(path)!r} does not exist") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"report file {str(path)!r} is not valid JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"report file {str(path)!r} must hold a JSON object")
    try:
        return Report.from_dict(data)
    except ConfigError as exc:
        raise ConfigError(f"report file {str(path)!r}: {exc}") from exc
