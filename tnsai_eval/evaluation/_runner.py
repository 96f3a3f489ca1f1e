"""Running a target on one case: the unit of ``score_target`` and of the optimizer's
``optimize(target=...)``.

``TargetRunner.case`` runs the target once under ``llm.running_case`` (every
call it makes through a ``FrontClient`` is the case's), ``llm.observing``
(those calls' events are kept), the run's call budgets and its routes, then
scores the output with each metric. It never raises for the target: a
raising target is an ``error`` case, a replay miss anywhere inside it an
``unrecorded`` one, a spent budget a ``not_run`` one.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from tnsai_eval._util.plain import json_ready
from tnsai_eval._util.secrets import mask
from tnsai_eval.errors import CallBudgetExceeded, ReplayMissError
from tnsai_eval.llm import CallBudget, CallEvent, FrontClient, observing, routing, running_case
from tnsai_eval.records import (
    CaseMetric,
    CaseRecord,
    CaseState,
    Trajectory,
    TrajectorySummary,
)
from tnsai_eval.scoring import Metric, TestCase

__all__ = ["CaseDone", "CaseRun", "Target", "TargetRunner", "all_active"]

Target: TypeAlias = Callable[..., Any]


def _is_factory(target: Target) -> bool:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return False
    return not any(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in signature.parameters.values()
    )


async def _run(target: Target, factory: bool, text: str) -> object:
    if factory:
        agent = await asyncio.to_thread(target)
        arun = getattr(agent, "arun", None)
        if arun is not None and inspect.iscoroutinefunction(arun):
            return await arun(text)
        run = getattr(agent, "run", None)
        if not callable(run):
            raise TypeError(f"the agent factory returned {agent!r}, which has no run(input)")
        return await asyncio.to_thread(run, text)
    if inspect.iscoroutinefunction(target):
        return await target(text)
    found = await asyncio.to_thread(target, text)  # copies the context: the case goes along
    if inspect.isawaitable(found):
        return await found
    return found


@dataclass(frozen=True, slots=True)
class CaseRun:
    """What one case's run of the target showed besides its record: the trajectory (a
    plain output is one with no steps), and the system prompts and call parameters its
    calls sent (each distinct one once, in order)."""

    trajectory: Trajectory | None
    systems: tuple[str, ...] = ()
    params: tuple[str, ...] = ()


def _canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(json_ready(params), sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class _Seen:
    """The calls one case made, as their events arrived (from any thread of the case)."""

    events: list[CallEvent] = field(default_factory=list)

    def failed_with(self, kind: type[Exception]) -> Exception | None:
        return next((e.error for e in self.events if isinstance(e.error, kind)), None)

    def run(self, trajectory: Trajectory | None) -> CaseRun:
        systems = dict.fromkeys(e.system for e in self.events if e.system)
        params = dict.fromkeys(_canonical(e.params) for e in self.events)
        return CaseRun(trajectory, tuple(systems), tuple(params))


def _summary(trajectory: Trajectory | None) -> TrajectorySummary | None:
    """What the report keeps of a run (a plain output: nothing)."""
    return None if trajectory is None else TrajectorySummary.of(trajectory)


def _failure(exc: BaseException) -> tuple[str, str]:
    kind = type(exc).__name__
    return f"{kind}: {mask(str(exc))}", kind


@dataclass(frozen=True, slots=True)
class CaseDone:
    """One case done: its record, each metric's record, what its run showed, its calls."""

    record: CaseRecord
    per_metric: list[CaseRecord]
    run: CaseRun
    calls: int
    #: The calls the case made, as their events arrived (the optimizer counts attempts).
    events: tuple[CallEvent, ...] = ()


