"""ResponseStore: keys, the on-disk format, concurrent and killed writers."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Completion, Message, ResponseStore, StoredRequest, Usage

# ---------------------------------------------------------------- keys


def test_key_is_sha256_of_canonical_json() -> None:
    req = StoredRequest.build("m", "hi", {"temperature": 0.5, "max_tokens": 3}, sample=2)
    canonical = json.dumps(
        {
            "messages": [{"content": "hi", "role": "user"}],
            "model": "m",
            "params": {"max_tokens": 3, "temperature": 0.5},
            "sample": 2,
        },
        separators=(",", ":"),
    )
    assert req.key == hashlib.sha256(canonical.encode()).hexdigest()


def test_key_ignores_param_order_and_message_form() -> None:
    a = StoredRequest.build("m", "hi", {"temperature": 0, "top_p": 1})
    b = StoredRequest.build("m", [Message("user", "hi")], {"top_p": 1, "temperature": 0})
    c = StoredRequest.build(
        "m", [{"role": "user", "content": "hi"}], {"top_p": 1, "temperature": 0}
    )
    assert a.key == b.key == c.key


@pytest.mark.parametrize(
    "other",
    [
        StoredRequest.build("other-model", "hi", {"temperature": 0}),
        StoredRequest.build("m", "hello", {"temperature": 0}),
        StoredRequest.build("m", "hi", {"temperature": 0.7}),
        StoredRequest.build("m", "hi", {"temperature": 0}, sample=1),
        StoredRequest.build(
            "m", [Message("system", "be brief"), Message("user", "hi")], {"temperature": 0}
        ),
    ],
)
def test_key_changes_with_what_the_model_sees(other: StoredRequest) -> None:
    assert StoredRequest.build("m", "hi", {"temperature": 0}).key != other.key


def test_credentials_and_endpoints_are_not_part_of_the_key() -> None:
    bare = StoredRequest.build("m", "hi", {"temperature": 0})
    with_secrets = StoredRequest.build(
        "m",
        "hi",
        {
            "temperature": 0,
            "api_key": "sk-secret",
            "base_url": "https://api.example.com/v1",
            "headers": {"Authorization": "Bearer sk-secret"},
        },
    )
    assert with_secrets.key == bare.key
    assert "sk-secret" not in json.dumps(with_secrets.to_dict())
    assert dict(with_secrets.params) == {"temperature": 0}


def test_a_param_that_is_not_json_is_rejected_by_name() -> None:
    with pytest.raises(ConfigError, match="'stop'"):
        StoredRequest.build("m", "hi", {"stop": {object()}})


@pytest.mark.parametrize("sample", [-1, 1.5, True, "0"])
def test_bad_sample_index_is_rejected(sample: object) -> None:
    with pytest.raises(ConfigError, match="sample"):
        StoredRequest.build("m", "hi", sample=sample)  # type: ignore[arg-type]


def test_prompt_start_is_the_last_user_message_shortened() -> None:
    req = StoredRequest.build(
        "m", [Message("user", "first"), Message("assistant", "x"), Message("user", "w " * 100)]
    )
    assert req.prompt_start.startswith("w w w")
    assert req.prompt_start.endswith("...")
    assert len(req.prompt_start) == 80


# ---------------------------------------------------------------- files


def test_put_then_get_round_trip(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "store")
    req = StoredRequest.build("smol", "What is 2+2?", {"max_tokens": 4})
    stored = store.put(req, Completion("4", usage=Usage(10, 1), model="smol-q4", latency_s=0.3))

    assert stored == tmp_path / "store" / req.key[:2] / f"{req.key}.json"
    got = store.get(req.key)
    assert got == Completion("4", usage=Usage(10, 1), model="smol-q4", cached=True, attempts=0)
    assert req.key in store
    assert list(store) == [req.key]
    assert len(store) == 1


def test_remove_temp_files_spares_fresh_ones(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    store.put(req, Completion("x"))
    old = tmp_path / req.key[:2] / ".old-abc.tmp"
    fresh = tmp_path / req.key[:2] / ".fresh-abc.tmp"
    old.write_text("{half")
    fresh.write_text("{half")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))

    assert store.remove_temp_files(older_than_s=600) == 1
    assert not old.exists()
    assert fresh.exists()
    assert store.remove_temp_files(older_than_s=0) == 1
    assert not fresh.exists()
    assert list(store) == [req.key]
    assert ResponseStore(tmp_path / "absent").remove_temp_files() == 0


def test_file_is_reviewable_json_with_request_and_response(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("smol", "Say hi", {"temperature": 0, "api_key": "sk-secret"})
    path = store.put(
        req, Completion("hi", usage=Usage(3, 1), model="smol"), server="http://127.0.0.1:1/v1"
    )

    text = path.read_text(encoding="utf-8")
    assert "\n  " in text  # indented, one field a line: readable in a diff
    assert "sk-secret" not in text
    entry = json.loads(text)
    assert entry["request"] == {
        "model": "smol",
        "messages": [{"role": "user", "content": "Say hi"}],
        "params": {"temperature": 0},
        "sample": 0,
    }
    assert entry["response"] == {
        "text": "hi",
        "model": "smol",
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        "finish_reason": None,
        "tool_calls": [],
    }
    assert entry["key"] == req.key
    assert entry["format"] == 2
    assert entry["server"] == "http://127.0.0.1:1/v1"


def test_put_overwrites(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    store.put(req, Completion("old"))
    store.put(req, Completion("new"))
    assert store.get(req.key) == Completion("new", cached=True, attempts=0)
    assert len(store) == 1


def test_missing_key_and_missing_directory(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "not-yet")
    key = StoredRequest.build("m", "hi").key
    assert store.get(key) is None
    assert key not in store
    assert "not-a-key" not in store
    assert len(store) == 0


def test_bad_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("'../etc'")):
        ResponseStore(tmp_path).get("../etc")


def test_store_path_must_be_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        ResponseStore(file)


def test_hand_broken_file_is_reported_with_its_path(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    path = store.put(req, Completion("x"))
    path.write_text('{"format": 1, "response": ', encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON") as info:
        store.get(req.key)
    assert str(path) in str(info.value)


def test_temporary_files_are_not_entries(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    store.put(req, Completion("x"))
    (tmp_path / req.key[:2] / ".deadbeef-xyz.tmp").write_text("{half")
    assert list(store) == [req.key]
    assert len(store) == 1


# ---------------------------------------------------------------- several processes

WRITERS = 4
WRITES_EACH = 50


def _write_many(root: str, worker: int, count: int) -> None:
    store = ResponseStore(root)
    for i in range(count):
        store.put(StoredRequest.build("m", f"w{worker} #{i}"), Completion(f"reply {worker}/{i}"))
        # Every worker also rewrites one shared key: concurrent writes to one file.
        store.put(StoredRequest.build("m", "shared"), Completion(f"shared from {worker}"))


def _write_forever(root: str, payload_chars: int, started: Any) -> None:
    store = ResponseStore(root)
    i = 0
    while True:
        body = f"{i}:" + "x" * payload_chars
        # A few keys rewritten over and over: the store stays small on disk and
        # most kills land on a file that already holds an earlier good reply.
        store.put(StoredRequest.build("m", f"big #{i % 3}"), Completion(body))
        started.set()
        i += 1


def _assert_every_file_is_valid(root: Path) -> list[dict[str, object]]:
    entries = []
    for file in sorted(root.glob("??/*.json")):
        entry = json.loads(file.read_text(encoding="utf-8"))  # raises if torn
        assert entry["key"] == file.stem
        entries.append(entry)
    return entries


def test_several_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_write_many, args=(str(tmp_path), w, WRITES_EACH))
        for w in range(WRITERS)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0

    entries = _assert_every_file_is_valid(tmp_path)
    assert len(entries) == WRITERS * WRITES_EACH + 1
    store = ResponseStore(tmp_path)
    for w in range(WRITERS):
        for i in range(WRITES_EACH):
            got = store.get(StoredRequest.build("m", f"w{w} #{i}").key)
            assert got is not None
            assert got.text == f"reply {w}/{i}"
    shared = store.get(StoredRequest.build("m", "shared").key)
    assert shared is not None
    assert shared.text in {f"shared from {w}" for w in range(WRITERS)}
    assert not list(tmp_path.glob("*/*.tmp"))


KILL_PAYLOAD = 4_000_000  # big enough that a kill often lands inside write()
KILL_ROUNDS = 20


def test_a_writer_killed_mid_way_leaves_no_corrupt_file(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    torn_temp_files = 0
    for _ in range(KILL_ROUNDS):
        started = ctx.Event()
        proc = ctx.Process(target=_write_forever, args=(str(tmp_path), KILL_PAYLOAD, started))
        proc.start()
        try:
            assert started.wait(timeout=60), "writer made no progress"
            # A temporary file exists only while a write is under way: kill then.
            deadline = time.monotonic() + 10
            while not any(tmp_path.glob("??/*.tmp")) and time.monotonic() < deadline:
                pass
        finally:
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(timeout=30)
        assert proc.exitcode == -signal.SIGKILL

        entries = _assert_every_file_is_valid(tmp_path)
        assert 1 <= len(entries) <= 3
        for entry in entries:
            response = entry["response"]
            assert isinstance(response, dict)
            index, _, body = str(response["text"]).partition(":")
            assert index.isdigit()
            assert body == "x" * KILL_PAYLOAD
        temp_files = list(tmp_path.glob("??/*.tmp"))
        torn_temp_files = sum(1 for f in temp_files if f.stat().st_size < KILL_PAYLOAD)
        for file in temp_files:
            file.unlink()  # keeps the disk use bounded; readers ignore them anyway
        if torn_temp_files:
            break
    # Proof that the scenario happened: some kill cut a write in half, and
    # the half-written bytes stayed in a temporary file, never in an entry.
    assert torn_temp_files > 0, f"no kill landed inside a write in {KILL_ROUNDS} rounds"
    assert len(ResponseStore(tmp_path)) == len(_assert_every_file_is_valid(tmp_path))
