"""Scoring what a target did, not only what it answered: trajectory evaluators and metrics.

A ``TrajectoryEvaluator`` scores a whole ``Trajectory`` against its
``TestCase`` (the expected tool calls, the state norms read, the expected
answer) and says why; ``ToolCallMatch``, ``ToolCallF1``, ``FinalAnswer``,
``NormCompliance`` and ``TrajectoryJudge`` are the library's. An evaluation
may use several evaluators at once: ``metrics_of`` names each one (a
``Metric``), and a case passes when every metric passes at its threshold.
A plain ``PromptEvaluator`` is a metric too, scoring the output text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from tnsai_eval._util.scores import is_share
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LLMClient
from tnsai_eval.norms import NormEngine, NormEntry, NormViolation
from tnsai_eval.records import Trajectory
from tnsai_eval.scoring._cases import TestCase
from tnsai_eval.scoring._evaluator import PromptEvaluator
from tnsai_eval.scoring._judge import Judge, JudgeMethod

__all__ = [
    "FinalAnswer",
    "Metric",
    "MetricScore",
    "NormCompliance",
    "TrajectoryEvaluator",
    "TrajectoryJudge",
    "check_threshold",
    "metrics_of",
    "render_trajectory",
]


@dataclass(frozen=True, slots=True)
class MetricScore:
    """One metric's score of one case in [0, 1], and why (``""`` when there is nothing to say).

    ``violations`` names each norm the run broke (``NormCompliance``), so a
    report can say which were gained or lost without parsing ``reason``.
    """

    score: float
    reason: str = ""
    violations: tuple[str, ...] = ()


def check_threshold(value: object) -> float:
    """``value`` as a threshold in [0, 1]; anything else is a ``ConfigError`` naming it."""
    if not is_share(value):
        raise ConfigError(f"threshold must be a number from 0 to 1, got {value!r}")
    return float(value)


@runtime_checkable
class TrajectoryEvaluator(Protocol):
    """Scores what an agent (or any target) did for a case: ``evaluate_trajectory(trajectory,
    case) -> MetricScore``.

    ``name`` names the metric in case records and reports; a case passes it
    at ``score >= threshold``. An evaluator that calls a model may also define
    ``async aevaluate_trajectory`` (awaited instead, so other cases go on).
    """

    name: str
    threshold: float

    def evaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore: ...


class FinalAnswer:
    """Any ``PromptEvaluator`` applied to the trajectory's final output and the case's ``expected``.

    >>> from tnsai_eval.scoring import ContainsEvaluator
    >>> metric = FinalAnswer(ContainsEvaluator())
    >>> metric.evaluate_trajectory(Trajectory("q", output="It is Paris."), TestCase("q", "Paris"))
    MetricScore(score=1.0, reason='', violations=())
    """

    def __init__(
        self, evaluator: PromptEvaluator, *, name: str = "final_answer", threshold: float = 1.0
    ) -> None:
        if not callable(getattr(evaluator, "evaluate", None)):
            raise ConfigError(
                f"FinalAnswer needs an evaluator with evaluate(actual, expected), got {evaluator!r}"
            )
        self.evaluator = evaluator
        self.name = name
        self.threshold = check_threshold(threshold)

    def __repr__(self) -> str:
        return f"FinalAnswer({self.evaluator!r})"

    def evaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """The evaluator's score of ``trajectory.output``, with its reason when it gives one."""
        return Metric(self.name, self.evaluator).score(trajectory, case)

    async def aevaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """Like ``evaluate_trajectory``, awaiting the evaluator's ``aevaluate`` when it has one."""
        return await Metric(self.name, self.evaluator).ascore(trajectory, case)


def explain(evaluator: object, actual: str, expected: str) -> str:
    """The evaluator's reason for its last score of this pair ('' when it gives none)."""
    explainer = getattr(evaluator, "explain", None)
    if explainer is None:
        return ""
    found = explainer(actual, expected)
    text = getattr(found, "reason", found)
    return text.strip() if isinstance(text, str) else ""


