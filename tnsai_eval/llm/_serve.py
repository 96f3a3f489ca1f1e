"""``serve_local_model``: the embedded model behind llama.cpp's OpenAI-compatible server.

For tests and benchmarks that want a real server on 127.0.0.1 rather than the
in-process ``LocalLLM`` (ours: tests/llm, bench/_dspy.py). It needs the
``local`` extra's server dependencies (``llama_cpp.server``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import httpx

from tnsai_eval.errors import LocalModelUnavailable
from tnsai_eval.llm._model_path import smollm2_gguf_path

__all__ = ["LOCAL_SERVER_ALIAS", "serve_local_model"]

#: The model name the server answers to (``OpenAIClient(LOCAL_SERVER_ALIAS, ...)``).
LOCAL_SERVER_ALIAS = "smollm2"
_STOP_TIMEOUT_S = 10.0


@contextmanager
def serve_local_model(
    *, n_ctx: int = 2048, alias: str = LOCAL_SERVER_ALIAS, start_timeout: float = 120.0
) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` with the embedded model on a free port of
    127.0.0.1; yields its base URL (``http://127.0.0.1:PORT/v1``) and stops it on exit.

    Raises ``LocalModelUnavailable`` with the server's log when it exits early or
    is not answering ``/v1/models`` within ``start_timeout`` seconds::

        with serve_local_model() as base_url:
            llm = OpenAIClient(LOCAL_SERVER_ALIAS, base_url=base_url)
    """
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf_path()),
        "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx),
    ]  # fmt: skip
    # The log goes to a file, not a pipe: a pipe nobody reads fills up and blocks
    # the server. It is shown when the server fails to start.
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            _wait_ready(process, f"http://127.0.0.1:{port}", log, start_timeout)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            try:
                process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(process: subprocess.Popen[bytes], root: str, log: IO[str], limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalModelUnavailable(
                f"llama_cpp.server exited with {process.returncode}:\n{_tail(log)}"
            )
        try:
            if httpx.get(f"{root}/v1/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise LocalModelUnavailable(f"llama_cpp.server not ready after {limit:g} s:\n{_tail(log)}")


def _tail(log: IO[str]) -> str:
    log.seek(0)
    return log.read()[-3000:]
