"""The plugin's fixtures.

Heavy imports (the norms, refinement and optimizer packages, pandas) happen
inside the fixtures, so a test suite that never uses them does not pay for
them at collection time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from tnsai_eval.pytest._keys import (
    ACTIONS_KEY,
    NORM_KEY,
    REFINE_KEY,
    REFINE_RUN_KEY,
    NormActions,
    RefineRun,
)
from tnsai_eval.pytest._markers import MarkerError, RefineSpec
from tnsai_eval.pytest._session import PluginSession, get_session

# tnsai_eval and the modules that need it are imported inside the fixtures (see
# _session for why).
if TYPE_CHECKING:
    from tnsai_eval.agents import Agent
    from tnsai_eval.datasets import CasesInput
    from tnsai_eval.evaluation import PromptEvaluation, TargetEvaluation
    from tnsai_eval.feedback import FeedbackStore
    from tnsai_eval.llm import FrontClient, LLMClient, NamedModel
    from tnsai_eval.norms import NormEngine
    from tnsai_eval.optimizer import PromptOptimizer
    from tnsai_eval.records import CaseRecord
    from tnsai_eval.refinement import RefinementResult
    from tnsai_eval.scoring import PromptEvaluator

__all__ = [
    "NormActions",
    "RefineRun",
    "agent",
    "evaluate_prompt",
    "feedback_store",
    "llm",
    "norm_actions",
    "norm_engine",
    "prompt_optimizer",
    "refine",
    "tnsai_model",
    "tnsai_record",
]


@pytest.fixture(scope="session")
def llm(pytestconfig: pytest.Config) -> FrontClient:
    """The model configured by --llm-base-url/--llm-model (else the embedded one),
    behind the response store in the --llm-record mode. Calls are counted per test."""
    from tnsai_eval.pytest._client import build_client, describe_model

    session = get_session(pytestconfig)
    base_url, model = describe_model(session.options)
    session.llm_description = {"model": model, "base_url": base_url}
    return session.adopt(build_client(session.options, session.store()))


def _session(request: pytest.FixtureRequest) -> PluginSession:
    return get_session(request.config)


@pytest.fixture
def tnsai_model(request: pytest.FixtureRequest) -> NamedModel | None:
    """The named model (``--tnsai-model``) this test runs against; None without one.

    With several ``--tnsai-model`` names the plugin parametrizes this fixture,
    so every test that uses ``evaluate_prompt`` or ``refine`` runs once per model.
    """
    named = _session(request).options.named
    name = getattr(request, "param", None) or (named.names[0] if named.models else None)
    return None if name is None else named.get(str(name))


def _client_for(
    request: pytest.FixtureRequest, llm: LLMClient, model: NamedModel | None
) -> FrontClient:
    # A named model (--tnsai-model) has a client of its own, in place of `llm`.
    session = _session(request)
    return session.front(llm) if model is None else session.named_client(model)


class RecordMetric(Protocol):
    def __call__(
        self,
        name: str,
        value: float,
        *,
        gate: bool = ...,
        higher_is_better: bool = ...,
        tolerance: float | None = ...,
        relative: bool = ...,
    ) -> None: ...


@pytest.fixture
def tnsai_record(request: pytest.FixtureRequest) -> RecordMetric:
    """``tnsai_record(name, value, gate=True, higher_is_better=True, tolerance=None,
    relative=False)``: track a metric.

    Gated metrics are compared with --tnsai-baseline; a metric named ``score``
    is the test's headline score in the summary. ``tolerance`` is this
    metric's own allowed move the wrong way (absolute, or with
    ``relative=True`` a share of the baseline: ``tolerance=0.2, relative=True``
    lets a latency grow by 20%); ``None`` uses ``--tnsai-tolerance``.
    """
    return _session(request).record_metric


@pytest.fixture
def feedback_store() -> FeedbackStore:
    """A fresh in-memory ``FeedbackStore`` for each test."""
    from tnsai_eval.feedback import FeedbackStore

    return FeedbackStore.in_memory()


@pytest.fixture
def norm_engine(request: pytest.FixtureRequest) -> NormEngine:
    """The ``NormEngine`` of the test's ``@norm_check`` mark (empty without one)."""
    from tnsai_eval.norms import NormEngine

    spec = request.node.stash.get(NORM_KEY, None)
    return NormEngine() if spec is None else spec.engine


def _actions_for(request: pytest.FixtureRequest) -> NormActions:
    stash: pytest.Stash = request.node.stash
    actions = stash.get(ACTIONS_KEY, None)
    if actions is None:
        spec = stash.get(NORM_KEY, None)
        actions = NormActions(state=dict(spec.state) if spec is not None else {})
        stash[ACTIONS_KEY] = actions
    return actions