NormsInput: TypeAlias = NormEngine | type | Iterable[NormEntry]

# The state name under which each check sees the tools already called.
PERFORMED = "performed"


class NormCompliance:
    """Checks a trajectory's tool calls against norms, under the case's ``state``.

    ``norms`` is a class declaring ``@norm``s, a ``NormEngine`` or
    ``NormEntry`` records. Each call is checked against the active
    prohibitions with the case's state plus ``performed``: the names of the
    tools called before it, so that an order is a condition (no refund before
    the order is looked up: a prohibition of ``issue_refund`` under
    ``!("lookup_order" in performed)``). Then the obligations active under the
    state (with every call ``performed``) must each have been met. The score
    is 1.0 without a violation, else 0.0, and the reason names each
    violation.

    >>> from tnsai_eval.norms import NormType, norm
    >>> from tnsai_eval.records import ToolCall
    >>> @norm(type=NormType.PROHIBITION, action="issue_refund",
    ...       condition='!("lookup_order" in performed)', description="Look the order up first")
    ... class Desk: ...
    >>> run = Trajectory("Refund A1", steps=(ToolCall("issue_refund", {"order_id": "A1"}),))
    >>> print(NormCompliance(Desk).evaluate_trajectory(run, TestCase("Refund A1")).reason)
    call 1: action 'issue_refund' is prohibited: Look the order up first; \
its condition `!("lookup_order" in performed)` holds with performed=[]
    """

    def __init__(self, norms: NormsInput, *, name: str = "norms", threshold: float = 1.0) -> None:
        if isinstance(norms, NormEngine):
            engine = norms
        elif isinstance(norms, type):
            engine = NormEngine.from_class(norms)
        else:
            entries = list(norms)
            if not entries:
                raise ConfigError("NormCompliance needs at least one norm, got none")
            engine = NormEngine(entries)
        engine.check_conditions()  # a bad condition is named now, not in the first case
        self.engine = engine
        self.name = name
        self.threshold = check_threshold(threshold)

    def __repr__(self) -> str:
        return f"NormCompliance({self.engine!r})"

    def violations(self, trajectory: Trajectory, case: TestCase) -> list[tuple[int, NormViolation]]:
        """Each violation with the number of the call that broke it (0: an unmet obligation)."""
        state: dict[str, Any] = dict(case.state or {})
        if PERFORMED in state:
            raise ConfigError(
                f"a case's state may not set {PERFORMED!r}: NormCompliance sets it to the "
                "tools already called"
            )
        names = [call.name for call in trajectory.tool_calls]
        found: list[tuple[int, NormViolation]] = []
        for index, name in enumerate(names):
            checked = self.engine.check_action(name, state={**state, PERFORMED: names[:index]})
            found.extend((index + 1, violation) for violation in checked.violations)
        unmet = self.engine.check_obligations(names, state={**state, PERFORMED: names})
        found.extend((0, violation) for violation in unmet.violations)
        return found

    def evaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """1.0 when no norm is broken, else 0.0 with each violation named."""
        found = self.violations(trajectory, case)
        if not found:
            return MetricScore(1.0)
        lines = [
            f"call {number}: {violation.reason}" if number else violation.reason
            for number, violation in found
        ]
        return MetricScore(0.0, "; ".join(lines), tuple(lines))


_TRAJECTORY_RESULT_CHARS = 300


