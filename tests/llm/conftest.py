"""Servers for the LLM client tests, started here on 127.0.0.1 and stopped at the end.

* ``fake_server``: our fault-injecting OpenAI-compatible server (one per session,
  reset before each test that uses it).
* ``llama_server``: the real llama.cpp OpenAI-compatible server
  (``python -m llama_cpp.server``) serving the embedded SmolLM2 GGUF.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import httpx
import pytest

from tests.llm.fake_server import FakeOpenAIServer, free_port
from tnsai_eval.llm._model_path import smollm2_gguf_path

# Loading the model takes about a second, importing the server's FastAPI stack a
# few more; the bound is generous because the test machine is shared.
_LLAMA_START_TIMEOUT_S = 120.0
_LLAMA_STOP_TIMEOUT_S = 10.0
LLAMA_MODEL_ALIAS = "smollm2"


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
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_gguf_path()),
        "--model_alias",
        LLAMA_MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
    ]
    # The server's log goes to a file, not a pipe: a pipe nobody reads fills up
    # and blocks the server. The file is shown if the server fails to start.
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            _wait_ready(process, f"http://127.0.0.1:{port}", log)
            yield LlamaServer(base_url=f"http://127.0.0.1:{port}/v1", model=LLAMA_MODEL_ALIAS)
        finally:
            process.terminate()
            try:
                process.wait(timeout=_LLAMA_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(process: subprocess.Popen[bytes], root: str, log: IO[str]) -> None:
    deadline = time.monotonic() + _LLAMA_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{_tail(log)}")
        try:
            if httpx.get(f"{root}/v1/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"llama_cpp.server not ready after {_LLAMA_START_TIMEOUT_S} s:\n{_tail(log)}")


def _tail(log: IO[str]) -> str:
    log.seek(0)
    return log.read()[-3000:]
