"""A feedback store in a SQLite file, shared by threads and processes.

Design notes (why it looks the way it does):

* One connection per thread and process. A ``sqlite3.Connection`` must not
  be shared between threads or used on both sides of a ``fork``, so each
  thread opens its own on first use, and a process that finds one
  inherited through ``fork`` leaves it untouched and opens a new one.
  Opening a connection per call instead would be simpler but costs ~25 ms
  a save (the last connection to close checkpoints the WAL) against
  ~0.2 ms. A thread's connection closes when the thread ends, or on
  ``close()``.
* WAL journal: readers never block the writer and a writer killed
  mid-transaction leaves the file consistent (its uncommitted frames are
  ignored on the next open). ``synchronous=NORMAL`` is durable against a
  crashed *process*; only a power cut can lose the last commits.
* A busy timeout (the ``timeout`` argument of ``sqlite3.connect``) makes
  concurrent writers wait their turn instead of failing with "database is
  locked".
* Save order is an ``AUTOINCREMENT`` sequence, so ``get_recent`` does not
  depend on clocks agreeing between processes.
* ``schema_version`` records each applied migration; opening a file applies
  the missing ones inside one ``BEGIN IMMEDIATE`` transaction, so several
  processes opening a new file at once do not race.
* Timestamps are stored as ISO 8601 with their UTC offset, plus the zone key
  for ``zoneinfo`` zones, so they come back exactly as saved. Metadata is
  stored as JSON: it must be JSON-serializable with str keys (tuples come
  back as lists).
* A row that cannot be read back (edited by hand, written by another tool:
  text that is not UTF-8, a NULL content, an unknown type, a bad timestamp,
  metadata that is not a JSON object) never hides the others: reads skip it,
  keep a ``StoreError`` naming the file and row in ``skipped``, and issue a
  ``StoreWarning``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tnsai_eval.errors import ConfigError, StoreError, StoreWarning
from tnsai_eval.feedback._store import FeedbackStore, check_feedback, check_limit
from tnsai_eval.feedback._types import Feedback, FeedbackType

__all__ = ["SCHEMA_VERSION", "SqliteFeedbackStore"]

# Connections inherited through fork. Closing one in the child could
# checkpoint or unlock the file under the parent's feet, so they are kept
# referenced (never closed, never used) for the life of the child.
_INHERITED: list[sqlite3.Connection] = []

# Append-only: each entry upgrades the schema from the previous version.
_MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """
            CREATE TABLE feedback (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                type TEXT NOT NULL,
                content TEXT NOT NULL,
                session_id TEXT,
                timestamp TEXT NOT NULL,
                tz_key TEXT,
                metadata TEXT NOT NULL
            )
            """,
            "CREATE INDEX feedback_by_type ON feedback (type, seq)",
            "CREATE INDEX feedback_by_session ON feedback (session_id, seq)",
        ),
    ),
)

SCHEMA_VERSION = _MIGRATIONS[-1][0]

_COLUMNS = "id, type, content, session_id, timestamp, tz_key, metadata"


class SqliteFeedbackStore(FeedbackStore, backend="sqlite"):
    """Feedback in the SQLite file at ``path``; safe for threads and processes.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "feedback.db")
    >>> FeedbackStore.sqlite(path).save(Feedback.preference("Short answers."))
    >>> [fb.content for fb in FeedbackStore.sqlite(path).get_all()]  # another handle
    ['Short answers.']
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        text = os.fspath(path)
        if text in ("", ":memory:") or text.startswith("file::memory:"):
            raise ConfigError(
                f"sqlite feedback store path {text!r} is an in-memory database, which no other "
                "connection can see; use FeedbackStore.in_memory() instead"
            )
        if busy_timeout_s <= 0:
            raise ConfigError(f"busy_timeout_s must be > 0, got {busy_timeout_s!r}")
        # Absolute, so a later chdir does not move the store.
        self.path = Path(text).expanduser().resolve()
        self.busy_timeout_s = busy_timeout_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.skipped: tuple[StoreError, ...] = ()
        try:
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"{str(self.path)!r} is not a usable SQLite feedback store: {error}",
                location=str(self.path),
            ) from error

    def __repr__(self) -> str:
        return f"SqliteFeedbackStore({str(self.path)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Connections do not travel: a copy in another process opens its own.
        return (_reopen, (str(self.path), self.busy_timeout_s))

    def close(self) -> None:
        """Close this thread's connection (the store stays usable: it reopens)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None and self._local.pid == os.getpid():
            connection.close()
        self._local.connection = None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is not None and self._local.pid != os.getpid():
            _INHERITED.append(connection)
            connection = None
        if connection is None:
            # isolation_level=None: autocommit, transactions only where we BEGIN.
            connection = sqlite3.connect(
                self.path, timeout=self.busy_timeout_s, isolation_level=None
            )
            # Text is decoded per row by _from_row, so that one row that is not
            # UTF-8 is reported alone instead of aborting the whole read.
            connection.text_factory = bytes
            connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
            self._local.pid = os.getpid()
        yield connection

    def _migrate(self) -> None:
        with self._connect() as db:
            # Switching to WAL is persistent and must happen outside a transaction.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version ("
                    " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
                current = db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
                if current > SCHEMA_VERSION:
                    raise ConfigError(
                        f"feedback store {str(self.path)!r} has schema version {current}, newer "
                        f"than this tnsai-eval knows ({SCHEMA_VERSION}); upgrade tnsai-eval"
                    )
                for version, statements in _MIGRATIONS:
                    if version <= current:
                        continue
                    for statement in statements:
                        db.execute(statement)
                    db.execute(
                        "INSERT INTO schema_version (version, applied_at)"
                        " VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                        (version,),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    @property
    def schema_version(self) -> int:
        """The schema version of the file (the latest migration applied)."""
        with self._connect() as db:
            version: int = db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            return version

    def save(self, feedback: Feedback) -> None:
        check_feedback(feedback)
        row = (
            feedback.id,
            feedback.type.value,
            feedback.content,
            feedback.session_id,
            feedback.timestamp.isoformat(),
            _zone_key(feedback.timestamp),
            _metadata_json(feedback),
        )
        with self._connect() as db:
            try:
                db.execute(f"INSERT INTO feedback ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", row)
            except sqlite3.IntegrityError:
                raise ConfigError(f"feedback id {feedback.id!r} is already stored") from None

    def _select(self, where: str = "", params: tuple[Any, ...] = ()) -> list[Feedback]:
        with self._connect() as db:
            rows = db.execute(
                f"SELECT seq, {_COLUMNS} FROM feedback {where} ORDER BY seq", params
            ).fetchall()
        found: list[Feedback] = []
        skipped: list[StoreError] = []
        for row in rows:
            try:
                found.append(_from_row(row[1:]))
            except Exception as error:  # any malformed field: this row only
                location = f"{self.path}#{row[0]}"
                skipped.append(
                    StoreError(
                        f"feedback store {str(self.path)!r}, row seq={row[0]}: {error}",
                        location=location,
                    )
                )
        self.skipped = tuple(skipped)
        if skipped:
            warnings.warn(
                f"{len(skipped)} unreadable row(s) skipped; first: {skipped[0]}",
                StoreWarning,
                stacklevel=3,
            )
        return found

    def get_all(self) -> list[Feedback]:
        return self._select()

    def get_by_type(self, type: FeedbackType | str) -> list[Feedback]:
        return self._select("WHERE type = ?", (FeedbackType.parse(type).value,))

    def get_by_session(self, session_id: str) -> list[Feedback]:
        return self._select("WHERE session_id = ?", (session_id,))

    def get_recent(self, limit: int) -> list[Feedback]:
        check_limit(limit)
        where = "WHERE seq IN (SELECT seq FROM feedback ORDER BY seq DESC LIMIT ?)"
        return self._select(where, (limit,))

    def count(self) -> int:
        with self._connect() as db:
            total: int = db.execute("SELECT COUNT(*) FROM feedback").fetchone()[0]
            return total

    def clear(self) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM feedback")


def _reopen(path: str, busy_timeout_s: float) -> SqliteFeedbackStore:
    return SqliteFeedbackStore(path, busy_timeout_s=busy_timeout_s)


def _zone_key(timestamp: datetime) -> str | None:
    # The offset alone would turn Europe/Paris into a fixed +01:00.
    return timestamp.tzinfo.key if isinstance(timestamp.tzinfo, ZoneInfo) else None


def _metadata_json(feedback: Feedback) -> str:
    bad_keys = [key for key in feedback.metadata if not isinstance(key, str)]
    if bad_keys:
        raise ConfigError(f"feedback metadata keys must be str to be stored, got {bad_keys!r}")
    try:
        return json.dumps(dict(feedback.metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ConfigError(
            f"feedback {feedback.id!r} metadata is not JSON-serializable: {error}"
        ) from None


def _text(value: Any, column: str, *, required: bool = True) -> str | None:
    if value is None:
        if required:
            raise ValueError(f"{column} is NULL")
        return None
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{column} is not UTF-8 text (byte {error.start})") from None
    if isinstance(value, str):
        return value
    raise ValueError(f"{column} is a {type(value).__name__}, not text")


def _from_row(row: tuple[Any, ...]) -> Feedback:
    id_, type_, content, session_id, timestamp, tz_key, metadata = row
    timestamp_text = _text(timestamp, "timestamp")
    assert timestamp_text is not None
    try:
        when = datetime.fromisoformat(timestamp_text)
    except ValueError:
        raise ValueError(f"timestamp {timestamp_text!r:.60} is not ISO 8601") from None
    zone = _text(tz_key, "tz", required=False)
    if zone is not None:
        when = when.astimezone(ZoneInfo(zone))
    meta_text = _text(metadata, "metadata")
    assert meta_text is not None
    try:
        meta = json.loads(meta_text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"metadata is not JSON ({error})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"metadata is a JSON {type(meta).__name__}, not an object")
    return Feedback(
        _text(type_, "type"),  # type: ignore[arg-type]
        _text(content, "content"),  # type: ignore[arg-type]
        session_id=_text(session_id, "session_id", required=False),
        id=_text(id_, "id"),
        timestamp=when,
        metadata=meta,
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
