"""Round 4, the response store: SIGTERM, keys in test ids, locks, hostile files, migration.

A record run killed by SIGTERM (a real pytest subprocess); a test id that
holds a key; the old lock name in the shared temporary directory taken by a
directory or a held lock; a cassette that is a FIFO or ``/dev/zero``;
``store migrate`` with files it must not delete.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hostile.conftest import API_KEY
from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import StoreError
from tnsai_eval.llm import CachedLLM, Completion, ResponseStore, StoredRequest
from tnsai_eval.settings import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from tnsai_eval.testing import ScriptedLLM

# A GitHub token no process knows: only its shape says it is one.
GITHUB_TOKEN = "ghp_" + "Zx81Qw" * 6


def _finishes(action: Callable[[], object], bound_s: float = 60.0) -> object:
    """``action()``'s result (or the exception it raised), asserting it did not hang.

    The bound is far above what the action takes; it only turns a hang (what
    these defects were) into a failure instead of a stuck run.
    """
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(action())
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(bound_s)
    assert not worker.is_alive(), "hung"
    return outcome[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO nobody writes to; a reader left blocked on it is released at the end."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield path
    try:  # wake a reader still blocked in open() (only before the fix)
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


# ---------------------------------------------------------------- SIGTERM during a record run

PAID = """
import os, pathlib, time

def test_paid(llm):
    for i in range(10):
        llm.chat(f"question {i}")
    pathlib.Path(os.environ["PAID_MARKER"]).write_text("paid")
    time.sleep(300)  # a CI job's timeout or cancel arrives here
"""


def test_sigterm_during_a_record_run_keeps_every_reply_paid_for(tmp_path: Path) -> None:
    (tmp_path / "test_paid.py").write_text(PAID, encoding="utf-8")
    marker = tmp_path / "paid"
    env = {k: v for k, v in os.environ.items() if k not in (ENV_BASE_URL, ENV_MODEL, ENV_API_KEY)}
    env["PAID_MARKER"] = str(marker)
    with FakeOpenAIServer() as server:
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_paid.py",
             f"--llm-base-url={server.base_url}", "--llm-model=fake", "--llm-store=store",
             "--llm-record=record"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            for _ in range(1200):  # until the test has paid for its ten replies
                if marker.exists() or run.poll() is not None:
                    break
                time.sleep(0.1)
            assert marker.exists(), run.communicate(timeout=60)[0] if run.poll() else "no marker"
            run.send_signal(signal.SIGTERM)
            output = run.communicate(timeout=120)[0]
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert len(server.requests) == 10
    # Ended by the signal, as it would have been without the store.
    assert run.returncode == -signal.SIGTERM, output
    store = ResponseStore(tmp_path / "store")
    cassette = "test_paid.py::test_paid"
    assert store.cassette_path(cassette).exists(), output
    for i in range(10):
        found = store.find(StoredRequest.build("fake", f"question {i}"), cassette)
        assert found is not None
        assert found.completion.text == f"echo: question {i}"
    assert not list((tmp_path / "store").glob(".*.tmp"))


def test_sigterm_with_nothing_held_keeps_its_default_action() -> None:
    # The handler is there only while a cassette is held; outside it SIGTERM is untouched.
    store = ResponseStore(tempfile.mkdtemp())
    before = signal.getsignal(signal.SIGTERM)
    with store.holding("t"):
        assert signal.getsignal(signal.SIGTERM) != before
    assert signal.getsignal(signal.SIGTERM) == before


# ---------------------------------------------------------------- a key in a test id

KEYED = f"""
import pytest

@pytest.mark.parametrize("key", ["{API_KEY}", "{GITHUB_TOKEN}"])
def test_keyed(key, llm):
    llm.chat("Which key?")
