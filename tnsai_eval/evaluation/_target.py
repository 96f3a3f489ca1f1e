"""Scoring a target on cases: the app's own code path, case by case (``score_target``;
``_runner.TargetRunner`` runs one case).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from tnsai_eval._util.aio import blocking
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation._engine import Budget, check_concurrency, check_max_calls
from tnsai_eval.evaluation._runner import CaseDone, CaseRun, Target, TargetRunner
from tnsai_eval.evaluation._scoring import PromptEvaluation
from tnsai_eval.evaluation._stop import StopReason
from tnsai_eval.llm import CallBudget, FrontClient
from tnsai_eval.records import (
    CaseRecord,
    CaseState,
    Trajectory,
    case_ids,
)
from tnsai_eval.scoring import (
    DefaultPromptEvaluator,
    PromptEvaluator,
    TestCase,
    TrajectoryEvaluator,
    check_cases,
    metrics_of,
)

__all__ = ["CaseRun", "TargetEvaluation", "ascore_target", "score_target", "target_name"]

EvaluatorInput: TypeAlias = (
    "PromptEvaluator | TrajectoryEvaluator | Sequence[PromptEvaluator | TrajectoryEvaluator]"
)


def target_name(target: object) -> str:
    """How a target is named in results and reports: ``module:qualname``."""
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    name = name.split("<locals>.")[-1]  # a function defined in a test: its own name
    return f"{module}:{name}" if module else name


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
    the ``llm`` fixture on each named model this way. ``score_target`` is the
    same for synchronous callers; it works inside a running event loop (a
    notebook).

    >>> from tnsai_eval.scoring import ContainsEvaluator
    >>> def shout(text: str) -> str:
    ...     return text.upper()
    >>> result = score_target(shout, [TestCase("paris", "PARIS"), TestCase("rome", "Lima")],
    ...                       evaluator=ContainsEvaluator())
    >>> result.scores, result.prompt
    ((1.0, 0.0), 'tnsai_eval.evaluation._target:shout')
    """
    if not callable(target):
        raise ConfigError(
            f"target must be a function fn(input) -> str | Trajectory or an agent factory, "
            f"got {target!r}"
        )
    items = check_cases(cases, "cases")
    check_concurrency(concurrency)
    check_max_calls(max_calls)
    metrics = metrics_of(DefaultPromptEvaluator() if evaluator is None else evaluator)
    budgets = Budget(max_calls=max_calls, shared=budget).call_budgets  # its own, then shared
    runner = TargetRunner(target, metrics, budgets, case_threshold, route)
    ids = case_ids((c.input, c.expected, c.id) for c in items)
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> CaseDone:
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


score_target = blocking(ascore_target)
