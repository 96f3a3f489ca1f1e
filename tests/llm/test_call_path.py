"""One call path for every scorer: budgets bound every attempt (judges' too), ``concurrency`` is
honoured on a client built with defaults, and each call enters at most two client classes."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.evaluation import evaluate_models, score_prompt
from tnsai_eval.llm import CallBudget, FrontClient, ModelTable, OpenAIClient
from tnsai_eval.scoring import ContainsEvaluator, LLMJudgeEvaluator, TestCase
from tnsai_eval.testing import ScriptedLLM

CASES = [TestCase(f"question {i}", "zebra") for i in range(6)]
FAST: dict[str, Any] = {"api_key": "", "backoff_base": 0.0, "backoff_max": 0.0, "timeout": 5.0}


class ClientProbe:
    """Records the class of every object whose ``chat`` or ``achat`` a call enters."""

    def __init__(self) -> None:
        self.classes: set[str] = set()

    def _hook(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_name in ("chat", "achat"):
            owner = frame.f_locals.get("self")
            if owner is not None:
                self.classes.add(type(owner).__name__)

    def __enter__(self) -> ClientProbe:
        sys.setprofile(self._hook)
        threading.setprofile(self._hook)  # the client's worker threads, made later
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)


@pytest.fixture
def failing(fake_server: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_server.reset(default=Step.error(503))
    return fake_server


def _table(server: FakeOpenAIServer) -> ModelTable:
    return ModelTable.from_mapping({"fake": {"base_url": server.base_url, "model": "m"}})


def test_max_calls_bounds_the_attempts_of_score_prompt_against_a_failing_server(
    failing: FakeOpenAIServer,
) -> None:
    http = OpenAIClient("m", base_url=failing.base_url, max_retries=4, **FAST)
    result = score_prompt(http, "Answer.", CASES, max_calls=2, concurrency=1)
    assert len(failing.requests) == 2
    assert result.calls == 2


def test_max_calls_bounds_the_attempts_of_evaluate_models_against_a_failing_server(
    failing: FakeOpenAIServer,
) -> None:
    evaluation = evaluate_models(
        "Answer.", CASES, ["fake"], table=_table(failing), max_calls=2, progress=False,
        concurrency=1,
    )  # fmt: skip
    assert len(failing.requests) == 2
    assert evaluation.results[0].evaluation.calls == 2


def _echo() -> ScriptedLLM:
    # A distinct reply per case, so that each one is judged (a judge reuses a verdict).
    return ScriptedLLM(fn=lambda messages, params: messages[-1].content)


def test_a_judges_calls_draw_on_the_run_budget_or_on_its_own() -> None:
    task, judge = _echo(), ScriptedLLM(default="Fine.\nSCORE: 90")
    budget = CallBudget(4)
    result = score_prompt(
        task, "Answer.", CASES, evaluator=LLMJudgeEvaluator(judge), budget=budget, concurrency=1
    )
    # Two cases' calls and their two judgements spend the four attempts.
    assert budget.spent == 4
    assert (len(task.calls), len(judge.calls)) == (2, 2)
    assert [c.state.value for c in result.cases] == ["scored"] * 2 + ["not_run"] * 4
    own = CallBudget(1)
    judged = score_prompt(
        _echo(), "Answer.", CASES[:3], evaluator=LLMJudgeEvaluator(judge),
        budget=CallBudget(10), judge_budget=own,
    )  # fmt: skip
    assert own.spent == 1
    assert sorted(c.state.value for c in judged.cases) == ["error", "error", "scored"]


def test_concurrency_is_honoured_on_a_client_built_with_defaults(
    fake_server: FakeOpenAIServer,
) -> None:
    gate = threading.Event()
    fake_server.reset(default=Step(gate=gate))
    cases = [TestCase(f"q{i}", "x") for i in range(40)]
    client = FrontClient(OpenAIClient("m", base_url=fake_server.base_url, api_key=""))
    done: list[Any] = []
    worker = threading.Thread(
        target=lambda: done.append(score_prompt(client, "Answer.", cases, concurrency=32))
    )
    worker.start()
    deadline = time.monotonic() + 30.0  # a bound on the wait, not a timing check
    while fake_server.in_flight < 32 and time.monotonic() < deadline:
        time.sleep(0.01)
    gate.set()
    worker.join()
    assert fake_server.max_in_flight == 32
    assert len(done[0].cases) == 40


def test_a_call_enters_at_most_two_client_classes(fake_server: FakeOpenAIServer) -> None:
    fake_server.reset(default=Step.ok("zebra"))
    with ClientProbe() as probe:
        evaluate_models(
            "Answer.", CASES[:2], ["fake"], table=_table(fake_server),
            evaluator=ContainsEvaluator(), progress=False,
        )  # fmt: skip
    assert probe.classes == {"FrontClient", "OpenAIClient"}
    with ClientProbe() as probe:
        score_prompt(OpenAIClient("m", base_url=fake_server.base_url, api_key=""), "A.", CASES)
    assert probe.classes == {"OpenAIClient"}


@pytest.fixture(autouse=True)
def _no_profiler_left() -> Iterator[None]:
    yield
    sys.setprofile(None)
    threading.setprofile(None)