@pytest.fixture
def norm_actions(request: pytest.FixtureRequest) -> NormActions:
    """Record actions (or watch agents) for the ``@norm_check`` of this test."""
    return _actions_for(request)


class AgentFactory(Protocol):
    def __call__(
        self, system_prompt: str = ..., tools: Any = ..., *, cls: type | None = ..., **kwargs: Any
    ) -> Agent: ...


@pytest.fixture
def agent(request: pytest.FixtureRequest, llm: LLMClient) -> AgentFactory:
    """``agent(system_prompt="", tools=None, cls=None, **kwargs)``: a new Agent on ``llm``.

    ``cls`` defaults to the ``@norm_check`` agent class when it is an ``Agent``
    subclass. Every agent made here is checked by ``@norm_check``.
    """
    from tnsai_eval.agents import Agent

    session = _session(request)
    actions = _actions_for(request)
    spec = request.node.stash.get(NORM_KEY, None)
    default_cls: type = Agent
    if spec is not None and spec.agent_class is not None and issubclass(spec.agent_class, Agent):
        default_cls = spec.agent_class

    def make(
        system_prompt: str = "", tools: Any = None, *, cls: type | None = None, **kwargs: Any
    ) -> Agent:
        made: Agent = (cls or default_cls)(session.front(llm), system_prompt, tools, **kwargs)
        actions.watch(made)
        return made

    return make


@pytest.fixture
def refine(
    request: pytest.FixtureRequest, llm: LLMClient, tnsai_model: NamedModel | None
) -> Callable[..., RefinementResult]:
    """``refine(draft, input=None, check=True, **overrides)`` -> ``RefinementResult``.

    Runs a ``RefinementLoop`` with the ``@refine_until`` criteria (``overrides``
    take the mark's keywords, ``reply_parser=`` and ``json_schema=`` included)
    on the ``llm`` fixture. ``draft`` is the first output checked, as it is (a
    model's first attempt or the text to start from); ``input`` is what the
    output is made from and is shown in every revision prompt. With
    ``check=True`` a run that does not succeed fails the test with each
    iteration's failed checks and the score progression.
    """
    from tnsai_eval.refinement import RefinementLoop

    session = _session(request)
    client = _client_for(request, llm, tnsai_model)
    run = RefineRun()
    request.node.stash[REFINE_RUN_KEY] = run
    mark_spec = request.node.stash.get(REFINE_KEY, None)

    def do_refine(
        draft: str, *, input: str | None = None, check: bool = True, **overrides: Any
    ) -> RefinementResult:
        session.touch()  # a row even if the criteria turn out to be wrong
        if "reply_parser" in overrides and overrides["reply_parser"] is None:
            overrides = {**overrides, "reply_parser": "none"}
        spec = _spec_with(mark_spec, overrides)
        loop = RefinementLoop(
            spec.task,
            spec.criteria(client),
            max_iterations=spec.max_iterations,
            timeout=spec.timeout,
            stop_hook=spec.options.get("stop"),
            chat_params=spec.options.get("chat_params"),
            reply_parser=spec.options.get("reply_parser", "auto"),
        )
        result = loop.execute(client, draft, input=input)
        run.results.append(result)
        session.record_iterations(result.iteration_count)
        metric = _free_name(session, "refine_score")
        session.record_metric(metric, result.final_score)
        session.record_refinement(replace(record, metric=metric) for record in result.iterations)
        if check and not result.is_success:
            pytest.fail(refinement_failure(result), pytrace=False)
        return result

    return do_refine


def _free_name(session: PluginSession, base: str) -> str:
    # A second call in the same test gets its own metric rather than replacing the first.
    name, k = base, 1
    while session.has_metric(name):
        k += 1
        name = f"{base}_{k}"
    return name


def _spec_with(mark_spec: RefineSpec | None, overrides: Mapping[str, Any]) -> RefineSpec:
    from tnsai_eval.pytest._markers import refine_spec

    if mark_spec is None and not overrides:
        raise pytest.UsageError(
            "refine() needs completion criteria: mark the test with @refine_until(...) "
            "or pass them as keywords, e.g. refine(draft, task=..., must_contain=...)"
        )
    # The mark's keywords as given, then the call's: one CriteriaSpec checks them all.
    kwargs: dict[str, Any] = {} if mark_spec is None else dict(mark_spec.given)
    kwargs.update(overrides)
    try:
        return refine_spec(pytest.mark.refine_until.with_args(**kwargs).mark)
    except MarkerError as exc:
        raise pytest.UsageError(str(exc).replace("@refine_until", "refine()")) from None


