"""Completion.attempts / LLMError.attempts from OpenAIClient, and the call budget that
each attempt (retries included) is taken from when it is sent (against the fault-injecting
server)."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import CallBudgetExceeded, ReplayMissError, ServerError
from tnsai_eval.llm import CachedLLM, CallBudget, OpenAIClient, ResponseStore, metered_call
from tnsai_eval.testing import ScriptedLLM

FAST: dict[str, Any] = {"backoff_base": 0.0, "backoff_max": 0.0, "timeout": 2.0}


def test_a_reply_counts_its_retries(fake_server: FakeOpenAIServer) -> None:
    fake_server.script(Step.error(503), Step.ok("fine"))
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
        reply = llm.chat("hi")
    assert (reply.text, reply.attempts, len(fake_server.requests)) == ("fine", 2, 2)


def test_an_async_reply_counts_its_retries(fake_server: FakeOpenAIServer) -> None:
    fake_server.script(Step.error(503), Step.error(502), Step.ok("fine"))

    async def go() -> int:
        async with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
            return (await llm.achat("hi")).attempts

    assert asyncio.run(go()) == 3 == len(fake_server.requests)


def test_a_failed_call_carries_every_attempt(fake_server: FakeOpenAIServer) -> None:
    fake_server.reset(default=Step.error(503))
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key="", max_retries=2, **FAST)
    with llm, pytest.raises(ServerError) as caught:
        llm.chat("hi")
    assert caught.value.attempts == 3 == len(fake_server.requests)


def test_a_retry_takes_an_attempt_from_the_budget(fake_server: FakeOpenAIServer) -> None:
    fake_server.script(Step.error(503), Step.ok("fine"))
    budget = CallBudget(5)
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST)
    with llm, budget.active():
        reply = llm.chat("hi")
    assert (reply.attempts, budget.spent, len(fake_server.requests)) == (2, 2, 2)


def test_the_budget_refuses_a_retry_and_the_call_fails_at_once(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.reset(default=Step.error(503))
    budget = CallBudget(2)
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key="", max_retries=5, **FAST)
    with llm, budget.active(), pytest.raises(ServerError) as caught:
        llm.chat("hi")
    # Two attempts allowed: one retry, then no third request, not six.
    assert (caught.value.attempts, len(fake_server.requests), budget.spent) == (2, 2, 2)
    assert any("call budget" in note for note in caught.value.__notes__)


def test_a_spent_budget_raises_its_own_error_and_sends_nothing(
    fake_server: FakeOpenAIServer,
) -> None:
    budget = CallBudget(1)
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST)
    with llm, budget.active():
        llm.chat("one")
        with pytest.raises(CallBudgetExceeded) as caught:
            llm.chat("two")
    assert len(fake_server.requests) == 1
    assert (caught.value.limit, caught.value.spent) == (1, 1)
    assert "call budget of 1 attempt(s) spent" in str(caught.value)


def test_the_budget_reaches_async_calls_and_ends_with_its_block(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.reset(default=Step.error(503))

    async def go() -> tuple[int, int]:
        async with OpenAIClient(
            "m", base_url=fake_server.base_url, api_key="", max_retries=2, **FAST
        ) as llm:
            with CallBudget(1).active(), pytest.raises(ServerError) as refused:
                await llm.achat("hi")
            with pytest.raises(ServerError) as unbounded:
                await llm.achat("hi")
            return refused.value.attempts, unbounded.value.attempts

    assert asyncio.run(go()) == (1, 3)
    assert len(fake_server.requests) == 4


def test_nested_budgets_both_pay_for_each_attempt(fake_server: FakeOpenAIServer) -> None:
    session, run = CallBudget(10), CallBudget(2)
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST)
    with llm, session.active(), run.active():
        llm.chat("a")
        llm.chat("b")
        with pytest.raises(CallBudgetExceeded):
            llm.chat("c")
    # The refused attempt took nothing from the session either.
    assert (run.spent, session.spent, len(fake_server.requests)) == (2, 2, 2)


def test_a_client_that_does_not_meter_itself_is_charged_once_per_call() -> None:
    budget = CallBudget(2)
    scripted = ScriptedLLM(default="ok")
    with budget.active():
        metered_call(scripted, "a")
        metered_call(CachedLLM(scripted, tempfile.mkdtemp()), "b")  # one charge, not two
        with pytest.raises(CallBudgetExceeded):
            metered_call(scripted, "c")
    assert budget.spent == 2
    assert len(scripted.calls) == 2


class _Logging:
    """A user's wrapper that does not meter itself, around a client that does."""

    def __init__(self, inner: OpenAIClient) -> None:
        self.inner = inner
        self.seen: list[object] = []

    def chat(self, messages: Any, **params: Any) -> Any:
        self.seen.append(messages)
        return self.inner.chat(messages, **params)


def test_a_wrapper_around_openai_client_is_charged_once_per_attempt(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.script(Step.error(503), Step.ok("fine"))
    budget = CallBudget(3)
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
        wrapped = _Logging(llm)
        with budget.active():
            assert metered_call(wrapped, "a").attempts == 2
            metered_call(wrapped, "b")
            with pytest.raises(CallBudgetExceeded):
                metered_call(wrapped, "c")
    # Three requests, three attempts: the wrapper's charge is not taken again inside.
    assert budget.spent == 3 == len(fake_server.requests)
    assert wrapped.seen == ["a", "b"]


def test_store_replays_send_nothing_and_take_nothing(fake_server: FakeOpenAIServer) -> None:
    store = ResponseStore(tempfile.mkdtemp())
    budget = CallBudget(1)
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
        with budget.active():
            recorded = CachedLLM(llm, store).chat("hi")
            replayed = CachedLLM(llm, store).chat("hi")  # record mode, a hit: free
            with pytest.raises(ReplayMissError) as missed:
                CachedLLM(llm, store, mode="replay").chat("never recorded")
        assert CachedLLM(llm, store, mode="replay").is_stored("hi")
        assert not CachedLLM(llm, store, mode="replay").is_stored("never recorded")
        assert not CachedLLM(llm, store, mode="off").is_stored("hi")
    assert (recorded.attempts, replayed.attempts, replayed.cached) == (1, 0, True)
    assert missed.value.attempts == 0
    assert budget.spent == 1 == len(fake_server.requests)


def test_a_hold_keeps_attempts_for_a_later_phase() -> None:
    budget = CallBudget(4)
    budget.hold(3)
    assert [budget.try_reserve() for _ in range(2)] == [True, False]
    budget.release()
    assert [budget.try_reserve() for _ in range(4)] == [True, True, True, False]
    assert (budget.spent, budget.left) == (4, 0)


def test_a_shared_budget_counts_in_its_file(tmp_path: Any) -> None:
    first = CallBudget(3, shared=tmp_path / "calls")
    second = CallBudget(3, shared=tmp_path / "calls")  # another process's view
    assert [first.try_reserve(), second.try_reserve(), first.try_reserve()] == [True] * 3
    assert not second.try_reserve()
    assert first.spent == second.spent == 3


@pytest.mark.parametrize("limit", [-1, 1.5, True, "3"])
def test_a_bad_limit_is_a_config_error(limit: object) -> None:
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        CallBudget(limit)  # type: ignore[arg-type]
