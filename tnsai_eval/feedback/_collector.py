"""Collecting the feedback an agent receives while it runs."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tnsai_eval._util.checks import whole
from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback._learned import DEFAULT_MAX_LEARNED_ITEMS, recent_distinct, render_learned
from tnsai_eval.feedback._types import Feedback, FeedbackType

__all__ = ["TOOL_CALL_SOURCE", "FeedbackCollector"]


# metadata["source"] of the feedback that record_tool_call creates.
TOOL_CALL_SOURCE = "tool_call"


class FeedbackCollector:
    """The feedback one agent has received, in the order it came.

    ``max_learned_items`` bounds each section of ``learned_section()``.
    ``enabled=False`` makes a no-op collector (what ``Agent(learning=False)``
    uses): the record methods still validate their input and return the
    ``Feedback`` they built, but nothing is kept. Thread-safe.

    >>> collector = FeedbackCollector(session_id="s-1")
    >>> _ = collector.record_user_feedback("preference", "Answer in French.")
    >>> _ = collector.record_tool_call("lookup_order", ok=False, error="timeout")
    >>> [(fb.type.value, fb.content) for fb in collector.feedback]
    [('preference', 'Answer in French.'), ('negative', "tool 'lookup_order' failed: timeout")]
    >>> FeedbackCollector(enabled=False).record_user_feedback("positive", "ok") is not None
    True
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        enabled: bool = True,
        max_learned_items: int = DEFAULT_MAX_LEARNED_ITEMS,
    ) -> None:
        whole("max_learned_items", max_learned_items, 1)
        self.session_id = session_id
        self.enabled = enabled
        self.max_learned_items = max_learned_items
        self._items: list[Feedback] = []
        # The same items by type, so the agent's prompt reads only the types it needs.
        self._by_type: dict[FeedbackType, list[Feedback]] = {}
        self._version = 0
        self._lock = threading.Lock()
        # (version, max items) -> the learned block built for it.
        self._learned: tuple[tuple[int, int], str] | None = None

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"FeedbackCollector({state}, count={len(self._items)})"

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def version(self) -> int:
        """A number that changes whenever feedback is recorded or cleared."""
        return self._version

    def recent_contents(self, type: FeedbackType, limit: int) -> list[str]:
        """The contents of the ``limit`` most recent distinct items of ``type``, oldest first.

        A text recorded twice is kept once, at its newest position. Only the
        newest items are read, so the cost does not grow with the history.
        """
        with self._lock:
            items = self._by_type.get(type, [])
            return recent_distinct((fb.content for fb in reversed(items)), limit)

    def learned_section(self) -> str:
        """The ``# Learned Behavior`` block of what was collected ('' when nothing applies).

        The ``max_learned_items`` (default 20) most recent distinct CORRECTION
        texts become rules, the
        PREFERENCE texts preferences (see ``learned_behavior_section``); built
        again only when the collector has changed.

        >>> collector = FeedbackCollector()
        >>> _ = collector.record_user_feedback("correction", "Greet by name.")
        >>> print(collector.learned_section())
        # Learned Behavior
        <BLANKLINE>
        ## Rules
        - Greet by name.
        """
        max_items = self.max_learned_items
        key = (self._version, max_items)
        cached = self._learned
        if cached is not None and cached[0] == key:
            return cached[1]
        section = render_learned(
            self.recent_contents(FeedbackType.CORRECTION, max_items),
            self.recent_contents(FeedbackType.PREFERENCE, max_items),
        )
        self._learned = (key, section)
        return section

    @property
    def feedback(self) -> list[Feedback]:
        """Every feedback collected so far, oldest first (a copy)."""
        with self._lock:
            return list(self._items)

    def record(self, feedback: Feedback) -> Feedback:
        """Keep an already built ``Feedback`` (tagged with the session if it has none)."""
        if not isinstance(feedback, Feedback):
            raise ConfigError(f"can only record Feedback, got {type(feedback).__name__}")
        if feedback.session_id is None and self.session_id is not None:
            feedback = feedback.with_session_id(self.session_id)
        if self.enabled:
            with self._lock:
                self._items.append(feedback)
                self._by_type.setdefault(feedback.type, []).append(feedback)
                self._version += 1
        return feedback

    def record_user_feedback(
        self,
        type: FeedbackType | str,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> Feedback:
        """Record what a user said; ``type`` is a ``FeedbackType`` or its name.

        The stored metadata is ``{"source": "user"}`` plus ``metadata``
        (which may set its own ``source``).
        """
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ConfigError(
                # __class__: the parameter `type` shadows the builtin here.
                f"feedback metadata must be a mapping or None, got {metadata.__class__.__name__}"
            )
        return self.record(Feedback(type, content, metadata={"source": "user", **(metadata or {})}))

    def record_tool_call(self, name: str, ok: bool, error: str | None = None) -> Feedback:
        """Record a tool call: POSITIVE when ``ok``, else NEGATIVE carrying ``error``."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"tool name must be a non-empty str, got {name!r}")
        if ok:
            content = f"tool {name!r} succeeded"
        else:
            content = f"tool {name!r} failed" + (f": {error}" if error else "")
        metadata = {"source": TOOL_CALL_SOURCE, "tool": name, "ok": ok, "error": error}
        kind = FeedbackType.POSITIVE if ok else FeedbackType.NEGATIVE
        return self.record(Feedback(kind, content, metadata=metadata))

    def clear(self) -> None:
        """Forget everything collected."""
        with self._lock:
            self._items.clear()
            self._by_type.clear()
            self._version += 1
