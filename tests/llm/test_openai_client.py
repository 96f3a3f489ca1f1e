"""OpenAIClient: request shape and reply parsing (MockTransport), then every fault
against our fault-injecting server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from tests.llm.fake_server import Drop, FakeOpenAIServer, Step, free_port
from tnsai_eval.errors import (
    BadResponseError,
    ClientRequestError,
    ConfigError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
    RateLimitError,
    ServerError,
)
from tnsai_eval.llm import Message, OpenAIClient, Usage
from tnsai_eval.llm._pools import CONNECTIONS_PER_POOL, split_slots
from tnsai_eval.llm._retry import RetryPolicy, is_retryable_status, parse_retry_after

KEY = "sk-test-4f1c9e0b7a2d-do-not-leak"
FAST: dict[str, Any] = {"backoff_base": 0.001, "backoff_max": 0.005, "retry_after_max": 0.05}


def reply(text: str = "hi", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
    }
    body.update(extra)
    return body


class Mock:
    """A MockTransport that answers from a list and records the requests."""

    def __init__(self, *answers: httpx.Response | Exception | dict[str, Any]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, dict):
            return httpx.Response(200, json=answer)
        return answer

    def client(self, **options: Any) -> OpenAIClient:
        settings: dict[str, Any] = {
            "base_url": "http://models.test/v1",
            "api_key": KEY,
            **FAST,
            **options,
        }
        return OpenAIClient("m", transport=self.transport, **settings)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the sync client's backoff waits instead of sleeping them."""
    slept: list[float] = []
    monkeypatch.setattr("tnsai_eval.llm._openai.time.sleep", slept.append)
    return slept


# -- request shape ---------------------------------------------------------------------


def test_posts_model_messages_and_sampling_params_to_chat_completions() -> None:
    mock = Mock(reply())
    with mock.client() as llm:
        llm.chat(
            "What is 2+2?",
            temperature=0,
            top_p=0.5,
            max_tokens=8,
            seed=3,
            stop=["\n"],
            response_format={"type": "json_object"},
            tools=[{"type": "function", "function": {"name": "f"}}],
            logprobs=None,
        )
    request = mock.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "http://models.test/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert mock.body() == {
        "model": "m",
        "messages": [{"role": "user", "content": "What is 2+2?"}],
        "temperature": 0,
        "top_p": 0.5,
        "max_tokens": 8,
        "seed": 3,
        "stop": ["\n"],
        "response_format": {"type": "json_object"},
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }


def test_message_objects_and_mappings_keep_their_extra_fields() -> None:
    mock = Mock(reply())
    tool_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    with mock.client() as llm:
        llm.chat(
            [
                Message("system", "be brief"),
                {"role": "assistant", "content": None, "tool_calls": [tool_call]},
                {"role": "tool", "content": "42", "tool_call_id": "c1"},
            ],
            model="other-model",
        )
    body = mock.body()
    assert body["model"] == "other-model"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]


def test_trailing_slash_in_base_url_is_ignored_and_no_key_means_no_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TNSAI_LLM_API_KEY", raising=False)
    mock = Mock(reply())
    with OpenAIClient("m", base_url="http://h:1/v1/", transport=mock.transport) as llm:
        llm.chat("x")
    assert str(mock.requests[0].url) == "http://h:1/v1/chat/completions"
    assert "authorization" not in mock.requests[0].headers


@pytest.mark.parametrize(
    ("messages", "params", "fragment"),
    [
        ([], {}, "must not be empty"),
        ([{"role": "wizard", "content": "x"}], {}, "'wizard'"),
        ([{"content": "x"}], {}, "'role' and 'content'"),
        ("x", {"stream": True}, "stream=True"),
        ("x", {"temperature": object()}, "not JSON-serializable"),
        ("x", {"temperature": float("nan")}, "not JSON-serializable"),
    ],
)
def test_bad_input_raises_config_error_before_any_request(
    messages: Any, params: dict[str, Any], fragment: str
) -> None:
    mock = Mock(reply())
    with mock.client() as llm, pytest.raises(ConfigError, match=fragment):
        llm.chat(messages, **params)
    assert mock.requests == []


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"base_url": "127.0.0.1:8080/v1"}, "http"),
        ({"base_url": "ftp://h/v1"}, "http"),
        ({"base_url": "http://h/v1?x=1"}, "query"),
        ({"timeout": 0}, "timeout"),
        ({"connect_timeout": -1}, "connect_timeout"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_retries": -1}, "max_retries"),
        ({"backoff_base": float("inf")}, "backoff_base"),
        ({"model": "  "}, "model"),
    ],
)
def test_bad_options_raise_config_error_naming_them(options: dict[str, Any], fragment: str) -> None:
    settings: dict[str, Any] = {"model": "m", **options}
    with pytest.raises(ConfigError, match=fragment):
        OpenAIClient(**settings)


# -- reply parsing ---------------------------------------------------------------------


def test_completion_carries_text_usage_reply_model_raw_and_latency() -> None:
    body = reply("four")
    with Mock(body).client() as llm:
        completion = llm.chat("2+2?")
    assert completion.text == "four"
    assert completion.usage == Usage(7, 2)
    assert completion.model == "served-model"
    assert completion.raw == body
    assert completion.latency_s > 0
    assert completion.cached is False