def refinement_failure(result: RefinementResult) -> str:
    """The failure report of an unsuccessful refinement: each iteration and its failed checks."""
    # Only on a failure; by then a refine() call has imported tnsai_eval.
    from tnsai_eval.pytest._evaluate import excerpt

    progression = " -> ".join(f"{s:.2f}" for s in result.metrics.score_progression)
    lines = [
        f"refinement did not succeed: {result.status.name} after "
        f"{result.iteration_count} iteration(s); score progression {progression or '-'}"
    ]
    if result.reason:
        lines.append(f"reason: {result.reason}")
    for record in result.iterations:
        # What was checked, so a reader sees why the checks failed on it.
        repeat = " (a repeat of an earlier output)" if record.repeated else ""
        lines.append(
            f"  iteration {record.iteration}: score {record.score:.2f}{repeat}, "
            f"output {excerpt(record.output, 80)!r}"
        )
        for check in record.failed_checks:
            lines.append(f"    x {check.name}: {excerpt(check.message, 160)}")
    lines.append(f"final output: {excerpt(result.final_output, 200)!r}")
    return "\n".join(lines)


class EvaluatePrompt(Protocol):
    def __call__(
        self,
        prompt: str | os.PathLike[str],
        cases: CasesInput,
        *,
        evaluator: PromptEvaluator | None = ...,
        min_score: float | None = ...,
        name: str | None = ...,
        case_threshold: float | None = ...,
        constrain: bool | None = ...,
        **kwargs: Any,
    ) -> PromptEvaluation: ...


@pytest.fixture
def evaluate_prompt(
    request: pytest.FixtureRequest, llm: LLMClient, tnsai_model: NamedModel | None
) -> EvaluatePrompt:
    """``evaluate_prompt(prompt, cases, *, evaluator=None, min_score=None, name=None,
    case_threshold=None, constrain=None, **options)`` -> ``PromptEvaluation``.

    Scores ``prompt`` (its text, or a ``pathlib.Path`` to a prompt file) on the
    cases (TestCases, (input, expected) pairs, a dataset name or a JSONL path)
    with the core's ``score_prompt``, as ``tnsai_eval.datasets.scoring_plan``
    resolves them: a dataset's ``NAME.meta.json`` chooses the evaluator, the case
    threshold and ``constrain`` unless given, and what it chose is printed.
    Records the mean (metric ``score``, or ``name``) and every case in the report.
    Fails the test below ``min_score`` (listing the worst cases), when a call
    failed (after every case is scored), or for unrecorded cases (naming the
    command that records them).
    """
    session = _session(request)
    # The core scores the prompt through the session's front client (the
    # store and the model), whose calls the session counts; the session's one
    # call budget is active while the test runs. A named model
    # (--tnsai-model) has a client of its own.
    client = _client_for(request, llm, tnsai_model)

    def run(
        prompt: str | os.PathLike[str],
        cases: CasesInput,
        *,
        evaluator: PromptEvaluator | None = None,
        min_score: float | None = None,
        name: str | None = None,
        case_threshold: float | None = None,
        constrain: bool | None = None,
        **options: Any,
    ) -> PromptEvaluation:
        from tnsai_eval.datasets import scoring_plan
        from tnsai_eval.evaluation import score_prompt
        from tnsai_eval.pytest._client import add_hint
        from tnsai_eval.pytest._evaluate import (
            check_min_score,
            load_prompt,
            prompt_record,
            record,
            verdict,
        )
        from tnsai_eval.pytest._progress import case_progress

        check_min_score(min_score)  # before any call: NaN would pass every score
        session.touch()  # a row even if the cases cannot be loaded
        params = options.pop("params", None)
        plan = scoring_plan(cases, evaluator=evaluator, constrain=constrain,
                            threshold=case_threshold, params=params)  # fmt: skip
        for note in plan.notes:
            print(f"evaluate_prompt: {note}")
        text, file = load_prompt(prompt, session.options.rootdir)
        if plan.params is not None:
            options["params"] = plan.params
        given_on_case = options.pop("on_case", None)
        options["concurrency"] = session.concurrency_for(options.get("concurrency"))
        label = f"{request.node.name}: {name or 'score'}"
        try:
            with case_progress(request.config, len(plan.cases), label) as step:

                def on_case(case: CaseRecord) -> None:
                    step()
                    if given_on_case is not None:
                        given_on_case(case)

                result = score_prompt(
                    client, text, plan.cases, evaluator=plan.evaluator, on_case=on_case, **options
                )
        except Exception as exc:
            add_hint(exc, session.options)
            raise
        metric = name or _free_name(session, "score")
        record(session, metric, result, plan, prompt_record(text, file, options))
        problem = verdict(result, min_score, request.node.nodeid, session)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        return result

    return run


class EvaluateTarget(Protocol):
    def __call__(
        self,
        target: Callable[..., Any],
        cases: CasesInput,
        *,
        evaluator: Any = ...,
        min_score: float | None = ...,
        name: str | None = ...,
        case_threshold: float | None = ...,
        **kwargs: Any,
    ) -> TargetEvaluation: ...


