"""Servers for the LLM client tests, started here on 127.0.0.1 and stopped at the end.

* ``fake_server``: our fault-injecting OpenAI-compatible server (one per session,
  reset before each test that uses it).
* ``llama_server``: the real llama.cpp OpenAI-compatible server
  (``python -m llama_cpp.server``) serving the embedded SmolLM2 GGUF;
  ``llama_tool_server`` the same with the ``chatml-function-calling`` chat
  handler, which parses tool calls with ``tool_choice="auto"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tnsai_eval.errors import LocalModelUnavailable
from tnsai_eval.llm import LOCAL_SERVER_ALIAS, serve_local_model

# Loading the model takes about a second, importing the server's FastAPI stack a
# few more; the bound is generous because the test machine is shared.
_LLAMA_START_TIMEOUT_S = 120.0
LLAMA_MODEL_ALIAS = LOCAL_SERVER_ALIAS


@pytest.fixture(scope="session")
def _fake_server_session() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_server(_fake_server_session: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """The session's fake server, with an empty script and no recorded requests."""
    _fake_server_session.reset()
    yield _fake_server_session
    _fake_server_session.reset()


@dataclass(frozen=True, slots=True)
class LlamaServer:
    base_url: str
    model: str


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """``python -m llama_cpp.server`` on a free port, serving the embedded model."""
    try:
        with serve_local_model(start_timeout=_LLAMA_START_TIMEOUT_S) as base_url:
            yield LlamaServer(base_url=base_url, model=LOCAL_SERVER_ALIAS)
    except LocalModelUnavailable as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def llama_tool_server() -> Iterator[LlamaServer]:
    """The llama.cpp server with native tool calls for ``tool_choice="auto"``."""
    try:
        with serve_local_model(
            start_timeout=_LLAMA_START_TIMEOUT_S, chat_format="chatml-function-calling"
        ) as base_url:
            yield LlamaServer(base_url=base_url, model=LOCAL_SERVER_ALIAS)
    except LocalModelUnavailable as exc:
        pytest.fail(str(exc))
