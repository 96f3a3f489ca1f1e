"""OpenAIClient against the real llama.cpp OpenAI-compatible server (embedded model)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.llm.conftest import LlamaServer
from tnsai_eval.errors import ClientRequestError
from tnsai_eval.llm import Completion, OpenAIClient

pytestmark = pytest.mark.local_model

QUESTION = "What is the capital of France? Answer in one word."


def test_sync_chat_gets_a_real_answer_with_usage(llama_server: LlamaServer) -> None:
    with OpenAIClient(llama_server.model, base_url=llama_server.base_url, timeout=60) as llm:
        completion = llm.chat(QUESTION, temperature=0, max_tokens=8, seed=0)
    assert "paris" in completion.text.lower()
    assert completion.usage.prompt_tokens > 5
    assert 0 < completion.usage.completion_tokens <= 8
    assert completion.model == llama_server.model
    assert completion.raw is not None
    assert completion.raw["choices"][0]["message"]["role"] == "assistant"


def test_async_chats_are_deterministic_at_temperature_zero_and_errors_are_typed(
    llama_server: LlamaServer,
) -> None:
    async def main() -> tuple[list[Completion], ClientRequestError]:
        async with OpenAIClient(
            llama_server.model, base_url=llama_server.base_url, timeout=60, max_concurrency=2
        ) as llm:
            replies = await asyncio.gather(
                *(llm.achat(QUESTION, temperature=0, max_tokens=8) for _ in range(2))
            )
        # A base URL without the /v1 prefix: the server answers 404, not retried.
        wrong_root = llama_server.base_url.removesuffix("/v1")
        async with OpenAIClient(llama_server.model, base_url=wrong_root) as lost:
            with pytest.raises(ClientRequestError) as caught:
                await lost.achat(QUESTION, max_tokens=8)
        return list(replies), caught.value

    replies, error = asyncio.run(main())
    assert replies[0].text == replies[1].text
    assert "paris" in replies[0].text.lower()
    assert all(r.usage.completion_tokens > 0 for r in replies)
    assert (error.status, error.attempts, error.model) == (404, 1, llama_server.model)


def test_a_server_that_does_not_come_up_in_time_is_stopped_and_named() -> None:
    import uuid

    from tnsai_eval.errors import LocalModelUnavailable
    from tnsai_eval.llm import serve_local_model

    alias = f"stop-test-{uuid.uuid4().hex}"  # names this server's process alone
    with (
        pytest.raises(LocalModelUnavailable, match=r"not ready after 0\.01 s"),
        serve_local_model(alias=alias, start_timeout=0.01),
    ):
        pass  # never reached: the server cannot load the model in 10 ms
    assert _processes_naming(alias) == []  # terminated, not left behind


def _processes_naming(text: str) -> list[str]:
    """The /proc entries whose command line contains ``text`` (Linux)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(cmdline.parent.name)
        except OSError:  # the process ended while we looked
            continue
    return found
