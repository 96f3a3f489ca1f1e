"""A model client that records replies to a ``ResponseStore`` and replays them.

Recorded replies make CI runs free and deterministic: record once against a
real model, commit the store, replay in CI with ``mode="replay"``, where a
request that was never recorded fails loudly instead of calling a model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tnsai_eval._util.secrets import redact_url
from tnsai_eval.errors import OldStoreKeyWarning, ReplayMissError, ServerMismatchWarning
from tnsai_eval.llm._budget import ametered_call, metered_call
from tnsai_eval.llm._store import DEFAULT_CASSETTE, Recording, ResponseStore, StoredRequest
from tnsai_eval.llm._types import Completion, LLMClient, MessagesInput
from tnsai_eval.llm._wire import check_params
from tnsai_eval.settings import RecordMode

__all__ = ["CachedLLM"]


class CachedLLM:
    """Wrap any ``LLMClient`` with a response store.

    The store key covers the model name (the inner client's ``model``
    attribute), the messages, the call's parameters and ``sample``: pass
    ``sample=0, 1, 2...`` to record several distinct replies to one request
    (repeated sampling at temperature > 0). ``sample`` is not sent to the
    model. Replies from the store have ``cached=True``.

    >>> import tempfile
    >>> from tnsai_eval.testing import ScriptedLLM
    >>> store = ResponseStore(tempfile.mkdtemp())
    >>> CachedLLM(ScriptedLLM(["Paris"]), store).chat("Capital of France?").text
    'Paris'
    >>> replay = CachedLLM(ScriptedLLM(), store, mode="replay")
    >>> reply = replay.chat("Capital of France?")
    >>> reply.text, reply.cached, reply.attempts, replay.hits
    ('Paris', True, 0, 1)

    Each recording holds the address of the server that answered (credentials
    redacted; ``None`` for clients without a ``base_url``, like the embedded
    model). The address is not part of the key, because ports change between
    runs; instead, when a reply is replayed from a recording made against
    another server than this client's, a ``ServerMismatchWarning`` is issued,
    once per ``CachedLLM`` (the pytest plugin keeps one per test session) and
    pair of addresses. Pass ``server=`` to name the server when the inner
    client has no ``base_url`` attribute.

    Replies are recorded in the cassette named ``cassette`` (one JSON file
    of the store; see ``ResponseStore``): name one per notebook or per run,
    for example ``CachedLLM(inner, store, cassette="02_prompt_optimizer")``.
    Each new reply is written at once; inside ``with llm.holding():`` the
    cassette is written once, when the block ends (the pytest plugin does
    this per test, with the test's node id as the cassette). A reply is
    looked up in the cassette, then in the ``default`` one, then in a store
    of formats 1 and 2; in record mode a reply found elsewhere than in the
    cassette is copied into it, so recording once files every reply a
    notebook or test uses under its own name.

    Attributes:
        hits: requests answered from the store.
        misses: requests not answered from the store (the model was called,
            or replay mode raised ``ReplayMissError``).
    """

    #: A stored reply takes nothing from the active ``CallBudget``; a call that
    #: reaches ``inner`` is metered there (see ``llm._budget``).
    meters_attempts = True

    def __init__(
        self,
        inner: LLMClient,
        store: ResponseStore | str | os.PathLike[str],
        mode: RecordMode | str = RecordMode.RECORD,
        *,
        server: str | None = None,
        cassette: str = DEFAULT_CASSETTE,
    ) -> None:
        self.inner = inner
        self.store = store if isinstance(store, ResponseStore) else ResponseStore(store)
        self.mode = RecordMode.parse(mode)
        self.store.cassette_path(cassette)  # a bad name fails here, not at the first call
        #: The cassette replies are recorded in and looked up first (the plugin
        #: sets it to the running test's node id).
        self.cassette = cassette
        if server is None:
            base_url = getattr(inner, "base_url", None)
            server = base_url if isinstance(base_url, str) and base_url else None
        self.server = redact_url(server) if server else None
        self.hits = 0
        self.misses = 0
        self._warned: set[str] = set()
        # Counters are bumped from worker threads when used concurrently.
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        """The inner client's model name ('' when it has none)."""
        return str(getattr(self.inner, "model", "") or "")

    def __repr__(self) -> str:
        return (
            f"CachedLLM({self.inner!r}, store={self.store!r}, mode={self.mode.value!r}, "
            f"cassette={self.cassette!r}, hits={self.hits}, misses={self.misses})"
        )

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Keep the cassette's new replies in memory for the block; write them once at its end."""
        cassette = self.cassette
        with self.store.holding(cassette):
            yield

    def flush(self) -> list[Path]:
        """Write every reply recorded but not written yet (held ones too); the files written."""
        return self.store.save()

    def chat(self, messages: MessagesInput, *, sample: int = 0, **params: Any) -> Completion:
        """One completion, from the store or the inner client as ``mode`` says.

        ``sample`` tells apart several recorded replies to the same request; it
        is part of the store key and is not sent to the model.
        """
        request = self._request(messages, params, sample)
        cached = self._from_store(request)
        if cached is not None:
            return cached
        completion = metered_call(self.inner, messages, **params)
        self._record(request, completion)
        return completion

    async def achat(self, messages: MessagesInput, *, sample: int = 0, **params: Any) -> Completion:
        """Like ``chat``, using the inner client's ``achat`` when it has one."""
        request = self._request(messages, params, sample)
        cached = self._from_store(request)
        if cached is not None:
            return cached
        completion = await ametered_call(self.inner, messages, **params)
        self._record(request, completion)
        return completion

    def is_stored(self, messages: MessagesInput, *, sample: int = 0, **params: Any) -> bool:
        """Whether ``chat(messages, sample=sample, **params)`` would be answered from the store.

        Asks the store only (the cassette, then the ones it falls back to):
        nothing is sent and no counter moves. Always ``False`` in ``off`` and
        ``refresh`` modes, which never answer from it.
        """
        if self.mode in (RecordMode.OFF, RecordMode.REFRESH):
            return False
        request = StoredRequest.build(self.model, messages, params, sample=sample)
        return self.store.find(request, self.cassette) is not None

    def _request(
        self, messages: MessagesInput, params: dict[str, Any], sample: int
    ) -> StoredRequest | None:
        check_params(params)  # a cyclic or absurdly deep schema: ConfigError, not RecursionError
        if self.mode is RecordMode.OFF:
            return None
        # Built before the model is called, so a parameter that cannot be
        # recorded fails at once rather than after a paid-for call.
        return StoredRequest.build(self.model, messages, params, sample=sample)

    def _from_store(self, request: StoredRequest | None) -> Completion | None:
        if request is None or self.mode is RecordMode.REFRESH:
            self._count(hit=False)
            return None
        cassette = self.cassette
        found = self.store.find(request, cassette)
        self._count(hit=found is not None)
        if found is None:
            if self.mode is RecordMode.REPLAY:
                raise ReplayMissError(
                    f"no recorded response for model {request.model!r} and prompt "
                    f"{request.prompt_start!r} (sample {request.sample}, key {request.key[:12]}) "
                    f"in cassette {cassette!r} of {str(self.store.path)!r}; "
                    f"{self.store.miss_hint(request, cassette)}",
                    model=request.model,
                    attempts=0,
                )
            return None
        self._check_server(found.server)
        if found.old_key:
            self._warn_old_key(request, found)
        elif self.mode is RecordMode.RECORD and found.cassette != cassette:
            # File the reply under this cassette too, so the cassette alone replays it.
            self.store.put(request, found.completion, server=found.server, cassette=cassette)
        return dataclasses.replace(found.completion, attempts=0)

    def _record(self, request: StoredRequest | None, reply: Completion) -> None:
        if request is not None and self.mode in (RecordMode.RECORD, RecordMode.REFRESH):
            self.store.put(request, reply, server=self.server, cassette=self.cassette)

    def _warn_old_key(self, request: StoredRequest, found: Recording) -> None:
        with self._lock:
            if request.key in self._warned:
                return
            self._warned.add(request.key)
        where = "a format-1/2 file" if found.cassette is None else f"cassette {found.cassette!r}"
        warnings.warn(
            f"replaying the reply to {request.prompt_start!r} recorded under its older store "
            f"key (in {where} of {str(self.store.path)!r}): that key ignored credential-like "
            "names (token, password, timeout...) inside schemas, so it may belong to a "
            "request that differs there; re-record it with mode='refresh'",
            OldStoreKeyWarning,
            stacklevel=4,
        )

    def _check_server(self, recorded: str | None) -> None:
        if recorded is None or self.server is None or recorded == self.server:
            return
        with self._lock:
            if recorded in self._warned:
                return
            self._warned.add(recorded)
        warnings.warn(
            f"replaying recordings made against {recorded} while the configured server "
            f"is {self.server} (same model name {self.model!r}); re-record with "
            "mode='refresh' if the servers differ",
            ServerMismatchWarning,
            stacklevel=4,
        )

    def _count(self, *, hit: bool) -> None:
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
