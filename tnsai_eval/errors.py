r"""Every exception tnsai-eval raises, in one tree.

::

    TnsaiError
    ├── ConfigError (also ValueError)      bad configuration or input; names the bad value
    │   ├── ConditionError                 a CEL condition that does not parse or evaluate
    │   ├── DatasetError                   a dataset file with bad lines (all of them listed)
    │   ├── StoreError                     a response-store file or feedback row that cannot be read
    │   ├── ReportError                    a run report or baseline that cannot be read
    │   └── LocalModelUnavailable          the embedded model cannot run: the `local` extra is
    │                                      missing, or llama.cpp crashes on this machine
    ├── CallBudgetExceeded                 a call budget (max_calls) refused the call; nothing sent
    └── LLMError                           a model call failed; carries status, model, attempts
        ├── LLMConnectionError             could not connect, or the connection dropped
        ├── LLMTimeoutError                connect or read timeout
        ├── RateLimitError                 HTTP 429 after all retries
        ├── ServerError                    HTTP 408/409/5xx after all retries
        ├── ClientRequestError             other HTTP 4xx (bad request, auth): not retried
        ├── BadResponseError               the reply was not a usable chat completion
        └── ReplayMissError                replay mode and the request was never recorded

Input errors subclass `ValueError` so that code written against the standard
library's conventions (``except ValueError``) keeps working.

Warnings (all ``UserWarning``\ s): ``StructuredOutputWarning``, a
``response_format`` schema that a backend enforces only in part;
``StoreWarning``, a store skipped an item it could not read (one bad feedback
row); its subclass ``ServerMismatchWarning``, a replayed recording was made
against another server than the one configured; ``LocalModelWarning``, the
embedded model runs in a fallback setting because llama.cpp's default one
crashed on this machine.
"""

from __future__ import annotations

__all__ = [
    "BadResponseError",
    "CallBudgetExceeded",
    "ClientRequestError",
    "ConditionError",
    "ConfigError",
    "DatasetError",
    "LLMConnectionError",
    "LLMError",
    "LLMTimeoutError",
    "LocalModelUnavailable",
    "LocalModelWarning",
    "RateLimitError",
    "ReplayMissError",
    "ReportError",
    "ServerError",
    "ServerMismatchWarning",
    "StoreError",
    "StoreWarning",
    "StructuredOutputWarning",
    "TnsaiError",
]


class TnsaiError(Exception):
    """Root of every exception raised by tnsai-eval."""


class ConfigError(TnsaiError, ValueError):
    """A configuration value or an input is wrong; the message names it."""


class ConditionError(ConfigError):
    """A norm condition could not be compiled or evaluated.

    Carries the condition text so that a report can show which norm was at fault.
    """

    def __init__(self, message: str, *, condition: str = "") -> None:
        super().__init__(message)
        self.condition = condition


class DatasetError(ConfigError):
    """A dataset file could not be loaded; ``problems`` lists every bad line."""

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class StoreError(ConfigError):
    """A response-store file or a feedback-store row cannot be read.

    The message names the file (or the database and row id) and what is wrong
    with it; ``location`` holds that file path or ``"<db>#<row id>"``.
    """

    def __init__(self, message: str, *, location: str = "") -> None:
        super().__init__(message)
        self.location = location


class StoreWarning(UserWarning):
    """A store skipped something it could not read; the message names it."""


class ServerMismatchWarning(StoreWarning):
    """A replayed recording was made against a different server than the configured one."""


class ReportError(ConfigError):
    """A run report (or baseline) file is missing, unreadable or malformed.

    ``file`` is the file's path (empty for in-memory data) and ``field`` the
    JSON path of the bad value (``$.tests[2].metrics.score.gate``), empty when
    the file as a whole is at fault.
    """

    def __init__(self, message: str, *, file: str = "", field: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.field = field


class LocalModelUnavailable(ConfigError):
    """The embedded model cannot run; the message says why and what to do.

    The `local` extra (llama-cpp-python or the model package) is not
    installed, the model file cannot be loaded, or llama.cpp crashed in a
    probe on this machine: then ``signal`` names the signal that killed the
    probe (``"SIGILL"``), and is empty otherwise.
    """

    def __init__(self, message: str, *, signal: str = "") -> None:
        super().__init__(message)
        self.signal = signal


class LocalModelWarning(UserWarning):
    """The embedded model runs in a fallback setting (slower) because llama.cpp's
    default setting crashed in a probe on this machine; the message says how to
    avoid it."""


class CallBudgetExceeded(TnsaiError):
    """A ``CallBudget`` had no attempt left, so the call was not sent.

    Not an ``LLMError``: no model was asked. ``limit`` is the budget's cap and
    ``spent`` what it had spent when it refused; a case refused this way is
    *not run* (``CaseState.NOT_RUN``), never scored 0.
    """

    def __init__(self, message: str, *, limit: int, spent: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.spent = spent


class LLMError(TnsaiError):
    """A call to a model failed.

    Attributes:
        status: the HTTP status, or ``None`` when there was no HTTP reply.
        model: the model the request was for.
        attempts: how many attempts were made before giving up (1 = no retry).
        retryable: whether the failure is of a kind that is retried.
        retry_after: seconds the server asked us to wait, when it said.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        model: str = "",
        attempts: int = 1,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.model = model
        self.attempts = attempts
        self.retryable = retryable
        self.retry_after = retry_after

    def __str__(self) -> str:
        base = super().__str__()
        details = [f"model={self.model!r}"] if self.model else []
        if self.status is not None:
            details.append(f"status={self.status}")
        details.append(f"attempts={self.attempts}")
        return f"{base} ({', '.join(details)})"


class LLMConnectionError(LLMError):
    """The server could not be reached, or it dropped the connection."""


class LLMTimeoutError(LLMError):
    """The server did not connect or answer within the timeout."""


class RateLimitError(LLMError):
    """HTTP 429: the server is rate limiting us and retries ran out."""


class ServerError(LLMError):
    """HTTP 408, 409 or 5xx: the server failed and retries ran out."""


class ClientRequestError(LLMError):
    """HTTP 4xx other than 408/409/429: the request itself is wrong; not retried."""


class BadResponseError(LLMError):
    """The server answered 2xx but the body is not a usable chat completion."""


class ReplayMissError(LLMError):
    """Replay mode found no recorded response for a request."""


class StructuredOutputWarning(UserWarning):
    """A ``response_format`` schema is enforced only in part (or as plain JSON).

    >>> import warnings
    >>> issubclass(StructuredOutputWarning, UserWarning)
    True
    """
