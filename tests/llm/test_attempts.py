"""Completion.attempts / LLMError.attempts from OpenAIClient, and the attempt gate
that lets a caller's request budget refuse a retry (against the fault-injecting server)."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import ReplayMissError, ServerError
from tnsai_eval.llm import CachedLLM, OpenAIClient, ResponseStore, attempt_gate

FAST: dict[str, Any] = {"backoff_base": 0.0, "backoff_max": 0.0, "timeout": 2.0}


class Refuse:
    def __init__(self, allow: int) -> None:
        self.allow = allow
        self.asked = 0

    def allow_retry(self) -> bool:
        self.asked += 1
        if self.allow > 0:
            self.allow -= 1
            return True
        return False


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


def test_the_gate_refuses_a_retry_and_the_call_fails_at_once(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.reset(default=Step.error(503))
    gate = Refuse(allow=1)
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key="", max_retries=5, **FAST)
    with llm, attempt_gate(gate), pytest.raises(ServerError) as caught:
        llm.chat("hi")
    # One retry granted, the second refused: two requests, not six.
    assert (caught.value.attempts, len(fake_server.requests), gate.asked) == (2, 2, 2)


def test_the_gate_reaches_async_calls_and_ends_with_its_block(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.reset(default=Step.error(503))

    async def go() -> tuple[int, int]:
        async with OpenAIClient(
            "m", base_url=fake_server.base_url, api_key="", max_retries=2, **FAST
        ) as llm:
            with attempt_gate(Refuse(allow=0)), pytest.raises(ServerError) as refused:
                await llm.achat("hi")
            with pytest.raises(ServerError) as ungated:
                await llm.achat("hi")
            return refused.value.attempts, ungated.value.attempts

    assert asyncio.run(go()) == (1, 3)
    assert len(fake_server.requests) == 4


def test_store_replays_send_nothing_and_say_zero_attempts(fake_server: FakeOpenAIServer) -> None:
    store = ResponseStore(tempfile.mkdtemp())
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
        recorded = CachedLLM(llm, store).chat("hi")
        replayed = CachedLLM(llm, store, mode="replay").chat("hi")
        with pytest.raises(ReplayMissError) as missed:
            CachedLLM(llm, store, mode="replay").chat("never recorded")
    assert (recorded.attempts, replayed.attempts, replayed.cached) == (1, 0, True)
    assert missed.value.attempts == 0
    assert len(fake_server.requests) == 1
