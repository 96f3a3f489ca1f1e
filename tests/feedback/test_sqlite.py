"""What only the SQLite store does: files, schema, time zones, JSON metadata."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback import Feedback, FeedbackStore, SqliteFeedbackStore
from tnsai_eval.feedback._sqlite import SCHEMA_VERSION


def test_persists_across_store_objects(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "fb.db"  # folders are created
    first = FeedbackStore.sqlite(path)
    saved = [Feedback.correction(f"c{i}") for i in range(3)]
    for fb in saved:
        first.save(fb)
    del first
    assert FeedbackStore.sqlite(path).get_all() == saved


def test_relative_path_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SqliteFeedbackStore("fb.db")
    monkeypatch.chdir("/")
    store.save(Feedback.thumbs_up("x"))
    assert (tmp_path / "fb.db").exists()
    assert store.path == tmp_path / "fb.db"


@pytest.mark.parametrize(
    "tz",
    [
        UTC,
        timezone(timedelta(hours=5, minutes=30)),
        timezone(-timedelta(hours=8)),
        ZoneInfo("Europe/Paris"),
    ],
    ids=["utc", "plus-0530", "minus-08", "europe-paris"],
)
def test_timestamps_round_trip_exactly_with_their_zone(tmp_path: Path, tz: object) -> None:
    when = datetime(2026, 7, 1, 12, 30, 15, 987654, tzinfo=tz)  # type: ignore[arg-type]
    store = FeedbackStore.sqlite(tmp_path / "fb.db")
    store.save(Feedback.thumbs_up("x", timestamp=when))
    back = FeedbackStore.sqlite(tmp_path / "fb.db").get_all()[0].timestamp
    assert back == when
    assert back.utcoffset() == when.utcoffset()
    assert back.tzinfo == when.tzinfo
    assert back.isoformat() == when.isoformat()


def test_metadata_must_be_json(tmp_path: Path) -> None:
    store = FeedbackStore.sqlite(tmp_path / "fb.db")
    with pytest.raises(ConfigError, match="not JSON-serializable"):
        store.save(Feedback.thumbs_up("x", metadata={"when": object()}))
    with pytest.raises(ConfigError, match="keys must be str"):
        store.save(Feedback.thumbs_up("x", metadata={1: "one"}))
    with pytest.raises(ConfigError, match="JSON"):
        store.save(Feedback.thumbs_up("x", metadata={"x": float("nan")}))
    assert store.count() == 0  # nothing half-saved


@pytest.mark.parametrize("path", [":memory:", ""])
def test_in_memory_paths_are_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="in_memory"):
        FeedbackStore.sqlite(path)


def test_bad_busy_timeout(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="busy_timeout_s"):
        FeedbackStore.sqlite(tmp_path / "fb.db", busy_timeout_s=0)


def test_schema_is_versioned_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "fb.db"
    store = SqliteFeedbackStore(path)
    assert store.schema_version == SCHEMA_VERSION == 1
    SqliteFeedbackStore(path)  # reopening applies nothing twice
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = db.execute("SELECT version FROM schema_version").fetchall()
    assert versions == [(1,)]


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fb.db"
    SqliteFeedbackStore(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_version VALUES (99, 'later')")
    with pytest.raises(ConfigError, match="schema version 99"):
        SqliteFeedbackStore(path)


def test_a_file_that_is_not_sqlite_fails_loudly(tmp_path: Path) -> None:
    path = tmp_path / "fb.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match="not a usable SQLite feedback store") as info:
        SqliteFeedbackStore(path)
    assert str(path) in str(info.value)


def test_close_and_context_manager_keep_the_store_usable(tmp_path: Path) -> None:
    with FeedbackStore.sqlite(tmp_path / "fb.db") as store:
        store.save(Feedback.thumbs_up("a"))
    store.close()  # twice is fine
    store.save(Feedback.thumbs_up("b"))  # reopens
    assert store.count() == 2


def test_each_thread_uses_its_own_connection(tmp_path: Path) -> None:
    store = SqliteFeedbackStore(tmp_path / "fb.db")
    connections: list[sqlite3.Connection] = []  # kept referenced: ids stay unique
    barrier = threading.Barrier(3)

    def grab() -> None:
        with store._connect() as first, store._connect() as again:
            assert first is again  # reused within a thread
            connections.append(first)
        barrier.wait()  # all three alive at once

    threads = [threading.Thread(target=grab) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with store._connect() as mine:
        assert len({id(c) for c in [mine, *connections]}) == 4
