"""``tnsai-eval chat``: one reply from the embedded model or a server."""

from __future__ import annotations

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.cli import main


@pytest.fixture(autouse=True)
def _no_tnsai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # With nothing configured, the command must fall back to the embedded model.
    for name in ("TNSAI_LLM_BASE_URL", "TNSAI_LLM_MODEL", "TNSAI_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.local_model
def test_chat_with_nothing_configured_uses_the_embedded_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["chat", "What is the capital of France? Answer in one word.", "--max-tokens", "16"]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert "paris" in out.lower()
    assert err == ""


def test_chat_against_a_server(
    fake_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_server.script(Step.ok("  Paris.\n"))
    code = main(
        [
            "chat",
            "Capital of France?",
            "--system",
            "Answer in one word.",
            "--max-tokens",
            "5",
            "--base-url",
            fake_server.base_url,
            "--model",
            "smol",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out == "Paris.\n"
    sent = fake_server.requests[0].json
    assert sent["model"] == "smol"
    assert sent["max_tokens"] == 5
    assert sent["messages"] == [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "Capital of France?"},
    ]


def test_server_taken_from_the_environment(
    fake_server: FakeOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TNSAI_LLM_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("TNSAI_LLM_MODEL", "env-model")
    assert main(["chat", "hello there"]) == 0
    assert capsys.readouterr().out == "echo: hello there\n"
    assert fake_server.requests[0].json["model"] == "env-model"


def test_base_url_without_model_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["chat", "hi", "--base-url", "http://127.0.0.1:9/v1"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.startswith("tnsai-eval chat: error: base URL 'http://127.0.0.1:9/v1'")
    assert "--model" in err


def test_a_failing_server_is_reported_without_a_traceback(
    fake_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_server.script(Step.error(400, "bad request from the test"))
    code = main(["chat", "hi", "--base-url", fake_server.base_url, "--model", "smol"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("tnsai-eval chat: error:")
    assert "400" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_max_tokens_must_be_positive(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["chat", "hi", "--max-tokens", value])
    assert info.value.code == 2
    assert f"expected a whole number >= 1, got {value!r}" in capsys.readouterr().err
