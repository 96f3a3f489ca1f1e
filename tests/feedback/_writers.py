"""Code run in child processes by test_sqlite_processes (importable by spawn)."""

from __future__ import annotations

import sys

from tnsai_eval.feedback import Feedback, FeedbackStore


def save_many(path: str, writer: int, count: int) -> None:
    store = FeedbackStore.sqlite(path)
    for i in range(count):
        store.save(Feedback.thumbs_up(f"w{writer}-{i}", session_id=f"w{writer}"))


def save_with(store: FeedbackStore, content: str) -> None:
    """Save through a store object handed over by the parent (fork or pickle)."""
    store.save(Feedback.thumbs_up(content))


def save_forever(path: str) -> None:
    """Save until killed, printing each id once its save has committed."""
    store = FeedbackStore.sqlite(path)
    i = 0
    while True:
        fb = Feedback.correction(f"row {i}", metadata={"i": i})
        store.save(fb)
        print(fb.id, flush=True)
        i += 1


if __name__ == "__main__":
    save_forever(sys.argv[1])
