"""The SQLite store shared by several processes, and one killed mid-write."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.feedback import _writers
from tnsai_eval.feedback import Feedback, FeedbackStore

ROOT = Path(__file__).resolve().parents[2]


def test_four_processes_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    # spawn: fresh interpreters that share nothing with this one but the file,
    # and all of them create the (missing) file at the same moment.
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writers.save_many, args=(path, n, 50)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]

    store = FeedbackStore.sqlite(path)
    assert store.count() == 200
    assert len({fb.id for fb in store.get_all()}) == 200
    for n in range(4):
        # Interleaved between processes, but each writer's saves in its order.
        assert [fb.content for fb in store.get_by_session(f"w{n}")] == [
            f"w{n}-{i}" for i in range(50)
        ]


def test_a_killed_writer_leaves_every_committed_row(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.feedback._writers", str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert writer.stdout is not None
    committed: list[str] = []
    try:
        while len(committed) < 40:
            line = writer.stdout.readline()
            assert line, f"writer exited early with {writer.wait()}"
            committed.append(line.strip())
    finally:
        # SIGKILL: no cleanup, no atexit, possibly inside a transaction.
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    committed += [line.strip() for line in writer.stdout if line.strip()]
    writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL

    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = FeedbackStore.sqlite(path)
    stored = store.get_all()
    stored_ids = {fb.id for fb in stored}
    assert set(committed) <= stored_ids
    # At most the one save in flight when the signal came is beyond what was printed.
    assert len(stored) - len(committed) in (0, 1)
    assert [fb.metadata["i"] for fb in stored] == list(range(len(stored)))
    # And the file takes new writes.
    store.save(Feedback.thumbs_up("after the crash"))
    assert store.count() == len(stored) + 1


def test_a_store_crosses_fork_and_pickle(tmp_path: Path) -> None:
    store = FeedbackStore.sqlite(tmp_path / "f.db")
    store.save(Feedback.thumbs_up("parent before"))  # this thread now holds a connection
    # fork inherits the open connection; spawn pickles the store.
    contexts = (multiprocessing.get_context("fork"), multiprocessing.get_context("spawn"))
    for context in contexts:
        child = context.Process(
            target=_writers.save_with, args=(store, f"child via {context.get_start_method()}")
        )
        child.start()
        child.join(timeout=60)
        assert child.exitcode == 0
    store.save(Feedback.thumbs_up("parent after"))
    assert [fb.content for fb in store.get_all()] == [
        "parent before",
        "child via fork",
        "child via spawn",
        "parent after",
    ]
