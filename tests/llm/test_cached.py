"""CachedLLM: the four modes, the key, counters, and the async path."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tnsai_eval.errors import ConfigError, LLMError, OldStoreKeyWarning, ReplayMissError
from tnsai_eval.llm import (
    CachedLLM,
    Completion,
    MessagesInput,
    RecordMode,
    ResponseStore,
    StoredRequest,
    TokenLogprob,
    ToolCall,
    Usage,
)
from tnsai_eval.testing import ScriptedLLM


@pytest.fixture
def store(tmp_path: Path) -> ResponseStore:
    return ResponseStore(tmp_path / "responses")


def test_record_calls_once_then_serves_from_the_store(store: ResponseStore) -> None:
    inner = ScriptedLLM(["Paris", "should not be used"], usage=Usage(12, 1), model="smol")
    llm = CachedLLM(inner, store)  # record is the default

    first = llm.chat("Capital of France?", max_tokens=8)
    second = llm.chat("Capital of France?", max_tokens=8)

    assert (first.text, first.cached) == ("Paris", False)
    assert second == Completion("Paris", usage=Usage(12, 1), model="smol", cached=True, attempts=0)
    assert len(inner.calls) == 1
    assert (llm.hits, llm.misses) == (1, 1)
    assert len(store) == 1


def test_record_then_replay_round_trip(store: ResponseStore) -> None:
    prompts = ["Capital of France?", "Capital of Italy?", "Capital of Spain?"]
    recorder = CachedLLM(
        ScriptedLLM(["Paris", "Rome", "Madrid"], model="smol"), store, mode="record"
    )
    recorded = [recorder.chat(p, temperature=0).text for p in prompts]

    # An inner model with nothing scripted: any call to it would raise.
    silent = ScriptedLLM(model="smol")
    replayer = CachedLLM(silent, ResponseStore(store.path), mode=RecordMode.REPLAY)
    replayed = [replayer.chat(p, temperature=0) for p in prompts]

    assert [c.text for c in replayed] == recorded == ["Paris", "Rome", "Madrid"]
    assert all(c.cached for c in replayed)
    assert silent.calls == []
    assert (replayer.hits, replayer.misses) == (3, 0)


def test_replay_miss_names_model_and_prompt_and_calls_nothing(store: ResponseStore) -> None:
    inner = ScriptedLLM(["never"], model="smol-135m")
    llm = CachedLLM(inner, store, mode="replay")

    with pytest.raises(ReplayMissError) as info:
        llm.chat(
            [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Why is the sky blue?"},
            ]
        )

    message = str(info.value)
    assert "'smol-135m'" in message
    assert "'Why is the sky blue?'" in message
    assert str(store.path) in message
    assert isinstance(info.value, LLMError)
    assert info.value.model == "smol-135m"
    assert inner.calls == []
    assert (llm.hits, llm.misses) == (0, 1)


def test_replay_misses_when_params_differ(store: ResponseStore) -> None:
    CachedLLM(ScriptedLLM(["a"]), store).chat("q", temperature=0)
    with pytest.raises(ReplayMissError):
        CachedLLM(ScriptedLLM(), store, mode="replay").chat("q", temperature=0.5)


def test_refresh_always_calls_and_overwrites(store: ResponseStore) -> None:
    CachedLLM(ScriptedLLM(["old"]), store).chat("q")
    inner = ScriptedLLM(["new"])
    refresher = CachedLLM(inner, store, mode="refresh")

    reply = refresher.chat("q")

    assert (reply.text, reply.cached) == ("new", False)
    assert len(inner.calls) == 1
    assert (refresher.hits, refresher.misses) == (0, 1)
    replayed = CachedLLM(ScriptedLLM(), store, mode="replay").chat("q")
    assert replayed.text == "new"
    assert len(store) == 1


def test_off_neither_reads_nor_writes(store: ResponseStore) -> None:
    CachedLLM(ScriptedLLM(["recorded"]), store).chat("q")
    inner = ScriptedLLM(["live 1", "live 2"])
    llm = CachedLLM(inner, store, mode=RecordMode.OFF)

    assert [llm.chat("q").text, llm.chat("other").text] == ["live 1", "live 2"]
    assert len(store) == 1
    assert (llm.hits, llm.misses) == (0, 2)


def test_sample_index_records_distinct_replies_and_is_not_sent(store: ResponseStore) -> None:
    inner = ScriptedLLM(["one", "two", "three"])
    llm = CachedLLM(inner, store)

    first = [llm.chat("story", temperature=1.0, sample=i).text for i in range(3)]
    again = [llm.chat("story", temperature=1.0, sample=i).text for i in range(3)]

    assert first == again == ["one", "two", "three"]
    assert len(store) == 3
    assert all("sample" not in call.params for call in inner.calls)
    assert [dict(call.params) for call in inner.calls] == [{"temperature": 1.0}] * 3


def test_api_key_is_neither_in_the_key_nor_on_disk(store: ResponseStore) -> None:
    llm = CachedLLM(ScriptedLLM(["answer"]), store)
    llm.chat("q", api_key="sk-first-secret", temperature=0)
    reply = llm.chat("q", api_key="sk-second-secret", temperature=0)

    assert reply.cached
    (file,) = store.path.rglob("*.json")
    text = file.read_text(encoding="utf-8")
    assert "secret" not in text
    (entry,) = json.loads(text)["replies"].values()
    assert entry["request"]["params"] == {"temperature": 0}


def test_key_uses_the_inner_model_name(store: ResponseStore) -> None:
    CachedLLM(ScriptedLLM(["from a"], model="model-a"), store).chat("q")
    assert CachedLLM(ScriptedLLM(model="model-a"), store, "replay").chat("q").text == "from a"
    with pytest.raises(ReplayMissError, match="'model-b'"):
        CachedLLM(ScriptedLLM(model="model-b"), store, "replay").chat("q")


def test_model_passthrough_and_inner_without_model(store: ResponseStore) -> None:
    class Bare:
        def chat(self, messages: MessagesInput, **params: Any) -> Completion:
            return Completion("bare")

    assert CachedLLM(ScriptedLLM(model="m1"), store).model == "m1"
    bare = CachedLLM(Bare(), store)
    assert bare.model == ""
    bare.chat("q")
    key = StoredRequest.build("", "q").key
    assert key in store


@pytest.mark.parametrize("mode", ["REPLAY", " record ", "Refresh", "off"])
def test_mode_names_in_any_case(store: ResponseStore, mode: str) -> None:
    assert CachedLLM(ScriptedLLM(), store, mode).mode.value == mode.strip().lower()


def test_bad_mode_is_named(store: ResponseStore) -> None:
    with pytest.raises(ConfigError, match=r"'replya'.*'off', 'replay', 'record', 'refresh'"):
        CachedLLM(ScriptedLLM(), store, mode="replya")


def test_store_may_be_given_as_a_path(tmp_path: Path) -> None:
    llm = CachedLLM(ScriptedLLM(["x"]), tmp_path / "s")
    llm.chat("q")
    assert len(ResponseStore(tmp_path / "s")) == 1


def test_a_failed_call_records_nothing(store: ResponseStore) -> None:
    llm = CachedLLM(ScriptedLLM([LLMError("boom", model="m"), "ok"]), store)
    with pytest.raises(LLMError, match="boom"):
        llm.chat("q")
    assert len(store) == 0
    assert llm.chat("q").text == "ok"


def test_unrecordable_param_fails_before_the_model_is_called(store: ResponseStore) -> None:
    inner = ScriptedLLM(["x"])
    with pytest.raises(ConfigError, match="'logit_bias'"):
        CachedLLM(inner, store, "refresh").chat("q", logit_bias={1: object()})
    assert inner.calls == []


def test_achat_uses_the_inner_async_path(store: ResponseStore) -> None:
    class AsyncOnly:
        model = "async-model"

        def __init__(self) -> None:
            self.async_calls = 0

        def chat(self, messages: MessagesInput, **params: Any) -> Completion:
            raise AssertionError("the sync path must not be used from achat")

        async def achat(self, messages: MessagesInput, **params: Any) -> Completion:
            self.async_calls += 1
            await asyncio.sleep(0)
            return Completion(f"async reply {params}")

    inner = AsyncOnly()
    llm = CachedLLM(inner, store)

    async def run() -> list[Completion]:
        first = await llm.achat("q", max_tokens=4)
        second = await llm.achat("q", max_tokens=4)
        return [first, second]

    first, second = asyncio.run(run())
    assert first.text == second.text == "async reply {'max_tokens': 4}"
    assert (first.cached, second.cached) == (False, True)
    assert inner.async_calls == 1


def test_replay_miss_from_achat(store: ResponseStore) -> None:
    llm = CachedLLM(ScriptedLLM(model="m"), store, "replay")
    with pytest.raises(ReplayMissError, match="'not recorded'"):
        asyncio.run(llm.achat("not recorded"))


# ---------------------------------------------------------------- cassettes


def test_replies_go_to_the_named_cassette_and_replay_from_it(store: ResponseStore) -> None:
    recorder = CachedLLM(ScriptedLLM(["Paris", "Rome"]), store, cassette="01_quickstart")
    assert [recorder.chat(q).text for q in ("France?", "Italy?")] == ["Paris", "Rome"]
    assert sorted(p.name for p in store.path.iterdir()) == [".tnsai-used", "01_quickstart.json"]

    fresh = ResponseStore(store.path)
    replay = CachedLLM(ScriptedLLM(), fresh, "replay", cassette="01_quickstart")
    assert replay.chat("Italy?").text == "Rome"
    other = CachedLLM(ScriptedLLM(), fresh, "replay", cassette="02_other")
    with pytest.raises(ReplayMissError, match="cassette '02_other'"):
        other.chat("Italy?")


def test_a_bad_cassette_name_fails_when_the_client_is_made(store: ResponseStore) -> None:
    with pytest.raises(ConfigError, match="cassette name"):
        CachedLLM(ScriptedLLM(), store, cassette="")


def test_holding_writes_the_cassette_once_at_the_end(store: ResponseStore) -> None:
    llm = CachedLLM(ScriptedLLM(default="x"), store, cassette="run-1")
    with llm.holding():
        for i in range(10):
            llm.chat(f"q{i}")
        assert not store.cassette_path("run-1").exists()
        assert llm.chat("q3").cached  # served from memory meanwhile
    assert len(ResponseStore(store.path)) == 10


def test_flush_writes_replies_kept_in_memory(store: ResponseStore) -> None:
    llm = CachedLLM(ScriptedLLM(default="x"), store, cassette="run-2")
    store.hold("run-2")
    llm.chat("q")
    assert llm.flush() == [store.cassette_path("run-2")]
    assert len(ResponseStore(store.path)) == 1
    store.release("run-2")


def test_record_files_a_reply_found_in_default_under_its_own_cassette(
    store: ResponseStore,
) -> None:
    CachedLLM(ScriptedLLM(["shared"], model="m"), store).chat("q")  # the default cassette
    inner = ScriptedLLM(model="m")
    llm = CachedLLM(inner, ResponseStore(store.path), cassette="tests/t.py::test_q")
    assert llm.chat("q").text == "shared"
    assert inner.calls == []
    found = ResponseStore(store.path).find(StoredRequest.build("m", "q"), "tests/t.py::test_q")
    assert found is not None
    assert found.cassette == "tests/t.py::test_q"
    # Replay reads but never writes.
    CachedLLM(ScriptedLLM(model="m"), store.path, "replay", cassette="elsewhere").chat("q")
    assert not store.cassette_path("elsewhere").exists()


def _old_layout_file(root: Path, request: StoredRequest, text: str) -> None:
    key = request.format2_key
    folder = root / key[:2]
    folder.mkdir(parents=True, exist_ok=True)
    entry = {
        "format": 2,
        "key": key,
        "request": request.to_dict(),
        "response": {"text": text, "model": "m", "usage": {}},
    }
    (folder / f"{key}.json").write_text(json.dumps(entry))


SCHEMA_WITH_TOKEN = {
    "type": "json_schema",
    "json_schema": {
        "name": "login",
        "schema": {"type": "object", "properties": {"user": {}, "token": {}}},
    },
}


def test_an_old_store_key_replays_with_a_warning(store: ResponseStore) -> None:
    request = StoredRequest.build("m", "Log in", {"response_format": SCHEMA_WITH_TOKEN})
    assert request.format2_key != request.key
    _old_layout_file(store.path, request, '{"user": "ann", "token": "t"}')
    llm = CachedLLM(ScriptedLLM(model="m"), ResponseStore(store.path), "replay")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replies = [llm.chat("Log in", response_format=SCHEMA_WITH_TOKEN) for _ in range(2)]
    assert [r.text for r in replies] == ['{"user": "ann", "token": "t"}'] * 2
    flagged = [w for w in caught if w.category is OldStoreKeyWarning]
    assert len(flagged) == 1  # once per request
    assert "'Log in'" in str(flagged[0].message)
    assert "re-record" in str(flagged[0].message)

    # Same after migration; and a request whose key did not change is silent.
    ResponseStore(store.path).migrate()
    plain = StoredRequest.build("m", "Hello")
    _old_layout_file(store.path, plain, "Hi")
    again = CachedLLM(ScriptedLLM(model="m"), ResponseStore(store.path), "replay")
    with pytest.warns(OldStoreKeyWarning):
        again.chat("Log in", response_format=SCHEMA_WITH_TOKEN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert again.chat("Hello").text == "Hi"


def test_a_schema_that_differs_only_in_a_credential_like_name_is_another_recording(
    store: ResponseStore,
) -> None:
    without = {"type": "json_schema", "json_schema": {"name": "login", "schema": {
        "type": "object", "properties": {"user": {}}}}}  # fmt: skip
    llm = CachedLLM(ScriptedLLM(['{"user": "ann"}', '{"user": "ann", "token": "t"}']), store)
    first = llm.chat("Log in", response_format=without)
    second = llm.chat("Log in", response_format=SCHEMA_WITH_TOKEN)
    assert (first.cached, second.cached) == (False, False)
    assert second.text == '{"user": "ann", "token": "t"}'
    assert len(store) == 2


# ---------------------------------------------------------------- secrets echoed back

ECHOED = "sk-echoed-by-the-server-0123456789"


def _echo(field: str) -> Completion:
    text, model = "fine", "m"
    calls: tuple[ToolCall, ...] = ()
    logprobs: tuple[TokenLogprob, ...] | None = None
    if field == "text":
        text = f"your key is {ECHOED}"
    elif field == "model":
        model = f"m-{ECHOED}"
    elif field == "logprob token":
        logprobs = (TokenLogprob(ECHOED, -0.1, ()),)
    elif field == "top logprob token":
        logprobs = (TokenLogprob("a", -0.1, ((ECHOED, -0.2),)),)
    elif field == "tool name":
        calls = (ToolCall("call_1", f"fn_{ECHOED}", {}),)
    elif field == "tool id":
        calls = (ToolCall(ECHOED, "fn", {}),)
    elif field == "tool argument":
        calls = (ToolCall("call_1", "fn", {"query": f"x {ECHOED}", "nested": [{"k": ECHOED}]}),)
    elif field == "tool argument name":
        calls = (ToolCall("call_1", "fn", {ECHOED: 1}),)
    return Completion(text, model=model, tool_calls=calls, logprobs=logprobs)


@pytest.mark.parametrize(
    "field",
    [
        "text",
        "model",
        "logprob token",
        "top logprob token",
        "tool name",
        "tool id",
        "tool argument",
        "tool argument name",
    ],
)
def test_a_secret_echoed_by_the_server_is_masked_in_the_store(
    store: ResponseStore, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    monkeypatch.setenv("TNSAI_LLM_API_KEY", ECHOED)

    class Echo:
        model = "m"

        def chat(self, messages: MessagesInput, **params: Any) -> Completion:
            return _echo(field)

    CachedLLM(Echo(), store, cassette="tests/t.py::test_echo").chat(f"say {ECHOED}")
    text = "".join(p.read_text() for p in store.path.rglob("*.json"))
    assert ECHOED not in text
    assert ECHOED[:12] not in text
    assert "***" in text
    # What this process replays is what a later one reads: masked too.
    replayed = CachedLLM(Echo(), store, "replay", cassette="tests/t.py::test_echo").chat(
        f"say {ECHOED}"
    )
    assert ECHOED not in repr(replayed)
