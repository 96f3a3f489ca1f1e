"""ResponseStore: keys, cassettes on disk, older layouts, concurrent and killed writers."""

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

from tnsai_eval.errors import ConfigError, StoreError
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


# Inside a schema these are ordinary property names; as client parameters they
# are credentials or connection details.
CREDENTIAL_LIKE = ["organization", "token", "password", "timeout", "headers", "auth"]


def _schema_format(*properties: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in properties}}
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def _tools(*properties: str) -> list[dict[str, Any]]:
    parameters = {"type": "object", "properties": {p: {"type": "string"} for p in properties}}
    return [{"type": "function", "function": {"name": "lookup", "parameters": parameters}}]


@pytest.mark.parametrize("name", CREDENTIAL_LIKE)
def test_schema_property_names_change_the_key(name: str) -> None:
    plain = StoredRequest.build("m", "hi", {"response_format": _schema_format("answer")})
    named = StoredRequest.build("m", "hi", {"response_format": _schema_format("answer", name)})
    assert named.key != plain.key
    assert name in named.params["response_format"]["json_schema"]["schema"]["properties"]


@pytest.mark.parametrize("name", CREDENTIAL_LIKE)
def test_tool_schema_property_names_change_the_key(name: str) -> None:
    plain = StoredRequest.build("m", "hi", {"tools": _tools("query")})
    named = StoredRequest.build("m", "hi", {"tools": _tools("query", name)})
    assert named.key != plain.key


def test_format2_key_is_the_key_older_versions_computed() -> None:
    request = StoredRequest.build(
        "m", "hi", {"response_format": _schema_format("answer", "token"), "api_key": "sk-x"}
    )
    older = {
        "messages": [{"content": "hi", "role": "user"}],
        "model": "m",
        "params": {"response_format": _schema_format("answer")},  # "token" was dropped
        "sample": 0,
    }
    digest = hashlib.sha256(json.dumps(older, sort_keys=True, separators=(",", ":")).encode())
    assert request.format2_key == digest.hexdigest()
    assert request.format2_key != request.key
    plain = StoredRequest.build("m", "hi", {"temperature": 0})
    assert plain.format2_key == plain.key  # most requests: the same key in both formats


def test_credentials_at_the_top_of_extra_body_are_dropped() -> None:
    request = StoredRequest.build(
        "m", "hi", {"extra_body": {"api_key": "sk-hidden-here", "top_k": 2, "schema": {"token": 1}}}
    )
    assert request.params == {"extra_body": {"top_k": 2, "schema": {"token": 1}}}


# ---------------------------------------------------------------- cassettes


