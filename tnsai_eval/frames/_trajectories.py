"""What agents did, as frames: one row per step of each case's trajectory, one row per case.

Both read a ``TargetEvaluation`` (what ``score_target`` returns) or a run
report (a ``--tnsai-report`` JSON file of ``evaluate_target`` tests, or its
``Report``). Each case is named by ``nodeid`` (the test's node id in a report;
the target's name, ``module:function``, for a ``TargetEvaluation``), its
``case_id`` and its repeat ``sample``, so that rows of two runs of the same
cases line up (``plots.plot_tool_use(head, base)`` pairs them so). Every text
is masked for secrets; arguments and tool results are JSON text. A report
keeps a summary of each run (``records.TrajectorySummary``: texts cut to 300
characters, at most 60 steps); a ``TargetEvaluation`` has the whole run.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, TypeAlias

import pandas as pd

from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import TargetEvaluation
from tnsai_eval.records import (
    CaseRecord,
    CaseState,
    ModelTurn,
    Step,
    StepSummary,
    Trajectory,
    TrajectorySummary,
)
from tnsai_eval.reports import Report, TrackedTest, masked, read_report

__all__ = [
    "CASE_METRIC_COLUMNS",
    "TRAJECTORY_STEP_COLUMNS",
    "TrajectorySource",
    "case_metrics",
    "trajectory_steps",
]

#: The columns of ``trajectory_steps``: one row per step (a model turn or a tool call).
TRAJECTORY_STEP_COLUMNS = (
    "nodeid", "case_id", "sample", "step", "kind", "tool", "arguments", "result", "error",
    "text", "tokens", "latency_s",
)  # fmt: skip

#: The leading columns of ``case_metrics``; one column per metric follows, in the
#: evaluator's order.
CASE_METRIC_COLUMNS = (
    "nodeid", "case_id", "sample", "input", "expected", "output", "state", "passed",
    "steps", "tool_calls", "tools", "stop_reason", "error",
)  # fmt: skip

TrajectorySource: TypeAlias = "TargetEvaluation | Report | str | os.PathLike[str]"


@dataclass(frozen=True, slots=True)
class _Case:
    """One case as both frames read it, whatever it was read from."""

    nodeid: str
    record: CaseRecord
    steps: tuple[dict[str, Any], ...] | None  # each step's row fields; None: no trajectory
    stop_reason: str | None
    dropped: int = 0  # steps a report's summary left out


def _read(source: object) -> tuple[list[_Case], list[str]]:
    """The cases of ``source`` and the names of its metrics, in order."""
    if isinstance(source, TargetEvaluation):
        cases = [
            _case(source.prompt, record, trajectory)
            for record, trajectory in zip(
                source.cases, source.trajectories or (None,) * len(source.cases), strict=True
            )
        ]
        return cases, list(source.metric_cases) or _metric_names(cases)
    if isinstance(source, Report | str | os.PathLike):
        report = read_report(source)
        cases = [
            _case(test.nodeid, record, record.trajectory)
            for test in report.tests
            for record in _target_cases(test)
        ]
        return cases, _metric_names(cases)
    raise ConfigError(
        "expected a TargetEvaluation (what score_target returns) or a run report "
        f"(a Report or the path of a --tnsai-report file), got {type(source).__name__}"
    )


def _target_cases(test: TrackedTest) -> list[CaseRecord]:
    """The case records of an ``evaluate_target`` test, one per case and sample.

    Such a test also keeps each metric's own records (metric ``<name>.<metric>``
    beside the case's ``<name>``); the case's record is the one with the
    trajectory and the verdicts. A prompt's test (no record with either) has none.
    """
    if not any(r.trajectory is not None or r.metric_scores for r in test.cases):
        return []
    names = {r.metric for r in test.cases}
    return [r for r in test.cases if not any(r.metric.startswith(f"{n}.") for n in names)]


def _metric_names(cases: list[_Case]) -> list[str]:
    return list(dict.fromkeys(m.name for case in cases for m in case.record.metric_scores))


def _case(nodeid: str, record: CaseRecord, run: Trajectory | TrajectorySummary | None) -> _Case:
    if run is None:
        return _Case(nodeid, record, None, None)
    if isinstance(run, TrajectorySummary):
        rows = tuple(_summary_fields(step) for step in run.steps)
        return _Case(nodeid, record, rows, run.stop_reason.value, run.dropped)
    return _Case(nodeid, record, tuple(map(_step_fields, run.steps)), run.stop_reason.value)


def _passed(record: CaseRecord) -> bool | None:
    """The report's verdict; else every metric passed at its own threshold (``None``:
    never asked)."""
    if record.passed is not None:
        return record.passed
    if not record.asked:
        return None
    if record.state is CaseState.ERROR:
        return False
    if record.metric_scores:
        return all(m.passed is True for m in record.metric_scores)
    return None


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _step_fields(step: Step) -> dict[str, Any]:
    """A step of a whole run as the frame's fields (texts masked)."""
    if isinstance(step, ModelTurn):
        return _fields("model", text=masked(step.text), tokens=step.tokens,
                       latency_s=step.latency_s)  # fmt: skip
    plain = step.to_dict()  # arguments and result as JSON data
    result = plain.get("result")
    return _fields(
        "tool",
        tool=step.name,
        arguments=masked(_json_text(plain["arguments"])),
        result=None if result is None else masked(
            result if isinstance(result, str) else _json_text(result)
        ),
        error=masked(step.error),
        latency_s=step.latency_s,
    )  # fmt: skip


