"""default_llm(): explicit arguments, then TNSAI_LLM_* variables, then the embedded model."""

from __future__ import annotations

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import LocalLLM, default_llm
from tnsai_eval.llm._openai import OpenAIClient

URL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def _no_tnsai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TNSAI_LLM_BASE_URL", "TNSAI_LLM_MODEL", "TNSAI_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_explicit_url_and_model_give_an_http_client() -> None:
    client = default_llm(base_url=URL, model="smol", environ={})
    assert isinstance(client, OpenAIClient)
    assert (client.model, client.base_url) == ("smol", URL)


def test_environment_variables_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TNSAI_LLM_BASE_URL", URL)
    monkeypatch.setenv("TNSAI_LLM_MODEL", "from-env")
    client = default_llm()
    assert isinstance(client, OpenAIClient)
    assert (client.model, client.base_url) == ("from-env", URL)


def test_arguments_override_the_environment() -> None:
    env = {"TNSAI_LLM_BASE_URL": "http://10.0.0.1:1/v1", "TNSAI_LLM_MODEL": "env-model"}
    client = default_llm(model="arg-model", environ=env)
    assert isinstance(client, OpenAIClient)
    assert (client.model, client.base_url) == ("arg-model", "http://10.0.0.1:1/v1")
    client = default_llm(base_url=URL, environ=env)
    assert isinstance(client, OpenAIClient)
    assert (client.model, client.base_url) == ("env-model", URL)


def test_url_without_model_names_what_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"base URL 'http://127\.0\.0\.1:9/v1'.*TNSAI_LLM_MODEL"):
        default_llm(base_url=URL, environ={})


def test_model_without_url_names_what_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"model 'smol'.*no base URL.*TNSAI_LLM_BASE_URL"):
        default_llm(environ={"TNSAI_LLM_MODEL": "smol", "TNSAI_LLM_BASE_URL": ""})


def test_api_key_reaches_the_server_but_not_the_repr(fake_server: FakeOpenAIServer) -> None:
    env = {"TNSAI_LLM_API_KEY": "sk-from-env-123"}
    client = default_llm(base_url=fake_server.base_url, model="smol", environ=env)
    assert isinstance(client, OpenAIClient)
    try:
        reply = client.chat("ping")
    finally:
        client.close()
    assert reply.text == "echo: ping"
    assert reply.model == "smol"
    assert fake_server.requests[0].headers["authorization"] == "Bearer sk-from-env-123"
    assert "sk-from-env-123" not in repr(client)


@pytest.mark.local_model
def test_nothing_configured_gives_the_embedded_model() -> None:
    client = default_llm(environ={"TNSAI_LLM_API_KEY": "ignored without a server"})
    assert isinstance(client, LocalLLM)
    assert client.model == "SmolLM2-135M-Instruct.Q4_1"
