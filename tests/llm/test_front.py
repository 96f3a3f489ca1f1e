"""FrontClient: one client per model, its events, and the sample and case context."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import CallBudgetExceeded, ConfigError, ReplayMissError, ServerError
from tnsai_eval.llm import (
    CallBudget,
    CallEvent,
    FrontClient,
    OpenAIClient,
    ResponseStore,
    StoredRequest,
    Usage,
    current_case,
    running_case,
    sampling,
)
from tnsai_eval.testing import ScriptedLLM


def test_each_completed_replayed_or_failed_call_emits_one_event(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    model = ScriptedLLM(["Paris", RuntimeError("down")], usage=Usage(7, 2), model="smol")
    client = FrontClient(model, store)
    events: list[CallEvent] = []
    with client.subscribe(events.append):
        client.chat("Capital of France?")
        client.chat("Capital of France?")  # from the store
        with pytest.raises(RuntimeError):
            client.chat("Capital of Peru?")
    client.chat("Capital of France?")  # the subscription has ended
    live, stored, failed = events
    assert (live.model, live.cached, live.attempts, live.prompt_tokens, live.completion_tokens) == (
        "smol", False, 1, 7, 2,
    )  # fmt: skip
    assert (stored.cached, stored.attempts, stored.latency_s, stored.total_tokens) == (
        True, 0, 0.0, 9,
    )  # fmt: skip
    assert live.live
    assert not stored.live
    assert not failed.live
    assert isinstance(failed.error, RuntimeError)
    assert len(events) == 3


def test_a_reply_without_usage_is_counted_by_the_one_rule() -> None:
    events: list[CallEvent] = []
    client = FrontClient(ScriptedLLM(default="Paris"))
    client.subscribe(events.append)
    client.chat("Capital of France?")
    assert (events[0].prompt_tokens, events[0].completion_tokens) == (5, 2)


def test_the_case_and_the_sample_are_context_that_reaches_the_event_and_the_key(
    tmp_path: Path,
) -> None:
    store = ResponseStore(tmp_path)
    model = ScriptedLLM(["a", "b"], model="m")
    client = FrontClient(model, store)
    events: list[CallEvent] = []
    client.subscribe(events.append)

    async def in_a_task() -> str:
        # The context follows the call into tasks (and worker threads).
        return (await client.achat("q")).text

    with running_case("case-7"):
        assert client.chat("q").text == "a"
        with client.sample(1):
            assert asyncio.run(in_a_task()) == "b"
    assert current_case() is None
    assert [(e.case_id, e.sample, e.cached) for e in events] == [
        ("case-7", 0, False),
        ("case-7", 1, False),
    ]
    # The sample is part of the store key, never of the request sent.
    assert [call.params for call in model.calls] == [{}, {}]
    with sampling(1):
        assert client.is_stored("q")
    assert store.find(StoredRequest.build("m", "q", {}, sample=1)) is not None


def test_a_factory_is_called_on_the_first_call_that_reaches_the_model(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    FrontClient(ScriptedLLM(["Paris"], model="m"), store).chat("q")
    made: list[ScriptedLLM] = []

    def factory() -> ScriptedLLM:
        made.append(ScriptedLLM(["Rome"], model="m"))
        return made[-1]

    client = FrontClient(factory=factory, store=store, mode="replay", model="m")
    assert client.chat("q").text == "Paris"
    assert made == []
    assert not client.made
    with pytest.raises(ReplayMissError):
        client.chat("other")
    assert made == []
    live = FrontClient(factory=factory, store=store, model="m")
    assert live.chat("other").text == "Rome"
    assert len(made) == 1
    assert live.made


def test_a_factory_needs_the_model_name_and_one_source() -> None:
    with pytest.raises(ConfigError, match="model="):
        FrontClient(factory=ScriptedLLM)
    with pytest.raises(ConfigError, match="not both"):
        FrontClient(ScriptedLLM(), factory=ScriptedLLM, model="m")


def test_its_budget_bounds_every_call_and_a_stored_reply_takes_nothing(tmp_path: Path) -> None:
    budget = CallBudget(1)
    store = ResponseStore(tmp_path)
    client = FrontClient(ScriptedLLM(default="x"), store, budget=budget)
    client.chat("one")
    client.chat("one")  # stored
    with pytest.raises(CallBudgetExceeded):
        client.chat("two")
    assert budget.spent == 1


def test_retries_are_counted_once_through_the_front_client(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.script(*[Step.error(503)] * 10)
    budget = CallBudget(2)
    http = OpenAIClient("m", base_url=fake_server.base_url, max_retries=4, backoff_base=0.0)
    events: list[CallEvent] = []
    client = FrontClient(http, budget=budget)
    client.subscribe(events.append)
    with pytest.raises(ServerError):
        client.chat("hi")
    assert len(fake_server.requests) == 2
    assert budget.spent == 2
    assert (events[0].attempts, type(events[0].error)) == (2, ServerError)


def test_ensure_concurrency_reaches_a_client_made_later(fake_server: FakeOpenAIServer) -> None:
    client = FrontClient(
        factory=lambda: OpenAIClient("m", base_url=fake_server.base_url), model="m"
    )
    client.ensure_concurrency(40)
    made = client.client
    assert isinstance(made, OpenAIClient)
    assert made.max_concurrency == 40