def _summary_fields(step: StepSummary) -> dict[str, Any]:
    """A step of a report's summary as the frame's fields (masked again: the secrets
    known now)."""
    if step.is_tool_call:
        return _fields("tool", tool=masked(step.name), arguments=masked(step.arguments),
                       result=masked(step.result), error=masked(step.error),
                       latency_s=step.latency_s)  # fmt: skip
    return _fields("model", text=masked(step.text), tokens=step.tokens, latency_s=step.latency_s)


def _fields(kind: str, **given: Any) -> dict[str, Any]:
    empty = {"tool": None, "arguments": None, "result": None, "error": None, "text": None,
             "tokens": 0, "latency_s": 0.0}  # fmt: skip
    return {"kind": kind, **empty, **given}


def trajectory_steps(source: TrajectorySource) -> pd.DataFrame:
    """One row per step of every case's trajectory (``TRAJECTORY_STEP_COLUMNS``).

    ``step`` counts from 0 within the case; ``kind`` is ``model`` (a model
    turn: its ``text``, ``tokens`` and ``latency_s``) or ``tool`` (a tool
    call: ``tool``, ``arguments`` as JSON text, and ``result`` as text, or
    ``error``, with the tool's own ``latency_s``). A case with no trajectory
    (its target raised, or it never ran) has no rows; ``case_metrics`` still
    lists it.

    >>> from tnsai_eval.evaluation import score_target
    >>> from tnsai_eval.records import ModelTurn, ToolCall, Trajectory
    >>> from tnsai_eval.scoring import TestCase
    >>> def agent(text: str) -> Trajectory:
    ...     call = ToolCall("lookup_order", {"order_id": text}, result="shipped")
    ...     return Trajectory(text, (ModelTurn(), call, ModelTurn("shipped")), "shipped")
    >>> result = score_target(agent, [TestCase("A1", "shipped", id="a1")])
    >>> steps = trajectory_steps(result)
    >>> list(steps["kind"]), steps.loc[1, "tool"], steps.loc[1, "arguments"]
    (['model', 'tool', 'model'], 'lookup_order', '{"order_id": "A1"}')
    """
    cases, _ = _read(source)
    rows = [
        {"nodeid": case.nodeid, "case_id": case.record.id, "sample": case.record.sample,
         "step": index, **fields}
        for case in cases
        for index, fields in enumerate(case.steps or ())
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(TRAJECTORY_STEP_COLUMNS))


def case_metrics(source: TrajectorySource) -> pd.DataFrame:
    """One row per case: its texts, state, verdict, trajectory summary and each metric's score.

    The columns are ``CASE_METRIC_COLUMNS``, then one per metric (its name as
    ``scoring.metrics_of`` gives it, in the evaluator's order) holding that
    metric's score, NaN where the case was not scored. ``passed`` is whether
    every metric passed, each at its own threshold (a report's own verdict
    when it has one); ``None`` for a case never asked (unrecorded, not run).
    ``steps`` counts the trajectory's steps (those a report's summary left
    out included), ``tool_calls`` its tool calls and ``tools`` names them in
    order (``", "`` between; of the steps kept), ``stop_reason`` says why the
    run ended (``None``: no trajectory). In a report, only the cases of
    ``evaluate_target`` tests are rows (``report_cases`` has every case).
    """
    cases, names = _read(source)
    clash = sorted(set(names) & set(CASE_METRIC_COLUMNS))
    if clash:
        raise ConfigError(f"metric name(s) {clash} clash with case_metrics' own columns")
    rows = []
    for case in cases:
        record = case.record
        scores = {m.name: m.score for m in record.metric_scores}
        tools = [str(s["tool"]) for s in case.steps or () if s["kind"] == "tool"]
        known = case.steps is not None
        rows.append(
            {
                "nodeid": case.nodeid,
                "case_id": record.id,
                "sample": record.sample,
                "input": masked(record.input),
                "expected": masked(record.expected),
                "output": masked(record.output),
                "state": record.state.value,
                "passed": _passed(record),
                "steps": len(case.steps) + case.dropped if case.steps is not None else None,
                "tool_calls": len(tools) if known else None,
                "tools": ", ".join(tools) if known else None,
                "stop_reason": case.stop_reason,
                "error": masked(record.error),
                **{name: _score(scores.get(name)) for name in names},
            }
        )
    frame = pd.DataFrame(rows, columns=[*CASE_METRIC_COLUMNS, *names])
    # Whole numbers where every case has a trajectory; None stays missing otherwise.
    for column in ("steps", "tool_calls"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _score(value: float | None) -> float:
    return math.nan if value is None else float(value)
