"""The FeedbackStore contract, run against both implementations."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.feedback import Feedback, FeedbackStore, FeedbackType


def _fill(store: FeedbackStore) -> list[Feedback]:
    # Timestamps deliberately out of order: reads follow save order, not clocks.
    start = datetime(2026, 3, 1, tzinfo=UTC)
    items = [
        Feedback.correction("c1", session_id="a", timestamp=start + timedelta(minutes=5)),
        Feedback.thumbs_up("p1", session_id="b", timestamp=start),
        Feedback.preference("pref1", session_id="a", timestamp=start + timedelta(minutes=1)),
        Feedback.thumbs_down("n1", timestamp=start - timedelta(days=1)),
        Feedback.correction("c2", session_id="b", timestamp=start + timedelta(minutes=2)),
    ]
    for fb in items:
        store.save(fb)
    return items


def test_empty_store(store: FeedbackStore) -> None:
    assert store.count() == 0
    assert store.get_all() == []
    assert store.get_recent(5) == []
    assert store.get_by_type(FeedbackType.POSITIVE) == []
    assert store.get_by_session("a") == []


def test_get_all_in_save_order(store: FeedbackStore) -> None:
    items = _fill(store)
    assert store.get_all() == items
    assert store.count() == 5


def test_get_by_type_accepts_enum_or_any_case_string(store: FeedbackStore) -> None:
    _fill(store)
    assert [fb.content for fb in store.get_by_type(FeedbackType.CORRECTION)] == ["c1", "c2"]
    assert [fb.content for fb in store.get_by_type("Correction")] == ["c1", "c2"]
    assert [fb.content for fb in store.get_by_type("NEGATIVE")] == ["n1"]
    with pytest.raises(ConfigError, match="'bogus'"):
        store.get_by_type("bogus")


def test_get_by_session(store: FeedbackStore) -> None:
    _fill(store)
    assert [fb.content for fb in store.get_by_session("a")] == ["c1", "pref1"]
    assert [fb.content for fb in store.get_by_session("b")] == ["p1", "c2"]
    assert store.get_by_session("nobody") == []


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, []),
        (1, ["c2"]),
        (2, ["n1", "c2"]),
        (5, ["c1", "p1", "pref1", "n1", "c2"]),
        (50, ["c1", "p1", "pref1", "n1", "c2"]),
    ],
)
def test_get_recent_is_the_last_saved_oldest_first(
    store: FeedbackStore, limit: int, expected: list[str]
) -> None:
    _fill(store)
    assert [fb.content for fb in store.get_recent(limit)] == expected


@pytest.mark.parametrize("limit", [-1, 1.5, "3", True])
def test_get_recent_rejects_bad_limits(store: FeedbackStore, limit: object) -> None:
    with pytest.raises(ConfigError, match="limit"):
        store.get_recent(limit)  # type: ignore[arg-type]


def test_clear(store: FeedbackStore) -> None:
    items = _fill(store)
    store.clear()
    assert store.count() == 0
    assert store.get_all() == []
    store.save(items[0])  # its id is free again
    assert store.get_all() == [items[0]]


def test_saving_an_id_twice_is_refused(store: FeedbackStore) -> None:
    fb = Feedback.thumbs_up("once")
    store.save(fb)
    with pytest.raises(ConfigError, match=fb.id):
        store.save(fb.with_session_id("other"))
    assert store.get_all() == [fb]


def test_save_rejects_non_feedback(store: FeedbackStore) -> None:
    with pytest.raises(ConfigError, match="dict"):
        store.save({"type": "positive"})  # type: ignore[arg-type]


def test_round_trip_keeps_every_field(store: FeedbackStore) -> None:
    fb = Feedback(
        FeedbackType.PREFERENCE,
        "Réponds en français, s'il te plaît 🙂",
        session_id="s-1",
        id="fixed-id",
        timestamp=datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        metadata={"channel": "chat", "score": 4.5, "tags": ["a", "b"], "nested": {"x": None}},
    )
    store.save(fb)
    (back,) = store.get_all()
    assert back == fb
    assert dict(back.metadata) == dict(fb.metadata)


def test_threads_lose_nothing(store: FeedbackStore) -> None:
    def writer(n: int) -> None:
        for i in range(25):
            store.save(Feedback.thumbs_up(f"{n}-{i}", session_id=str(n)))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count() == 100
    for n in range(4):
        # Each thread's own saves stay in its order.
        assert [fb.content for fb in store.get_by_session(str(n))] == [
            f"{n}-{i}" for i in range(25)
        ]