class TargetRunner:
    """Runs a target on one case and scores it (module docstring)."""

    def __init__(
        self,
        target: Target,
        metrics: Sequence[Metric],
        budgets: Sequence[CallBudget],
        case_threshold: float,
        route: Mapping[FrontClient, FrontClient] | None = None,
    ) -> None:
        self.target = target
        self.route = dict(route or {})
        self.factory = _is_factory(target)
        self.metrics = metrics
        self.budgets = tuple(budgets)
        self.case_threshold = case_threshold

    async def case(self, case: TestCase, case_id: str, index: int) -> CaseDone:
        """Run the target on one case and score its output with every metric."""
        base = CaseRecord(case_id, case.input, case.expected, index=index)
        if any(budget.left <= 0 for budget in self.budgets):
            skipped = replace(base, state=CaseState.NOT_RUN, error="not run: budget")
            return self._unscored(skipped, CaseRun(None), 0, ())
        seen = _Seen()
        started = time.perf_counter()
        output: object = None
        failure: Exception | None = None
        with (
            running_case(case_id),
            observing(seen.events.append),
            all_active(self.budgets),
            routing(self.route),
        ):
            try:
                output = await _run(self.target, self.factory, case.input)
            except Exception as exc:  # contained to this case: typed and shown
                failure = exc
        trajectory = output if isinstance(output, Trajectory) else None
        run = seen.run(trajectory)
        calls = sum(1 for e in seen.events if e.attempts > 0)
        events = tuple(seen.events)
        tokens = sum(e.total_tokens for e in seen.events)
        if trajectory is not None and not seen.events:
            tokens = trajectory.tokens  # a client outside tnsai-eval: the run's own count
        record = replace(
            base,
            tokens=tokens,
            latency_s=time.perf_counter() - started,
            cached=bool(seen.events) and all(e.cached for e in seen.events),
        )
        # A miss anywhere inside the target, even one it caught and answered
        # around, means the case was never asked: no score at all.
        for kind, state in ((ReplayMissError, CaseState.UNRECORDED),
                            (CallBudgetExceeded, CaseState.NOT_RUN)):  # fmt: skip
            found = seen.failed_with(kind) or (failure if isinstance(failure, kind) else None)
            if found is not None:
                error, name = _failure(found)
                return self._unscored(
                    replace(record, state=state, error=error, error_type=name), run, calls, events
                )
        if failure is None and not isinstance(output, str | Trajectory):
            failure = TypeError(
                f"the target returned a {type(output).__name__}; expected a str or a Trajectory"
            )
        if failure is not None or not isinstance(output, str | Trajectory):
            error, name = _failure(failure or TypeError("no output"))
            failed = replace(record, state=CaseState.ERROR, error=error, error_type=name)
            return self._unscored(failed, run, calls, events)
        record = replace(record, output=output if isinstance(output, str) else output.output)
        scored = [await self._metric(metric, output, case, record) for metric in self.metrics]
        per_metric = [found for found, _ in scored]
        verdicts = tuple(
            self._verdict(metric, found, violations)
            for metric, (found, violations) in zip(self.metrics, scored, strict=True)
        )
        # The trajectory and the verdicts go on the case's own record only: each
        # metric's records (``metric_cases``) would repeat them once per metric.
        combined = replace(
            self._combined(record, per_metric, verdicts),
            trajectory=_summary(trajectory),
            metric_scores=verdicts,
        )
        return CaseDone(combined, per_metric, run, calls, events)

    async def _metric(
        self, metric: Metric, output: str | Trajectory, case: TestCase, record: CaseRecord
    ) -> tuple[CaseRecord, tuple[str, ...]]:
        """The metric's record of the case, and the norms it found violated."""
        try:
            found = await metric.ascore(output, case)
        except Exception as exc:  # an evaluator's failure is this case's error
            error, name = _failure(exc)
            failed = replace(record, metric=metric.name, state=CaseState.ERROR,
                             error=f"evaluator {error}", error_type=name)  # fmt: skip
            return failed, ()
        reason = mask(found.reason) if found.reason else None
        violations = tuple(mask(v) for v in found.violations)
        return replace(record, metric=metric.name, score=found.score, reason=reason), violations

    def _verdict(
        self, metric: Metric, found: CaseRecord, violations: tuple[str, ...]
    ) -> CaseMetric:
        if found.score is None:
            return CaseMetric(metric.name, reason=found.error)
        passed = metric.passes(found.score, self.case_threshold)
        return CaseMetric(metric.name, found.score, passed, found.reason, violations)

    def _unscored(
        self, record: CaseRecord, run: CaseRun, calls: int, events: tuple[CallEvent, ...]
    ) -> CaseDone:
        """A case that was not scored: every metric shares its state and error; the case
        keeps the summary of what its run did, when it returned a trajectory."""
        per_metric = [replace(record, metric=m.name) for m in self.metrics]
        kept = replace(record, trajectory=_summary(run.trajectory))
        return CaseDone(kept, per_metric, run, calls, events)

    def _combined(
        self, record: CaseRecord, per_metric: list[CaseRecord], verdicts: tuple[CaseMetric, ...]
    ) -> CaseRecord:
        if len(per_metric) == 1:
            return replace(per_metric[0], metric=record.metric)
        failed = [r for r in per_metric if r.state is CaseState.ERROR]
        if failed:
            return replace(record, state=CaseState.ERROR, error=failed[0].error,
                           error_type=failed[0].error_type)  # fmt: skip
        # No metric failed: each verdict has its score and pass or fail.
        reason = "; ".join(
            f"{v.name} {v.score:.2f} "
            + ("pass" if v.passed else "fail" + (f" ({v.reason})" if v.reason else ""))
            for v in verdicts
        )
        return replace(record, score=1.0 if all(v.passed for v in verdicts) else 0.0, reason=reason)


@contextmanager
def all_active(budgets: Sequence[CallBudget]) -> Iterator[None]:
    """Make every one of ``budgets`` bound the calls made inside the block."""
    with ExitStack() as stack:
        for budget in budgets:
            stack.enter_context(budget.active())
        yield
