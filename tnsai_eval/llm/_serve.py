"""``serve_local_model``: the embedded model behind llama.cpp's OpenAI-compatible server.

For tests and benchmarks that want a real server on 127.0.0.1 rather than the
in-process ``LocalLLM`` (ours: tests/llm, bench/_dspy.py). It needs the
``local`` extra's server dependencies (``llama_cpp.server``).

The server loads the model the way ``LocalLLM`` does: the probe (``_probe``)
decides whether llama.cpp's extra buffer types stay on, and where they crash
the server loads without them. ``python -m llama_cpp.server`` has no option
for that, so the server process runs ``server_main`` below, a small entry
point that builds llama-cpp-python's own app (``create_app``) inside
``extra_bufts_setting`` and serves it with uvicorn, as its ``__main__`` does.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

import httpx

from tnsai_eval.errors import LocalModelUnavailable
from tnsai_eval.llm._llama import child_env, extra_bufts_setting, import_llama_cpp
from tnsai_eval.llm._model_path import smollm2_gguf_path
from tnsai_eval.llm._probe import guard

__all__ = ["LOCAL_SERVER_ALIAS", "serve_local_model", "server_main"]

#: The model name the server answers to (``OpenAIClient(LOCAL_SERVER_ALIAS, ...)``).
LOCAL_SERVER_ALIAS = "smollm2"
_STOP_TIMEOUT_S = 10.0


@contextmanager
def serve_local_model(
    *,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    alias: str = LOCAL_SERVER_ALIAS,
    start_timeout: float = 120.0,
    chat_format: str | None = None,
) -> Iterator[str]:
    """Run llama-cpp-python's OpenAI-compatible server with the embedded model on a free
    port of 127.0.0.1; yields its base URL (``http://127.0.0.1:PORT/v1``) and stops it on exit.

    ``n_threads=None`` lets llama.cpp choose, as ``LocalLLM`` does.
    ``chat_format`` picks one of llama-cpp-python's chat handlers instead of the
    GGUF's own template: ``"chatml-function-calling"`` parses tool calls from
    the model's reply with ``tool_choice="auto"``, which the GGUF's template
    (it knows no tools) does only for a named ``tool_choice``. Raises
    ``LocalModelUnavailable`` when llama.cpp crashes on this machine in every
    setting (see ``LocalLLM``), and with the server's log when it exits early
    or is not answering ``/v1/models`` within ``start_timeout`` seconds::

        with serve_local_model() as base_url:
            llm = OpenAIClient(LOCAL_SERVER_ALIAS, base_url=base_url)
    """
    model = smollm2_gguf_path()
    import_llama_cpp()
    extra_bufts = guard(model, n_threads, what="serve_local_model")
    port = _free_port()
    command = [
        sys.executable, "-c",
        "from tnsai_eval.llm._serve import server_main; server_main()",
        "--model", str(model), "--alias", alias, "--port", str(port),
        "--n-ctx", str(n_ctx), "--n-threads", str(n_threads or 0),
        "--extra-bufts", "on" if extra_bufts else "off",
    ]  # fmt: skip
    if chat_format is not None:
        command += ["--chat-format", chat_format]
    # The log goes to a file, not a pipe: a pipe nobody reads fills up and blocks
    # the server. It is shown when the server fails to start.
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**child_env(), "PYTHONUNBUFFERED": "1"},
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


def server_main(argv: Sequence[str] | None = None) -> None:
    """The served model's process: llama-cpp-python's app on 127.0.0.1, loaded with or
    without llama.cpp's extra buffer types (``--extra-bufts on|off``)."""
    parser = argparse.ArgumentParser(prog="tnsai-eval-local-server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, required=True)
    parser.add_argument("--n-threads", type=int, default=0, help="0: llama.cpp chooses")
    parser.add_argument("--extra-bufts", choices=("on", "off"), default="on")
    parser.add_argument("--chat-format", default=None, help="default: the GGUF's template")
    args = parser.parse_args(argv)

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    model_options = {"model": args.model, "model_alias": args.alias, "n_ctx": args.n_ctx}
    if args.n_threads:
        model_options["n_threads"] = args.n_threads
    if args.chat_format:
        model_options["chat_format"] = args.chat_format
    # create_app loads the model before it returns, so the setting covers that load.
    with extra_bufts_setting(args.extra_bufts == "on"):
        app = create_app(
            server_settings=ServerSettings(host="127.0.0.1", port=args.port),
            model_settings=[ModelSettings(**model_options)],
        )
    uvicorn.run(app, host="127.0.0.1", port=args.port)


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
                f"the local model server exited with {process.returncode}:\n{_tail(log)}"
            )
        try:
            if httpx.get(f"{root}/v1/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise LocalModelUnavailable(
        f"the local model server was not ready after {limit:g} s:\n{_tail(log)}"
    )


def _tail(log: IO[str]) -> str:
    log.seek(0)
    return log.read()[-3000:]
