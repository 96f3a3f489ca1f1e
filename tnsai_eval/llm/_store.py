"""Recorded model responses on disk, meant to be committed and reviewed.

Layout (format 3): one pretty-printed JSON file per *cassette*, holding every
reply recorded under that name (the convention of vcrpy and pytest-recording)::

    <root>/<cassette file>.json
    {"format": 3, "cassette": "<name>", "replies": {"<key>": <entry>, ...}}

In pytest a test's cassette is its node id; elsewhere the caller names it
(``CachedLLM(inner, store, cassette="01_quickstart")``), and ``"default"`` is
used when nobody does. A name made of lowercase letters, digits, ``.``, ``_``
and ``-`` is its own file name (``default.json``); any other name (a node id)
becomes a readable slug and the start of its sha256, ``tests-test_x.py-test_a~
3f2a...json``, so two names never share a file and no name can leave the
directory. A name may hold a secret (a test parametrized with a key), and file
names are committed, so the slug cannot carry one: a test's parameters (from
the first ``[``) are left out, token-shaped text (``sk-...``, ``ghp_...``) is
masked and any run of more than 20 letters and digits (which every key has and
no identifier needs) is cut. The ``cassette`` field inside the file is the
name with every known secret and token masked. An entry is described in
``_recordings``: the request, the reply, and the (redacted) server that answered.

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
a key both wrote, the later write wins. The lock is an ``flock`` on the store
directory itself: no lock file to commit, and none in the shared temporary
directory, where another user could take the name first. A lock another
process holds for more than ``lock_timeout`` seconds raises ``StoreError``.
A writer killed mid-way leaves at worst a ``.tmp`` file that readers ignore
(no ``fsync``: the guarantee is against crashed processes, not power loss).

SIGTERM (a CI cancel, a job's timeout) ends a process at once by default,
which would lose every reply a held cassette kept in memory: while a cassette
is held, a SIGTERM handler (installed from the main thread) first writes every
held cassette, then lets the signal end the process as it would have (see
``_SigtermWriter``). SIGKILL cannot be caught: it loses the held replies.

Older stores: format 1 and 2 wrote one file per reply, ``<root>/<k[:2]>/<k>.json``,
under keys that dropped credential-like names at *any* depth. They still
replay: a request not found in its cassette or in ``default`` is looked up
there, and under its format-2 key; a reply found only under a key that differs
from today's raises ``OldStoreKeyWarning`` (re-record it). ``migrate()`` (the
``tnsai-eval store migrate DIR`` command) moves them into the ``default``
cassette, keeping their old keys (marked ``"key_format": 2``).

Usage and pruning: the store notes which replies each run used, per cassette
(``_usage``: a reply found or recorded there), so that ``prune()`` (the
``tnsai-eval store prune DIR`` command) can keep only the replies the last run
used, in the cassettes that run opened, and leave every other cassette as it
is. A cassette written in refresh mode (``put(..., refresh=True)``) is
rewritten the same way each time it is written: it keeps the replies this run
used, so a refreshed reply replaces the old one instead of the cassette growing.

A file that cannot be read (not UTF-8, a directory, nested too deeply,
``Infinity``/``NaN``, a wrong field type) raises ``StoreError`` naming it. Only
regular files are read: a cassette that is (or links to) a FIFO or a device
such as ``/dev/zero``, or that is larger than ``MAX_CASSETTE_BYTES``, is a
``StoreError`` too, raised before any byte is read.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import re
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from tnsai_eval._util.checks import seconds
from tnsai_eval._util.files import atomic_write_text, read_regular_file
from tnsai_eval._util.secrets import (
    REDACTED,
    drop_credentials,
    is_credential_name,
    mask,
    mask_then_cut,
    mask_tokens,
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
from tnsai_eval.llm._usage import (
    PrunedCassette,
    PruneReport,
    new_run_id,
    read_usage,
    write_usage,
)

__all__ = [
    "DEFAULT_CASSETTE",
    "EXCLUDED_PARAMS",
    "FORMAT_VERSION",
    "MAX_CASSETTE_BYTES",
    "OTHER_MODEL_HINT",
    "Recording",
    "ResponseStore",
    "StoredRequest",
    "check_sample",
]

# Bumped when the layout changes, so old stores are detected, not misread.
FORMAT_VERSION = 3
# The per-reply files of formats 1 and 2.
_LEGACY_FORMATS = (1, 2)
#: The cassette used when none is named; every lookup falls back to it.
DEFAULT_CASSETTE = "default"
#: How a replay miss starts to say that the store holds the replies for another
#: model (``ResponseStore.miss_hint``): the fix is selecting it, not recording.
OTHER_MODEL_HINT = "the cassette holds replies recorded for model"
#: The largest cassette (or per-reply file) read; a larger one is a ``StoreError``.
#: The largest committed here (a benchmark's 960 replies) is under 2 MB.
MAX_CASSETTE_BYTES = 256 * 1024 * 1024

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


def check_sample(sample: object) -> None:
    """``ConfigError`` unless ``sample`` (a repeat sample index) is an int >= 0."""
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ConfigError(f"sample must be an int >= 0, got {sample!r}")


def _is_client_credential(name: str) -> bool:
    return name in EXCLUDED_PARAMS or is_credential_name(name)


def _key_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without the client's credentials (top level, and top of ``extra_body``)."""
    kept = {k: v for k, v in params.items() if not _is_client_credential(k)}
    merged = kept.get(_MERGED_PARAM)
    if isinstance(merged, Mapping):
        kept[_MERGED_PARAM] = {k: v for k, v in merged.items() if not _is_client_credential(k)}
    return kept


