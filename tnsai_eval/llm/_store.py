"""Recorded model responses on disk, meant to be committed and reviewed.

Layout: one pretty-printed JSON file per request under ``<root>/<k[:2]>/<k>.json``
where ``k`` is the request key. One file per key means a diff shows exactly
which replies changed, and two processes never write the same bytes unless
they answer the same request. Sharding by the first two hex digits keeps
directories small for stores with many thousands of entries.

Writes go to a temporary file in the same directory, then ``os.replace``
moves it over the final name. The rename is atomic on POSIX and Windows, so a
reader sees the old file or the new one, never half of one, and a writer
killed mid-way leaves at worst a ``.tmp`` file that readers ignore. (No
``fsync``: the guarantee is against crashed processes, not power loss, and a
store is a cache that can be re-recorded.)

The key is the sha256 of the canonical JSON (sorted keys, no whitespace) of
the model name, the messages, the sampling parameters and a sample index.
Credentials and endpoints are never part of a key: the same request sent to a
local server and to a hosted API shares its recording. Parameters named like
credentials (``api_key``, ``API_KEY``, ``apiKey``, ``Authorization``,
``x-api-key``, ``access_token``... in any case, at any depth, e.g. inside
``extra_body`` or ``default_headers``) are dropped before a request is keyed
or written (``tnsai_eval._util.secrets.drop_credentials``).

Format 2 (written now; format 1 files are still read) adds to each response
its ``finish_reason``, its ``tool_calls`` (``[{"id", "name", "arguments"}]``)
and, when the call asked for them, its ``logprobs`` (``[{"token", "logprob",
"top_logprobs": [[token, logprob], ...]}]``, plain floats), so that a replay
gives callers the same ``Completion`` the live call did. Each entry also
records ``server``: the address of the server that answered, with any
credentials redacted (``null`` for the embedded model). It is not part of the
key (ports change between runs); ``CachedLLM`` warns when it differs from the
configured one.

A file that cannot be read (not UTF-8, a directory, nested too deeply,
``Infinity``/``NaN``, a wrong field type) raises ``StoreError`` naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval._util.secrets import drop_credentials, is_credential_name, redact_url
from tnsai_eval.errors import ConfigError, StoreError
from tnsai_eval.llm._types import (
    Completion,
    Message,
    MessagesInput,
    TokenLogprob,
    ToolCall,
    Usage,
    normalize_messages,
)

__all__ = ["EXCLUDED_PARAMS", "FORMAT_VERSION", "ResponseStore", "StoredRequest"]

# Bumped if the file layout changes, so old stores are detected, not misread.
FORMAT_VERSION = 2
_READABLE_FORMATS = (1, 2)
# A recording nested deeper than this is not one we wrote (ours are shallow).
_MAX_DEPTH = 64

# Parameters that say where or how to connect, not what to ask. They must not
# change the key (the reply does not depend on them) and must never be written
# to a file that is committed.
EXCLUDED_PARAMS = frozenset(
    {
        "api_base",
        "api_key",
        "authorization",
        "base_url",
        "extra_headers",
        "headers",
        "organization",
        "timeout",
    }
)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """What identifies a recorded reply: model, messages, parameters, sample index.

    >>> req = StoredRequest.build("smol", "Hi", {"temperature": 0, "API_KEY": "sk-x"})
    >>> sorted(req.params)  # credentials are dropped, whatever their case
    ['temperature']
    >>> len(req.key)
    64
    """

    model: str
    messages: tuple[Message, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    sample: int = 0

    @classmethod
    def build(
        cls,
        model: str,
        messages: MessagesInput,
        params: Mapping[str, Any] | None = None,
        *,
        sample: int = 0,
    ) -> StoredRequest:
        """Normalize ``messages``, drop credentials from ``params``, check JSON-ability."""
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
            raise ConfigError(f"sample must be an int >= 0, got {sample!r}")
        kept = {
            k: drop_credentials(v)
            for k, v in (params or {}).items()
            if k not in EXCLUDED_PARAMS and not is_credential_name(k)
        }
        for name, value in kept.items():
            try:
                canonical_json(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(
                    f"parameter {name!r}={value!r} cannot be recorded: it is not JSON ({exc})"
                ) from exc
        return cls(str(model), tuple(normalize_messages(messages)), kept, sample)

    def to_dict(self) -> dict[str, Any]:
        """The request as a JSON-ready mapping, as its recording shows it."""
        return {
            "model": self.model,
            "messages": [m.to_dict() for m in self.messages],
            "params": dict(self.params),
            "sample": self.sample,
        }

    @property
    def key(self) -> str:
        """sha256 hex digest of the canonical JSON of ``to_dict()``."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode("utf-8")).hexdigest()

    @property
    def prompt_start(self) -> str:
        """The start of the last user message, for error messages."""
        for message in reversed(self.messages):
            if message.role == "user":
                text = " ".join(message.content.split())
                return text if len(text) <= 80 else text[:77] + "..."
        return ""


