"""OpenAIClient units over httpx.MockTransport: request shape, reply parsing,
status handling, retry policy, and that the API key never leaks.

Faults over a real socket are in test_openai_faults.py."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
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
from tnsai_eval.llm import Message, OpenAIClient, ToolCall, Usage
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
def no_sleep() -> list[float]:
    """Where a client made with ``sleep=no_sleep.append`` records its backoff waits."""
    return []


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


def test_sends_httpx_default_headers_and_ours_on_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Requests go straight to the client's transport (no httpx.Client.send):
    # the headers must still be httpx's defaults merged with ours, every time.
    monkeypatch.setenv("TNSAI_LLM_API_KEY", "sk-test-headers")
    mock = Mock(reply())
    with OpenAIClient("m", base_url="http://h:1/v1", transport=mock.transport) as llm:
        llm.chat("one")
        llm.chat("two")
    for request in mock.requests:
        assert request.headers["authorization"] == "Bearer sk-test-headers"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["host"] == "h:1"
        assert request.headers["user-agent"] == "tnsai-eval"
        assert request.headers["accept-encoding"]  # httpx's default, kept
        assert int(request.headers["content-length"]) == len(request.content)
    assert [json.loads(r.content)["messages"][0]["content"] for r in mock.requests] == [
        "one",
        "two",
    ]


def test_a_proxy_named_in_the_environment_carries_the_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fake server stands in for the proxy: the host below does not
    # exist, so only a request sent through the proxy can be answered.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeOpenAIServer() as proxy:
        proxy.script(Step.ok("through the proxy"))
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))
        with OpenAIClient("m", base_url="http://llm.invalid/v1", max_retries=0) as llm:
            assert llm.chat("hi").text == "through the proxy"
    assert [r.path for r in proxy.requests] == ["http://llm.invalid/v1/chat/completions"]


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


def test_tool_call_reply_has_empty_text_and_decoded_calls() -> None:
    body = reply()
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
    body["choices"][0]["finish_reason"] = "tool_calls"
    del body["model"]
    with Mock(body).client() as llm:
        completion = llm.chat("x")
    assert completion.text == ""
    assert completion.model == "m"  # the reply named none: the request's
    assert completion.finish_reason == "tool_calls"
    assert completion.tool_calls == (ToolCall("c1", "f", {"a": 1}),)


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
    with (
        mock.client(sleep=no_sleep.append) as llm,
        pytest.raises(ClientRequestError, match="you did wrong") as caught,
    ):
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
    with mock.client(sleep=no_sleep.append, max_retries=2) as llm, pytest.raises(error) as caught:
        llm.chat("x")
    assert caught.value.status == status
    assert caught.value.attempts == 3
    assert caught.value.retryable
    assert len(mock.requests) == 3
    assert len(no_sleep) == 2


def test_a_retry_that_succeeds_returns_the_reply(no_sleep: list[float]) -> None:
    mock = Mock(httpx.Response(503), httpx.Response(502), reply("finally"))
    with mock.client(sleep=no_sleep.append) as llm:
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
    with mock.client(sleep=no_sleep.append) as llm:
        llm.chat("x")
    assert no_sleep == [pytest.approx(expected)]


def test_max_retries_zero_means_one_attempt(no_sleep: list[float]) -> None:
    mock = Mock(httpx.Response(500))
    with (
        mock.client(sleep=no_sleep.append, max_retries=0) as llm,
        pytest.raises(ServerError) as caught,
    ):
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
    with mock.client(sleep=no_sleep.append, max_retries=1) as llm, pytest.raises(error) as caught:
        llm.chat("x")
    assert caught.value.status is None
    assert caught.value.attempts == 2
    assert caught.value.__cause__ is exc
    assert type(exc).__name__ in str(caught.value)
    assert len(mock.requests) == 2


def test_async_path_retries_and_parses_like_the_sync_one() -> None:
    mock = Mock(httpx.Response(429, headers={"retry-after-ms": "1"}), reply("async hi"))
    waits: list[float] = []

    async def main() -> Any:
        async with mock.client(sleep=waits.append) as llm:
            return await llm.achat("x", temperature=0)

    completion = asyncio.run(main())
    assert completion.text == "async hi"
    assert len(mock.requests) == 2
    assert waits == [pytest.approx(0.001)]  # the server's retry-after-ms: one retry loop
    assert mock.body()["temperature"] == 0


def test_achat_uses_the_sync_transport_and_an_async_only_one_is_refused() -> None:
    class SyncOnly(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=reply())

    llm = OpenAIClient("m", base_url="http://h/v1", transport=SyncOnly())
    # achat runs chat on a worker thread: one transport serves both.
    assert llm.chat("x").text == "hi"
    assert asyncio.run(llm.achat("x")).text == "hi"
    llm.close()

    class AsyncOnly(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json=reply())

    wrong = OpenAIClient("m", base_url="http://h/v1", transport=AsyncOnly())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="AsyncOnly is async only"):
        wrong.chat("x")
    with pytest.raises(ConfigError, match="AsyncOnly is async only"):
        asyncio.run(wrong.achat("x"))
    wrong.close()


def test_achat_keeps_the_callers_context_and_never_blocks_the_loop() -> None:
    import contextvars

    seen = contextvars.ContextVar("seen", default="unset")
    entered = threading.Event()
    release = threading.Event()
    values: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        values.append(seen.get())
        entered.set()
        release.wait(10)
        return httpx.Response(200, json=reply())

    llm = OpenAIClient("m", base_url="http://h/v1", transport=httpx.MockTransport(handler))

    async def main() -> str:
        seen.set("caller's")
        call = asyncio.ensure_future(llm.achat("x"))
        # The loop keeps running while the request waits in the transport.
        while not entered.is_set():
            await asyncio.sleep(0.01)
        assert not call.done()
        release.set()
        return (await call).text

    assert asyncio.run(main()) == "hi"
    assert values == ["caller's"]
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
