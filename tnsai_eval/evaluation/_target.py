"""Scoring a target on cases: the app's own code path, case by case.

A *target* turns a case's input into an output: a function ``fn(input) -> str |
Trajectory`` (sync or async) or an agent factory (``factory() -> agent`` whose
``run(input)`` returns a ``Trajectory``). ``score_target`` runs it once per case
under ``llm.running_case(case_id)``, so that every call the target makes through
a ``FrontClient`` is attributed to the case (its calls, tokens, replay misses),
under the run's call budget (``max_calls``), and scores the output with each
metric of ``evaluator`` (one evaluator or a list; see ``scoring.metrics_of``).

A target that raises is an errored case (its type and message kept, masked); a
replay miss anywhere inside it makes the case ``unrecorded`` (never a score,
even when the target caught the error and answered something else); a spent
budget makes it ``not_run``.
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

from tnsai_eval._util.aio import run_sync
from tnsai_eval._util.plain import json_ready
from tnsai_eval._util.secrets import mask
from tnsai_eval.errors import CallBudgetExceeded, ConfigError, ReplayMissError
from tnsai_eval.evaluation._engine import check_concurrency
from tnsai_eval.evaluation._scoring import PromptEvaluation
from tnsai_eval.evaluation._stop import StopReason
from tnsai_eval.llm import CallBudget, CallEvent, FrontClient, observing, routing, running_case
from tnsai_eval.records import (
    CaseMetric,
    CaseRecord,
    CaseState,
    Trajectory,
    TrajectorySummary,
    case_ids,
)
from tnsai_eval.scoring import (
    DefaultPromptEvaluator,
    Metric,
    PromptEvaluator,
    TestCase,
    TrajectoryEvaluator,
    check_cases,
    metrics_of,
)

__all__ = ["CaseRun", "TargetEvaluation", "ascore_target", "score_target", "target_name"]

Target: TypeAlias = Callable[..., Any]
EvaluatorInput: TypeAlias = (
    "PromptEvaluator | TrajectoryEvaluator | Sequence[PromptEvaluator | TrajectoryEvaluator]"
)


def target_name(target: object) -> str:
    """How a target is named in results and reports: ``module:qualname``."""
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    name = name.split("<locals>.")[-1]  # a function defined in a test: its own name
    return f"{module}:{name}" if module else name


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


@dataclass(frozen=True, slots=True)
class TargetEvaluation(PromptEvaluation):
    """The result of ``score_target``: a ``PromptEvaluation`` whose ``prompt`` names the
    target, with what each case's run showed.

    ``cases`` holds one record per case: with one evaluator its score and
    reason; with several, 1.0 when every metric passed at its threshold and
    0.0 otherwise, the reason listing each metric. ``metric_cases`` holds each
    metric's own records (partial scores kept), by metric name, and ``runs``
    each case's ``CaseRun``; ``metric_thresholds`` each metric's own threshold
    (``None``: the run's case threshold).
    """

    metric_cases: Mapping[str, tuple[CaseRecord, ...]] = field(default_factory=dict)
    metric_thresholds: Mapping[str, float | None] = field(default_factory=dict)
    runs: tuple[CaseRun, ...] = ()

    @property
    def trajectories(self) -> tuple[Trajectory | None, ...]:
        """Each case's trajectory (``None`` where the target raised or never ran)."""
        return tuple(run.trajectory for run in self.runs)

    @property
    def systems(self) -> tuple[str, ...]:
        """The distinct system prompts the target's calls sent, over every case, in order."""
        return tuple(dict.fromkeys(s for run in self.runs for s in run.systems))

    @property
    def call_params(self) -> tuple[str, ...]:
        """The distinct call parameters (canonical JSON) the target's calls sent, in order."""
        return tuple(dict.fromkeys(p for run in self.runs for p in run.params))


def _canonical(params: Mapping[str, Any]) -> str:
    return json.dumps(json_ready(params), sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class _Seen:
    """The calls one case made, as their events arrived (from any thread of the case)."""

    events: list[CallEvent] = field(default_factory=list)

    def add(self, event: CallEvent) -> None:
        self.events.append(event)

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
class _Done:
    """One case done: its record, each metric's record, what its run showed, its calls."""

    record: CaseRecord
    per_metric: list[CaseRecord]
    run: CaseRun
    calls: int
    #: The calls the case made, as their events arrived (the optimizer counts attempts).
    events: tuple[CallEvent, ...] = ()


class TargetRunner:
    """Runs a target on one case and scores it: ``score_target``'s unit, and the optimizer's
    when it optimizes a prompt inside a target."""

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

    async def case(self, case: TestCase, case_id: str, index: int) -> _Done:
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
            observing(seen.add),
            _all_active(self.budgets),
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
            self._combined(record, per_metric),
            trajectory=_summary(trajectory),
            metric_scores=verdicts,
        )
        return _Done(combined, per_metric, run, calls, events)

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
    ) -> _Done:
        """A case that was not scored: every metric shares its state and error; the case
        keeps the summary of what its run did, when it returned a trajectory."""
        per_metric = [replace(record, metric=m.name) for m in self.metrics]
        kept = replace(record, trajectory=_summary(run.trajectory))
        return _Done(kept, per_metric, run, calls, events)

    def _combined(self, record: CaseRecord, per_metric: list[CaseRecord]) -> CaseRecord:
        if len(per_metric) == 1:
            return replace(per_metric[0], metric=record.metric)
        failed = [r for r in per_metric if r.state is CaseState.ERROR]
        if failed:
            return replace(record, state=CaseState.ERROR, error=failed[0].error,
                           error_type=failed[0].error_type)  # fmt: skip
        verdicts = []
        for metric, found in zip(self.metrics, per_metric, strict=True):
            assert found.score is not None
            passed = metric.passes(found.score, self.case_threshold)
            verdicts.append((metric.name, found.score, passed, found.reason))
        reason = "; ".join(
            f"{name} {score:.2f} " + ("pass" if ok else "fail" + (f" ({why})" if why else ""))
            for name, score, ok, why in verdicts
        )
        return replace(record, score=1.0 if all(v[2] for v in verdicts) else 0.0, reason=reason)