@pytest.mark.parametrize("usage", [None, "absent", {"prompt_tokens": "x"}])
def test_missing_or_odd_usage_gives_zero_usage(usage: Any) -> None:
    body = reply("ok")
    if usage == "absent":
        del body["usage"]
    else:
        body["usage"] = usage
    with Mock(body).client() as llm:
        assert llm.chat("x").usage == Usage()


def test_tool_call_reply_has_empty_text_and_keeps_the_calls_in_raw() -> None:
    body = reply()
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [{}]}
    del body["model"]
    with Mock(body).client() as llm:
        completion = llm.chat("x")
    assert completion.text == ""
    assert completion.model == "m"  # the reply named none: the request's
    assert completion.raw is not None
    assert completion.raw["choices"][0]["message"]["tool_calls"] == [{}]


@pytest.mark.parametrize(
    ("response", "fragment"),
    [
        (httpx.Response(200, content=b"<html>oops</html>"), "not JSON"),
        (httpx.Response(200, content=b"\xff\xfe"), "not JSON"),
        (httpx.Response(200, json=[1, 2]), "JSON list"),
        (httpx.Response(200, json={"choices": []}), "no choices"),
        (httpx.Response(200, json={"choices": [{"text": "legacy"}]}), "no choices"),
        (httpx.Response(200, json={"error": {"message": "model overloaded"}}), "overloaded"),
        (httpx.Response(200, json=reply(text=[1])), "content is a list"),  # type: ignore[arg-type]
        (httpx.Response(302, headers={"location": "/elsewhere"}), "HTTP 302"),
    ],
)
def test_unusable_replies_raise_bad_response_without_retry(
    response: httpx.Response, fragment: str
) -> None:
    mock = Mock(response)
    with mock.client() as llm, pytest.raises(BadResponseError, match=fragment) as caught:
        llm.chat("x")
    assert caught.value.attempts == 1
    assert caught.value.status == response.status_code
    assert caught.value.model == "m"
    assert len(mock.requests) == 1


def test_body_that_cannot_be_decompressed_is_a_bad_response() -> None:
    body = httpx.ByteStream(b"not gzip")  # a stream: httpx decodes it only when read
    mock = Mock(httpx.Response(200, stream=body, headers={"content-encoding": "gzip"}))
    with mock.client() as llm, pytest.raises(BadResponseError, match="DecodingError") as caught:
        llm.chat("x")
    assert caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, httpx.DecodingError)


def test_credentials_in_base_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(ConfigError, match="credentials") as caught:
        OpenAIClient("m", base_url="http://me:hunter2@h/v1")
    assert "hunter2" not in str(caught.value)


# -- status handling and retries (MockTransport) --------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_not_retried(status: int, no_sleep: list[float]) -> None:
    mock = Mock(httpx.Response(status, json={"error": {"message": "you did wrong"}}))
    with mock.client() as llm, pytest.raises(ClientRequestError, match="you did wrong") as caught:
        llm.chat("x")
    assert (caught.value.status, caught.value.attempts, caught.value.model) == (status, 1, "m")
    assert len(mock.requests) == 1
    assert no_sleep == []


@pytest.mark.parametrize(
    ("status", "error"),
    [(429, RateLimitError), (408, ServerError), (409, ServerError), (500, ServerError)],
)
def test_retryable_statuses_are_retried_then_raise_typed_errors(
    status: int, error: type[LLMError], no_sleep: list[float]
) -> None:
    mock = Mock(httpx.Response(status, json={"error": {"message": "busy"}}))
    with mock.client(max_retries=2) as llm, pytest.raises(error) as caught:
        llm.chat("x")
    assert caught.value.status == status
    assert caught.value.attempts == 3
    assert caught.value.retryable
    assert len(mock.requests) == 3
    assert len(no_sleep) == 2


def test_a_retry_that_succeeds_returns_the_reply(no_sleep: list[float]) -> None:
    mock = Mock(httpx.Response(503), httpx.Response(502), reply("finally"))
    with mock.client() as llm:
        assert llm.chat("x").text == "finally"
    assert len(mock.requests) == 3
    assert all(0 < wait <= FAST["backoff_max"] for wait in no_sleep)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "20", "retry-after": "9"}, 0.02),
        ({"retry-after": "0.03"}, 0.03),
        ({"retry-after": "3600"}, 0.05),  # capped by retry_after_max
    ],
)
def test_retry_after_headers_set_the_wait(
    headers: dict[str, str], expected: float, no_sleep: list[float]
) -> None:
    mock = Mock(httpx.Response(429, headers=headers), reply())
    with mock.client() as llm:
        llm.chat("x")
    assert no_sleep == [pytest.approx(expected)]


def test_max_retries_zero_means_one_attempt(no_sleep: list[float]) -> None:
    mock = Mock(httpx.Response(500))
    with mock.client(max_retries=0) as llm, pytest.raises(ServerError) as caught:
        llm.chat("x")
    assert caught.value.attempts == 1
    assert no_sleep == []


