"""What agents did, as frames: one row per step of each case's trajectory, one row per case.

Both read a ``TargetEvaluation`` (what ``score_target`` returns). Each case
is named by ``nodeid`` (the target's name, ``module:function``), its
``case_id`` and its repeat ``sample`` (0 here), so that rows of two runs of the
same cases line up (``plots.plot_tool_use(head, base)`` pairs them so).
Every text is masked for secrets; arguments and tool results are JSON text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import pandas as pd

from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import TargetEvaluation
from tnsai_eval.records import CaseRecord, ModelTurn, Step, ToolCall
from tnsai_eval.reports import masked

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

TrajectorySource: TypeAlias = TargetEvaluation


@dataclass(frozen=True, slots=True)
class _Case:
    """One case as both frames read it, whatever it was read from."""

    nodeid: str
    record: CaseRecord
    steps: tuple[Step, ...] | None  # None: the case has no trajectory (it never ran)
    stop_reason: str | None
    scores: Mapping[str, float | None]
    passed: bool | None


def _cases(source: object, threshold: float) -> Iterator[_Case]:
    if isinstance(source, TargetEvaluation):
        yield from _evaluation_cases(source, threshold)
        return
    raise ConfigError(
        f"expected a TargetEvaluation (what score_target returns), got {type(source).__name__}"
    )


def _evaluation_cases(evaluation: TargetEvaluation, threshold: float) -> Iterator[_Case]:
    names = list(evaluation.metric_cases) or ["score"]
    per_metric = evaluation.metric_cases or {"score": evaluation.cases}
    trajectories = evaluation.trajectories or (None,) * len(evaluation.cases)
    for index, (record, trajectory) in enumerate(zip(evaluation.cases, trajectories, strict=True)):
        scores = {name: per_metric[name][index].score for name in names}
        passed = record.passed
        if passed is None:
            # One metric: the case's record is that metric's (its own threshold or
            # the run's); several: the record's score is 1.0 exactly when all passed.
            own = evaluation.metric_thresholds.get(names[0]) if len(names) == 1 else None
            passed = record.verdict(threshold if own is None else own)
        yield _Case(
            evaluation.prompt,
            record,
            None if trajectory is None else trajectory.steps,
            None if trajectory is None else trajectory.stop_reason.value,
            scores,
            passed,
        )


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _step_row(case: _Case, index: int, step: Step) -> dict[str, Any]:
    row: dict[str, Any] = {
        "nodeid": case.nodeid,
        "case_id": case.record.id,
        "sample": case.record.sample,
        "step": index,
        "tool": None,
        "arguments": None,
        "result": None,
        "error": None,
        "text": None,
        "tokens": 0,
        "latency_s": step.latency_s,
    }
    if isinstance(step, ModelTurn):
        return {**row, "kind": "model", "text": masked(step.text), "tokens": step.tokens}
    plain = step.to_dict()  # arguments and result as JSON data
    result = plain.get("result")
    return {
        **row,
        "kind": "tool",
        "tool": step.name,
        "arguments": masked(_json_text(plain["arguments"])),
        "result": None
        if result is None
        else masked(result if isinstance(result, str) else _json_text(result)),
        "error": masked(step.error),
    }


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
    rows = [
        _step_row(case, index, step)
        for case in _cases(source, 0.5)  # (the verdict is not shown here)
        for index, step in enumerate(case.steps or ())
    ]
    return pd.DataFrame(rows, columns=list(TRAJECTORY_STEP_COLUMNS))


def case_metrics(source: TrajectorySource, *, threshold: float = 0.5) -> pd.DataFrame:
    """One row per case: its texts, state, verdict, trajectory summary and each metric's score.

    The columns are ``CASE_METRIC_COLUMNS``, then one per metric (its name as
    ``scoring.metrics_of`` gives it, in the evaluator's order) holding that
    metric's score, NaN where the case was not scored. ``passed`` is
    whether every metric passed (each at its own threshold, else
    ``threshold``, the run's case threshold); ``None`` for a case never asked
    (unrecorded, not run). ``steps`` counts the trajectory's steps,
    ``tool_calls`` its tool calls, ``tools`` names them in order (``", "``
    between), ``stop_reason`` says why the run ended (``None``: no trajectory).
    """
    cases = list(_cases(source, threshold))
    names: list[str] = list(dict.fromkeys(name for case in cases for name in case.scores))
    clash = sorted(set(names) & set(CASE_METRIC_COLUMNS))
    if clash:
        raise ConfigError(f"metric name(s) {clash} clash with case_metrics' own columns")
    rows = []
    for case in cases:
        record = case.record
        calls = [s for s in case.steps or () if isinstance(s, ToolCall)]
        rows.append(
            {
                "nodeid": case.nodeid,
                "case_id": record.id,
                "sample": record.sample,
                "input": masked(record.input),
                "expected": masked(record.expected),
                "output": masked(record.output),
                "state": record.state.value,
                "passed": case.passed,
                "steps": None if case.steps is None else len(case.steps),
                "tool_calls": None if case.steps is None else len(calls),
                "tools": None if case.steps is None else ", ".join(c.name for c in calls),
                "stop_reason": case.stop_reason,
                "error": masked(record.error),
                **{name: _score(case.scores.get(name)) for name in names},
            }
        )
    frame = pd.DataFrame(rows, columns=[*CASE_METRIC_COLUMNS, *names])
    # Whole numbers where every case has a trajectory; None stays missing otherwise.
    for column in ("steps", "tool_calls"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _score(value: float | None) -> float:
    return math.nan if value is None else float(value)
