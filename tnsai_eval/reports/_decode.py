"""Reading a report back: a strict, typed decoder that names the bad field.

A report is committed as a baseline and read by the gate on every CI run, so
a hand-edited or truncated file must fail with a message a person can act on,
never with a raw ``TypeError`` from deep inside the comparison. Every value is
checked for its JSON type before it is used: ``"gate": "false"`` is a string,
not a boolean, and ``"schema_version": true`` is not a version (Python would
happily read both). Errors are ``ReportError`` carrying the file and the JSON
path of the field (``$.tests[2].metrics.score.gate``).

Unknown keys are ignored: a newer writer may add fields without bumping the
schema version (see ``SCHEMA_VERSION``). Versions 1, 2 and 3 are read; version 1
has no cases, prompts or per-metric tolerances, version 2 no trajectory summaries
or per-metric verdicts of a case.

>>> decode_report({"schema_version": 2, "tests": [{"nodeid": "t::a", "status": "passed",
...     "metrics": {"score": {"samples": [0.5], "gate": "false"}}}]})
Traceback (most recent call last):
...
tnsai_eval.errors.ReportError: $.tests[0].metrics.score.gate: expected true or false, got 'false'
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from tnsai_eval._util.plain import MAX_JSON_COUNT
from tnsai_eval.errors import ConfigError, ReportError
from tnsai_eval.records import (
    CaseMetric,
    CheckKind,
    CheckOutcome,
    IterationRecord,
    StepKind,
    StepSummary,
    StopReason,
    TrajectorySummary,
)
from tnsai_eval.reports._model import (
    SCHEMA_VERSION,
    CaseRecord,
    CaseState,
    MetricStats,
    PromptRecord,
    Report,
    ReportSource,
    TestStatus,
    TrackedTest,
)

__all__ = ["decode_report", "decode_test", "read_report", "read_report_file"]

_E = TypeVar("_E", bound=Enum)
_T = TypeVar("_T")


def read_report_file(path: Path) -> Report:
    """Read and decode the report at ``path``; every failure is a ``ReportError``."""
    shown = str(path)

    def fail(reason: str, field: str = "") -> NoReturn:
        raise ReportError(f"report file {shown!r}: {reason}", file=shown, field=field)

    if path.is_dir():
        fail("is a directory, not a report file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        fail("does not exist")
    except OSError as exc:
        fail(f"cannot be read: {exc.strerror or exc}")
    try:
        # utf-8-sig: a byte-order mark (some Windows editors add one) is accepted, as in datasets.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(f"is not UTF-8 text (byte {exc.start})")
    if not text.strip():
        fail("is empty")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        fail("is nested too deeply to be a report")
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, or an int of thousands of digits
        fail(f"is not valid JSON: {exc}")
    try:
        return decode_report(data)
    except ReportError as exc:
        raise ReportError(f"report file {shown!r}: {exc}", file=shown, field=exc.field) from None


def _reject_constant(name: str) -> float:
    # NaN compares False with everything: a NaN score could never fail the gate.
    raise ValueError(f"{name} is not a finite number")


def decode_report(data: object) -> Report:
    """A ``Report`` from parsed JSON, checked field by field."""
    root = _object(data, "$")
    version = root.get("schema_version")
    if (
        isinstance(version, bool)
        or not isinstance(version, int)
        or not 1 <= version <= SCHEMA_VERSION
    ):
        _fail(
            "$.schema_version",
            f"expected an integer from 1 to {SCHEMA_VERSION}, got {version!r}",
        )
    tests = _list(root.get("tests", []), "$.tests")
    decoded = tuple(decode_test(t, version, f"$.tests[{i}]") for i, t in enumerate(tests))
    seen: set[str] = set()
    for i, test in enumerate(decoded):
        if test.nodeid in seen:
            _fail(f"$.tests[{i}].nodeid", f"test {test.nodeid!r} appears twice")
        seen.add(test.nodeid)
    config = _object(root.get("config", {}), "$.config")
    created = _string(root.get("created", ""), "$.created")
    return Report(tests=decoded, config=dict(config), created=created, schema_version=version)


def decode_test(data: object, version: int, path: str) -> TrackedTest:
    """One entry of ``tests``."""
    entry = _object(data, path)
    nodeid = _string(_required(entry, "nodeid", path), f"{path}.nodeid", nonblank=True)
    status = _member(_required(entry, "status", path), f"{path}.status", TestStatus)
    metrics_data = _object(entry.get("metrics", {}), f"{path}.metrics")
    metrics = {
        name: _metric(name, value, f"{path}.metrics.{name}") for name, value in metrics_data.items()
    }
    samples = _integer(entry.get("samples", 1), f"{path}.samples", minimum=1)
    passed_samples = _integer(entry.get("passed_samples", 0), f"{path}.passed_samples")
    if passed_samples > samples:
        _fail(f"{path}.passed_samples", f"{passed_samples} is more than samples ({samples})")
    cases: tuple[CaseRecord, ...] = ()
    prompts: tuple[PromptRecord, ...] = ()
    refinements: tuple[IterationRecord, ...] = ()
    if version >= 2:
        cases = _each(_case, entry, "cases", path)
        keys: set[tuple[str, int, str]] = set()
        for i, case in enumerate(cases):
            key = (case.metric, case.sample, case.id)
            if key in keys:
                _fail(f"{path}.cases[{i}].id", f"case {case.id!r} appears twice")
            keys.add(key)
        prompts = _each(_prompt, entry, "prompts", path)
        refinements = _each(_iteration, entry, "refinements", path)
    return TrackedTest(
        nodeid=nodeid,
        status=status,
        metrics=metrics,
        samples=samples,
        passed_samples=passed_samples,
        calls=_integer(entry.get("calls", 0), f"{path}.calls"),
        tokens=_integer(entry.get("tokens", 0), f"{path}.tokens"),
        cache_hits=_integer(entry.get("cache_hits", 0), f"{path}.cache_hits"),
        iterations=_optional(_integer, entry, "iterations", path),
        duration_s=_number(entry.get("duration_s", 0.0), f"{path}.duration_s", minimum=0.0),
        message=_string(entry.get("message", ""), f"{path}.message"),
        cases=cases,
        prompts=prompts,
        refinements=refinements,
        model=_optional(_string, entry, "model", path, nonblank=True),
        tokens_in=_integer(entry.get("tokens_in", 0), f"{path}.tokens_in"),
        tokens_out=_integer(entry.get("tokens_out", 0), f"{path}.tokens_out"),
        cost=_optional(_number, entry, "cost", path, minimum=0.0),
        live_calls=_integer(entry.get("live_calls", 0), f"{path}.live_calls"),
        latency_p50_s=_optional(_number, entry, "latency_p50_s", path, minimum=0.0),
        latency_p95_s=_optional(_number, entry, "latency_p95_s", path, minimum=0.0),
    )


def _metric(name: str, data: object, path: str) -> MetricStats:
    entry = _object(data, path)
    samples = _list(_required(entry, "samples", path), f"{path}.samples")
    if not samples:
        _fail(f"{path}.samples", "expected at least one sample, got []")
    values = tuple(_number(v, f"{path}.samples[{i}]") for i, v in enumerate(samples))
    try:
        return MetricStats(
            name,
            values,
            gate=_boolean(entry.get("gate", True), f"{path}.gate"),
            higher_is_better=_boolean(
                entry.get("higher_is_better", True), f"{path}.higher_is_better"
            ),
            tolerance=_optional(_number, entry, "tolerance", path, minimum=0.0),
            relative=_boolean(entry.get("relative", False), f"{path}.relative"),
        )
    except ReportError:
        raise
    except ConfigError as exc:  # the record's own checks, should a new one be added
        _fail(path, str(exc))


def _case(data: object, path: str) -> CaseRecord:
    entry = _object(data, path)
    state = _member(entry.get("state", "scored"), f"{path}.state", CaseState)
    score = _optional(_number, entry, "score", path, minimum=0.0, maximum=1.0)
    passed = _optional(_boolean, entry, "passed", path)
    if state is CaseState.SCORED and (score is None or passed is None):
        _fail(path, "a scored case needs a score and passed")
    verdicts = _object(entry.get("metric_scores", {}), f"{path}.metric_scores")
    return CaseRecord(
        id=_string(_required(entry, "id", path), f"{path}.id", nonblank=True),
        input=_string(_required(entry, "input", path), f"{path}.input"),
        expected=_string(_required(entry, "expected", path), f"{path}.expected"),
        output=_optional(_string, entry, "output", path),
        score=score,
        passed=passed,
        state=state,
        cached=_boolean(entry.get("cached", False), f"{path}.cached"),
        tokens=_integer(entry.get("tokens", 0), f"{path}.tokens"),
        latency_s=_number(entry.get("latency_s", 0.0), f"{path}.latency_s", minimum=0.0),
        error=_optional(_string, entry, "error", path),
        metric=_string(entry.get("metric", "score"), f"{path}.metric", nonblank=True),
        sample=_integer(entry.get("sample", 0), f"{path}.sample"),
        reason=_optional(_string, entry, "reason", path),
        error_type=_optional(_string, entry, "error_type", path),
        trajectory=_optional(_trajectory, entry, "trajectory", path),
        metric_scores=tuple(
            _case_metric(name, value, f"{path}.metric_scores.{name}")
            for name, value in verdicts.items()
        ),
    )


def _trajectory(data: object, path: str) -> TrajectorySummary:
    entry = _object(data, path)
    return TrajectorySummary(
        steps=_each(_step, entry, "steps", path),
        stop_reason=_member(
            entry.get("stop_reason", "answered"), f"{path}.stop_reason", StopReason
        ),
        calls=_integer(entry.get("calls", 0), f"{path}.calls"),
        tokens=_integer(entry.get("tokens", 0), f"{path}.tokens"),
        dropped=_integer(entry.get("dropped", 0), f"{path}.dropped"),
    )


def _step(data: object, path: str) -> StepSummary:
    entry = _object(data, path)
    kind = _member(_required(entry, "kind", path), f"{path}.kind", StepKind)
    return StepSummary(
        kind,
        name=_string(entry.get("name", ""), f"{path}.name", nonblank=kind is StepKind.TOOL_CALL),
        arguments=_string(entry.get("arguments", ""), f"{path}.arguments"),
        result=_optional(_string, entry, "result", path),
        error=_optional(_string, entry, "error", path),
        text=_string(entry.get("text", ""), f"{path}.text"),
        tokens=_integer(entry.get("tokens", 0), f"{path}.tokens"),
        latency_s=_number(entry.get("latency_s", 0.0), f"{path}.latency_s", minimum=0.0),
    )


def _case_metric(name: str, data: object, path: str) -> CaseMetric:
    entry = _object(data, path)
    if not name.strip():
        _fail(path, "expected a non-blank metric name")
    return CaseMetric(
        name,
        score=_optional(_number, entry, "score", path, minimum=0.0, maximum=1.0),
        passed=_optional(_boolean, entry, "passed", path),
        reason=_optional(_string, entry, "reason", path),
        violations=_strings(entry.get("violations", []), f"{path}.violations"),
    )


def _prompt(data: object, path: str) -> PromptRecord:
    entry = _object(data, path)
    return PromptRecord(
        metric=_string(entry.get("metric", "score"), f"{path}.metric", nonblank=True),
        text=_string(_required(entry, "text", path), f"{path}.text"),
        hash=_string(_required(entry, "hash", path), f"{path}.hash", nonblank=True),
        file=_optional(_string, entry, "file", path),
    )


def _iteration(data: object, path: str) -> IterationRecord:
    entry = _object(data, path)
    checks = (
        _each(_check, entry, "checks", path) if "checks" in entry else _older_checks(entry, path)
    )
    return IterationRecord(
        iteration=_integer(_required(entry, "iteration", path), f"{path}.iteration"),
        output=_string(entry.get("output", ""), f"{path}.output"),
        checks=checks,
        score=_number(_required(entry, "score", path), f"{path}.score"),
        improved=_boolean(entry.get("improved", False), f"{path}.improved"),
        repeated=_boolean(entry.get("repeated", False), f"{path}.repeated"),
        tokens=_integer(entry.get("tokens", 0), f"{path}.tokens"),
        tokens_estimated=_boolean(entry.get("tokens_estimated", False), f"{path}.tokens_estimated"),
        latency_s=_number(entry.get("latency_s", 0.0), f"{path}.latency_s", minimum=0.0),
        checks_duration_s=_number(
            entry.get("checks_duration_s", 0.0), f"{path}.checks_duration_s", minimum=0.0
        ),
        revision=_optional(_string, entry, "revision", path),
        metric=_string(entry.get("metric", "refine_score"), f"{path}.metric", nonblank=True),
    )


def _check(data: object, path: str) -> CheckOutcome:
    entry = _object(data, path)
    return CheckOutcome(
        name=_string(_required(entry, "name", path), f"{path}.name", nonblank=True),
        passed=_boolean(_required(entry, "passed", path), f"{path}.passed"),
        message=_string(entry.get("message", ""), f"{path}.message"),
        kind=_member(entry.get("kind", CheckKind.DETERMINISTIC.value), f"{path}.kind", CheckKind),
        source=_string(entry.get("source", ""), f"{path}.source"),
        duration_s=_number(entry.get("duration_s", 0.0), f"{path}.duration_s", minimum=0.0),
        score=_optional(_number, entry, "score", path, minimum=0.0, maximum=1.0),
        skipped=_boolean(entry.get("skipped", False), f"{path}.skipped"),
        tokens=_integer(entry.get("tokens", 0), f"{path}.tokens"),
        reason=_string(entry.get("reason", ""), f"{path}.reason"),
    )


def _older_checks(entry: Mapping[str, object], path: str) -> tuple[CheckOutcome, ...]:
    """The checks of a report written before iterations kept their whole outcomes.

    Such a report kept only the names of the passed and failed checks and the
    judge's reasons; a check with a reason was a judge (``llm``), and the
    others are read as deterministic, since the report did not say.
    """
    reasons = {
        name: _string(reason, f"{path}.reasons.{name}")
        for name, reason in _object(entry.get("reasons", {}), f"{path}.reasons").items()
    }

    def outcome(name: str, passed: bool) -> CheckOutcome:
        kind = CheckKind.LLM if name in reasons else CheckKind.DETERMINISTIC
        return CheckOutcome(name, passed, "", kind, "", reason=reasons.get(name, ""))

    passed = _strings(entry.get("passed_checks", []), f"{path}.passed_checks")
    failed = _strings(entry.get("failed_checks", []), f"{path}.failed_checks")
    return tuple(outcome(n, True) for n in passed) + tuple(outcome(n, False) for n in failed)


# -- typed readers: each checks one JSON type and names the path ------------


def _fail(path: str, reason: str) -> NoReturn:
    raise ReportError(f"{path}: {reason}", field=path)


def _kind(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), f"a {type(value).__name__}")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _member(value: object, path: str, kinds: type[_E]) -> _E:
    text = _string(value, path)
    try:
        return kinds(text)
    except ValueError:
        _fail(path, f"expected one of {', '.join(k.value for k in kinds)}, got {text!r}")


def _optional(
    read: Callable[..., _T], entry: Mapping[str, object], key: str, path: str, **checks: Any
) -> _T | None:
    """``entry[key]`` read by ``read`` (with ``checks``), or ``None`` when absent or null."""
    value = entry.get(key)
    return None if value is None else read(value, f"{path}.{key}", **checks)


def _each(
    read: Callable[[object, str], _T], entry: Mapping[str, object], key: str, path: str
) -> tuple[_T, ...]:
    """Each item of the array ``entry[key]`` (absent: none) read by ``read``."""
    items = _list(entry.get(key, []), f"{path}.{key}")
    return tuple(read(item, f"{path}.{key}[{i}]") for i, item in enumerate(items))


def _required(entry: Mapping[str, object], key: str, path: str) -> object:
    if key not in entry:
        _fail(f"{path}.{key}", "is missing")
    return entry[key]


def _object(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        _fail(path, f"expected an object, got {_kind(value)}")
    return value


def _list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        _fail(path, f"expected an array, got {_kind(value)}")
    return value


def _string(value: object, path: str, *, nonblank: bool = False) -> str:
    if not isinstance(value, str):
        _fail(path, f"expected a string, got {_kind(value)} {_shown(value)}")
    if nonblank and not value.strip():
        _fail(path, "expected a non-blank string")
    return value


def _strings(value: object, path: str) -> tuple[str, ...]:
    return tuple(_string(v, f"{path}[{i}]") for i, v in enumerate(_list(value, path)))


def _boolean(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, f"expected true or false, got {_shown(value)}")
    return value


def _integer(value: object, path: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(path, f"expected an integer, got {_kind(value)} {_shown(value)}")
    if value < minimum:
        _fail(path, f"expected an integer >= {minimum}, got {_shown(value)}")
    if value > MAX_JSON_COUNT:  # 10**400 tokens would overflow the cost gate's ratios
        _fail(path, f"expected an integer <= {MAX_JSON_COUNT} (2**53), got {_shown(value)}")
    return value


def _number(
    value: object, path: str, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(path, f"expected a number, got {_kind(value)} {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an integer literal too large for a float
        _fail(path, "number is too large")
    if not math.isfinite(number):  # 1e999 parses as inf
        _fail(path, f"expected a finite number, got {value!r}")
    if minimum is not None and number < minimum:
        _fail(path, f"expected a number >= {minimum:g}, got {number!r}")
    if maximum is not None and number > maximum:
        _fail(path, f"expected a number <= {maximum:g}, got {number!r}")
    return number


def read_report(source: ReportSource) -> Report:
    """A ``Report`` from a JSON file written by ``--tnsai-report`` (or a Report, as is).

    Any problem with the file (missing, not UTF-8, not JSON, a field of the
    wrong type) raises ``ReportError`` naming the file and the JSON path of
    the field; schema versions 1, 2 and 3 are read.
    """
    if isinstance(source, Report):
        return source
    return read_report_file(Path(source))
