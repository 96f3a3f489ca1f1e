"""OpenAIClient against our fault-injecting server on 127.0.0.1: every fault ends
in the documented retry or a typed error; concurrency bounds; lifecycle."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.llm.fake_server import Drop, FakeOpenAIServer, Step, free_port
from tnsai_eval.errors import (
    BadResponseError,
    ClientRequestError,
    LLMConnectionError,
    LLMTimeoutError,
    RateLimitError,
)
from tnsai_eval.llm import Message, OpenAIClient, Usage
from tnsai_eval.llm._pools import CONNECTIONS_PER_POOL, split_slots

KEY = "sk-test-4f1c9e0b7a2d-do-not-leak"
# Tiny backoff so that retries cost milliseconds.
FAST: dict[str, Any] = {"backoff_base": 0.001, "backoff_max": 0.005, "retry_after_max": 0.05}


# -- faults from the fake server -------------------------------------------------------


def client_for(server: FakeOpenAIServer, **options: Any) -> OpenAIClient:
    settings: dict[str, Any] = {"api_key": KEY, "timeout": 1.0, "connect_timeout": 1.0, **FAST}
    settings.update(options)
    return OpenAIClient("fake-model", base_url=server.base_url, **settings)


@pytest.fixture
def llm(fake_server: FakeOpenAIServer) -> Iterator[OpenAIClient]:
    with client_for(fake_server) as client:
        yield client


def test_normal_reply_and_what_the_server_received(
    fake_server: FakeOpenAIServer, llm: OpenAIClient
) -> None:
    completion = llm.chat([Message("system", "s"), Message("user", "ping pong")], seed=1)
    assert completion.text == "echo: ping pong"
    assert completion.usage == Usage(prompt_tokens=2, completion_tokens=3)
    assert completion.model == "fake-model"
    (request,) = fake_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json["seed"] == 1


def test_429_with_retry_after_then_success(
    fake_server: FakeOpenAIServer, llm: OpenAIClient
) -> None:
    fake_server.script(Step.error(429, retry_after="0"), Step.error(429, retry_after_ms="5"))
    assert llm.chat("hello").text == "echo: hello"
    assert len(fake_server.requests) == 3


def test_429_until_retries_run_out(fake_server: FakeOpenAIServer, llm: OpenAIClient) -> None:
    fake_server.reset(default=Step.error(429, "slow down", retry_after="1"))
    with pytest.raises(RateLimitError, match="slow down") as caught:
        llm.chat("x")
    assert (caught.value.status, caught.value.attempts) == (429, 3)
    assert caught.value.retry_after == 1.0
    assert len(fake_server.requests) == 3


def test_500_then_success(fake_server: FakeOpenAIServer, llm: OpenAIClient) -> None:
    fake_server.script(Step.error(500))
    assert llm.chat("again").text == "echo: again"
    assert len(fake_server.requests) == 2


def test_malformed_json_is_a_bad_response(fake_server: FakeOpenAIServer, llm: OpenAIClient) -> None:
    fake_server.script(Step.malformed())
    with pytest.raises(BadResponseError, match="not JSON") as caught:
        llm.chat("x")
    assert (caught.value.status, caught.value.attempts) == (200, 1)
    assert len(fake_server.requests) == 1


def test_reply_slower_than_the_timeout(fake_server: FakeOpenAIServer) -> None:
    fake_server.reset(default=Step.slow(5.0))
    llm = client_for(fake_server, timeout=0.2, max_retries=1)
    with llm, pytest.raises(LLMTimeoutError, match="ReadTimeout") as caught:
        llm.chat("x")
    assert caught.value.attempts == 2
    assert len(fake_server.requests) == 2


def test_slow_first_reply_then_a_fast_retry(fake_server: FakeOpenAIServer) -> None:
    fake_server.script(Step.slow(5.0))
    with client_for(fake_server, timeout=0.2) as llm:
        assert llm.chat("x").text == "echo: x"


@pytest.mark.parametrize("where", list(Drop))
def test_dropped_connection_is_retried(
    fake_server: FakeOpenAIServer, llm: OpenAIClient, where: Drop
) -> None:
    fake_server.script(Step.dropped(where))
    assert llm.chat("x").text == "echo: x"
    assert len(fake_server.requests) == 2


@pytest.mark.parametrize("where", list(Drop))
def test_always_dropped_connection_is_a_connection_error(
    fake_server: FakeOpenAIServer, llm: OpenAIClient, where: Drop
) -> None:
    fake_server.reset(default=Step.dropped(where))
    with pytest.raises(LLMConnectionError) as caught:
        llm.chat("x")
    assert caught.value.attempts == 3
    assert caught.value.status is None


def test_nobody_listening_is_a_connection_error() -> None:
    llm = OpenAIClient("m", base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=1, **FAST)
    with llm, pytest.raises(LLMConnectionError, match="ConnectError") as caught:
        llm.chat("x")
    assert caught.value.attempts == 2


def test_wrong_base_url_is_a_404_and_not_retried(fake_server: FakeOpenAIServer) -> None:
    root = fake_server.base_url.removesuffix("/v1")
    llm = OpenAIClient("m", base_url=root, **FAST)
    with llm, pytest.raises(ClientRequestError, match="no such route") as caught:
        llm.chat("x")
    assert (caught.value.status, caught.value.attempts) == (404, 1)
    assert [r.path for r in fake_server.requests] == ["/chat/completions"]


def test_reply_without_usage(fake_server: FakeOpenAIServer, llm: OpenAIClient) -> None:
    fake_server.script(Step.ok("no counts", usage=False))
    completion = llm.chat("x")
    assert completion.text == "no counts"
    assert completion.usage == Usage()
    assert completion.raw is not None
    assert "usage" not in completion.raw


def test_async_faults_end_in_retry_or_typed_error(fake_server: FakeOpenAIServer) -> None:
    fake_server.script(
        Step.error(429, retry_after_ms="1"),
        Step.dropped(),
        Step.ok("third time"),
        Step.malformed(),
        Step.slow(5.0),
        Step.slow(5.0),
    )

    async def main() -> tuple[str, BaseException, BaseException]:
        async with client_for(fake_server, timeout=0.2, max_retries=2) as llm:
            text = (await llm.achat("x")).text
            with pytest.raises(BadResponseError) as bad:
                await llm.achat("x")
            async with client_for(fake_server, timeout=0.2, max_retries=1) as impatient:
                with pytest.raises(LLMTimeoutError) as slow:
                    await impatient.achat("x")
        return text, bad.value, slow.value

    text, bad, slow = asyncio.run(main())
    assert text == "third time"
    assert isinstance(bad, BadResponseError)
    assert bad.attempts == 1
    assert isinstance(slow, LLMTimeoutError)
    assert slow.attempts == 2
    assert len(fake_server.requests) == 6


# -- concurrency and lifecycle ---------------------------------------------------------


def _until(condition: Callable[[], bool], limit_s: float = 20.0) -> bool:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# Room for one request beyond the bound to reach the server if the bound leaked.
# (A slow machine can only hide a leak here, never fail a correct client.)
_SETTLE_S = 0.3


@pytest.mark.parametrize("limit", [2, 12])  # 12 slots: three pools of 4, one bound
def test_async_calls_respect_max_concurrency(fake_server: FakeOpenAIServer, limit: int) -> None:
    gate = threading.Event()
    fake_server.reset(default=Step(gate=gate))

    async def main() -> tuple[bool, int, list[str]]:
        async with client_for(fake_server, max_concurrency=limit, timeout=30) as llm:
            batch = asyncio.gather(*(llm.achat(f"q{i}") for i in range(2 * limit + 1)))
            full = await asyncio.to_thread(_until, lambda: fake_server.in_flight == limit)
            await asyncio.sleep(_SETTLE_S)
            peak = fake_server.max_in_flight
            gate.set()
            replies = await batch
        return full, peak, [r.text for r in replies]

    full, peak, texts = asyncio.run(main())
    assert full
    assert peak == limit
    assert texts == [f"echo: q{i}" for i in range(2 * limit + 1)]


def test_threads_respect_max_concurrency(fake_server: FakeOpenAIServer) -> None:
    gate = threading.Event()
    fake_server.reset(default=Step(gate=gate))
    llm = client_for(fake_server, max_concurrency=6, timeout=30)  # two pools of 3
    with llm, ThreadPoolExecutor(10) as pool:
        futures = [pool.submit(llm.chat, f"q{i}") for i in range(10)]
        full = _until(lambda: fake_server.in_flight == 6)
        time.sleep(_SETTLE_S)
        peak = fake_server.max_in_flight
        gate.set()
        texts = [f.result().text for f in futures]
    assert full
    assert peak == 6
    assert texts == [f"echo: q{i}" for i in range(10)]


def test_one_client_serves_several_event_loops(fake_server: FakeOpenAIServer) -> None:
    llm = client_for(fake_server)
    # Each asyncio.run is a new loop; the client must not reuse a dead loop's pool.
    first = asyncio.run(llm.achat("one"))
    second = asyncio.run(llm.achat("two"))
    assert (first.text, second.text) == ("echo: one", "echo: two")

    async def close() -> None:
        await llm.aclose()

    asyncio.run(close())


def test_sequential_calls_reuse_one_connection(fake_server: FakeOpenAIServer) -> None:
    with client_for(fake_server, max_concurrency=32) as llm:
        for _ in range(5):
            llm.chat("x")

    async def main() -> None:
        async with client_for(fake_server, max_concurrency=32) as llm:
            for _ in range(5):
                await llm.achat("x")

    asyncio.run(main())
    peers = [r.peer for r in fake_server.requests]
    assert len(set(peers[:5])) == 1
    assert len(set(peers[5:])) == 1


def test_split_slots() -> None:
    assert split_slots(1) == [1]
    assert split_slots(4) == [4]
    assert split_slots(5) == [3, 2]
    assert split_slots(18) == [4, 4, 4, 3, 3]
    assert split_slots(18, per_pool=8) == [6, 6, 6]
    for n in range(1, 100):
        slots = split_slots(n)
        assert sum(slots) == n
        assert max(slots) <= CONNECTIONS_PER_POOL
        assert max(slots) - min(slots) <= 1


def test_closed_client_refuses_calls(fake_server: FakeOpenAIServer) -> None:
    with client_for(fake_server) as llm:
        llm.chat("x")
    with pytest.raises(RuntimeError, match="closed"):
        llm.chat("x")
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(llm.achat("x"))
    llm.close()  # idempotent
