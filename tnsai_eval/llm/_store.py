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
Credentials and endpoints are never part of a key or a file: the same request
sent to a local server and to a hosted API shares its recording.
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
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm._types import Completion, Message, MessagesInput, Usage, normalize_messages

__all__ = ["EXCLUDED_PARAMS", "ResponseStore", "StoredRequest"]

# Bumped if the file layout changes, so old stores are detected, not misread.
FORMAT_VERSION = 1

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

    >>> req = StoredRequest.build("smol", "Hi", {"temperature": 0, "api_key": "sk-x"})
    >>> sorted(req.params)  # credentials are dropped
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
        kept = {k: v for k, v in (params or {}).items() if k not in EXCLUDED_PARAMS}
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
        try:
            response = entry["response"]
            usage = response.get("usage") or {}
            return Completion(
                text=str(response["text"]),
                usage=Usage(
                    prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    completion_tokens=int(usage.get("completion_tokens", 0)),
                ),
                model=str(response.get("model", "")),
                cached=True,
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(
                f"recorded response {str(file)!r} has no usable 'response' ({exc!r})"
            ) from exc

    def read_entry(self, key: str) -> dict[str, Any] | None:
        """The whole decoded file for ``key`` (request and response), or ``None``."""
        return self._read(self._file(key))

    def _read(self, file: str) -> dict[str, Any] | None:
        try:
            with open(file, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return None
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as exc:
            # Only a hand edit or a bad merge can do this; writes are atomic.
            raise ConfigError(f"recorded response {str(file)!r} is not valid JSON: {exc}") from exc
        if not isinstance(entry, dict) or entry.get("format") != FORMAT_VERSION:
            raise ConfigError(
                f"recorded response {str(file)!r} is not a format-{FORMAT_VERSION} entry"
            )
        return entry

    def put(self, request: StoredRequest, completion: Completion) -> Path:
        """Record ``completion`` as the reply to ``request``, atomically; returns the file."""
        key = request.key
        file = self.path_for(key)
        entry = {
            "format": FORMAT_VERSION,
            "key": key,
            "request": request.to_dict(),
            "response": {
                "text": completion.text,
                "model": completion.model,
                "usage": {
                    "prompt_tokens": completion.usage.prompt_tokens,
                    "completion_tokens": completion.usage.completion_tokens,
                },
            },
        }
        data = json.dumps(entry, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        atomic_write_text(file, data)
        return file


_KEY = re.compile(r"[0-9a-f]{64}")


def _is_key(key: str) -> bool:
    return _KEY.fullmatch(key) is not None
