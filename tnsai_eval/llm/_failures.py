"""How ``OpenAIClient`` turns failed attempts into typed ``LLMError``s.

Pure functions (no I/O, no sleeping), shared by the sync and async paths: an
HTTP status, an unusable 2xx body or an httpx transport failure becomes the
``LLMError`` subclass the client documents, carrying the status, the model,
the attempt number and whether it is worth retrying. Every message has the
API key and every other known secret masked, then is shortened (in that
order, so a key at the cut cannot leak its start), because servers sometimes
echo the key back in an error body.
"""

from __future__ import annotations

import json

import httpx

from tnsai_eval._util.secrets import REDACTED, mask_then_cut
from tnsai_eval.errors import (
    BadResponseError,
    ClientRequestError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
    RateLimitError,
    ServerError,
)
from tnsai_eval.llm._retry import is_retryable_status, parse_retry_after
from tnsai_eval.llm._wire import ReplyProblem, error_text

__all__ = ["REDACTED", "Secret", "reply_error", "request_error", "scrub", "status_error"]

# How much of an error body goes into an exception message.
_DETAIL_CHARS = 300


class Secret:
    """Holds the API key so that no repr, ``vars()`` dump or log shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself, for the Authorization header and for scrubbing."""
        return self._value

    def __repr__(self) -> str:
        return REDACTED


def scrub(text: str, key: Secret | None) -> str:
    """``text`` on one line, secrets masked, then cut to at most 300 characters.

    >>> scrub("bad key sk-123456\\n  try again", Secret("sk-123456"))
    'bad key *** try again'
    """
    extra = [key.reveal()] if key is not None else []
    return mask_then_cut(" ".join(text.split()), _DETAIL_CHARS, extra)


def status_error(
    url: str,
    response: httpx.Response,
    body: bytes,
    *,
    model: str,
    attempt: int,
    key: Secret | None,
) -> LLMError:
    """The error for a non-2xx reply: 429 rate limit, other retryable statuses
    (408, 409, 5xx) server errors, other 4xx client errors, anything else a bad
    response. Retryable ones carry the server's ``retry-after`` hint."""
    status = response.status_code
    retryable = is_retryable_status(status)
    cls: type[LLMError]
    if status == 429:
        cls = RateLimitError
    elif retryable:
        cls = ServerError
    elif 400 <= status < 500:
        cls = ClientRequestError
    else:
        cls = BadResponseError
    return cls(
        f"{url} answered HTTP {status}: {_detail(body, key)}",
        status=status,
        model=model,
        attempts=attempt,
        retryable=retryable,
        retry_after=parse_retry_after(response.headers) if retryable else None,
    )


def reply_error(
    url: str,
    response: httpx.Response,
    problem: ReplyProblem,
    *,
    model: str,
    attempt: int,
    key: Secret | None,
) -> BadResponseError:
    """The error for a 2xx reply whose body is not a usable completion (not retried)."""
    status = response.status_code
    return BadResponseError(
        f"{url} answered HTTP {status} but {scrub(str(problem), key)}",
        status=status,
        model=model,
        attempts=attempt,
    )


def request_error(
    url: str, exc: httpx.RequestError, *, model: str, attempt: int, key: Secret | None
) -> LLMError:
    """The error for a request that got no reply: timeouts and connection
    failures are retryable; a body httpx could not decode is not."""
    cls: type[LLMError]
    if isinstance(exc, httpx.TimeoutException):
        cls = LLMTimeoutError
    elif isinstance(exc, httpx.TransportError):
        cls = LLMConnectionError
    else:  # DecodingError: a body httpx could not decompress or decode
        cls = BadResponseError
    detail = scrub(str(exc), key) or "no detail"
    error = cls(
        f"POST {url} failed: {type(exc).__name__}: {detail}",
        model=model,
        attempts=attempt,
        retryable=cls is not BadResponseError,
    )
    error.__cause__ = exc
    return error


def _detail(body: bytes, key: Secret | None) -> str:
    # OpenAI-style servers put the reason in {"error": {"message": ...}}; show
    # that rather than the whole JSON, and the raw text for anything else.
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return scrub(text, key) or "(empty body)"
    return scrub(error_text(data) if isinstance(data, dict) else text, key)
