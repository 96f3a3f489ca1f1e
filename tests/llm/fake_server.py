"""A fault-injecting OpenAI-compatible server on 127.0.0.1, for the client's tests.

The server answers ``POST /v1/chat/completions`` with the next scripted
``Step`` (or ``default`` once the script is used up) and records every request,
so a test can say what the server does and then check what the client sent:

>>> with FakeOpenAIServer() as server:
...     server.script(Step.error(429, retry_after="0"), Step.ok("hello"))
...     # OpenAIClient("m", base_url=server.base_url).chat("hi").text == "hello"
...     # len(server.requests) == 2

Faults: any status with any headers (``Retry-After``...), a body that is not
JSON, a delay (slower than the client's timeout, or a fixed latency), a
connection dropped before the reply or in the middle of its body, and a reply
without ``usage``. A reset wakes handlers still sleeping for an earlier test,
so no test waits for another's slow reply.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Drop", "FakeOpenAIServer", "Recorded", "Step", "completion_body", "free_port"]


def free_port() -> int:
    """A port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Drop(Enum):
    """Where a step drops the connection."""

    BEFORE_REPLY = "before_reply"  # read the request, close without a byte
    MID_BODY = "mid_body"  # send the head and half the body, then close


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request as the server received it (header names lower-cased).

    ``peer`` is the client's port: requests with the same one came over the
    same kept-alive connection.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    raw: bytes
    peer: int = 0

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


Body = Mapping[str, Any] | bytes | Callable[[Recorded], Mapping[str, Any] | bytes] | None


@dataclass(frozen=True, slots=True)
class Step:
    """What the server does with one request.

    ``body=None`` means a normal completion that echoes the last user message
    (``"echo: <content>"``) and names the requested model.
    """

    status: int = 200
    body: Body = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: Drop | None = None
    usage: bool = True
    # Hold the reply until the test sets this event (bounded by _GATE_LIMIT_S),
    # so a test can see how many requests are in flight at once.
    gate: threading.Event | None = None
    # Send the body one byte every ``trickle`` seconds (a server that never
    # lets a read time out but never finishes either).
    trickle: float = 0.0

    @classmethod
    def ok(cls, text: str | None = None, *, usage: bool = True, delay: float = 0.0) -> Step:
        body = None if text is None else (lambda request: completion_body(request, text, usage))
        return cls(body=body, usage=usage, delay=delay)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted failure",
        *,
        retry_after: str | None = None,
        retry_after_ms: str | None = None,
    ) -> Step:
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        if retry_after_ms is not None:
            headers["retry-after-ms"] = retry_after_ms
        body = {"error": {"message": message, "type": "scripted", "code": status}}
        return cls(status=status, body=body, headers=headers)

    @classmethod
    def malformed(cls) -> Step:
        return cls(body=b'{"choices": [ this is not json')

    @classmethod
    def slow(cls, delay: float) -> Step:
        return cls(delay=delay)

    @classmethod
    def dropped(cls, where: Drop = Drop.BEFORE_REPLY) -> Step:
        return cls(drop=where)


def completion_body(request: Recorded, text: str | None = None, usage: bool = True) -> bytes:
    """A chat completion as OpenAI shapes it, echoing ``request`` when ``text`` is None."""
    try:
        sent = request.json
    except ValueError:
        sent = {}
    messages = sent.get("messages") or [{}]
    prompt = str(messages[-1].get("content", ""))
    reply = f"echo: {prompt}" if text is None else text
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": sent.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": len(prompt.split()),
            "completion_tokens": len(reply.split()),
            "total_tokens": len(prompt.split()) + len(reply.split()),
        }
    return json.dumps(body).encode()


_GATE_LIMIT_S = 30.0


def _pass_gate(gate: threading.Event | None, wake: threading.Event) -> bool:
    """Wait for ``gate``; False when a reset (``wake``) or the limit came first."""
    if gate is None:
        return True
    deadline = time.monotonic() + _GATE_LIMIT_S
    while not gate.wait(0.02):
        if wake.is_set() or time.monotonic() > deadline:
            return False
    return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64  # many clients connect at once in the concurrency tests
    owner: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is the point of several tests; say
        # nothing about the broken pipe. Anything else is a bug in this file.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the client's pool expects
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            body = {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
            self._send(200, json.dumps(body).encode(), {})
        else:
            self._send(404, b'{"error": {"message": "not found"}}', {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        request = Recorded(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=raw,
            peer=int(self.client_address[1]),
        )
        owner = self.server.owner
        # A proxy is asked with the absolute URL ("POST http://host/v1/..."):
        # the route is its path either way, so this server can stand in for one.
        routed = urlsplit(self.path).path.rstrip("/") == "/v1/chat/completions"
        # Other paths are recorded too (a test may check where a client posted)
        # but answered 404 without using up a scripted step.
        step, wake = owner._begin(request, take_step=routed)
        try:
            if not routed:
                self._send(404, b'{"error": {"message": "no such route"}}', {})
                return
            if (step.delay and wake.wait(step.delay)) or not _pass_gate(step.gate, wake):
                self.close_connection = True  # reset: the test that wanted this is over
                return
            self._reply(step, request)
        finally:
            owner._end()

    def _reply(self, step: Step, request: Recorded) -> None:
        if step.drop is Drop.BEFORE_REPLY:
            self.close_connection = True
            return
        body = step.body
        if callable(body):
            body = body(request)
        if body is None:
            payload = completion_body(request, usage=step.usage)
        elif isinstance(body, bytes):
            payload = body
        else:
            payload = json.dumps(body).encode()
        if step.drop is Drop.MID_BODY:
            self.send_response(step.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload) + 100))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if step.trickle:
            self._trickle(step, payload)
            return
        self._send(step.status, payload, step.headers)

    def _trickle(self, step: Step, payload: bytes) -> None:
        self.send_response(step.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.flush()
        try:
            wake = self.server.owner._wake
            for index in range(len(payload)):
                if wake.is_set():  # the server is stopping or being reset
                    break
                self.wfile.write(payload[index : index + 1])
                self.wfile.flush()
                time.sleep(step.trickle)
        except OSError:  # the client gave up: what the test wants
            self.close_connection = True

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class FakeOpenAIServer:
    """Serves scripted replies on ``base_url`` (``http://127.0.0.1:<port>/v1``)."""

    def __init__(self, *, default: Step | None = None) -> None:
        self.default = default or Step()
        self._lock = threading.Lock()
        self._script: deque[Step] = deque()
        self._requests: list[Recorded] = []
        self._wake = threading.Event()
        self._in_flight = 0
        self._max_in_flight = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> FakeOpenAIServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._wake.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- scripting and inspection

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not running; call start()")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *steps: Step) -> None:
        """Queue steps for the next requests, in order."""
        with self._lock:
            self._script.extend(steps)

    def reset(self, *, default: Step | None = None) -> None:
        """Forget the script and the requests; wake handlers still sleeping."""
        with self._lock:
            self._wake.set()
            self._wake = threading.Event()
            self._script.clear()
            self._requests.clear()
            self._max_in_flight = self._in_flight
            self.default = default or Step()

    @property
    def requests(self) -> list[Recorded]:
        """POST requests received since the last reset, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def in_flight(self) -> int:
        """Requests being handled right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests handled at once since the last reset."""
        with self._lock:
            return self._max_in_flight

    def _begin(self, request: Recorded, *, take_step: bool) -> tuple[Step, threading.Event]:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            step = self._script.popleft() if take_step and self._script else self.default
            return step, self._wake

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1
