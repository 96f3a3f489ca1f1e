"""The feedback record and its closed set of kinds."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from tnsai_eval._util.enums import ParsedEnum
from tnsai_eval.errors import ConfigError

__all__ = ["Feedback", "FeedbackType"]


class FeedbackType(ParsedEnum):
    """What a piece of feedback says about the agent's behaviour.

    >>> FeedbackType.parse("Correction")
    <FeedbackType.CORRECTION: 'correction'>
    """

    POSITIVE = "positive"
    NEGATIVE = "negative"
    CORRECTION = "correction"
    PREFERENCE = "preference"


def _kind(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


def _frozen_metadata(metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if metadata is None:
        return MappingProxyType({})
    if not isinstance(metadata, Mapping):
        raise ConfigError(
            f"feedback metadata must be a mapping or None, got {type(metadata).__name__}"
        )
    # A private copy behind a read-only view: the record stays frozen even if
    # the caller goes on mutating the dict they passed in.
    return MappingProxyType(dict(metadata))


@dataclass(frozen=True, slots=True, init=False)
class Feedback:
    """One piece of feedback about an agent's behaviour.

    ``id`` and ``timestamp`` are filled in when left ``None``: a uuid4 string
    and the current time as a timezone-aware UTC datetime. A given timestamp
    must be timezone-aware (a naive one is ambiguous); it is kept as given.
    ``type`` may be given as a string (parsed with ``FeedbackType.parse``).
    ``metadata`` is copied into a read-only mapping.

    >>> fb = Feedback.correction("Always quote the order number.")
    >>> fb.type, fb.timestamp.tzinfo is not None, len(fb.id)
    (<FeedbackType.CORRECTION: 'correction'>, True, 36)
    >>> fb.with_session_id("s-1").session_id
    's-1'
    """

    type: FeedbackType
    content: str
    session_id: str | None
    id: str
    timestamp: datetime
    # Excluded from the hash: a mapping is not hashable, and the id already
    # tells records apart.
    metadata: Mapping[str, Any] = field(hash=False)

    # A hand-written __init__ so that the constructor takes ``None`` for the
    # filled-in fields while the attributes are typed as never ``None``.
    def __init__(
        self,
        type: FeedbackType | str,
        content: str,
        session_id: str | None = None,
        id: str | None = None,
        timestamp: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(content, str):
            raise ConfigError(f"feedback content must be a str, got {_kind(content)}")
        if session_id is not None and not isinstance(session_id, str):
            raise ConfigError(f"feedback session_id must be a str or None, got {_kind(session_id)}")
        if id is None:
            id = str(uuid.uuid4())
        elif not isinstance(id, str) or not id:
            raise ConfigError(f"feedback id must be a non-empty str or None, got {id!r}")
        if timestamp is None:
            timestamp = datetime.now(UTC)
        elif not isinstance(timestamp, datetime) or timestamp.utcoffset() is None:
            raise ConfigError(
                f"feedback timestamp must be a timezone-aware datetime or None, got {timestamp!r}"
            )
        object.__setattr__(self, "type", FeedbackType.parse(type))
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "session_id", session_id)
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "timestamp", timestamp)
        object.__setattr__(self, "metadata", _frozen_metadata(metadata))

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only metadata view cannot be pickled; rebuild from a plain
        # dict so records cross process boundaries (multiprocessing, xdist).
        fields = (self.type, self.content, self.session_id, self.id, self.timestamp)
        return (Feedback, (*fields, dict(self.metadata)))

    @classmethod
    def thumbs_up(cls, content: str, **options: Any) -> Feedback:
        """POSITIVE feedback; ``options`` are the other constructor fields."""
        return cls(FeedbackType.POSITIVE, content, **options)

    @classmethod
    def thumbs_down(cls, content: str, **options: Any) -> Feedback:
        """NEGATIVE feedback; ``options`` are the other constructor fields."""
        return cls(FeedbackType.NEGATIVE, content, **options)

    @classmethod
    def correction(cls, content: str, **options: Any) -> Feedback:
        """CORRECTION feedback: what the agent should have done instead."""
        return cls(FeedbackType.CORRECTION, content, **options)

    @classmethod
    def preference(cls, content: str, **options: Any) -> Feedback:
        """PREFERENCE feedback: how the user likes things done."""
        return cls(FeedbackType.PREFERENCE, content, **options)

    def with_session_id(self, session_id: str | None) -> Feedback:
        """A copy tied to ``session_id`` (same id, timestamp and metadata)."""
        return replace(self, session_id=session_id)