@pytest.mark.parametrize(
    ("exc", "error"),
    [
        (httpx.ConnectError("refused"), LLMConnectionError),
        (httpx.RemoteProtocolError("server hung up"), LLMConnectionError),
        (httpx.ReadError("reset"), LLMConnectionError),
        (httpx.ConnectTimeout("slow connect"), LLMTimeoutError),
        (httpx.ReadTimeout("slow read"), LLMTimeoutError),
        (httpx.PoolTimeout("no connection"), LLMTimeoutError),
    ],
)
def test_transport_failures_are_retried_then_typed(
    exc: Exception, error: type[LLMError], no_sleep: list[float]
) -> None:
    mock = Mock(exc)
    with mock.client(max_retries=1) as llm, pytest.raises(error) as caught:
        llm.chat("x")
    assert caught.value.status is None
    assert caught.value.attempts == 2
    assert caught.value.__cause__ is exc
    assert type(exc).__name__ in str(caught.value)
    assert len(mock.requests) == 2


def test_async_path_retries_and_parses_like_the_sync_one() -> None:
    mock = Mock(httpx.Response(429, headers={"retry-after-ms": "1"}), reply("async hi"))

    async def main() -> Any:
        async with mock.client() as llm:
            return await llm.achat("x", temperature=0)

    completion = asyncio.run(main())
    assert completion.text == "async hi"
    assert len(mock.requests) == 2
    assert mock.body()["temperature"] == 0


def test_transport_of_the_wrong_kind_is_a_config_error() -> None:
    class SyncOnly(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=reply())

    llm = OpenAIClient("m", base_url="http://h/v1", transport=SyncOnly())
    assert llm.chat("x").text == "hi"
    with pytest.raises(ConfigError, match="sync only"):
        asyncio.run(llm.achat("x"))
    llm.close()


# -- policy ----------------------------------------------------------------------------


def test_statuses_worth_retrying() -> None:
    statuses = (400, 401, 404, 408, 409, 422, 429, 500, 503, 599)
    assert [s for s in statuses if is_retryable_status(s)] == [408, 409, 429, 500, 503, 599]


def test_parse_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After-Ms": "1500"})) == 1.5
    assert parse_retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after": later}), now=now.timestamp()) == 30.0
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(httpx.Headers({"retry-after": past}), now=now.timestamp()) == 0.0
    for junk in ("soon", "-3", "nan", "inf", ""):
        assert parse_retry_after(httpx.Headers({"retry-after": junk})) is None
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "x", "retry-after": "2"})) == 2.0
    assert parse_retry_after(httpx.Headers()) is None


def test_backoff_grows_is_capped_and_jittered() -> None:
    policy = RetryPolicy(max_retries=10, backoff_base=0.5, backoff_max=4.0)
    lows = [policy.delay(n, rng=_FixedRandom(0.0)) for n in range(1, 7)]
    highs = [policy.delay(n, rng=_FixedRandom(1.0)) for n in range(1, 7)]
    assert highs == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert lows == [h / 2 for h in highs]
    assert policy.delay(1000, rng=_FixedRandom(1.0)) == 4.0  # no overflow
    assert policy.delay(1, retry_after=100.0) == 60.0


class _FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


# -- the API key never leaks -----------------------------------------------------------


def test_key_comes_from_env_and_openai_key_only_goes_to_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TNSAI_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json=reply())

    transport = httpx.MockTransport(handler)
    for base_url in ("https://api.openai.com/v1", "http://127.0.0.1:9/v1"):
        with OpenAIClient("m", base_url=base_url, transport=transport) as llm:
            llm.chat("x")
    monkeypatch.setenv("TNSAI_LLM_API_KEY", "sk-tnsai")
    with OpenAIClient("m", base_url="http://127.0.0.1:9/v1", transport=transport) as llm:
        llm.chat("x")
    assert seen == ["Bearer sk-openai", None, "Bearer sk-tnsai"]


def test_key_never_appears_in_errors_logs_reprs_or_replies(
    fake_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    def echo_auth(request: Any) -> dict[str, Any]:
        # Some servers echo the credential back in their error message.
        return {"error": {"message": f"bad key {request.headers['authorization']}"}}

    fake_server.script(
        Step(status=503, body=echo_auth),
        Step(status=401, body=echo_auth),
        Step.ok(),
    )
    caplog.set_level(logging.DEBUG)
    llm = OpenAIClient("m", base_url=fake_server.base_url, api_key=KEY, **FAST)
    with pytest.raises(ClientRequestError) as caught:
        llm.chat("x")
    completion = llm.chat("x")
    error = caught.value
    exposed = [
        str(error),
        repr(error),
        repr(error.args),
        caplog.text,
        repr(llm),
        repr(vars(llm)),
        repr(completion),
        json.dumps(completion.raw),
    ]
    # The key was sent and echoed, so the scrubbing is what keeps it out.
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "bad key Bearer ***" in str(error)
    assert "retrying" in caplog.text
    for text in exposed:
        assert KEY not in text
    llm.close()


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