def render_trajectory(trajectory: Trajectory, case: TestCase | None = None) -> str:
    """The trajectory as text a judge reads: the task, each tool call with its result, the answer.

    >>> from tnsai_eval.records import ToolCall
    >>> print(render_trajectory(Trajectory("Where is A1?", steps=(
    ...     ToolCall("lookup_order", {"order_id": "A1"}, result={"status": "shipped"}),),
    ...     output="A1 has shipped.")))
    Task: Where is A1?
    Tool calls:
    1. lookup_order(order_id="A1") -> {"status": "shipped"}
    Final answer: A1 has shipped.
    """
    lines = [f"Task: {trajectory.input}"]
    calls = trajectory.tool_calls
    if calls:
        lines.append("Tool calls:")
        for number, call in enumerate(calls, 1):
            if call.error is not None:
                outcome = f"error: {call.error}"
            else:
                outcome = _short(call.to_dict().get("result"))
            lines.append(f"{number}. {call.describe()} -> {outcome}")
    else:
        lines.append("Tool calls: none")
    lines.append(f"Final answer: {trajectory.output}")
    if case is not None and case.expected:
        lines.append(f"Expected answer: {case.expected}")
    return "\n".join(lines)


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    cut = _TRAJECTORY_RESULT_CHARS
    return text if len(text) <= cut else text[: cut - 3] + "..."