@pytest.fixture
def evaluate_target(
    request: pytest.FixtureRequest, llm: LLMClient, tnsai_model: NamedModel | None
) -> EvaluateTarget:
    """``evaluate_target(target, cases, *, evaluator=None, min_score=None, name=None,
    case_threshold=None, **options)`` -> ``TargetEvaluation``.

    Scores what the app actually runs, with the core's ``score_target``:
    ``target`` is ``fn(input) -> str | Trajectory`` (sync or async) or an
    agent factory, calling the model through the ``llm`` fixture, so its
    replies are in this test's cassette (replayed by ``--llm-record replay``)
    and its calls are counted for the test and bounded by ``--llm-max-calls``.
    ``evaluator`` is one evaluator or a list (named metrics; a case passes
    when every one passes at its threshold); a dataset's ``NAME.meta.json``
    applies as for ``evaluate_prompt``. Records the mean (metric ``score``, or
    ``name``), every case, each metric's cases when there are several
    (``<name>.<metric>``) and, as the test's prompt, the distinct system
    prompts and call parameters the target's calls sent, so a comparison with
    a baseline says whether what the app sends changed. Fails as
    ``evaluate_prompt`` does: below ``min_score``, on errored cases, on
    unrecorded ones.

    With ``--tnsai-model NAME`` the calls the target makes through ``llm``
    go to that model (``llm.routing``, around the target only: an evaluator
    that shares ``llm`` keeps it), recorded under that model, and with
    several names the test runs once per model, as ``evaluate_prompt`` does.
    ``--tnsai-repeat N`` runs it N times, each sample recorded apart.
    """
    session = _session(request)
    route: dict[FrontClient, FrontClient] = {}
    if tnsai_model is not None:
        from tnsai_eval.llm import FrontClient as Front

        if not isinstance(llm, Front):
            raise pytest.UsageError(
                f"--tnsai-model {tnsai_model.name}: the llm fixture is {llm!r} (a conftest's "
                "own client), so the calls a target makes through it cannot be sent to the "
                "named model; drop the conftest's llm or the --tnsai-model option"
            )
        # The calls are counted and recorded by the named model's client.
        route[session.adopt(llm)] = session.named_client(tnsai_model)

    def run(
        target: Callable[..., Any],
        cases: CasesInput,
        *,
        evaluator: Any = None,
        min_score: float | None = None,
        name: str | None = None,
        case_threshold: float | None = None,
        **options: Any,
    ) -> TargetEvaluation:
        from tnsai_eval.datasets import DatasetMeta, ScoringPlan, load_cases, scoring_plan
        from tnsai_eval.evaluation import score_target
        from tnsai_eval.pytest._client import add_hint
        from tnsai_eval.pytest._evaluate import check_min_score, record, target_record, verdict
        from tnsai_eval.scoring import check_threshold

        check_min_score(min_score)  # before any call: NaN would pass every score
        session.touch()  # a row even if the cases cannot be loaded
        several = isinstance(evaluator, list | tuple)
        if several:
            # Several metrics, each with its threshold: no dataset evaluator applies,
            # and a trajectory metric may not read an expected answer at all.
            threshold = 0.5 if case_threshold is None else check_threshold(case_threshold)
            plan = ScoringPlan(tuple(load_cases(cases)), None, threshold, None, DatasetMeta(), ())
        else:
            plan = scoring_plan(cases, evaluator=evaluator, threshold=case_threshold)
        for note in plan.notes:
            print(f"evaluate_target: {note}")
        options["concurrency"] = session.concurrency_for(options.get("concurrency"))
        try:
            result = score_target(
                target,
                plan.cases,
                evaluator=evaluator if several else plan.evaluator,
                case_threshold=plan.threshold,
                route=route,
                **options,
            )
        except Exception as exc:
            add_hint(exc, session.options)
            raise
        metric = name or _free_name(session, "score")
        prompt = target_record(result)
        record(session, metric, result, plan, prompt)
        if len(result.metric_cases) > 1:
            for part, records in result.metric_cases.items():
                own = result.metric_thresholds.get(part)
                session.record_cases(
                    f"{metric}.{part}",
                    records,
                    prompt,
                    threshold=plan.threshold if own is None else own,
                )
        problem = verdict(result, min_score, request.node.nodeid, session)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        return result

    return run


@pytest.fixture
def prompt_optimizer(request: pytest.FixtureRequest, llm: LLMClient) -> PromptOptimizer:
    """A ``PromptOptimizer`` on the ``llm`` fixture, with its default settings."""
    from tnsai_eval.optimizer import PromptOptimizer

    session = _session(request)
    # Its calls count towards the test and draw on --llm-max-calls, like every call.
    return PromptOptimizer(session.front(llm), budget=session.budget)
