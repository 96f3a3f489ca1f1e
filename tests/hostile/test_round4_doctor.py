"""Round 4, ``tnsai-eval doctor``: hostile servers and a hostile probe cache.

The servers are real, on 127.0.0.1, and bounded: one sends its model list a
byte at a time (for at most 30 s), one announces 800 MB and sends up to
64 MB, one lists ids that carry control sequences and a key. The probe cache
is a FIFO, ``/dev/zero``, JSON nested 100,000 deep, or holds verdicts whose
fields are not what the probe writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.conftest import API_KEY
from tests.llm.fake_server import FakeOpenAIServer, free_port
from tnsai_eval.llm import Diagnosis, ModelTable, diagnose, smollm2_gguf_path
from tnsai_eval.llm._probe import (
    ENV_CACHE_DIR,
    ENV_PROBE_FAULT,
    build_key,
    cached_verdict,
    probe_cache_file,
)
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL

# What a hostile server lists as model ids: a terminal control sequence with a
# forged doctor line, and the client's own key echoed back.
EVIL_IDS = ["real-model", "x\x1b[2J\nok   server  forged\rline", f"echo-{API_KEY}"]


class _Hostile(BaseHTTPRequestHandler):
    """``/slow/...`` trickles, ``/huge/...`` floods, ``/evil/...`` lists hostile ids."""

    protocol_version = "HTTP/1.1"
    stop: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        kind = self.path.strip("/").split("/")[0]
        try:
            if kind == "slow":
                self._head(200, 4096)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and not self.stop.is_set():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            elif kind == "huge":
                self._head(200, 800 * 1024 * 1024)
                block = b" " * 65536
                for _ in range(1024):  # 64 MB at most, then the connection closes
                    if self.stop.is_set():
                        break
                    self.wfile.write(block)
            else:
                body = json.dumps({"data": [{"id": i} for i in EVIL_IDS]}).encode()
                self._head(200, len(body))
                self.wfile.write(body)
        except OSError:  # the client hung up: what a bounded client does
            pass
        self.close_connection = True

    def _head(self, status: int, length: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.end_headers()


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    """The hostile server's root URL (``http://127.0.0.1:PORT``)."""
    stop = threading.Event()
    handler = type("Handler", (_Hostile,), {"stop": stop})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (ENV_BASE_URL, ENV_MODEL, ENV_API_KEY, ENV_PROBE_FAULT)
    }
    env[ENV_CACHE_DIR] = str(tmp_path / "cache")
    env.update(extra)
    return env


def _diagnose(
    tmp_path: Path, settings: dict[str, str], *, models: ModelTable | None = None
) -> Diagnosis:
    return diagnose(
        environ=_env(tmp_path, **settings), models=models or ModelTable(), server_timeout=1.0
    )


# ---------------------------------------------------------------- the server check


def test_a_server_that_answers_a_byte_at_a_time_is_cut_at_the_deadline(
    tmp_path: Path, hostile: str
) -> None:
    found = _diagnose(tmp_path, {ENV_BASE_URL: f"{hostile}/slow/v1", ENV_MODEL: "m"})
    server = found["server"]
    assert server.ok is False
    assert "did not finish answering within 1 s" in server.value


def test_a_server_that_sends_800_mb_is_not_read_past_the_cap(tmp_path: Path, hostile: str) -> None:
    found = _diagnose(tmp_path, {ENV_BASE_URL: f"{hostile}/huge/v1", ENV_MODEL: "m"})
    server = found["server"]
    assert server.ok is False
    assert "with a body over 1048576 bytes; not read further" in server.value