class ResponseStore:
    """A directory of recorded replies, one reviewable JSON file per request.

    Safe with several processes (pytest-xdist workers) writing at once, and
    never corrupted by a writer killed mid-way. Usually used through
    ``CachedLLM``.

    >>> import tempfile
    >>> store = ResponseStore(tempfile.mkdtemp())
    >>> req = StoredRequest.build("smol", "What is 2+2?")
    >>> _ = store.put(req, Completion(text="4"))
    >>> store.get(req.key).text, store.get(req.key).cached
    ('4', True)
    >>> len(store)
    1
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # The replay path builds file names from plain strings: pathlib's
        # object construction costs more than the file read it leads to.
        self._root = os.fspath(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"response store path {str(self.path)!r} is not a directory")

    def __repr__(self) -> str:
        return f"ResponseStore({str(self.path)!r})"

    def path_for(self, key: str) -> Path:
        """The file that holds (or would hold) the reply for ``key``."""
        return Path(self._file(key))

    def _file(self, key: str) -> str:
        if not _is_key(key):
            raise ConfigError(f"store key must be 64 lowercase hex digits, got {key!r}")
        return os.path.join(self._root, key[:2], key + ".json")

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or not _is_key(key):
            return False
        return self.path_for(key).is_file()

    def __iter__(self) -> Iterator[str]:
        """The keys held, in sorted order (temporary files are skipped)."""
        if not self.path.is_dir():
            return
        for file in sorted(self.path.glob("??/*.json")):
            yield file.stem

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def remove_temp_files(self, *, older_than_s: float = 600.0) -> int:
        """Delete temporary files left by killed writers; returns how many.

        Only files older than ``older_than_s`` go, so that a write under way
        in another process is not disturbed. Run it before committing a store.
        """
        if not self.path.is_dir():
            return 0
        cutoff = time.time() - older_than_s
        removed = 0
        for file in self.path.glob("??/.*.tmp"):
            try:
                if file.stat().st_mtime < cutoff:
                    file.unlink()
                    removed += 1
            except FileNotFoundError:  # another process cleaned it first
                continue
        return removed

    def get(self, key: str) -> Completion | None:
        """The recorded reply for ``key`` (``cached=True``), or ``None``."""
        file = self._file(key)
        entry = self._read(file)
        if entry is None:
            return None
        return _completion(entry.get("response"), file)

    def lookup(self, key: str) -> tuple[Completion, str | None] | None:
        """The recorded reply for ``key`` and the (redacted) server that gave it, or ``None``.

        The server is ``None`` for the embedded model and for format-1 files.
        """
        file = self._file(key)
        entry = self._read(file)
        if entry is None:
            return None
        server = entry.get("server")
        return _completion(entry.get("response"), file), server if isinstance(server, str) else None

    def read_entry(self, key: str) -> dict[str, Any] | None:
        """The whole decoded file for ``key`` (request and response), or ``None``."""
        return self._read(self._file(key))

    def _read(self, file: str) -> dict[str, Any] | None:
        try:
            with open(file, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:  # a directory where the file should be, no permission...
            raise StoreError(
                f"recorded response {file!r} cannot be read: {exc.strerror or exc}", location=file
            ) from exc
        try:
            text = data.decode("utf-8")
            # Only a hand edit or a bad merge can make a file unreadable; writes are atomic.
            entry = json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError as exc:
            raise StoreError(
                f"recorded response {file!r} is not UTF-8 (byte {exc.start})", location=file
            ) from exc
        except RecursionError as exc:
            raise StoreError(
                f"recorded response {file!r} is nested too deeply", location=file
            ) from exc
        except ValueError as exc:
            raise StoreError(
                f"recorded response {file!r} is not valid JSON: {exc}", location=file
            ) from exc
        if not isinstance(entry, dict) or entry.get("format") not in _READABLE_FORMATS:
            raise StoreError(
                f"recorded response {file!r} is not a format-{FORMAT_VERSION} entry "
                f"(format 1 is read too)",
                location=file,
            )
        if _depth(entry) > _MAX_DEPTH:
            raise StoreError(f"recorded response {file!r} is nested too deeply", location=file)
        return entry

    def put(
        self, request: StoredRequest, completion: Completion, *, server: str | None = None
    ) -> Path:
        """Record ``completion`` as the reply to ``request``, atomically; returns the file.

        ``server`` is the address of the server that answered; it is stored
        with credentials redacted.
        """
        key = request.key
        file = self.path_for(key)
        response: dict[str, Any] = {
            "text": completion.text,
            "model": completion.model,
            "usage": {
                "prompt_tokens": completion.usage.prompt_tokens,
                "completion_tokens": completion.usage.completion_tokens,
            },
            "finish_reason": completion.finish_reason,
            "tool_calls": [
                {"id": call.id, "name": call.name, "arguments": drop_credentials(call.arguments)}
                for call in completion.tool_calls
            ],
        }
        if completion.logprobs is not None:
            response["logprobs"] = [
                {
                    "token": item.token,
                    "logprob": item.logprob,
                    "top_logprobs": [[token, logprob] for token, logprob in item.top_logprobs],
                }
                for item in completion.logprobs
            ]
        entry = {
            "format": FORMAT_VERSION,
            "key": key,
            "server": redact_url(server) if server else None,
            "request": request.to_dict(),
            "response": response,
        }
        try:
            data = json.dumps(entry, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        except ValueError as exc:  # a NaN/inf log-probability: not JSON
            raise ConfigError(
                f"the reply to {request.prompt_start!r} cannot be recorded: {exc}"
            ) from exc
        data += "\n"
        atomic_write_text(file, data)
        return file


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any, level: int = 0) -> int:
    if level > _MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _completion(response: Any, file: str) -> Completion:
    """A ``Completion`` from a stored ``response``; StoreError names the bad field."""

    def bad(field: str, value: Any, expected: str) -> StoreError:
        return StoreError(
            f"recorded response {file!r}: response.{field} must be {expected}, got {value!r:.80}",
            location=file,
        )

    if not isinstance(response, dict):
        raise bad("", response, "an object")
    text = response.get("text")
    if not isinstance(text, str):
        raise bad("text", text, "a string")
    model = response.get("model", "")
    if not isinstance(model, str):
        raise bad("model", model, "a string")
    usage = response.get("usage") or {}
    if not isinstance(usage, dict):
        raise bad("usage", usage, "an object")
    counts = []
    for name in ("prompt_tokens", "completion_tokens"):
        count = usage.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise bad(f"usage.{name}", count, "an int >= 0")
        counts.append(count)
    finish = response.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise bad("finish_reason", finish, "a string or null")
    calls = response.get("tool_calls") or []
    if not isinstance(calls, list):
        raise bad("tool_calls", calls, "a list")
    tool_calls = []
    for i, call in enumerate(calls):
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("arguments", {}), dict)
        ):
            raise bad(f"tool_calls[{i}]", call, "{id: str, name: str, arguments: object}")
        tool_calls.append(ToolCall(call["id"], call["name"], call.get("arguments", {})))
    return Completion(
        text=text,
        usage=Usage(*counts),
        model=model,
        cached=True,
        finish_reason=finish,
        tool_calls=tuple(tool_calls),
        logprobs=_logprobs(response.get("logprobs"), bad),
        attempts=0,
    )


def _logprobs(value: Any, bad: Any) -> tuple[TokenLogprob, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise bad("logprobs", value, "a list or null")
    out = []
    for i, item in enumerate(value):
        top = item.get("top_logprobs", []) if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("token"), str)
            or not _is_number(item.get("logprob"))
            or not isinstance(top, list)
            or not all(
                isinstance(pair, list)
                and len(pair) == 2
                and isinstance(pair[0], str)
                and _is_number(pair[1])
                for pair in top
            )
        ):
            raise bad(
                f"logprobs[{i}]",
                item,
                "{token: str, logprob: number, top_logprobs: [[str, number]]}",
            )
        out.append(
            TokenLogprob(
                item["token"],
                float(item["logprob"]),
                tuple((str(t), float(lp)) for t, lp in top),
            )
        )
    return tuple(out)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_KEY = re.compile(r"[0-9a-f]{64}")


def _is_key(key: str) -> bool:
    return _KEY.fullmatch(key) is not None
