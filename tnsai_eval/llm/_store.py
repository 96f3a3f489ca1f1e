"""Recorded model responses on disk, meant to be committed and reviewed.

Layout (format 3): one pretty-printed JSON file per *cassette*, holding every
reply recorded under that name (the convention of vcrpy and pytest-recording)::

    <root>/<cassette file>.json
    {"format": 3, "cassette": "<name>", "replies": {"<key>": <entry>, ...}}

In pytest a test's cassette is its node id; elsewhere the caller names it
(``CachedLLM(inner, store, cassette="01_quickstart")``), and ``"default"`` is
used when nobody does. A name made of lowercase letters, digits, ``.``, ``_``
and ``-`` is its own file name (``default.json``); any other name (a node id)
becomes a readable slug and the start of its sha256, ``tests-test_x.py-test_a-1~
3f2a...json``, so two names never share a file and no name can leave the
directory. An entry is described in ``_recordings``: the request, the reply,
and the (redacted) server that answered.

Keys: the sha256 of the canonical JSON (sorted keys, no whitespace) of the
model name, the messages, the parameters and a sample index. Parameters that
are credentials or say where to connect (``api_key``, ``Authorization``,
``base_url``, ``timeout``, ``headers``... in any case; see ``EXCLUDED_PARAMS``)
are left out, but only where they are the client's parameters: at the top
level (and at the top of ``extra_body``, which OpenAI-style clients merge into
the request). Inside a ``response_format`` or tool schema, ``token`` or
``password`` is an ordinary property name and changes the key.

Writes: ``put`` keeps a reply in memory; a cassette is written whole,
atomically (a temporary file renamed over it), when nothing *holds* it: at
once by default, or once when the holder releases it (the pytest plugin holds
a test's cassette while the test runs). Writing merges with what is on disk
under an exclusive lock, so two processes writing one cassette (``--dist
each`` runs every test on every worker) keep the union of their replies; for
a key both wrote, the later write wins. A writer killed mid-way leaves at worst
a ``.tmp`` file that readers ignore (no ``fsync``: the guarantee is against
crashed processes, not power loss).

Older stores: format 1 and 2 wrote one file per reply, ``<root>/<k[:2]>/<k>.json``,
under keys that dropped credential-like names at *any* depth. They still
replay: a request not found in its cassette or in ``default`` is looked up
there, and under its format-2 key; a reply found only under a key that differs
from today's raises ``OldStoreKeyWarning`` (re-record it). ``migrate()`` (the
``tnsai-eval store migrate DIR`` command) moves them into the ``default``
cassette, keeping their old keys (marked ``"key_format": 2``).

A file that cannot be read (not UTF-8, a directory, nested too deeply,
``Infinity``/``NaN``, a wrong field type) raises ``StoreError`` naming it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tnsai_eval._util.files import atomic_write_text
from tnsai_eval._util.secrets import (
    drop_credentials,
    is_credential_name,
    mask_then_cut,
    redact_url,
)
from tnsai_eval.errors import ConfigError, StoreError
from tnsai_eval.llm._recordings import (
    decode_json,
    dump_json,
    encode_entry,
    entry_completion,
    masker,
)
from tnsai_eval.llm._types import Completion, Message, MessagesInput, normalize_messages

__all__ = [
    "DEFAULT_CASSETTE",
    "EXCLUDED_PARAMS",
    "FORMAT_VERSION",
    "Recording",
    "ResponseStore",
    "StoredRequest",
]

# Bumped when the layout changes, so old stores are detected, not misread.
FORMAT_VERSION = 3
# The per-reply files of formats 1 and 2.
_LEGACY_FORMATS = (1, 2)
#: The cassette used when none is named; every lookup falls back to it.
DEFAULT_CASSETTE = "default"

# Parameters that say where or how to connect, not what to ask. They must not
# change the key (the reply does not depend on them) and must never be written
# to a file that is committed. Names matched exactly, at the top level only.
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
# OpenAI-style clients merge this parameter's entries into the request's top level.
_MERGED_PARAM = "extra_body"


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _is_client_credential(name: str) -> bool:
    return name in EXCLUDED_PARAMS or is_credential_name(name)


def _key_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without the client's credentials (top level, and top of ``extra_body``)."""
    kept = {}
    for name, value in params.items():
        if _is_client_credential(name):
            continue
        if name == _MERGED_PARAM and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if not _is_client_credential(k)}
        kept[name] = value
    return kept