def _format2_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters as formats 1 and 2 keyed them: credential names dropped at any depth."""
    return {k: drop_credentials(v) for k, v in params.items() if not _is_client_credential(k)}


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
        object.__setattr__(self, "_key", self._digest(self.params))

    def _digest(self, params: Mapping[str, Any]) -> str:
        body = {**self.to_dict(), "params": dict(params)}
        return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()

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
        check_sample(sample)
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
        return self.key if self.format2_params is None else self._digest(self.format2_params)

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
    # As in the file: a migrated reply ("key_format": 2) is under its format-2 key.
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # not written yet
    held: int = 0
    # (inode, mtime, size) of the file when this process last read or wrote it.
    seen: tuple[int, int, int] | None = None
    used: set[str] = field(default_factory=set)  # keys this run found or recorded here
    opened: bool = False  # used since its usage record was last written
    refresh: bool = False  # recorded in refresh mode: written with this run's replies only


# The run of every store of this process that is not given one (see ``_usage``).
_PROCESS_RUN = new_run_id()


_SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._]+")
# More letters and digits in a row than an identifier needs: the body of a key.
_LONG_RUN = re.compile(r"[A-Za-z0-9]{21,}")


def cassette_file_name(name: str) -> str:
    """The file name of cassette ``name`` (see the module docstring).

    It depends on the name alone (not on the environment), so a store
    replays on any machine; the slug cannot carry a secret.

    >>> cassette_file_name("default")
    'default.json'
    >>> cassette_file_name("tests/test_x.py::test_a[1]")
    'tests-test_x.py-test_a~c09d8c810546.json'
    >>> cassette_file_name("tests/test_k.py::test_b[sk-proj-" + "A1b2C3d4" * 6 + "]")[:21]
    'tests-test_k.py-test_'
    """
    if not isinstance(name, str) or not name:
        raise ConfigError(f"cassette name must be a non-empty str, got {name!r:.80}")
    if _SAFE_NAME.fullmatch(name) and not name.endswith(".json") and _readable(name) == name:
        return name + ".json"
    slug = _UNSAFE_RUN.sub("-", _readable(name.split("[", 1)[0])).strip("-.")[:80] or "cassette"
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}~{digest}.json"


def _readable(text: str) -> str:
    """``text`` with token-shaped runs masked and runs of over 20 letters and digits cut."""
    return _LONG_RUN.sub(lambda run: run.group()[:4] + "-", mask_tokens(text))


def shown_cassette_name(name: str) -> str:
    """``name`` as a cassette file and messages show it: known secrets and tokens masked.

    >>> shown_cassette_name("tests/test_k.py::test_b[hf_" + "Zq9" * 10 + "]")
    'tests/test_k.py::test_b[***]'
    """
    return mask_tokens(mask(name))


_MASKED_FILE_NAME = re.compile(r"[^~]+~[0-9a-f]{12}\.json")


def _shown_name_fits(shown: str, file_name: str) -> bool:
    """Whether a file called ``file_name`` may hold the cassette its field shows as ``shown``.

    A masked name no longer gives its file name (the digest is of the name
    itself), so only the shape of the file name is checked then.
    """
    if REDACTED in shown:
        return _MASKED_FILE_NAME.fullmatch(file_name) is not None
    return cassette_file_name(shown) == file_name


def _names_match(shown: str, name: str) -> bool:
    """Whether ``shown`` (a file's ``cassette`` field) is ``name``, masked or not.

    Masking depends on the secrets known where the file was written, so each
    ``***`` stands for any text (one character or more) rather than being
    recomputed here; matched left to right in linear time, whatever the file holds.

    >>> _names_match("t[***]", "t[sk-1]"), _names_match("t[***]", "u[sk-1]")
    (True, False)
    """
    if shown == name:
        return True
    parts = shown.split(REDACTED)
    if len(parts) == 1 or not name.startswith(parts[0]):
        return False
    at = len(parts[0])
    for part in parts[1:-1]:
        found = name.find(part, at + 1)
        if found < 0:
            return False
        at = found + len(part)
    return len(name) - len(parts[-1]) > at and name.endswith(parts[-1])


class ResponseStore:
    """A directory of recorded replies: one reviewable JSON file per cassette.

    Safe with several processes (pytest-xdist workers) writing at once, and
    never corrupted by a writer killed mid-way. Usually used through
    ``CachedLLM``.

    >>> import tempfile
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

    def __init__(
        self, path: str | os.PathLike[str], *, lock_timeout: float = 60.0, run: str | None = None
    ) -> None:
        self.path = Path(path)
        #: The run whose usage this store notes (``_usage``): by default this
        #: process's; the pytest plugin gives its session's (shared by xdist workers).
        self.run = run or _PROCESS_RUN
        self._at_exit = False
        self._root = os.fspath(self.path)
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"response store path {str(self.path)!r} is not a directory")
        #: How long a write waits for another process's lock on the store.
        self.lock_timeout = seconds("lock_timeout", lock_timeout)
        self._cassettes: dict[str, _Cassette] = {}
        self._lock = threading.RLock()
        # Whether this process holds the store's flock (changed under self._lock):
        # a write made by the SIGTERM handler while the interrupted one holds it
        # must not wait for itself.
        self._flocked = False
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
        return Path(self._root, _checked_key(key)[:2], key + ".json")

    def cassettes(self) -> list[str]:
        """The names of the cassettes on disk or waiting to be written, sorted.

        A cassette this process has not used is named as its file shows it
        (secrets masked, see ``shown_cassette_name``).
        """
        with self._lock:
            known = {c.file: c for c in self._cassettes.values()}
            names = {c.name for c in known.values() if c.pending or c.replies}
            for file in self._cassette_files():
                held = known.get(os.fspath(file))
                names.add(held.name if held is not None else _read_cassette(file)[0])
        return sorted(names)

    def _cassette_files(self) -> list[Path]:
        return sorted(self.path.glob("*.json")) if self.path.is_dir() else []

    def __iter__(self) -> Iterator[str]:
        """Every key held (cassettes and per-reply files), sorted, once each."""
        keys: set[str] = set()
        with self._lock:
            known = {c.file: c for c in self._cassettes.values()}
            for cassette in known.values():
                keys.update(cassette.replies)
            for file in self._cassette_files():
                if os.fspath(file) not in known:
                    keys.update(_read_cassette(file)[1])
        keys.update(f.stem for f in self._legacy_files() if _is_key(f.stem))
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
        return self._lookup(request.key, request.format2_key, cassette)

    def _lookup(self, key: str, old: str, cassette: str) -> Recording | None:
        """The reply under ``key`` in ``cassette`` or ``default``, else under the format-2
        key ``old`` among migrated replies and in per-reply files of formats 1 and 2."""
        with self._lock:
            chain = [self._cassette(name) for name in dict.fromkeys([cassette, DEFAULT_CASSETTE])]
            for wanted, migrated in ((key, False), (old, True)):
                for held in chain:
                    entry = held.replies.get(wanted)
                    if entry is not None and _migrated(entry) is migrated:
                        self._use(held, wanted)
                        return self._recording(entry, held.name, held.file, old_key=wanted != key)
            if self._has_legacy is None:
                # Checked once: nothing writes this layout any more, so a store
                # without it (every store made since format 3) never pays a failed
                # open per miss.
                self._has_legacy = any(self._legacy_dirs())
        file = os.fspath(self.legacy_path(old))
        entry = _read_legacy(file) if self._has_legacy else None
        return None if entry is None else self._recording(entry, None, file, old_key=old != key)

    def recorded_models(self, cassette: str = DEFAULT_CASSETTE) -> list[str]:
        """The model names that ``cassette`` (and ``default``) hold replies for, sorted."""
        found: set[str] = set()
        with self._lock:
            for name in dict.fromkeys([cassette, DEFAULT_CASSETTE]):
                held = self._cassette(name)
                for entry in held.replies.values():
                    request = entry.get("request")
                    model = request.get("model") if isinstance(request, dict) else None
                    if isinstance(model, str):
                        found.add(model)
        return sorted(found)

    def miss_hint(self, request: StoredRequest, cassette: str = DEFAULT_CASSETTE) -> str:
        """What to do about a replay miss of ``request`` in ``cassette``.

        Replay is keyed on the model that answered: when the cassette holds
        replies recorded for another model, the run most likely did not select
        it, and recording again would pay for replies that are already there.
        """
        others = [m for m in self.recorded_models(cassette) if m != request.model]
        if not others:
            return "record it with mode='record'"
        shown = ", ".join(repr(mask(m)) for m in others)
        return (
            f"{OTHER_MODEL_HINT} {shown}, not "
            f"{mask(request.model)!r}: select that model (pytest: ini tnsai_llm_model or "
            "--llm-model with its server, or --tnsai-model NAME) rather than recording again"
        )

    def get(self, key: str, cassette: str = DEFAULT_CASSETTE) -> Completion | None:
        """The reply recorded under ``key`` (``cached=True``) in ``cassette``, ``default``
        or a per-reply file of format 1 or 2; ``None`` when there is none."""
        found = self._lookup(_checked_key(key), key, cassette)
        return None if found is None else found.completion

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
            cassette = _Cassette(name, os.fspath(path), path, seen=_stat(os.fspath(path)))
            cassette.replies = _read_cassette(path, name)[1]
            self._cassettes[name] = cassette
        return cassette

    def _legacy_dirs(self) -> Iterator[Path]:
        if not self.path.is_dir():
            return
        for folder in self.path.iterdir():
            name = folder.name
            if len(name) == 2 and all(c in "0123456789abcdef" for c in name) and folder.is_dir():
                yield folder

    def _legacy_files(self) -> list[Path]:
        return sorted(f for folder in self._legacy_dirs() for f in folder.glob("*.json"))

    # -- writing ------------------------------------------------------------
    def put(
        self,
        request: StoredRequest,
        completion: Completion,
        *,
        server: str | None = None,
        cassette: str = DEFAULT_CASSETTE,
        refresh: bool = False,
    ) -> Path:
        """Record ``completion`` as the reply to ``request`` in ``cassette``; returns its file.

        Written at once (atomically) unless the cassette is held, then when it
        is released. ``server`` is stored with credentials redacted; every
        known secret is masked in the entry when it is written. ``refresh``:
        the cassette is being recorded again, so it is written with the
        replies this run used only (see the module docstring).
        """
        shown = None
        if server:
            shown = self._servers.get(server)
            if shown is None:
                shown = self._servers[server] = redact_url(server)
        entry = encode_entry(request.to_dict(), completion, shown, lambda: request.prompt_start)
        with self._lock:
            held = self._cassette(cassette)
            held.replies[request.key] = entry
            held.pending[request.key] = entry
            held.refresh = held.refresh or refresh
            self._use(held, request.key)
            if not held.held:
                self._save(held)
        return held.path

    def hold(self, cassette: str) -> None:
        """Keep ``cassette``'s new replies in memory until ``release`` (calls nest).

        While anything is held, SIGTERM writes the held replies before it ends
        the process (see the module docstring).
        """
        with self._lock:
            held = self._cassette(cassette)
            held.held += 1
            # A held cassette that exists is opened by this run, used or not.
            held.opened = held.opened or held.seen is not None
            _SIGTERM_WRITER.add(self)

    def release(self, cassette: str) -> Path | None:
        """End one ``hold``; the last one writes the replies kept. Returns the file written.

        A released cassette is also let go from memory (it is read again if
        asked for), so a session of many tests keeps only the running one's.
        """
        with self._lock:
            held = self._cassette(cassette)
            if held.held == 0:
                raise ConfigError(f"cassette {shown_cassette_name(cassette)!r:.200} is not held")
            held.held -= 1
            if held.held:
                return None
            written = bool(held.pending)
            if written:
                # A failed write keeps the replies in memory (and SIGTERM's writer on).
                self._save(held)
            elif held.opened:
                with self._exclusive():
                    self._note_usage(held)
            if cassette != DEFAULT_CASSETTE:
                del self._cassettes[cassette]
            if not any(c.held for c in self._cassettes.values()):
                _SIGTERM_WRITER.discard(self)
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
        """Write every cassette with replies not written yet, held or not, and the usage
        not noted yet; the cassette files written."""
        with self._lock:
            waiting = [c for c in self._cassettes.values() if c.pending]
            for cassette in waiting:
                self._save(cassette)
            used = [c for c in self._cassettes.values() if c.opened]
            if used:
                with self._exclusive():
                    for cassette in used:
                        self._note_usage(cassette)
        return [c.path for c in waiting]

    def _save(self, cassette: _Cassette) -> None:
        """Merge ``cassette``'s pending replies with the file and write it (hold the lock)."""
        with self._exclusive():
            if _stat(cassette.file) != cassette.seen:
                # Another process wrote it since this one read it: keep its replies.
                cassette.replies = _read_cassette(cassette.path, cassette.name)[1]
            # Masked now, once per entry, with the secrets known at this moment.
            masked = masker()
            for key, entry in cassette.pending.items():
                kept = cassette.replies.get(key)
                # A migrated reply never replaces one recorded under today's key.
                if kept is None or _migrated(entry) <= _migrated(kept):
                    cassette.replies[key] = masked(entry)
            if cassette.refresh:
                # Recorded again: what this run did not use goes (xdist workers of
                # one run add up through the usage record).
                keep = cassette.used | self._same_run_keys(cassette.path.name)
                cassette.replies = {k: v for k, v in cassette.replies.items() if k in keep}
            document = {
                "format": FORMAT_VERSION,
                "cassette": shown_cassette_name(cassette.name),
                "replies": cassette.replies,
            }
            text = dump_json(document) + "\n"
            try:
                atomic_write_text(cassette.file, text)
            except OSError as exc:
                raise StoreError(
                    f"cassette {cassette.file!r} cannot be written: {exc.strerror or exc}",
                    location=cassette.file,
                ) from exc
            cassette.seen = _stat(cassette.file)
            cassette.pending.clear()
            self._note_usage(cassette)

    # -- usage ----------------------------------------------------------------
    def _use(self, cassette: _Cassette, key: str) -> None:
        """This run used ``key`` of ``cassette`` (hold the lock)."""
        cassette.used.add(key)
        cassette.opened = True
        if not self._at_exit:
            # What no release or save noted (a replay outside pytest) is noted at exit.
            self._at_exit = True
            atexit.register(_save_at_exit, weakref.ref(self))

    def _note_usage(self, cassette: _Cassette) -> None:
        """Write what this run used of ``cassette`` (hold the lock and the store's flock)."""
        if cassette.opened:
            write_usage(
                self._root,
                cassette.path.name,
                shown_cassette_name(cassette.name),
                self.run,
                cassette.used,
            )
            cassette.opened = False

    def _same_run_keys(self, file_name: str) -> set[str]:
        noted = read_usage(self._root, file_name)
        return noted[1] if noted is not None and noted[0] == self.run else set()

    def prune(self, *, dry_run: bool = False) -> PruneReport:
        """Keep only the replies the last run used, in each cassette that run opened.

        The last run is the latest that left a usage record (see ``_usage``);
        a cassette it opened keeps the replies it used (a cassette left with
        none is deleted), and every other cassette file is left as it is,
        named in ``untouched``. ``dry_run``: change nothing, say what would go.
        Per-reply files of formats 1 and 2 are never touched (``migrate`` first).
        """
        files = self._cassette_files()
        noted = {f: read_usage(self._root, f.name) for f in files}
        runs = [n[0] for n in noted.values() if n is not None]
        if not runs:
            return PruneReport(None, (), tuple(files))
        last = max(runs)
        pruned: list[PrunedCassette] = []
        untouched: list[Path] = []
        with self._lock, self._exclusive():
            for file in files:
                usage = noted[file]
                if usage is None or usage[0] != last:
                    untouched.append(file)
                    continue
                name, replies, document = _read_cassette(file)
                kept = {k: v for k, v in replies.items() if k in usage[1]}
                pruned.append(PrunedCassette(file, name, len(replies), len(kept)))
                if dry_run or len(kept) == len(replies):
                    continue
                if kept:
                    document["replies"] = kept
                    atomic_write_text(file, dump_json(document) + "\n")
                else:
                    file.unlink()
            # What this process knew of them is out of date now.
            self._cassettes = {n: c for n, c in self._cassettes.items() if c.held}
        return PruneReport(last, tuple(pruned), tuple(untouched))

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """An exclusive lock on the store among the processes of this machine (hold self._lock).

        An ``flock`` on the store directory itself: no file is created, in the
        store (which holds only what is committed) or in the shared temporary
        directory (where anyone could create the name first, as a directory or
        a lock held forever). Waits at most ``lock_timeout`` seconds.
        """
        if self._flocked:  # the SIGTERM handler, writing while the interrupted write holds it
            yield
            return
        where = self._root
        try:
            os.makedirs(where, exist_ok=True)
            fd = os.open(where, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
        except OSError as exc:
            raise StoreError(
                f"response store {where!r} cannot be opened to lock it: {exc.strerror or exc}",
                location=where,
            ) from exc
        try:
            _flock(fd, where, self.lock_timeout)
            self._flocked = True
            try:
                yield
            finally:
                self._flocked = False
        finally:
            os.close(fd)  # closing releases the lock

    def remove_temp_files(self, *, older_than_s: float = 600.0) -> int:
        """Delete temporary files left by killed writers; returns how many.

        Only files older than ``older_than_s`` go, so that a write under way
        in another process is not disturbed. Run it before committing a store.
        Nothing is deleted through a symbolic link to a folder outside the store.
        """
        if not self.path.is_dir():
            return 0
        cutoff = time.time() - older_than_s
        removed = 0
        folders = [self.path, *(f for f in self._legacy_dirs() if not f.is_symlink())]
        for file in [t for folder in folders for t in folder.glob(".*.tmp")]:
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

        Only files that were migrated are removed, and only inside the store.
        Every file is checked before anything is written or removed, and
        ``StoreError`` names the first that cannot be moved: a folder that is a
        symbolic link (its files live outside the store), a file not named after
        a key in its own folder (lookups never found it), a file that cannot be
        read, or a reply that differs from the one the cassette already holds
        under the same key.
        """
        folders = list(self._legacy_dirs())
        for folder in folders:
            if folder.is_symlink():
                raise StoreError(
                    f"{str(folder)!r} is a symbolic link to a folder outside the store: migrate "
                    "removes the files it moves and never deletes outside the store; replace "
                    "the link by a copy of the folder, then migrate again",
                    location=os.fspath(folder),
                )
        files = self._legacy_files()
        moved: dict[str, dict[str, Any]] = {}
        sources: list[Path] = []
        for done, file in enumerate(files, start=1):
            where = os.fspath(file)
            key = file.stem
            if not _is_key(key) or file.parent.name != key[:2]:
                raise StoreError(
                    f"{where!r} is not named after a store key in its own folder "
                    "(<k[:2]>/<k>.json): no lookup ever found it, so migrate leaves the store "
                    "as it is; move or delete that file, then migrate again",
                    location=where,
                )
            entry = _read_legacy(where)
            if entry is None:  # removed by someone else meanwhile
                continue
            entry_completion(entry.get("response"), where)  # refuse a broken file before moving it
            moved[key] = {
                "key_format": 2,
                **{k: entry.get(k) for k in ("request", "response", "server")},
            }
            sources.append(file)
            if progress is not None:
                progress(done, len(files))
        if not moved:
            return 0
        with self._lock:
            held = self._cassette(cassette)
            for key, entry in moved.items():
                kept = held.replies.get(key)
                where = os.fspath(self.legacy_path(key))
                if kept is not None and _said(kept, held.file) != _said(entry, where):
                    raise StoreError(
                        f"{where!r} holds another reply than cassette "
                        f"{shown_cassette_name(cassette)!r:.200} already holds under the same "
                        "key: migrate leaves the store as it is; delete the one to drop, then "
                        "migrate again",
                        location=where,
                    )
                if kept is None or _migrated(kept):
                    held.pending[key] = entry
            if held.pending:
                self._save(held)
        for file in sources:
            file.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # not empty: a temp file, a stray file
                file.parent.rmdir()
        self._has_legacy = None
        return len(moved)


class _SigtermWriter:
    """Writes every held cassette when SIGTERM arrives, then lets the signal act as before.

    Installed while any store holds a cassette, from the main thread only
    (Python runs handlers there, and only there can install them); a
    disposition of ``SIG_IGN`` or one set outside Python is left alone. The
    handler writes what the held cassettes kept (each store's ``save``; one
    that fails is reported on stderr and the others are still written), puts
    the previous handler back and hands it the signal: by default that sends
    SIGTERM again, so the process ends killed by it, as it would have.
    A write the signal interrupted holds the store's lock (``_flocked``): the
    handler's write goes ahead under it instead of waiting for itself.
    """

    def __init__(self) -> None:
        self._stores: dict[int, ResponseStore] = {}
        self._previous: Callable[[int, FrameType | None], Any] | int | None = None
        self._installed = False

    def add(self, store: ResponseStore) -> None:
        self._stores[id(store)] = store
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        current = signal.getsignal(signal.SIGTERM)
        if current is signal.SIG_IGN or current is None:
            return
        self._previous = current
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self._installed = True

    def discard(self, store: ResponseStore) -> None:
        self._stores.pop(id(store), None)
        if self._stores or not self._installed:
            return
        if threading.current_thread() is not threading.main_thread():
            return  # stays installed; with nothing held it only passes the signal on
        if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            signal.signal(signal.SIGTERM, self._previous)
        self._installed = False

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        for store in list(self._stores.values()):
            try:
                store.save()
            except Exception as exc:  # the signal must still end the process
                print(
                    f"tnsai-eval: SIGTERM: the held replies of {store!r} could not be "
                    f"written: {type(exc).__name__}: {mask(str(exc))}",
                    file=sys.stderr,
                )
        previous = self._previous
        self._stores.clear()
        self._installed = False
        signal.signal(signal.SIGTERM, previous)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            os.kill(os.getpid(), signum)


_SIGTERM_WRITER = _SigtermWriter()


def _save_at_exit(ref: weakref.ref[ResponseStore]) -> None:
    store = ref()
    if store is not None:
        with contextlib.suppress(Exception):  # at exit nobody is left to tell
            store.save()


def _said(entry: dict[str, Any], where: str) -> tuple[str, tuple[Any, ...]]:
    """What a recorded reply says (its text and tool calls), whatever else it records."""
    completion = entry_completion(entry.get("response"), where)
    return completion.text, completion.tool_calls


def _read_bytes(file: str) -> bytes | None:
    try:
        return read_regular_file(file, limit=MAX_CASSETTE_BYTES)
    except OSError as exc:  # a directory, a FIFO or a device where the file should be...
        raise StoreError(
            f"recorded response {file!r} cannot be read: {exc.strerror or exc}", location=file
        ) from exc


def _stat(file: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(file)
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


def _read_document(
    file: str, formats: tuple[int, ...], noun: str, kind: str
) -> dict[str, Any] | None:
    """The JSON object in ``file`` (``None``: no such file), of one of ``formats``.

    The one reader of cassettes and of the per-reply files of formats 1 and 2.
    """
    data = _read_bytes(file)
    if data is None:
        return None
    document = decode_json(data, file)
    if not isinstance(document, dict) or document.get("format") not in formats:
        raise StoreError(f"{noun} {file!r} is not {kind}", location=file)
    return document


def _read_legacy(file: str) -> dict[str, Any] | None:
    return _read_document(
        file, _LEGACY_FORMATS, "recorded response", "a format-1 or format-2 entry"
    )


def _read_cassette(
    path: Path, name: str | None = None
) -> tuple[str, dict[str, dict[str, Any]], dict[str, Any]]:
    """(the name it shows, its replies, the document) of cassette file ``path``: empty without
    one. The file must hold ``name``, or (``None``) the cassette its file name says."""
    file = os.fspath(path)
    document = _read_document(
        file,
        (FORMAT_VERSION,),
        "cassette",
        f"a format-{FORMAT_VERSION} cassette (a per-reply file of format 1 or 2 belongs in a "
        "two-letter folder)",
    )
    if document is None:
        return name or "", {}, {}
    shown = document.get("cassette")
    if not isinstance(shown, str) or not (
        _shown_name_fits(shown, path.name) if name is None else _names_match(shown, name)
    ):
        expected = "the cassette its file name gives" if name is None else shown_cassette_name(name)
        raise StoreError(
            f"cassette file {file!r} holds cassette {shown!r:.80}, not {expected!r:.80}",
            location=file,
        )
    replies = document.get("replies")
    if not isinstance(replies, dict):
        raise StoreError(f"cassette {file!r}: 'replies' must be an object", location=file)
    for key, entry in replies.items():
        if not _is_key(key) or not isinstance(entry, dict):
            raise StoreError(
                f"cassette {file!r}: replies must map 64-hex-digit keys to objects, "
                f"got {key!r:.80}",
                location=file,
            )
    return shown, replies, document


def _migrated(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` was migrated from format 1 or 2 (it is under its format-2 key)."""
    return entry.get("key_format") == 2


def _flock(fd: int, where: str, timeout: float) -> None:
    """Take an exclusive ``flock`` on ``fd`` within ``timeout`` seconds, or raise StoreError."""
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"response store {where!r} stayed locked by another process for "
                    f"{timeout:g} s (lock_timeout); is another run writing it?",
                    location=where,
                ) from None
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
        except OSError as exc:
            raise StoreError(
                f"response store {where!r} cannot be locked: {exc.strerror or exc}",
                location=where,
            ) from exc


_KEY = re.compile(r"[0-9a-f]{64}")


def _is_key(key: str) -> bool:
    return _KEY.fullmatch(key) is not None


def _checked_key(key: str) -> str:
    if not _is_key(key):
        raise ConfigError(f"store key must be 64 lowercase hex digits, got {key!r}")
    return key