class TrajectoryJudge:
    """A model grades the whole trajectory against a yes/no ``rubric``.

    The trajectory is shown as text (``render_trajectory``: the task, each
    tool call with its result, the final answer, the expected answer when the
    case has one) and graded by the library's ``Judge``: the probability
    share of "Yes" where the client gives log-probabilities (``LocalLLM``,
    ``OpenAIClient``), else a JSON or ``SCORE:`` reply. The score is that
    share (or grade) in [0, 1]; a reply with no readable score scores 0.0,
    with the judge's reason. A case passes at ``threshold`` (default 0.5).

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> judge = TrajectoryJudge(ScriptedLLM(default="Looked it up first.\\nSCORE: 90"),
    ...                         "Did the agent look the order up before answering?")
    >>> judge.evaluate_trajectory(Trajectory("Where is A1?", output="Shipped."), TestCase("q"))
    MetricScore(score=0.9, reason='score 0.90 (score_line): Looked it up first.', violations=())
    """

    def __init__(
        self,
        llm: LLMClient,
        rubric: str,
        *,
        name: str = "judge",
        threshold: float = 0.5,
        method: JudgeMethod | str = "auto",
        params: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(rubric, str) or not rubric.strip():
            raise ConfigError(f"rubric must be a non-blank question, got {rubric!r}")
        self.judge = Judge(llm, method=method, params=params)
        self.rubric = rubric
        self.name = name
        self.threshold = check_threshold(threshold)

    def __repr__(self) -> str:
        return f"TrajectoryJudge({self.judge.llm!r}, {self.rubric!r})"

    def evaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """The judge's score of the rendered trajectory, with its method and reason."""
        result = self.judge.grade(self.rubric, render_trajectory(trajectory, case))
        return MetricScore(0.0 if result.score is None else result.score, result.describe())

    async def aevaluate_trajectory(self, trajectory: Trajectory, case: TestCase) -> MetricScore:
        """Like ``evaluate_trajectory`` without blocking the event loop."""
        result = await self.judge.agrade(self.rubric, render_trajectory(trajectory, case))
        return MetricScore(0.0 if result.score is None else result.score, result.describe())


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class Metric:
    """One named metric of an evaluation: an evaluator, and the threshold a case passes it at.

    ``threshold`` is ``None`` for a plain ``PromptEvaluator`` that declares
    none: the run's case threshold applies. ``score(output, case)`` gives a
    ``MetricScore``: a trajectory evaluator reads the whole ``Trajectory``
    (a plain str output is a trajectory with no steps); a prompt evaluator
    reads the output text.
    """

    name: str
    evaluator: PromptEvaluator | TrajectoryEvaluator
    threshold: float | None = None

    def score(self, output: str | Trajectory, case: TestCase) -> MetricScore:
        """This metric's score of ``output`` for ``case``."""
        if isinstance(self.evaluator, TrajectoryEvaluator):
            return _finite(self.evaluator.evaluate_trajectory(_as_trajectory(output, case), case))
        text = output.output if isinstance(output, Trajectory) else output
        value = self.evaluator.evaluate(text, case.expected)
        return _finite(MetricScore(value, explain(self.evaluator, text, case.expected)))

    async def ascore(self, output: str | Trajectory, case: TestCase) -> MetricScore:
        """Like ``score``, awaiting the evaluator's async method when it has one."""
        whole = isinstance(self.evaluator, TrajectoryEvaluator)
        scorer = getattr(self.evaluator, "aevaluate_trajectory" if whole else "aevaluate", None)
        if scorer is None:
            return self.score(output, case)
        if whole:
            return _finite(await scorer(_as_trajectory(output, case), case))
        text = output.output if isinstance(output, Trajectory) else output
        value = await scorer(text, case.expected)
        return _finite(MetricScore(value, explain(self.evaluator, text, case.expected)))

    def passes(self, score: float, case_threshold: float) -> bool:
        """Whether ``score`` passes this metric (its own threshold, else ``case_threshold``)."""
        return score >= (case_threshold if self.threshold is None else self.threshold)


def _as_trajectory(output: str | Trajectory, case: TestCase) -> Trajectory:
    return output if isinstance(output, Trajectory) else Trajectory(case.input, output=output)


def _finite(found: object) -> MetricScore:
    # An evaluator's bad return value is its bug: named here, contained to the case.
    scored = found if isinstance(found, MetricScore) else MetricScore(cast(float, found))
    if not is_share(scored.score):
        raise ConfigError(f"an evaluator returned {scored.score!r}; expected a number from 0 to 1")
    return MetricScore(float(scored.score), scored.reason, tuple(map(str, scored.violations)))


def _default_name(evaluator: object) -> str:
    given = getattr(evaluator, "name", None)
    if isinstance(given, str) and given.strip():
        return given.strip()
    base = type(evaluator).__name__.removesuffix("Evaluator") or type(evaluator).__name__
    return _CAMEL.sub("_", base).lower()


def metrics_of(
    evaluator: PromptEvaluator
    | TrajectoryEvaluator
    | Sequence[PromptEvaluator | TrajectoryEvaluator],
) -> tuple[Metric, ...]:
    """The named metrics of one evaluator or a list of them, names made unique.

    A name is the evaluator's ``name`` attribute, else its class name in
    snake case without ``Evaluator`` (``TokenF1Evaluator``: ``token_f1``); a
    repeated name gets ``_2``, ``_3``...

    >>> from tnsai_eval.scoring import ContainsEvaluator, ToolCallMatch
    >>> [m.name for m in metrics_of([ToolCallMatch(), ToolCallMatch(), ContainsEvaluator()])]
    ['tool_calls_in_order', 'tool_calls_in_order_2', 'contains']
    """
    items: list[PromptEvaluator | TrajectoryEvaluator] = (
        list(evaluator) if isinstance(evaluator, list | tuple) else [evaluator]  # type: ignore[list-item]
    )
    if not items:
        raise ConfigError("evaluator= got an empty list; give at least one evaluator")
    seen: dict[str, int] = {}
    out = []
    for index, item in enumerate(items):
        if not isinstance(item, TrajectoryEvaluator) and not callable(
            getattr(item, "evaluate", None)
        ):
            raise ConfigError(
                f"evaluator[{index}] must have evaluate(actual, expected) or "
                f"evaluate_trajectory(trajectory, case), got {item!r}"
            )
        base = _default_name(item)
        count = seen[base] = seen.get(base, 0) + 1
        name = base if count == 1 else f"{base}_{count}"
        threshold = getattr(item, "threshold", None)
        if isinstance(item, TrajectoryEvaluator):
            out.append(Metric(name, item, check_threshold(threshold)))
        else:
            plain = threshold if isinstance(threshold, int | float) else None
            out.append(Metric(name, item, None if plain is None else check_threshold(plain)))
    return tuple(out)