async def ascore_target(
    target: Target,
    cases: Sequence[TestCase],
    *,
    evaluator: EvaluatorInput | None = None,
    concurrency: int = 4,
    max_calls: int | None = None,
    on_case: Callable[[CaseRecord], None] | None = None,
    budget: CallBudget | None = None,
    case_threshold: float = 0.5,
    route: Mapping[FrontClient, FrontClient] | None = None,
) -> TargetEvaluation:
    """Like ``score_target``, in a running event loop."""
    if not callable(target):
        raise ConfigError(
            f"target must be a function fn(input) -> str | Trajectory or an agent factory, "
            f"got {target!r}"
        )
    items = check_cases(cases, "cases")
    check_concurrency(concurrency)
    if max_calls is not None and (
        isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0
    ):
        raise ConfigError(f"max_calls must be an int >= 0 or None, got {max_calls!r}")
    metrics = metrics_of(DefaultPromptEvaluator() if evaluator is None else evaluator)
    own = CallBudget(max_calls) if max_calls is not None else None
    budgets = [b for b in (own, budget) if b is not None]
    runner = TargetRunner(target, metrics, budgets, case_threshold, route)
    ids = case_ids((c.input, c.expected, c.id) for c in items)
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> _Done:
        async with gate:
            found = await runner.case(items[index], ids[index], index)
        if on_case is not None:
            on_case(found.record)
        return found

    results = await asyncio.gather(*(one(i) for i in range(len(items))))
    records = tuple(r.record for r in results)
    stop = StopReason.MAX_CALLS if any(r.state is CaseState.NOT_RUN for r in records) else None
    return TargetEvaluation(
        target_name(target),
        records,
        calls=sum(r.calls for r in results),
        stop_reason=stop,
        metric_cases={
            m.name: tuple(r.per_metric[k] for r in results) for k, m in enumerate(metrics)
        },
        metric_thresholds={m.name: m.threshold for m in metrics},
        runs=tuple(r.run for r in results),
    )


def score_target(
    target: Target,
    cases: Sequence[TestCase],
    *,
    evaluator: EvaluatorInput | None = None,
    concurrency: int = 4,
    max_calls: int | None = None,
    on_case: Callable[[CaseRecord], None] | None = None,
    budget: CallBudget | None = None,
    case_threshold: float = 0.5,
    route: Mapping[FrontClient, FrontClient] | None = None,
) -> TargetEvaluation:
    """Score what the app actually runs: ``target`` once per case, each output scored.

    ``target`` is ``fn(input) -> str | Trajectory`` (sync, run in a worker
    thread; or async) or an agent factory (``factory() -> agent``, a new one
    per case, whose ``run(input)`` or ``async arun(input)`` returns a
    ``Trajectory``). ``evaluator`` is one evaluator or a list: a plain
    ``PromptEvaluator`` scores the output text, a ``TrajectoryEvaluator`` the
    whole trajectory; several give named metrics per case and a case passes
    when every one passes at its threshold (a plain evaluator's is
    ``case_threshold``). Up to ``concurrency`` cases run at once. The calls
    the target makes through any ``FrontClient`` while a case runs are that
    case's (its tokens, whether they all came from the store); ``max_calls``
    bounds them (HTTP attempts; cases beyond it are ``not_run``), and so does
    ``budget``, shared with other work. A target that raises makes an
    ``error`` case; a replay miss inside it an ``unrecorded`` one, even when
    the target caught it. ``route`` (``{client: other}``, see
    ``llm.routing``) sends the calls the target makes through ``client`` to
    ``other`` instead, while the target runs (the evaluators' calls stay
    where they are): pytest's ``--tnsai-model`` runs an app written against
    the ``llm`` fixture on each named model this way. Works inside a running
    event loop (a notebook).

    >>> from tnsai_eval.scoring import ContainsEvaluator
    >>> def shout(text: str) -> str:
    ...     return text.upper()
    >>> result = score_target(shout, [TestCase("paris", "PARIS"), TestCase("rome", "Lima")],
    ...                       evaluator=ContainsEvaluator())
    >>> result.scores, result.prompt
    ((1.0, 0.0), 'tnsai_eval.evaluation._target:shout')
    """
    return run_sync(
        ascore_target(
            target,
            cases,
            evaluator=evaluator,
            concurrency=concurrency,
            max_calls=max_calls,
            on_case=on_case,
            budget=budget,
            case_threshold=case_threshold,
            route=route,
        )
    )


@contextmanager
def _all_active(budgets: Sequence[CallBudget]) -> Iterator[None]:
    with ExitStack() as stack:
        for budget in budgets:
            stack.enter_context(budget.active())
        yield
