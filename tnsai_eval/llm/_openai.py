"""An OpenAI-compatible chat-completions client over httpx, sync and async.

Works with anything that serves ``POST {base_url}/chat/completions``: OpenAI,
vLLM, Ollama, the llama.cpp server, LM Studio.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from http.cookiejar import CookieJar
from typing import Any

import httpx

from tnsai_eval._util.checks import seconds
from tnsai_eval._util.secrets import mask, redact_url, remember
from tnsai_eval.errors import (
    BadResponseError,
    ClientRequestError,
    ConfigError,
    LLMError,
    LLMTimeoutError,
)
from tnsai_eval.llm._budget import attempt_available, budget_exceeded, reserve_attempt
from tnsai_eval.llm._failures import REDACTED, Secret, reply_error, request_error, status_error
from tnsai_eval.llm._format import ResponseFormatStyle, check_response_format, to_llama_cpp
from tnsai_eval.llm._pools import SyncPools, pool_limits, split_slots
from tnsai_eval.llm._retry import RetryPolicy
from tnsai_eval.llm._types import Completion, MessagesInput
from tnsai_eval.llm._wire import ReplyProblem, decode_completion, encode_request
from tnsai_eval.settings import ENV_API_KEY, MAX_CONCURRENCY

__all__ = ["DEFAULT_BASE_URL", "MAX_REPLY_BYTES", "OpenAIClient"]

logger = logging.getLogger("tnsai_eval.llm")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# The largest reply body read (after decompression); beyond it, BadResponseError.
MAX_REPLY_BYTES = 32 * 1024 * 1024
_OPENAI_KEY_ENV = "OPENAI_API_KEY"


class OpenAIClient:
    """Chat completions from an OpenAI-compatible server, over pooled keep-alive connections.

    >>> llm = OpenAIClient("smollm2", base_url="http://127.0.0.1:8080/v1")
    >>> llm
    OpenAIClient(model='smollm2', base_url='http://127.0.0.1:8080/v1', api_key=None)
    >>> # reply = llm.chat("Say hi", temperature=0, max_tokens=8); reply.text, reply.usage
    >>> llm.close()

    Behaviour:

    * ``chat(messages, **params)`` posts ``{"model", "messages", **params}``:
      sampling parameters (``temperature``, ``top_p``, ``max_tokens``, ``seed``,
      ``stop``, ``response_format``, ``tools``...) pass through unchanged;
      ``None`` values are left out; ``model=`` overrides the client's model for
      one call. ``async achat`` does the same without blocking the loop.
    * ``response_format`` takes OpenAI's shape (``{"type": "json_schema",
      "json_schema": {"name", "schema"}}`` or ``{"type": "json_object"}``) and
      is checked before sending. With ``response_format_style="llama.cpp"`` it
      goes on the wire in llama.cpp's shape (``{"type": "json_object",
      "schema": {...}}``), which llama-cpp-python's server needs: it answers
      OpenAI's shape with HTTP 500. A server that rejects the parameter (an
      error status whose message names it) raises one ``ClientRequestError``
      saying so, without retrying.
    * Retries HTTP 408, 409, 429 and 5xx, connection failures and timeouts, up
      to ``max_retries`` times, waiting by capped exponential backoff with
      jitter, or as long as the server's ``retry-after-ms`` / ``retry-after``
      says (capped at ``retry_after_max``). Other 4xx are not retried.
    * Failures raise ``LLMError`` subclasses (``RateLimitError``,
      ``ServerError``, ``LLMTimeoutError``, ``LLMConnectionError``,
      ``ClientRequestError``, ``BadResponseError``) carrying ``status``,
      ``model`` and ``attempts`` (the HTTP attempts made, retries included);
      a reply's ``Completion.attempts`` counts them too. Each attempt,
      retries included, is taken from the active ``llm.CallBudget`` (if any)
      once it holds a connection slot: with none left, a first attempt raises
      ``CallBudgetExceeded`` (nothing sent) and a retry is not made (the call
      fails with the last attempt's error).
    * ``timeout`` bounds each read and write, ``connect_timeout`` each connect,
      and ``total_timeout`` (default 300 s) one whole call: every attempt,
      retry and backoff wait included, sync and async. A server that trickles
      bytes slower than the call may take ends in ``LLMTimeoutError`` at that
      deadline, whatever the per-read timeout.
    * A reply body larger than ``max_reply_bytes`` once decompressed (default
      32 MiB; a gzip bomb) is a ``BadResponseError``: the body is read in
      chunks and reading stops at the cap.
      At most ``max_concurrency`` requests (1 to ``MAX_CONCURRENCY``, 1024) are
      in flight from threads (and,
      separately, from each event loop), on connections that are created
      lazily and kept alive (httpx pools of at most 4 requests each, because
      httpcore's pool slows down with many connections; see ``_pools.py``).
    * The key comes from ``api_key``, else ``TNSAI_LLM_API_KEY``, else
      ``OPENAI_API_KEY`` when ``base_url`` is OpenAI's own (so that an OpenAI
      key is never sent to another server). It is sent only in the
      ``Authorization`` header and is scrubbed from errors, logs and reprs.
    * ``Completion.raw`` is the decoded reply; ``latency_s`` is the time of the
      attempt that succeeded (not queueing or backoff); a reply without
      ``usage`` gets ``Usage()``.
    * ``api_key=""`` sends no key even when the variables are set; ``headers``
      adds request headers (for gateways that want their own).
    * ``transport=`` replaces the network (for example ``httpx.MockTransport``);
      ``sleep=`` replaces the backoff wait (default ``time.sleep``), for
      example to record the waits in a test (``sleep=waits.append``).
    * ``achat`` runs ``chat`` on one of the client's ``max_concurrency``
      worker threads, so the two share one retry loop, one deadline and one
      set of connections, and any number of event loops (each
      ``asyncio.run``) can use one client. Threads rather than httpx's async
      client because its async stack costs two to three times the CPU per
      request of the sync one (bench/plugin.py: 0.77 against 1.78 ms per
      case at 4 concurrent calls); the event loop is never blocked. A
      cancelled ``achat`` returns at once; its request finishes in the
      background within ``total_timeout``.
    * ``close()`` / ``aclose()`` or ``with`` / ``async with`` release the
      connections and the worker threads.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        total_timeout: float = 300.0,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        max_retries: int = 2,
        max_concurrency: int = 16,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        retry_after_max: float = 60.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        response_format_style: ResponseFormatStyle = "openai",
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"model must be a non-empty str, got {model!r}")
        seconds("timeout", timeout)
        seconds("connect_timeout", connect_timeout)
        self._total_timeout = seconds("total_timeout", total_timeout)
        if (
            isinstance(max_reply_bytes, bool)
            or not isinstance(max_reply_bytes, int)
            or max_reply_bytes < 1
        ):
            raise ConfigError(f"max_reply_bytes must be an int >= 1, got {max_reply_bytes!r}")
        self._max_reply_bytes = max_reply_bytes
        _check_concurrency(max_concurrency)
        if response_format_style not in ("openai", "llama.cpp"):
            raise ConfigError(
                "response_format_style must be 'openai' or 'llama.cpp', "
                f"got {response_format_style!r}"
            )
        self._format_style: ResponseFormatStyle = response_format_style
        # Injection point for the backoff waits (a test records them instead of waiting).
        self._sleep = sleep
        self._model = model
        self._base_url = _check_base_url(base_url)
        self._url = self._base_url + "/chat/completions"
        self._request_url = httpx.URL(self._url)
        self._policy = RetryPolicy(max_retries, backoff_base, backoff_max, retry_after_max)
        self._max_concurrency = max_concurrency
        key = _resolve_key(api_key, self._base_url)
        self._key = Secret(key) if key else None
        # Known from now on to every masking step (check output, error texts).
        remember(key)
        # The Authorization header is added only when a pool is built, inside
        # httpx.Headers (whose repr masks it), so no attribute of ours holds it.
        self._headers = {"User-Agent": "tnsai-eval", "Content-Type": "application/json"}
        self._headers.update(headers or {})
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self._transport = transport
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._threads_lock = threading.Lock()
        self._closed = False
        self._ssl: ssl.SSLContext | None = None
        self._sync: SyncPools | None = None
        # Pools replaced by a larger bound (ensure_concurrency): closed with the client.
        self._retired: list[SyncPools] = []
        self._threads: ThreadPoolExecutor | None = None
        self._cookies = CookieJar()

    @property
    def model(self) -> str:
        """The model requests go to unless a call passes ``model=``."""
        return self._model

    @property
    def base_url(self) -> str:
        """The server's base URL, without a trailing slash."""
        return self._base_url

    @property
    def max_concurrency(self) -> int:
        """The most requests in flight at once (``chat`` and ``achat`` together)."""
        return self._max_concurrency

    def ensure_concurrency(self, max_concurrency: int) -> int:
        """Raise ``max_concurrency`` to at least the given bound; return the bound now in force.

        The pools and worker threads are rebuilt on the next call, with room
        for that many requests in flight; calls already in flight finish on
        the old ones (closed with the client). A lower value changes nothing.
        """
        _check_concurrency(max_concurrency)
        with self._lock, self._threads_lock:
            self._check_open()
            if max_concurrency > self._max_concurrency:
                self._max_concurrency = max_concurrency
                if self._sync is not None:
                    self._retired.append(self._sync)
                    self._sync = None
                if self._threads is not None:
                    # Calls in flight finish on their threads; new ones get the larger pool.
                    self._threads.shutdown(wait=False)
                    self._threads = None
            return self._max_concurrency

    def __repr__(self) -> str:
        key = repr(REDACTED) if self._key is not None else "None"
        return f"OpenAIClient(model={self._model!r}, base_url={self._base_url!r}, api_key={key})"

    # -- calls -------------------------------------------------------------------------

    @property
    def response_format_style(self) -> ResponseFormatStyle:
        """How ``response_format`` is sent: ``"openai"`` or ``"llama.cpp"``."""
        return self._format_style

    def chat(
        self,
        messages: MessagesInput,
        *,
        response_format: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Completion:
        """One chat completion; retries as documented on the class."""
        params = self._with_format(params, response_format)
        model, content = encode_request(self._model, messages, params)
        pools = self._sync_pools()
        deadline = time.monotonic() + self._total_timeout
        attempt = 0
        outcome: Completion | LLMError
        failed: LLMError | None = None  # the last attempt's error, before a retry
        while True:
            attempt += 1
            with pools.lease() as client:
                # The attempt is taken from the caller's call budget only now,
                # holding a connection slot: a request queued for a slot holds
                # no budget that a request ready to go could use.
                if not reserve_attempt():
                    if failed is None:
                        raise budget_exceeded(f"POST {self._url} for model {model!r}")
                    raise self._refused_retry(failed)
                started = time.perf_counter()
                try:
                    outcome = self._post(client, content, model, attempt, started, deadline)
                except httpx.RequestError as exc:
                    outcome = request_error(
                        self._url, exc, model=model, attempt=attempt, key=self._key
                    )
                    if time.monotonic() >= deadline:
                        raise self._expired(model, attempt, outcome) from exc
            if isinstance(outcome, Completion):
                return outcome
            failed = self._format_rejected(outcome, params)
            self._sleep(self._wait_or_raise(failed, deadline))

    async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
        """Like ``chat``, without blocking the running event loop (on a worker thread)."""
        threads = self._worker_threads()
        # The caller's context (its active CallBudget) goes with the call.
        context = contextvars.copy_context()
        call = functools.partial(context.run, self.chat, messages, **params)
        return await asyncio.get_running_loop().run_in_executor(threads, call)

    def _post(
        self,
        client: httpx.Client,
        content: bytes,
        model: str,
        attempt: int,
        started: float,
        deadline: float,
    ) -> Completion | LLMError:
        left = deadline - time.monotonic()
        if left <= 0:
            raise self._expired(model, attempt - 1, None)
        # No read may wait past the deadline; the chunk loop checks it between reads.
        request = client.build_request(
            "POST", self._request_url, content=content, timeout=_capped(self._timeout, left)
        )
        # Streamed, so that the body is read in chunks and reading stops at the cap.
        response = client.send(request, stream=True)
        try:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self._max_reply_bytes:
                    return self._too_big(response, model, attempt)
                if time.monotonic() >= deadline:
                    raise self._expired(model, attempt, None)
        finally:
            response.close()
        return self._outcome(response, bytes(body), model, attempt, started)

    def _too_big(self, response: httpx.Response, model: str, attempt: int) -> LLMError:
        return BadResponseError(
            f"{self._url} answered HTTP {response.status_code} with a body larger than "
            f"max_reply_bytes={self._max_reply_bytes} once decompressed; reading stopped there",
            status=response.status_code,
            model=model,
            attempts=attempt,
        )

    def _expired(self, model: str, attempts: int, last: LLMError | None) -> LLMTimeoutError:
        after = f"; the last attempt failed with: {last}" if last is not None else ""
        return LLMTimeoutError(
            f"POST {self._url} got no usable reply within total_timeout="
            f"{self._total_timeout:g} s ({attempts} attempt(s)){after}",
            model=model,
            attempts=max(attempts, 1),
        )

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections and worker threads. Later calls raise ``RuntimeError``."""
        with self._lock, self._threads_lock:
            self._closed = True
            pools, self._sync = self._sync, None
            retired, self._retired = self._retired, []
            threads, self._threads = self._threads, None
        if threads is not None:
            # Calls in flight finish on their own (within total_timeout).
            threads.shutdown(wait=False)
        for each in [*retired, *([pools] if pools is not None else [])]:
            each.close()

    async def aclose(self) -> None:
        """``close()``, for ``async with``."""
        self.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> OpenAIClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- internals ---------------------------------------------------------------------

    def _sync_pools(self) -> SyncPools:
        self._check_open()
        pools = self._sync
        if pools is not None:
            return pools
        transport = self._transport
        if transport is not None and not isinstance(transport, httpx.BaseTransport):
            raise ConfigError(
                f"transport {type(transport).__name__} is async only; pass a transport "
                "that implements httpx.BaseTransport (chat and achat both use it)"
            )
        with self._lock:
            self._check_open()
            if self._sync is None:
                options = self._pool_options()
                # A given transport does its own pooling, so it gets one client;
                # see _pools.py for why the network gets several small pools.
                limit = self._max_concurrency
                slots = [limit] if self._transport is not None else split_slots(limit)
                self._sync = SyncPools(
                    slots,
                    lambda slots: httpx.Client(limits=pool_limits(slots), **options),
                )
            return self._sync

    def _worker_threads(self) -> ThreadPoolExecutor:
        self._check_open()
        # Not self._lock: the first call holds that while it opens the pools
        # (tens of ms), and the event loop must not wait for it here.
        with self._threads_lock:
            self._check_open()
            if self._threads is None:
                self._threads = ThreadPoolExecutor(
                    self._max_concurrency, thread_name_prefix="tnsai-openai"
                )
            return self._threads

    def _pool_options(self) -> dict[str, Any]:
        """Keyword arguments shared by every httpx client. Called with self._lock held."""
        # The SSL context is built once and shared by every pool: each build
        # loads the CA bundle (tens of ms), which httpx would otherwise repeat
        # per pool.
        if self._ssl is None:
            # A plain-http server (a local llama.cpp) never uses TLS, and requests
            # go only to the base URL (redirects are not followed): no CA bundle.
            https = self._base_url.startswith("https://")
            self._ssl = (
                httpx.create_ssl_context() if https else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            )
        headers = httpx.Headers(self._headers)
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        return {
            "headers": headers,
            "verify": self._ssl,
            "timeout": self._timeout,
            "transport": self._transport,
            # One jar for every pool: a cookie the server sets is sent back
            # whichever pool the next request takes, as with one httpx.Client.
            "cookies": self._cookies,
        }

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; create a new client")

    def _outcome(
        self, response: httpx.Response, body: bytes, model: str, attempt: int, started: float
    ) -> Completion | LLMError:
        if not 200 <= response.status_code < 300:
            return status_error(
                self._url, response, body, model=model, attempt=attempt, key=self._key
            )
        latency = time.perf_counter() - started
        try:
            return decode_completion(body, model=model, latency_s=latency, attempts=attempt)
        except ReplyProblem as problem:
            return reply_error(
                self._url, response, problem, model=model, attempt=attempt, key=self._key
            )

    def _with_format(
        self, params: dict[str, Any], response_format: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """``params`` with ``response_format`` checked and in the configured wire shape."""
        if response_format is None:
            return params
        checked = check_response_format(response_format)
        wire = to_llama_cpp(checked) if self._format_style == "llama.cpp" else checked
        return {**params, "response_format": wire} if wire is not None else params

    def _format_rejected(self, error: LLMError, params: Mapping[str, Any]) -> LLMError:
        """A failed call that sent ``response_format`` and whose error names it is the
        parameter's fault, not the server's: retrying would fail the same way."""
        sent = params.get("response_format")
        if sent is None or error.status is None or error.status < 400:
            return error
        message = str(error)
        if "response_format" not in message and "json_schema" not in message:
            return error
        hint = (
            "pass response_format_style='llama.cpp' if it is a llama.cpp server"
            if self._format_style == "openai"
            else "the server may not support structured output"
        )
        rejected = ClientRequestError(
            f"the server rejected response_format {sent!r} (sent in the "
            f"{self._format_style!r} style); {hint}. Server said: {message}",
            status=error.status,
            model=error.model,
            attempts=error.attempts,
        )
        rejected.__cause__ = error
        return rejected

    @staticmethod
    def _refused_retry(error: LLMError) -> LLMError:
        # The caller's call budget has no room for another attempt: the call
        # fails with the last attempt's error rather than sending more.
        logger.info("not retrying after attempt %d: the call budget is spent", error.attempts)
        error.add_note("not retried: the call budget (max_calls) had no attempt left")
        return error

    def _wait_or_raise(self, error: LLMError, deadline: float) -> float:
        """Seconds to wait before the next attempt, or raise ``error`` if there is none.

        A wait that would reach the call's ``deadline`` raises ``LLMTimeoutError`` instead.
        """
        if not error.retryable or error.attempts >= self._policy.max_attempts:
            raise error
        # Asked before the backoff wait, so a retry the budget cannot pay for
        # is not waited for; the attempt itself is reserved when it is sent.
        if not attempt_available():
            raise self._refused_retry(error)
        delay = self._policy.delay(error.attempts, retry_after=error.retry_after, rng=self._rng)
        if time.monotonic() + delay >= deadline:
            raise self._expired(error.model, error.attempts, error) from error
        logger.info(
            "retrying in %.3f s after attempt %d of %d failed: %s",
            delay,
            error.attempts,
            self._policy.max_attempts,
            error,
        )
        return delay


def _check_concurrency(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        raise ConfigError(
            f"max_concurrency must be an int from 1 to {MAX_CONCURRENCY} (MAX_CONCURRENCY: "
            f"calls in flight at once from one client), got {value!r:.40}"
        )


def _capped(timeout: httpx.Timeout, left: float) -> httpx.Timeout:
    """``timeout`` with every phase cut to at most ``left`` seconds."""
    phases = timeout.as_dict()
    return httpx.Timeout(**{k: left if v is None else min(v, left) for k, v in phases.items()})


def _check_base_url(base_url: str) -> str:
    # Error messages show the URL with credentials redacted: it may carry a key.
    shown = redact_url(base_url) if isinstance(base_url, str) else repr(base_url)
    try:
        url = httpx.URL(base_url)
    except (TypeError, httpx.InvalidURL) as exc:
        raise ConfigError(f"base_url {shown!r} is not a URL: {mask(str(exc))}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"base_url must be an http(s) URL such as 'http://127.0.0.1:8080/v1', got {shown!r}"
        )
    if url.query or url.fragment:
        raise ConfigError(f"base_url must not have a query or fragment, got {shown!r}")
    if url.userinfo:
        # It would show in reprs and error messages; credentials have their own places.
        raise ConfigError(
            f"base_url must not hold credentials (user:password@), got {url.host!r} with "
            "them; pass api_key= or headers= instead"
        )
    return str(url).rstrip("/")


def _resolve_key(api_key: str | None, base_url: str) -> str | None:
    if api_key is not None:
        return api_key or None
    key = os.environ.get(ENV_API_KEY)
    if not key and base_url == DEFAULT_BASE_URL:
        key = os.environ.get(_OPENAI_KEY_ENV)
    return key or None
