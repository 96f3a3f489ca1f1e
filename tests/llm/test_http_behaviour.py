"""OpenAIClient sends through httpx's public client API, so httpx's own behaviour holds:
a cookie the server sets is sent back (whichever connection pool a request takes), and a
proxy named in the environment carries the requests. Against real servers on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step, free_port
from tnsai_eval.llm import OpenAIClient

FAST: dict[str, Any] = {"backoff_base": 0.0, "backoff_max": 0.0, "timeout": 5.0}
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def _wait_for(condition: Any, limit_s: float = 20.0) -> None:
    # A bounded wait for the server to see what the test arranged, not a timing check.
    deadline = time.monotonic() + limit_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_cookie_the_server_sets_is_sent_back_from_every_pool(
    fake_server: FakeOpenAIServer,
) -> None:
    gate = threading.Event()
    fake_server.reset(default=Step(gate=gate))
    fake_server.script(Step(headers={"Set-Cookie": "affinity=node-7; Path=/"}))
    # 16 slots are 4 pools of 4: eight requests at once spread over several pools.
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
        llm.chat("first")
        threads = [threading.Thread(target=llm.chat, args=(f"q{i}",)) for i in range(8)]
        for thread in threads:
            thread.start()
        _wait_for(lambda: fake_server.in_flight >= 8)
        gate.set()
        for thread in threads:
            thread.join()
    requests = fake_server.requests
    assert "cookie" not in requests[0].headers
    assert len(requests) == 9
    assert fake_server.max_in_flight == 8
    assert {r.headers.get("cookie") for r in requests[1:]} == {"affinity=node-7"}


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_a_proxy_from_the_environment_carries_the_requests(
    fake_server: FakeOpenAIServer, proxy_env: pytest.MonkeyPatch
) -> None:
    # Nothing listens at the model's address: a reply can only come through the proxy
    # (the fake server, which answers a proxied request like a direct one).
    target = f"http://127.0.0.1:{free_port()}/v1"
    proxy_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{fake_server.port}")
    with OpenAIClient("m", base_url=target, api_key="sk-proxy-test", **FAST) as llm:
        reply = llm.chat("through the proxy")
    assert reply.text == "echo: through the proxy"
    (request,) = fake_server.requests
    # A proxied request names the absolute URL it is for.
    assert request.path == f"{target}/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-proxy-test"


def test_no_proxy_in_the_environment_means_a_direct_connection(
    fake_server: FakeOpenAIServer, proxy_env: pytest.MonkeyPatch
) -> None:
    proxy_env.setenv("HTTP_PROXY", f"http://127.0.0.1:{free_port()}")  # nothing listens
    proxy_env.setenv("NO_PROXY", "127.0.0.1")
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="", **FAST) as llm:
        assert llm.chat("direct").text == "echo: direct"
    assert fake_server.requests[0].path == "/v1/chat/completions"