def test_cassette_file_names_stay_in_the_store_and_never_collide(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    assert store.cassette_path() == tmp_path / "default.json"
    assert store.cassette_path("01_quickstart") == tmp_path / "01_quickstart.json"
    names = [
        "tests/test_a.py::test_b[x-1]",
        "tests/test_a.py::test_b[x/1]",
        "tests/test_a.py::test_b[x_1]",
        "../../etc/passwd",
        "/etc/passwd",
        "a\\b",
        ".hidden",
        "Default",
        "default.json",
        "x" * 500,
        "a\x00b",
        "caf\u00e9",
        "\ud800",
    ]
    paths = [store.cassette_path(name) for name in names]
    for path in paths:
        assert path.parent == tmp_path
        assert path.suffix == ".json"
        assert not path.name.startswith(".")
        assert len(path.name) <= 100
    assert len(set(paths)) == len(names)
    # A test's parameters are data (they may hold a secret): never in a file name.
    assert store.cassette_path(names[0]).name.startswith("tests-test_a.py-test_b~")


@pytest.mark.parametrize("name", ["", None, 3])
def test_bad_cassette_name_is_rejected(tmp_path: Path, name: object) -> None:
    with pytest.raises(ConfigError, match="cassette name"):
        ResponseStore(tmp_path).cassette_path(name)  # type: ignore[arg-type]


def test_put_then_get_round_trip(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "store")
    req = StoredRequest.build("smol", "What is 2+2?", {"max_tokens": 4})
    stored = store.put(req, Completion("4", usage=Usage(10, 1), model="smol-q4", latency_s=0.3))

    assert stored == tmp_path / "store" / "default.json"
    got = ResponseStore(tmp_path / "store").get(req.key)  # read back from disk
    assert got == Completion("4", usage=Usage(10, 1), model="smol-q4", cached=True, attempts=0)
    assert req.key in store
    assert list(store) == [req.key]
    assert len(store) == 1


def test_a_cassette_is_one_reviewable_json_file_of_all_its_replies(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    name = "tests/test_geo.py::test_capitals"
    requests = [
        StoredRequest.build("smol", f"Capital #{i}?", {"temperature": 0, "api_key": "sk-secret"})
        for i in range(30)
    ]
    for i, req in enumerate(requests):
        store.put(req, Completion(f"city {i}", model="smol"), server="http://127.0.0.1:1/v1",
                  cassette=name)  # fmt: skip

    (path,) = tmp_path.glob("*.json")  # one file for the whole cassette
    assert path == store.cassette_path(name)
    text = path.read_text(encoding="utf-8")
    assert "\n  " in text  # indented, one field a line: readable in a diff
    assert "sk-secret" not in text
    document = json.loads(text)
    assert (document["format"], document["cassette"]) == (3, name)
    assert sorted(document["replies"]) == sorted(r.key for r in requests)
    entry = document["replies"][requests[0].key]
    assert entry["request"] == {
        "model": "smol",
        "messages": [{"role": "user", "content": "Capital #0?"}],
        "params": {"temperature": 0},
        "sample": 0,
    }
    assert entry["response"] == {
        "text": "city 0",
        "model": "smol",
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "finish_reason": None,
        "tool_calls": [],
    }
    assert entry["server"] == "http://127.0.0.1:1/v1"
    assert store.cassettes() == [name]


def test_put_overwrites(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    store.put(req, Completion("old"))
    store.put(req, Completion("new"))
    assert ResponseStore(tmp_path).get(req.key) == Completion("new", cached=True, attempts=0)
    assert len(store) == 1


def test_missing_key_and_missing_directory(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "not-yet")
    key = StoredRequest.build("m", "hi").key
    assert store.get(key) is None
    assert store.find(StoredRequest.build("m", "hi"), "some::test") is None
    assert key not in store
    assert "not-a-key" not in store
    assert len(store) == 0
    assert not (tmp_path / "not-yet").exists()  # reading creates nothing


def test_bad_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("'../etc'")):
        ResponseStore(tmp_path).get("../etc")


def test_store_path_must_be_a_directory(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        ResponseStore(file)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"format": 3, "cassette": "default", "replies": ', "not valid JSON"),
        ('{"format": 2, "response": {"text": "x"}}', "not a format-3 cassette"),
        ('{"format": 3, "cassette": "other", "replies": {}}', "holds cassette 'other'"),
        ('{"format": 3, "cassette": "default", "replies": []}', "'replies' must be an object"),
        ('{"format": 3, "cassette": "default", "replies": {"../x": {}}}', "64-hex-digit keys"),
    ],
)
def test_hand_broken_cassette_is_reported_with_its_path(
    tmp_path: Path, content: str, fragment: str
) -> None:
    (tmp_path / "default.json").write_text(content, encoding="utf-8")
    with pytest.raises(StoreError, match=re.escape(fragment)) as info:
        ResponseStore(tmp_path).get(StoredRequest.build("m", "hi").key)
    assert str(tmp_path / "default.json") in str(info.value)


def test_a_broken_reply_in_a_cassette_names_the_field(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    path = store.put(req, Completion("x"))
    document = json.loads(path.read_text())
    document["replies"][req.key]["response"]["usage"] = {"prompt_tokens": -1}
    path.write_text(json.dumps(document))
    with pytest.raises(StoreError, match=r"response\.usage\.prompt_tokens") as info:
        ResponseStore(tmp_path).get(req.key)
    assert str(path) in str(info.value)


def test_a_held_cassette_is_written_once_when_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tnsai_eval._util.files import atomic_write_text

    writes: list[Path] = []

    def counting(path: Any, text: str, **kwargs: Any) -> Path:
        writes.append(Path(path))
        return atomic_write_text(path, text, **kwargs)

    monkeypatch.setattr("tnsai_eval.llm._store.atomic_write_text", counting)
    store = ResponseStore(tmp_path)
    name = "tests/test_a.py::test_many"
    with store.holding(name):
        store.hold(name)  # holds nest: only the outermost release writes
        for i in range(25):
            store.put(StoredRequest.build("m", f"q{i}"), Completion(f"a{i}"), cassette=name)
        # Until the test ends nothing is on disk, and this process still replays them.
        assert not store.cassette_path(name).exists()
        assert store.get(StoredRequest.build("m", "q3").key, name) == Completion(
            "a3", cached=True, attempts=0
        )
        assert store.release(name) is None
        assert writes == []
    assert writes == [store.cassette_path(name)]
    again = ResponseStore(tmp_path)
    assert [again.get(StoredRequest.build("m", f"q{i}").key, name) is not None
            for i in range(25)] == [True] * 25  # fmt: skip
    with pytest.raises(ConfigError, match="not held"):
        store.release(name)


def test_lookups_fall_back_to_the_default_cassette(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    shared = StoredRequest.build("m", "shared question")
    own = StoredRequest.build("m", "own question")
    store.put(shared, Completion("from default"))
    store.put(own, Completion("from the test"), cassette="t::a")
    found = ResponseStore(tmp_path).find(shared, "t::a")
    assert found is not None
    assert (found.completion.text, found.cassette, found.old_key) == (
        "from default",
        "default",
        False,
    )
    assert ResponseStore(tmp_path).find(own, "t::b") is None  # another test's cassette is not read


def test_remove_temp_files_spares_fresh_ones(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    req = StoredRequest.build("m", "hi")
    store.put(req, Completion("x"))
    old = tmp_path / ".default.json-abc.tmp"
    fresh = tmp_path / ".default.json-def.tmp"
    old.write_text("{half")
    fresh.write_text("{half")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))

    assert store.remove_temp_files(older_than_s=600) == 1
    assert not old.exists()
    assert fresh.exists()
    assert list(store) == [req.key]  # a temporary file is not a cassette
    assert store.remove_temp_files(older_than_s=0) == 1
    assert not fresh.exists()
    assert ResponseStore(tmp_path / "absent").remove_temp_files() == 0


# ---------------------------------------------------------------- formats 1 and 2


def _write_format2(
    root: Path, request: StoredRequest, text: str, *, key: str | None = None
) -> Path:
    """A per-reply file as formats 1 and 2 wrote it (request stored as keyed then)."""
    key = key or request.format2_key
    params = request.format2_params if request.format2_params is not None else request.params
    file = root / key[:2] / f"{key}.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "format": 2,
        "key": key,
        "server": "http://10.0.0.1:8000/v1",
        "request": {**request.to_dict(), "params": dict(params)},
        "response": {
            "text": text,
            "model": "m",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            "finish_reason": "stop",
            "tool_calls": [],
        },
    }
    file.write_text(json.dumps(entry, indent=2))
    return file


def test_a_store_in_the_old_layout_replays_then_migrates(tmp_path: Path) -> None:
    requests = [StoredRequest.build("m", f"old question {i}") for i in range(5)]
    for i, request in enumerate(requests):
        _write_format2(tmp_path, request, f"old answer {i}")
    store = ResponseStore(tmp_path)
    # Replays as it is, from any cassette.
    found = store.find(requests[2], "tests/test_old.py::test_it")
    assert found is not None
    assert (found.completion.text, found.cassette, found.old_key) == ("old answer 2", None, False)
    assert found.server == "http://10.0.0.1:8000/v1"
    assert sorted(store) == sorted(r.key for r in requests)

    steps: list[tuple[int, int]] = []
    assert store.migrate(progress=lambda done, total: steps.append((done, total))) == 5
    assert steps[-1] == (5, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["default.json"]  # old folders gone
    document = json.loads((tmp_path / "default.json").read_text())
    assert document["format"] == 3
    assert {e["key_format"] for e in document["replies"].values()} == {2}
    migrated = ResponseStore(tmp_path)
    for i, request in enumerate(requests):
        again = migrated.find(request, "tests/test_old.py::test_it")
        assert again is not None
        assert (again.completion.text, again.cassette, again.old_key) == (
            f"old answer {i}",
            "default",
            False,
        )
    assert migrated.migrate() == 0  # nothing left to do


def test_a_reply_found_only_under_its_old_key_is_flagged(tmp_path: Path) -> None:
    request = StoredRequest.build("m", "hi", {"response_format": _schema_format("answer", "token")})
    _write_format2(tmp_path, request, "recorded before")
    found = ResponseStore(tmp_path).find(request)
    assert found is not None
    assert (found.completion.text, found.old_key) == ("recorded before", True)
    ResponseStore(tmp_path).migrate()
    found = ResponseStore(tmp_path).find(request)
    assert found is not None
    assert (found.completion.text, found.cassette, found.old_key) == (
        "recorded before",
        "default",
        True,
    )
    # A recording made now, under today's key, wins and is not flagged.
    store = ResponseStore(tmp_path)
    store.put(request, Completion("recorded now"))
    found = ResponseStore(tmp_path).find(request)
    assert found is not None
    assert (found.completion.text, found.old_key) == ("recorded now", False)


def test_migrate_refuses_a_broken_file_and_removes_nothing(tmp_path: Path) -> None:
    good = _write_format2(tmp_path, StoredRequest.build("m", "a"), "fine")
    bad = _write_format2(tmp_path, StoredRequest.build("m", "b"), "fine")
    bad.write_text('{"format": 2, "response": {"text": null}}')
    with pytest.raises(StoreError, match=r"response\.text") as info:
        ResponseStore(tmp_path).migrate()
    assert str(bad) in str(info.value)
    assert good.exists()
    assert bad.exists()
    assert not (tmp_path / "default.json").exists()


# ---------------------------------------------------------------- several processes

WRITERS = 4
WRITES_EACH = 30
SHARED_CASSETTE = "tests/test_each.py::test_everywhere"


def _write_many(root: str, worker: int, count: int) -> None:
    # As under `--dist each`: every worker runs the same test, so every worker
    # writes the same cassette, once per run of the test.
    store = ResponseStore(root)
    for i in range(count):
        with store.holding(SHARED_CASSETTE):
            store.put(
                StoredRequest.build("m", f"w{worker} #{i}"),
                Completion(f"reply {worker}/{i}"),
                cassette=SHARED_CASSETTE,
            )
            store.put(
                StoredRequest.build("m", "shared"),
                Completion(f"shared from {worker}"),
                cassette=SHARED_CASSETTE,
            )


def _write_forever(root: str, payload_chars: int, started: Any) -> None:
    store = ResponseStore(root)
    i = 0
    while True:
        body = f"{i}:" + "x" * payload_chars
        # A few keys rewritten over and over: the cassette stays small on disk.
        store.put(StoredRequest.build("m", f"big #{i % 3}"), Completion(body))
        started.set()
        i += 1


def _replies(root: Path) -> dict[str, dict[str, Any]]:
    replies: dict[str, dict[str, Any]] = {}
    for file in sorted(root.glob("*.json")):
        document = json.loads(file.read_text(encoding="utf-8"))  # raises if torn
        assert document["format"] == 3
        replies.update(document["replies"])
    return replies


def test_several_processes_writing_one_cassette_keep_the_union(tmp_path: Path) -> None:
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

    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".tnsai-used",
        ResponseStore(tmp_path).cassette_path(SHARED_CASSETTE).name,
    ]
    assert len(_replies(tmp_path)) == WRITERS * WRITES_EACH + 1
    store = ResponseStore(tmp_path)
    for w in range(WRITERS):
        for i in range(WRITES_EACH):
            got = store.get(StoredRequest.build("m", f"w{w} #{i}").key, SHARED_CASSETTE)
            assert got is not None
            assert got.text == f"reply {w}/{i}"
    shared = store.get(StoredRequest.build("m", "shared").key, SHARED_CASSETTE)
    assert shared is not None
    assert shared.text in {f"shared from {w}" for w in range(WRITERS)}


KILL_PAYLOAD = 2_000_000  # big enough that a kill often lands inside write()
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
            while not any(tmp_path.glob(".*.tmp")) and time.monotonic() < deadline:
                pass
        finally:
            assert proc.pid is not None
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(timeout=30)
        assert proc.exitcode == -signal.SIGKILL

        replies = _replies(tmp_path)
        assert 1 <= len(replies) <= 3
        for entry in replies.values():
            index, _, body = str(entry["response"]["text"]).partition(":")
            assert index.isdigit()
            assert body == "x" * KILL_PAYLOAD
        temp_files = list(tmp_path.glob(".*.tmp"))
        torn_temp_files = sum(1 for f in temp_files if f.stat().st_size < KILL_PAYLOAD)
        for file in temp_files:
            file.unlink()  # keeps the disk use bounded; readers ignore them anyway
        if torn_temp_files:
            break
    # Proof that the scenario happened: some kill cut a write in half, and
    # the half-written bytes stayed in a temporary file, never in the cassette.
    assert torn_temp_files > 0, f"no kill landed inside a write in {KILL_ROUNDS} rounds"
    assert len(ResponseStore(tmp_path)) == len(_replies(tmp_path))