def _format2_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters as formats 1 and 2 keyed them: credential names dropped at any depth."""
    return {
        k: drop_credentials(v)
        for k, v in params.items()
        if k not in EXCLUDED_PARAMS and not is_credential_name(k)
    }


def _digest(model: str, messages: list[dict[str, str]], params: Any, sample: int) -> str:
    body = {"model": model, "messages": messages, "params": params, "sample": sample}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """What identifies a recorded reply: model, messages, parameters, sample index.

    >>> req = StoredRequest.build("smol", "Hi", {"temperature": 0, "API_KEY": "sk-x"})
    >>> sorted(req.params)  # the client's credentials are dropped, whatever their case
    ['temperature']
    >>> schema = {"type": "object", "properties": {"token": {"type": "string"}}}
    >>> fmt = {"type": "json_schema", "json_schema": {"name": "t", "schema": schema}}
    >>> "token" in str(StoredRequest.build("smol", "Hi", {"response_format": fmt}).params)
    True
    >>> len(req.key)
    64
    """

    model: str
    messages: tuple[Message, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    sample: int = 0
    # What formats 1 and 2 keyed instead of ``params``, when that differs.
    format2_params: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    # Computed once: every lookup and write asks for it.
    _key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        digest = _digest(
            self.model, [m.to_dict() for m in self.messages], dict(self.params), self.sample
        )
        object.__setattr__(self, "_key", digest)

    @classmethod
    def build(
        cls,
        model: str,
        messages: MessagesInput,
        params: Mapping[str, Any] | None = None,
        *,
        sample: int = 0,
    ) -> StoredRequest:
        """Normalize ``messages``, drop the client's credentials from ``params``, check JSON."""
        if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
            raise ConfigError(f"sample must be an int >= 0, got {sample!r}")
        given = params or {}
        kept = _key_params(given)
        # Formats 1 and 2 differ only where a value nests a credential-like name;
        # plain values (most calls: temperature, max_tokens...) need no walk.
        nested = any(isinstance(v, Mapping | list | tuple) for v in given.values())
        old = _format2_params(given) if nested else kept
        try:
            return cls(
                str(model),
                tuple(normalize_messages(messages)),
                kept,
                sample,
                None if old == kept else old,
            )
        except (TypeError, ValueError, RecursionError):
            # The key's JSON failed: find the parameter to blame (rare, so not
            # checked one by one on every call).
            for name, value in kept.items():
                try:
                    canonical_json(value)
                except (TypeError, ValueError, RecursionError) as exc:
                    raise ConfigError(
                        f"parameter {name!r}={value!r:.200} cannot be recorded: it is not "
                        f"JSON ({type(exc).__name__}: {exc!s:.200})"
                    ) from exc
            raise

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
        return self._key

    @property
    def format2_key(self) -> str:
        """The key formats 1 and 2 gave this request (equal to ``key`` for most requests)."""
        if self.format2_params is None:
            return self.key
        return _digest(
            self.model, [m.to_dict() for m in self.messages], self.format2_params, self.sample
        )

    @property
    def prompt_start(self) -> str:
        """The start of the last user message, for error messages: masked, then cut
        (cut first, a key straddling the cut would keep its start where no mask finds it)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return mask_then_cut(" ".join(message.content.split()), 77)
        return ""


@dataclass(frozen=True, slots=True)
class Recording:
    """A recorded reply found for a request (``ResponseStore.find``).

    ``cassette`` is the cassette it came from (``None``: a per-reply file of
    format 1 or 2); ``old_key`` is true when it was found only under the
    request's format-2 key, which differs from today's.
    """

    completion: Completion
    server: str | None
    cassette: str | None
    old_key: bool = False


@dataclass(slots=True)
class _Cassette:
    """One cassette file as this process knows it (guarded by the store's lock)."""

    name: str
    file: str
    path: Path
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)  # today's keys
    format2: dict[str, dict[str, Any]] = field(default_factory=dict)  # migrated, old keys
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # not written yet
    held: int = 0
    # (inode, mtime, size) of the file when this process last read or wrote it.
    seen: tuple[int, int, int] | None = None


_SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._]+")


def cassette_file_name(name: str) -> str:
    """The file name of cassette ``name`` (see the module docstring).

    >>> cassette_file_name("default")
    'default.json'
    >>> cassette_file_name("tests/test_x.py::test_a[1]")
    'tests-test_x.py-test_a-1~c09d8c810546.json'
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"cassette name must be a non-empty str, got {name!r}")
    if _SAFE_NAME.fullmatch(name) and not name.endswith(".json"):
        return name + ".json"
    slug = _UNSAFE_RUN.sub("-", name).strip("-.")[:80] or "cassette"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}~{digest}.json"


class ResponseStore:
    """A directory of recorded replies: one reviewable JSON file per cassette.

    Safe with several processes (pytest-xdist workers) writing at once, and
    never corrupted by a writer killed mid-way. Usually used through
    ``CachedLLM``.

    >>> store = ResponseStore(tempfile.mkdtemp())
    >>> req = StoredRequest.build("smol", "What is 2+2?")
    >>> store.put(req, Completion(text="4")).name
    'default.json'
    >>> store.get(req.key).text, store.get(req.key).cached
    ('4', True)
    >>> with store.holding("tests/test_math.py::test_add"):
    ...     _ = store.put(StoredRequest.build("smol", "1+1?"), Completion(text="2"),
    ...                   cassette="tests/test_math.py::test_add")  # written at the end
    >>> len(store), sorted(store.cassettes())
    (2, ['default', 'tests/test_math.py::test_add'])
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._root = os.fspath(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"response store path {str(self.path)!r} is not a directory")
        self._cassettes: dict[str, _Cassette] = {}
        self._lock = threading.RLock()
        self._has_legacy: bool | None = None
        # Redacting an address masks it too, which reads the environment: once per address.
        self._servers: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"ResponseStore({str(self.path)!r})"

    # -- where things are ---------------------------------------------------
    def cassette_path(self, cassette: str = DEFAULT_CASSETTE) -> Path:
        """The file that holds (or would hold) ``cassette``."""
        return Path(self._root, cassette_file_name(cassette))

    def legacy_path(self, key: str) -> Path:
        """The per-reply file that formats 1 and 2 used for ``key``."""
        return Path(self._legacy_file(key))

    def _legacy_file(self, key: str) -> str:
        if not _is_key(key):
            raise ConfigError(f"store key must be 64 lowercase hex digits, got {key!r}")
        return os.path.join(self._root, key[:2], key + ".json")

    def cassettes(self) -> list[str]:
        """The names of the cassettes on disk or waiting to be written, sorted."""
        names = {c.name for c in self._cassettes.values() if c.pending or c.replies or c.format2}
        if self.path.is_dir():
            for file in self.path.glob("*.json"):
                names.add(self._file_cassette_name(file))
        return sorted(names)

    def _file_cassette_name(self, file: Path) -> str:
        data = _read_bytes(os.fspath(file))
        value = decode_json(data or b"{}", os.fspath(file))
        name = value.get("cassette") if isinstance(value, dict) else None
        if not isinstance(name, str) or cassette_file_name(name) != file.name:
            raise StoreError(
                f"cassette file {str(file)!r} does not name the cassette it holds "
                f"(its 'cassette' is {name!r:.80})",
                location=os.fspath(file),
            )
        return name

    def __iter__(self) -> Iterator[str]:
        """Every key held (cassettes and per-reply files), sorted, once each."""
        keys: set[str] = set()
        with self._lock:
            for name in self.cassettes():
                cassette = self._cassette(name)
                keys.update(cassette.replies, cassette.format2)
        keys.update(self._legacy_keys())
        yield from sorted(keys)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _is_key(key) and key in set(self)

    # -- reading ------------------------------------------------------------
    def find(self, request: StoredRequest, cassette: str = DEFAULT_CASSETTE) -> Recording | None:
        """The recorded reply to ``request``, or ``None``.

        Looked up in ``cassette``, then in ``default``, then under the
        request's format-2 key: among migrated replies and in per-reply files
        of formats 1 and 2.
        """
        key = request.key
        with self._lock:
            own = self._cassette(cassette)
            chain = (
                [own] if cassette == DEFAULT_CASSETTE else [own, self._cassette(DEFAULT_CASSETTE)]
            )
            for held in chain:
                entry = held.replies.get(key)
                if entry is not None:
                    return self._recording(entry, held.name, held.file)
            old = request.format2_key
            for held in chain:
                entry = held.format2.get(old)
                if entry is not None:
                    return self._recording(entry, held.name, held.file, old_key=old != key)
        found = self._legacy_entry(old)
        if found is None:
            return None
        entry, file = found
        return self._recording(entry, None, file, old_key=old != key)

    def get(self, key: str, cassette: str = DEFAULT_CASSETTE) -> Completion | None:
        """The reply recorded under ``key`` (``cached=True``) in ``cassette``, ``default``
        or a per-reply file of format 1 or 2; ``None`` when there is none."""
        if not _is_key(key):
            raise ConfigError(f"store key must be 64 lowercase hex digits, got {key!r}")
        with self._lock:
            names = dict.fromkeys([cassette, DEFAULT_CASSETTE])
            for name in names:
                held = self._cassette(name)
                entry = held.replies.get(key) or held.format2.get(key)
                if entry is not None:
                    return self._recording(entry, name, held.file).completion
        found = self._legacy_entry(key)
        if found is None:
            return None
        entry, file = found
        return self._recording(entry, None, file).completion

    @staticmethod
    def _recording(
        entry: dict[str, Any], cassette: str | None, file: str, *, old_key: bool = False
    ) -> Recording:
        server = entry.get("server")
        return Recording(
            entry_completion(entry.get("response"), file),
            server if isinstance(server, str) else None,
            cassette,
            old_key,
        )

    def _cassette(self, name: str) -> _Cassette:
        """``name``'s cassette, read from disk the first time (hold the lock)."""
        cassette = self._cassettes.get(name)
        if cassette is None:
            path = self.cassette_path(name)
            cassette = _Cassette(name, os.fspath(path), path)
            cassette.replies, cassette.format2, cassette.seen = _read_cassette(cassette.file, name)
            self._cassettes[name] = cassette
        return cassette

    def _legacy_entry(self, key: str) -> tuple[dict[str, Any], str] | None:
        if self._has_legacy is None:
            # Checked once: nothing writes this layout any more, so a store
            # without it (every store made since format 3) never pays a failed
            # open per miss.
            self._has_legacy = any(self._legacy_dirs())
        if not self._has_legacy:
            return None
        file = self._legacy_file(key)
        data = _read_bytes(file)
        if data is None:
            return None
        entry = decode_json(data, file)
        if not isinstance(entry, dict) or entry.get("format") not in _LEGACY_FORMATS:
            raise StoreError(
                f"recorded response {file!r} is not a format-1 or format-2 entry",
                location=file,
            )
        return entry, file

    def _legacy_dirs(self) -> Iterator[Path]:
        if not self.path.is_dir():
            return
        for folder in self.path.iterdir():
            name = folder.name
            if len(name) == 2 and all(c in "0123456789abcdef" for c in name) and folder.is_dir():
                yield folder

    def _legacy_files(self) -> list[Path]:
        return sorted(f for folder in self._legacy_dirs() for f in folder.glob("*.json"))

    def _legacy_keys(self) -> list[str]:
        return [f.stem for f in self._legacy_files() if _is_key(f.stem)]

    # -- writing ------------------------------------------------------------
    def put(
        self,
        request: StoredRequest,
        completion: Completion,
        *,
        server: str | None = None,
        cassette: str = DEFAULT_CASSETTE,
    ) -> Path:
        """Record ``completion`` as the reply to ``request`` in ``cassette``; returns its file.

        Written at once (atomically) unless the cassette is held, then when it
        is released. ``server`` is stored with credentials redacted; every
        known secret is masked in the entry when it is written.
        """
        shown = None
        if server:
            shown = self._servers.get(server)
            if shown is None:
                shown = self._servers[server] = redact_url(server)
        entry = encode_entry(request.to_dict(), completion, shown, request.prompt_start)
        with self._lock:
            held = self._cassette(cassette)
            held.replies[request.key] = entry
            held.pending[request.key] = entry
            if not held.held:
                self._save(held)
        return held.path

    def hold(self, cassette: str) -> None:
        """Keep ``cassette``'s new replies in memory until ``release`` (calls nest)."""
        with self._lock:
            self._cassette(cassette).held += 1

    def release(self, cassette: str) -> Path | None:
        """End one ``hold``; the last one writes the replies kept. Returns the file written.

        A released cassette is also let go from memory (it is read again if
        asked for), so a session of many tests keeps only the running one's.
        """
        with self._lock:
            held = self._cassette(cassette)
            if held.held == 0:
                raise ConfigError(f"cassette {cassette!r} is not held")
            held.held -= 1
            if held.held:
                return None
            written = bool(held.pending)
            if written:
                self._save(held)
            if cassette != DEFAULT_CASSETTE:
                del self._cassettes[cassette]
            return held.path if written else None

    @contextlib.contextmanager
    def holding(self, cassette: str) -> Iterator[None]:
        """``hold`` for the ``with`` block: its replies are written once, at its end."""
        self.hold(cassette)
        try:
            yield
        finally:
            self.release(cassette)

    def save(self) -> list[Path]:
        """Write every cassette with replies not written yet, held or not; the files written."""
        with self._lock:
            waiting = [c for c in self._cassettes.values() if c.pending]
            for cassette in waiting:
                self._save(cassette)
        return [c.path for c in waiting]

    def _save(self, cassette: _Cassette) -> None:
        """Merge ``cassette``'s pending replies with the file and write it (hold the lock)."""
        with _exclusive(self._root):
            if _stat(cassette.file) != cassette.seen:
                # Another process wrote it since this one read it: keep its replies.
                cassette.replies, cassette.format2, _ = _read_cassette(cassette.file, cassette.name)
            # Masked now, once per entry, with the secrets known at this moment.
            masked = masker()
            for key, entry in cassette.pending.items():
                target = cassette.format2 if entry.get("key_format") == 2 else cassette.replies
                target[key] = masked(entry)
            replies = {**cassette.format2, **cassette.replies}
            document = {"format": FORMAT_VERSION, "cassette": cassette.name, "replies": replies}
            text = dump_json(document) + "\n"
            atomic_write_text(cassette.file, text)
            cassette.seen = _stat(cassette.file)
            cassette.pending.clear()

    def remove_temp_files(self, *, older_than_s: float = 600.0) -> int:
        """Delete temporary files left by killed writers; returns how many.

        Only files older than ``older_than_s`` go, so that a write under way
        in another process is not disturbed. Run it before committing a store.
        """
        if not self.path.is_dir():
            return 0
        cutoff = time.time() - older_than_s
        removed = 0
        for file in [*self.path.glob(".*.tmp"), *self.path.glob("??/.*.tmp")]:
            try:
                if file.stat().st_mtime < cutoff:
                    file.unlink()
                    removed += 1
            except FileNotFoundError:  # another process cleaned it first
                continue
        return removed

    # -- migration ------------------------------------------------------------
    def migrate(
        self,
        cassette: str = DEFAULT_CASSETTE,
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Move every per-reply file of formats 1 and 2 into ``cassette``; returns how many.

        Replies keep the keys they were recorded under (marked
        ``"key_format": 2``), so a request whose key changed still finds its
        reply, with an ``OldStoreKeyWarning``. The cassette is written before
        any old file is removed, so an interrupted migration loses nothing;
        running it again finishes the job. ``progress(done, total)`` is called
        as files are read.
        """
        files = self._legacy_files()
        moved: dict[str, dict[str, Any]] = {}
        for done, file in enumerate(files, start=1):
            where = os.fspath(file)
            key = file.stem
            if not _is_key(key):
                raise StoreError(f"{where!r} is not named after a store key", location=where)
            found = self._legacy_entry(key)
            if found is None:  # removed by someone else meanwhile
                continue
            entry = found[0]
            entry_completion(entry.get("response"), where)  # refuse a broken file before moving it
            moved[key] = {
                "key_format": 2,
                "request": entry.get("request"),
                "response": entry.get("response"),
                "server": entry.get("server"),
            }
            if progress is not None:
                progress(done, len(files))
        if not moved:
            return 0
        with self._lock:
            held = self._cassette(cassette)
            for key, entry in moved.items():
                if key not in held.replies:
                    held.pending[key] = entry
            self._save(held)
        for file in files:
            file.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # not empty: a temp file, a stray file
                file.parent.rmdir()
        self._has_legacy = None
        return len(moved)


def _read_bytes(file: str) -> bytes | None:
    try:
        with open(file, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a directory where the file should be, no permission...
        raise StoreError(
            f"recorded response {file!r} cannot be read: {exc.strerror or exc}", location=file
        ) from exc


def _stat(file: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(file)
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def _read_cassette(
    file: str, name: str
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], tuple[int, int, int] | None]:
    """(replies under today's keys, migrated replies under format-2 keys, stat) of ``file``."""
    seen = _stat(file)
    data = _read_bytes(file)
    if data is None:
        return {}, {}, None
    document = decode_json(data, file)
    if not isinstance(document, dict) or document.get("format") != FORMAT_VERSION:
        raise StoreError(
            f"cassette {file!r} is not a format-{FORMAT_VERSION} cassette "
            "(a per-reply file of format 1 or 2 belongs in a two-letter folder)",
            location=file,
        )
    if document.get("cassette") != name:
        raise StoreError(
            f"cassette file {file!r} holds cassette {document.get('cassette')!r:.80}, "
            f"not {name!r:.80}",
            location=file,
        )
    replies = document.get("replies")
    if not isinstance(replies, dict):
        raise StoreError(f"cassette {file!r}: 'replies' must be an object", location=file)
    current: dict[str, dict[str, Any]] = {}
    format2: dict[str, dict[str, Any]] = {}
    for key, entry in replies.items():
        if not _is_key(key) or not isinstance(entry, dict):
            raise StoreError(
                f"cassette {file!r}: replies must map 64-hex-digit keys to objects, "
                f"got {key!r:.80}",
                location=file,
            )
        (format2 if entry.get("key_format") == 2 else current)[key] = entry
    return current, format2, seen


@contextlib.contextmanager
def _exclusive(root: str) -> Iterator[None]:
    """An exclusive lock on store ``root`` among the processes of this machine.

    The lock file lives in the temporary directory, named after the store's
    real path, so that the store itself holds only what is committed.
    """
    real = os.path.realpath(root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    lock = os.path.join(tempfile.gettempdir(), f"tnsai-store-{digest}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_KEY = re.compile(r"[0-9a-f]{64}")


def _is_key(key: str) -> bool:
    return _KEY.fullmatch(key) is not None
