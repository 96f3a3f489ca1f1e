"""Where feedback is kept: the abstract store and the in-memory one."""

from __future__ import annotations

import abc
import os
import threading
from collections.abc import Callable
from typing import Any, ClassVar, Self

from tnsai_eval._util.checks import whole
from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback._types import Feedback, FeedbackType

__all__ = ["FeedbackStore", "InMemoryFeedbackStore"]


class FeedbackStore(abc.ABC):
    """A place to save feedback and read it back, in the order it was saved.

    Two implementations ship: ``FeedbackStore.in_memory()`` (one process,
    gone when it exits) and ``FeedbackStore.sqlite(path)`` (a file shared by
    threads and processes, kept across restarts). Every read returns
    feedback in save order. Saving an id that is already stored raises
    ``ConfigError``. Both are safe to use from several threads.

    >>> store = FeedbackStore.in_memory()
    >>> for text in ["a", "b", "c"]:
    ...     store.save(Feedback.thumbs_up(text))
    >>> [fb.content for fb in store.get_recent(2)]
    ['b', 'c']
    >>> store.count()
    3
    """

    # Stores kept in other modules register here by name (``class
    # SqliteFeedbackStore(FeedbackStore, backend="sqlite")``), so this module never
    # imports them: an abstract store that knew its implementations would make an
    # import cycle with each. The package's __init__ imports every backend, and
    # any import of this module runs that __init__ first, so the table is full
    # before a factory is called.
    _backends: ClassVar[dict[str, Callable[..., FeedbackStore]]] = {}

    def __init_subclass__(cls, *, backend: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if backend is not None:
            FeedbackStore._backends[backend] = cls

    @staticmethod
    def in_memory() -> InMemoryFeedbackStore:
        """A store that lives in this process only."""
        return InMemoryFeedbackStore()

    @staticmethod
    def sqlite(path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> FeedbackStore:
        """A store in the SQLite file at ``path`` (created with its folder if missing).

        The store is a ``SqliteFeedbackStore``: ``close()`` it (or use it in a
        ``with`` block) to release the file.
        """
        return FeedbackStore._backends["sqlite"](path, busy_timeout_s=busy_timeout_s)

    def close(self) -> None:  # noqa: B027 (optional: most stores hold nothing)
        """Release what the store holds (a file, a connection); nothing by default."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def save(self, feedback: Feedback) -> None:
        """Keep ``feedback``; ``ConfigError`` if its id is already stored."""

    @abc.abstractmethod
    def get_all(self) -> list[Feedback]:
        """Every stored feedback, oldest save first."""

    @abc.abstractmethod
    def get_by_type(self, type: FeedbackType | str) -> list[Feedback]:
        """The stored feedback of one type (a str is parsed in any case)."""

    @abc.abstractmethod
    def get_by_session(self, session_id: str) -> list[Feedback]:
        """The stored feedback of one session."""

    @abc.abstractmethod
    def get_recent(self, limit: int) -> list[Feedback]:
        """The last ``limit`` saved, oldest first; ``limit`` must be >= 0."""

    @abc.abstractmethod
    def count(self) -> int:
        """How many feedback items are stored."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every stored feedback."""


def check_limit(limit: int) -> int:
    """``limit`` if it is an int >= 0, else a ConfigError naming it."""
    return whole("get_recent limit", limit, 0)


def check_feedback(feedback: object) -> Feedback:
    """``feedback`` if it is a ``Feedback``, else a ConfigError naming its type."""
    if not isinstance(feedback, Feedback):
        raise ConfigError(f"can only save Feedback, got {type(feedback).__name__}")
    return feedback


class InMemoryFeedbackStore(FeedbackStore):
    """Feedback kept in a list in this process; thread-safe."""

    def __init__(self) -> None:
        self._items: list[Feedback] = []
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryFeedbackStore(count={len(self._items)})"

    def save(self, feedback: Feedback) -> None:
        check_feedback(feedback)
        with self._lock:
            if feedback.id in self._ids:
                raise ConfigError(f"feedback id {feedback.id!r} is already stored")
            self._ids.add(feedback.id)
            self._items.append(feedback)

    def get_all(self) -> list[Feedback]:
        with self._lock:
            return list(self._items)

    def get_by_type(self, type: FeedbackType | str) -> list[Feedback]:
        wanted = FeedbackType.parse(type)
        with self._lock:
            return [fb for fb in self._items if fb.type is wanted]

    def get_by_session(self, session_id: str) -> list[Feedback]:
        with self._lock:
            return [fb for fb in self._items if fb.session_id == session_id]

    def get_recent(self, limit: int) -> list[Feedback]:
        check_limit(limit)
        with self._lock:
            # items[-0:] would be the whole list, hence the explicit guard.
            return self._items[-limit:] if limit else []

    def count(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._ids.clear()
