"""score_target: the app's own code path scored case by case, against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.agents import Agent
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import score_target
from tnsai_eval.llm import Completion, FrontClient, OpenAIClient
from tnsai_eval.llm import ToolCall as Request
from tnsai_eval.norms import NormEntry, NormType
from tnsai_eval.records import CaseState
from tnsai_eval.scoring import (
    ContainsEvaluator,
    FinalAnswer,
    NormCompliance,
    TestCase,
    ToolCallMatch,
    TrajectoryEvaluator,
)
from tnsai_eval.testing import ScriptedLLM

CASES = [TestCase("France", "Paris"), TestCase("Peru", "Lima"), TestCase("Chile", "Santiago")]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture
def client(server: FakeOpenAIServer, tmp_path: Path) -> Iterator[FrontClient]:
    server.reset(default=Step.ok("Paris"))
    with OpenAIClient("m", base_url=server.base_url, max_retries=0) as http:
        yield FrontClient(http, tmp_path / "store", mode="record")


def test_a_function_target_is_scored_case_by_case_with_its_calls(
    client: FrontClient, server: FakeOpenAIServer
) -> None:
    def support_bot(text: str) -> str:  # the app's own code path, its own prompt
        messages = [
            {"role": "system", "content": "You name capitals."},
            {"role": "user", "content": f"Capital of {text}?"},
        ]
        return client.chat(messages, temperature=0).text

    result = score_target(support_bot, CASES, evaluator=ContainsEvaluator())
    assert result.scores == (1.0, 0.0, 0.0)
    assert [c.output for c in result.cases] == ["Paris"] * 3
    assert result.calls == 3 == len(server.requests)
    assert all(c.tokens > 0 and not c.cached for c in result.cases)
    assert result.prompt.endswith(":support_bot")
    assert result.systems == ("You name capitals.",)
    assert result.call_params == ('{"temperature": 0}',)


def test_an_async_target_runs_concurrently(client: FrontClient, server: FakeOpenAIServer) -> None:
    server.reset(default=Step.ok("Lima", delay=0.2))

    async def app(text: str) -> str:
        return (await client.achat(f"Capital of {text}?")).text

    result = score_target(app, CASES, evaluator=ContainsEvaluator(), concurrency=3)
    assert result.scores == (0.0, 1.0, 0.0)
    assert result.calls == 3


def test_a_raising_target_is_an_errored_case_not_a_crash(client: FrontClient) -> None:
    def app(text: str) -> str:
        if text == "Peru":
            raise KeyError("no capital for Peru")
        return client.chat(text).text

    result = score_target(app, CASES, evaluator=ContainsEvaluator())
    states = [c.state for c in result.cases]
    assert states == [CaseState.SCORED, CaseState.ERROR, CaseState.SCORED]
    failed = result.cases[1]
    assert (failed.error, failed.error_type, failed.score) == (
        "KeyError: 'no capital for Peru'",
        "KeyError",
        None,
    )
    assert score_target(lambda text: 42, CASES[:1]).cases[0].error_type == "TypeError"


def test_max_calls_bounds_the_calls_made_inside_the_target(
    client: FrontClient, server: FakeOpenAIServer
) -> None:
    server.reset(default=Step.error(503))

    def app(text: str) -> str:
        return client.chat(text).text

    result = score_target(app, [TestCase(f"q{i}", "x") for i in range(5)], max_calls=2)
    assert len(server.requests) <= 2
    assert [c.state for c in result.cases].count(CaseState.NOT_RUN) >= 3


def test_replay_makes_no_live_call_and_a_miss_is_unrecorded(
    client: FrontClient, server: FakeOpenAIServer, tmp_path: Path
) -> None:
    def app_on(llm: FrontClient) -> Any:
        def app(text: str) -> str:
            try:
                return llm.chat(f"Capital of {text}?").text
            except Exception:
                return "I do not know"  # an app that hides its failures

        return app

    score_target(app_on(client), CASES[:2], evaluator=ContainsEvaluator())
    sent = len(server.requests)
    replay = FrontClient(ScriptedLLM(model="m"), tmp_path / "store", mode="replay")
    result = score_target(app_on(replay), CASES, evaluator=ContainsEvaluator())
    assert len(server.requests) == sent  # nothing live
    assert [c.state for c in result.cases] == [
        CaseState.SCORED,
        CaseState.SCORED,
        CaseState.UNRECORDED,
    ]
    assert all(c.cached for c in result.cases[:2])
    assert result.cases[2].score is None  # never "I do not know" scored 0


def _desk_model() -> ScriptedLLM:
    def reply(messages: Any, params: dict[str, Any]) -> str | Completion:
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return Completion("", tool_calls=(Request("c1", "lookup_order", {"order_id": "A1"}),))
        return f"Your order is {results[-1]}."

    return ScriptedLLM(fn=reply)


def test_an_agent_factory_with_trajectory_metrics_and_a_changed_tool(tmp_path: Path) -> None:
    status = {"A1": "shipped"}

    def lookup_order(order_id: str) -> str:
        """Look up an order."""
        return status[order_id]

    def factory_on(llm: FrontClient) -> Any:
        return lambda: Agent(llm, "Desk.", tools=[lookup_order], send_tool_schemas=True)

    cases = [
        TestCase(
            "Where is A1?",
            "shipped",
            [{"name": "lookup_order", "arguments": {"order_id": "A1"}}],
            {"refundable": False},
        )
    ]
    metrics: list[TrajectoryEvaluator] = [
        ToolCallMatch("strict"),
        FinalAnswer(ContainsEvaluator()),
        NormCompliance([NormEntry(NormType.PROHIBITION, "refundable == false", "issue_refund")]),
    ]
    recording = FrontClient(_desk_model(), tmp_path, mode="record")
    result = score_target(factory_on(recording), cases, evaluator=metrics)
    (case,) = result.cases
    assert (case.score, case.state, result.calls) == (1.0, CaseState.SCORED, 2)
    assert {name: [c.score for c in records] for name, records in result.metric_cases.items()} == {
        "tool_calls_strict": [1.0],
        "final_answer": [1.0],
        "norms": [1.0],
    }
    assert result.trajectories[0] is not None
    assert result.trajectories[0].actions == ["lookup_order"]
    replay = FrontClient(ScriptedLLM(), tmp_path, mode="replay")
    again = score_target(factory_on(replay), cases, evaluator=metrics)
    assert (again.cases[0].state, again.cases[0].cached, again.calls) == (CaseState.SCORED, True, 0)
    status["A1"] = "delayed"  # the tool's result changed: the next request was never recorded
    changed = score_target(factory_on(replay), cases, evaluator=metrics)
    assert changed.cases[0].state is CaseState.UNRECORDED
    assert changed.cases[0].error_type == "ReplayMissError"


def test_a_failing_metric_fails_the_case_and_says_which() -> None:
    run = score_target(
        lambda text: "Lyon",
        [TestCase("France", "Paris")],
        evaluator=[ContainsEvaluator(), FinalAnswer(ContainsEvaluator())],
    )
    assert run.cases[0].score == 0.0
    assert run.cases[0].reason == "contains 0.00 fail; final_answer 0.00 fail"


def test_the_target_is_called_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> float:
        return score_target(
            str.upper, [TestCase("a", "A")], evaluator=ContainsEvaluator()
        ).mean_score

    assert asyncio.run(notebook_cell()) == 1.0


def test_route_moves_the_targets_calls_and_leaves_the_evaluators_alone() -> None:
    app = FrontClient(ScriptedLLM(default="Lima"))
    other = FrontClient(ScriptedLLM(default="Paris"))

    class SharesTheAppClient:
        """An evaluator that asks the app's client (a judge on the same model)."""

        def evaluate(self, actual: str, expected: str) -> float:
            return 1.0 if app.chat(f"is {actual} {expected}?").text == "Lima" else 0.0

    def target(text: str) -> str:
        return app.chat(text).text

    result = score_target(
        target, CASES[:2], evaluator=SharesTheAppClient(), route={app: other}, concurrency=1
    )
    assert [c.output for c in result.cases] == ["Paris", "Paris"]
    assert result.scores == (1.0, 1.0)  # the evaluator's calls were answered by `app`
    assert (other.misses, app.misses) == (2, 2)
    with pytest.raises(ConfigError, match="FrontClients"):
        score_target(target, CASES, route={ScriptedLLM(): other})  # type: ignore[dict-item]
