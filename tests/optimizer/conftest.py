"""Fakes shared by the optimizer tests: scripted models whose replies depend on the request only."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tnsai_eval.llm import Completion, Message, MessagesInput, OpenAIClient, last_user_message
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM

REWRITE_MARK = "You improve prompts"


def split_message(text: str) -> tuple[str, str]:
    """(prompt, input) of a case call made with the default template."""
    prompt, _, case_input = text.rpartition("\n\n")
    return prompt, case_input


def answer_when(
    marker: str, answers: dict[str, str], *, wrong: str = "no idea"
) -> Callable[[list[Message], dict[str, Any]], str]:
    """A ScriptedLLM ``fn``: the right answer when the prompt holds ``marker``, else ``wrong``.

    Rewrite requests are answered with ``REWRITTEN``.
    """

    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return "REWRITTEN"
        prompt, case_input = split_message(text)
        return answers[case_input] if marker in prompt else wrong

    return reply


class LengthEvaluator:
    """Scores ``len(actual) / scale``, capped: longer echoed prompts score higher."""

    def __init__(self, scale: float = 1000.0, cap: float = 0.85) -> None:
        self.scale, self.cap = scale, cap

    def evaluate(self, actual: str, expected: str) -> float:
        return min(self.cap, len(actual) / self.scale)


def echo_prompt(messages: list[Message], params: dict[str, Any]) -> str:
    """A ScriptedLLM ``fn`` that replies with the prompt part of a case call."""
    text = messages[-1].content
    if text.startswith(REWRITE_MARK):
        return ""  # no usable rewrite: no rewrite variant
    return split_message(text)[0]


class JitteryLLM:
    """An async client whose reply latency varies per request, so concurrent
    replies come back in a different order than they were sent."""

    def __init__(self, reply: Callable[[str], str]) -> None:
        self.reply = reply
        self.sent: list[str] = []

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        raise AssertionError("the optimizer must use achat")

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        text = last_user_message(messages)
        self.sent.append(text)
        jitter = int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 65535
        await asyncio.sleep(0.002 * jitter)
        return Completion(text=self.reply(text))


@pytest.fixture
def four_cases() -> list[TestCase]:
    return [TestCase(f"q{i}", f"a{i}") for i in range(1, 5)]


@pytest.fixture
def answers() -> dict[str, str]:
    return {f"q{i}": f"a{i}" for i in range(1, 40)}


def scripted(fn: Callable[[list[Message], dict[str, Any]], str], **kwargs: Any) -> ScriptedLLM:
    return ScriptedLLM(fn=fn, **kwargs)


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeOpenAIServer]:
    """One fault-injecting server per module (tests/llm/fake_server.py); reset it per test."""
    with FakeOpenAIServer() as server:
        yield server


def http_client(server: FakeOpenAIServer) -> OpenAIClient:
    """An ``OpenAIClient`` for ``server`` that retries at once (no backoff to wait out)."""
    return OpenAIClient(
        "m", base_url=server.base_url, api_key="", backoff_base=0.0, backoff_max=0.0, timeout=5.0
    )
