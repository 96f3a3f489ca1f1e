"""The reply store behind a bench script: record it live, or replay it with no model at all.

``bench/optimizer.py`` and ``bench/datasets.py`` take ``--store DIR`` (record:
a reply found in the store is replayed, any other request calls the model and
is added) and ``--replay`` (only the store: the model is never loaded, and a
request the store lacks is counted as a miss and fails the run). A replay
ends with a line saying how many replies came from the store and how many
requests went live, which is the proof that a published figure came from the
committed replies alone.

Recording a store behind a table takes 10-60 minutes of model time, so it
must survive being stopped: the cassette is held (written whole, once) and
flushed every ``FLUSH_EVERY`` new replies, and written at exit, including on
Ctrl-C and on SIGTERM (turned into ``SystemExit``, which the optimizer does not
contain). A run killed with SIGKILL loses at most the replies since the
last flush; running the same command again records only what is missing.
Writing a reply at once would be as safe but rewrites the whole cassette
(several MB for the optimizer's tables) after every reply.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

from tnsai_eval.llm import (
    CachedLLM,
    Completion,
    LLMClient,
    MessagesInput,
    ResponseStore,
    default_llm,
    smollm2_gguf_path,
)
from tnsai_eval.settings import RecordMode, resolve_model

__all__ = ["FLUSH_EVERY", "FlushingStore", "NoModel", "StoreRun", "open_store"]

#: New replies kept in memory at most before the cassette is written.
FLUSH_EVERY = 25


class NoModel:
    """Stands where the model would in a replay: it has the model's name and never answers.

    ``CachedLLM`` in replay mode raises ``ReplayMissError`` before it would call
    its inner client; this is the second lock on that door.
    """

    def __init__(self, model: str) -> None:
        self.model = model

    def __repr__(self) -> str:
        return f"NoModel({self.model!r})"

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        raise RuntimeError(f"--replay: the model {self.model!r} was asked for a live reply")


def replay_model_name() -> str:
    """The name replies were recorded under: ``TNSAI_LLM_MODEL``, else the embedded model's."""
    configured = resolve_model().model
    return configured if configured is not None else smollm2_gguf_path().stem


class FlushingStore:
    """``CachedLLM`` whose held cassette is written every ``FLUSH_EVERY`` new replies."""

    def __init__(self, cached: CachedLLM) -> None:
        self.cached = cached
        self._flushed_at = 0

    @property
    def model(self) -> str:
        return self.cached.model

    def __repr__(self) -> str:
        return f"FlushingStore({self.cached!r})"

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        completion = self.cached.chat(messages, **params)
        if self.cached.misses - self._flushed_at >= FLUSH_EVERY:
            self._flushed_at = self.cached.misses
            self.cached.flush()
        return completion


@dataclass(frozen=True, slots=True)
class StoreRun:
    """The client a bench script sends its requests to, and the store behind it (if any)."""

    llm: LLMClient
    cached: CachedLLM | None = None

    def summary(self) -> str:
        """One line: replies replayed, and requests that reached the model or missed."""
        if self.cached is None or self.cached.store is None:
            return "no --store: every request went to the model"
        missed = "misses" if self.cached.mode is RecordMode.REPLAY else "live requests"
        return (
            f"store {self.cached.store.path}: {self.cached.hits} replies replayed, "
            f"{self.cached.misses} {missed}"
        )

    @property
    def failed(self) -> bool:
        """A replay that missed: some figure was not computed from the store."""
        return (
            self.cached is not None
            and self.cached.mode is RecordMode.REPLAY
            and self.cached.misses > 0
        )


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # SystemExit unwinds through the optimizer (it contains Exception only), so
    # the held cassette is written when ``open_store``'s ``holding()`` block exits.
    sys.exit(128 + signum)


@contextmanager
def open_store(store: str | None, *, replay: bool) -> Iterator[StoreRun]:
    """The model behind ``--store STORE`` (record) or ``--store STORE --replay`` (replay only).

    Without a store the embedded (or configured) model is used directly.
    """
    if replay and not store:
        raise SystemExit("--replay needs --store DIR: the replies to replay")
    if store is None:
        yield StoreRun(default_llm())
        return
    if replay:
        cached = CachedLLM(NoModel(replay_model_name()), ResponseStore(store), mode="replay")
    else:
        cached = CachedLLM(default_llm(), ResponseStore(store), mode="record")
    run = StoreRun(FlushingStore(cached), cached)
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        with cached.holding():
            yield run
    finally:
        signal.signal(signal.SIGTERM, previous)