"""


def test_a_key_in_a_test_id_reaches_neither_file_names_nor_files(
    pytester: pytest.Pytester, secret_env: None
) -> None:
    pytester.makepyfile(test_keyed=KEYED)
    with FakeOpenAIServer() as server:
        args = [f"--llm-base-url={server.base_url}", "--llm-model=fake", "--llm-store=store"]
        pytester.runpytest_inprocess(*args, "--llm-record=record").assert_outcomes(passed=2)
        assert len(server.requests) == 2
        server.reset(default=Step.error(500))
        # Masked names still find their own files: the replay needs no model.
        pytester.runpytest_inprocess(*args, "--llm-record=replay").assert_outcomes(passed=2)
        assert server.requests == []
    files = sorted((pytester.path / "store").glob("*.json"))
    assert len(files) == 2
    for file in files:
        text = file.read_text(encoding="utf-8")
        for key in (API_KEY, GITHUB_TOKEN):
            assert key[:12] not in file.name
            assert key[4:16] not in file.name
            assert key not in text
            assert key[:12] not in text
        assert json.loads(text)["cassette"] == "test_keyed.py::test_keyed[***]"


# ---------------------------------------------------------------- the store's lock


def _old_lock_file(root: Path) -> Path:
    """Where earlier versions locked a store: a name anyone could predict and take first."""
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()[:20]
    return Path(tempfile.gettempdir(), f"tnsai-store-{digest}.lock")


def test_a_directory_at_the_old_lock_name_does_not_stop_writes(tmp_path: Path) -> None:
    root = tmp_path / "store"
    taken = _old_lock_file(root)
    taken.mkdir()
    try:
        store = ResponseStore(root)
        store.put(StoredRequest.build("m", "hi"), Completion("hello"))
        assert ResponseStore(root).get(StoredRequest.build("m", "hi").key) is not None
    finally:
        taken.rmdir()


def test_a_lock_held_at_the_old_lock_name_does_not_block_writes(tmp_path: Path) -> None:
    root = tmp_path / "store"
    squatter = os.open(_old_lock_file(root), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(squatter, fcntl.LOCK_EX)
        store = ResponseStore(root)
        written = _finishes(lambda: store.put(StoredRequest.build("m", "hi"), Completion("x")))
        assert written == store.cassette_path()
    finally:
        os.close(squatter)
        _old_lock_file(root).unlink()


def test_a_lock_held_too_long_is_a_store_error_naming_the_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    root.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\n"
         "time.sleep(300)\n",
         str(root)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "locked\n"
        store = ResponseStore(root, lock_timeout=0.2)
        with pytest.raises(StoreError, match="stayed locked by another process") as caught:
            store.put(StoredRequest.build("m", "hi"), Completion("x"))
        assert str(root) in str(caught.value)
    finally:
        holder.kill()
        holder.wait()
    # The lock is the store directory itself: nothing was created beside the cassettes.
    assert sorted(p.name for p in root.iterdir()) == []


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True])
def test_lock_timeout_is_checked(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="lock_timeout"):
        ResponseStore(tmp_path, lock_timeout=bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- hostile cassette files


def test_a_cassette_linked_to_dev_zero_is_a_store_error(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    store.cassette_path("t").symlink_to("/dev/zero")
    with pytest.raises(StoreError, match="character device, not a regular file"):
        store.find(StoredRequest.build("m", "hi"), "t")


def test_a_cassette_that_is_a_fifo_is_a_store_error(tmp_path: Path, fifo: Path) -> None:
    store = ResponseStore(tmp_path)
    store.cassette_path("t").symlink_to(fifo)
    error = _finishes(lambda: store.find(StoredRequest.build("m", "hi"), "t"))
    assert isinstance(error, StoreError)
    assert "a FIFO, not a regular file" in str(error)


def test_a_per_reply_file_that_is_a_fifo_is_a_store_error(tmp_path: Path, fifo: Path) -> None:
    request = StoredRequest.build("m", "hi")
    folder = tmp_path / request.key[:2]
    folder.mkdir()
    (folder / f"{request.key}.json").symlink_to(fifo)
    store = ResponseStore(tmp_path)
    error = _finishes(lambda: store.find(request))
    assert isinstance(error, StoreError)


def test_a_cassette_too_large_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tnsai_eval.llm._store as store_module

    monkeypatch.setattr(store_module, "MAX_CASSETTE_BYTES", 100)
    store = ResponseStore(tmp_path)
    store.cassette_path("t").write_text(" " * 101, encoding="utf-8")
    with pytest.raises(StoreError, match="more than the 100 allowed"):
        store.find(StoredRequest.build("m", "hi"), "t")


# ---------------------------------------------------------------- store migrate


def _legacy(root: Path, request: StoredRequest, text: str, *, folder: str | None = None) -> Path:
    """A format-2 per-reply file for ``request`` (in ``folder``, default its key's)."""
    where = root / (folder or request.key[:2])
    where.mkdir(parents=True, exist_ok=True)
    file = where / f"{request.key}.json"
    entry = {
        "format": 2,
        "request": request.to_dict(),
        "response": {"text": text, "model": "m"},
        "server": None,
    }
    file.write_text(json.dumps(entry), encoding="utf-8")
    return file


def test_migrate_refuses_a_file_outside_its_key_folder_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    good = _legacy(tmp_path, StoredRequest.build("m", "one"), "1")
    other = StoredRequest.build("m", "two")
    wrong = "00" if other.key[:2] != "00" else "ff"
    stray = _legacy(tmp_path, other, "2", folder=wrong)
    with pytest.raises(StoreError, match="not named after a store key in its own folder"):
        ResponseStore(tmp_path).migrate()
    assert good.exists()
    assert stray.exists()
    assert not (tmp_path / "default.json").exists()


def test_migrate_never_deletes_through_a_symlinked_folder(tmp_path: Path) -> None:
    request = StoredRequest.build("m", "outside")
    outside = tmp_path / "elsewhere"
    kept = _legacy(outside, request, "kept")
    store_root = tmp_path / "store"
    store_root.mkdir()
    (store_root / request.key[:2]).symlink_to(outside / request.key[:2])
    with pytest.raises(StoreError, match="symbolic link"):
        ResponseStore(store_root).migrate()
    assert kept.exists()
    # Cleaning temp files does not reach through it either.
    stale = outside / request.key[:2] / ".x.json-1.tmp"
    stale.write_text("", encoding="utf-8")
    os.utime(stale, (0, 0))
    assert ResponseStore(store_root).remove_temp_files(older_than_s=0) == 0
    assert stale.exists()


def test_migrate_refuses_to_drop_a_reply_the_cassette_holds_otherwise(tmp_path: Path) -> None:
    request = StoredRequest.build("m", "changed?")
    store = ResponseStore(tmp_path)
    store.put(request, Completion("recorded again"))
    old = _legacy(tmp_path, request, "recorded first")
    with pytest.raises(StoreError, match="another reply than cassette 'default'"):
        ResponseStore(tmp_path).migrate()
    assert old.exists()
    # The same reply in both places is migrated (its file goes).
    old.write_text(old.read_text().replace("recorded first", "recorded again"), encoding="utf-8")
    assert ResponseStore(tmp_path).migrate() == 1
    assert not old.exists()


def test_migrate_deletes_exactly_the_files_it_moved(tmp_path: Path) -> None:
    requests = [StoredRequest.build("m", f"q{i}") for i in range(5)]
    files = [_legacy(tmp_path, r, f"a{i}") for i, r in enumerate(requests)]
    assert ResponseStore(tmp_path).migrate() == 5
    assert not any(f.exists() for f in files)
    replay = CachedLLM(ScriptedLLM(model="m"), ResponseStore(tmp_path), mode="replay")
    assert [replay.chat(f"q{i}").text for i in range(5)] == [f"a{i}" for i in range(5)]