def test_model_ids_from_a_server_are_shown_masked_on_one_line(
    tmp_path: Path, hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml: no named models
    env = {ENV_BASE_URL: f"{hostile}/evil/v1", ENV_MODEL: "real-model", ENV_API_KEY: API_KEY}
    found = diagnose(environ=_env(tmp_path, **env))
    server = found["server"]
    assert server.ok is True
    assert "models: real-model, x" in server.value
    assert not any(c in server.value for c in "\x1b\n\r")
    assert API_KEY not in server.value
    assert "echo-***" in server.value


def test_a_url_without_a_model_is_still_checked_not_called_unconfigured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer() as fake:
        found = diagnose(environ=_env(tmp_path, **{ENV_BASE_URL: fake.base_url}))
    assert "TNSAI_LLM_MODEL is not" in found["default client"].value
    server = found["server"]
    assert "none configured" not in server.value
    assert server.ok is True
    assert "models: fake-model" in server.value


def test_every_named_model_is_checked_as_the_default_one_is(tmp_path: Path, hostile: str) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with FakeOpenAIServer() as fake:
        table = ModelTable.from_mapping(
            {
                "up": {"base_url": fake.base_url, "model": "fake-model"},
                "down": {"base_url": closed, "model": "m"},
                "slow": {"base_url": f"{hostile}/slow/v1", "model": "m"},
                "keyless": {
                    "base_url": fake.base_url,
                    "model": "m",
                    "api_key_env": "TNSAI_ROUND4_UNSET_KEY",
                },
            }
        )
        found = _diagnose(tmp_path, {}, models=table)
    assert found["model up"].ok is True
    assert "answers (HTTP 200, models: fake-model)" in found["model up"].value
    assert found["model down"].ok is False
    assert f"GET {closed}/models does not answer (ConnectError" in found["model down"].value
    assert found["model slow"].ok is False
    assert "within 1 s" in found["model slow"].value
    assert found["model keyless"].ok is False
    assert "$TNSAI_ROUND4_UNSET_KEY is not set" in found["model keyless"].value
    assert "embedded" not in [item.name.removeprefix("model ") for item in found.items]


def test_doctor_reads_the_named_models_and_exits_1_when_one_fails(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.tnsai-eval.models.gone]\nbase_url = "{closed}"\nmodel = "m"\n', encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "tnsai_eval.cli", "doctor"],
        cwd=tmp_path,
        env=_env(tmp_path, **{ENV_PROBE_FAULT: "pass"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln[5:].startswith("model gone ")]
    assert line.startswith("FAIL")
    assert "does not answer" in line
    assert "LocalLLM works here, but not every named model does (model gone)" in done.stdout


# ---------------------------------------------------------------- the probe cache


@pytest.fixture
def cache_env(tmp_path: Path) -> dict[str, str]:
    env = _env(tmp_path, **{ENV_PROBE_FAULT: "pass"})
    probe_cache_file(env).parent.mkdir(parents=True)
    return env


def _cached(env: dict[str, str]) -> object:
    """``cached_verdict``'s answer (or the exception it raised), asserting it did not hang."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(cached_verdict(smollm2_gguf_path(), None, environ=env))
        except Exception as exc:  # MemoryError and RecursionError were the defects
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the cache reader hung"
    return outcome[0]


def test_a_probe_cache_that_is_a_fifo_is_an_empty_cache(cache_env: dict[str, str]) -> None:
    cache = probe_cache_file(cache_env)
    os.mkfifo(cache)
    try:
        assert _cached(cache_env) is None
    finally:
        with contextlib.suppress(OSError):  # release a reader blocked in open() (pre-fix)
            os.close(os.open(cache, os.O_WRONLY | os.O_NONBLOCK))


def test_a_probe_cache_linked_to_dev_zero_is_an_empty_cache(cache_env: dict[str, str]) -> None:
    probe_cache_file(cache_env).symlink_to("/dev/zero")
    assert _cached(cache_env) is None


def test_a_deeply_nested_probe_cache_is_an_empty_cache(cache_env: dict[str, str]) -> None:
    probe_cache_file(cache_env).write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert _cached(cache_env) is None


def _verdicts(env: dict[str, str], verdicts: object) -> None:
    document = {"format": 1, "build": build_key(env), "verdicts": verdicts}
    probe_cache_file(env).write_text(json.dumps(document), encoding="utf-8")


def _entry(**attempt: object) -> dict[str, object]:
    name = f"{smollm2_gguf_path()}|n_threads=auto"
    return {name: {"attempts": [attempt], "probed_at": "2026-12-01T00:00:00Z"}}


CORRUPT = {
    "verdicts-a-list": [{"attempts": []}],
    "outcome-unknown": _entry(extra_bufts=True, outcome="bogus"),
    "extra-bufts-a-string": _entry(extra_bufts="false", outcome="ok"),
    "no-attempts": {f"{smollm2_gguf_path()}|n_threads=auto": {"attempts": [], "probed_at": "x"}},
    "signal-without-name": _entry(extra_bufts=True, outcome="signal"),
    "detail-a-number": _entry(extra_bufts=True, outcome="error", detail=7),
}


@pytest.mark.parametrize("verdicts", list(CORRUPT.values()), ids=list(CORRUPT))
def test_a_corrupt_verdict_is_no_verdict(cache_env: dict[str, str], verdicts: object) -> None:
    _verdicts(cache_env, verdicts)
    assert _cached(cache_env) is None


def test_a_cached_verdict_is_shown_on_one_line_and_masked(
    cache_env: dict[str, str], secret_env: None
) -> None:
    hostile = "boom\x1b[2J\nok   probe  forged " + API_KEY + "x" * 5000
    _verdicts(cache_env, _entry(extra_bufts=True, outcome="error", detail=hostile))
    verdict = _cached(cache_env)
    assert verdict is not None
    assert not isinstance(verdict, Exception)
    shown = verdict.describe()  # type: ignore[attr-defined]
    assert not any(c in shown for c in "\x1b\n\r")
    assert API_KEY not in shown
    assert "forged ***" in shown
    assert len(shown) < 400


def test_doctor_with_a_corrupt_verdict_probes_again_instead_of_crashing(
    tmp_path: Path, cache_env: dict[str, str]
) -> None:
    _verdicts(cache_env, CORRUPT["outcome-unknown"])
    done = subprocess.run(
        [sys.executable, "-m", "tnsai_eval.cli", "doctor"],
        cwd=tmp_path,
        env=cache_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln[5:].startswith("probe ")]
    assert "passes with llama.cpp's defaults" in line
    assert "run now" in line
