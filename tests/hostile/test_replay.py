"""Faithful replay: what a live call gave, a replay gives (store format 3; 1 and 2 still read)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Recorded, Step
from tnsai_eval.errors import ServerMismatchWarning, StoreError
from tnsai_eval.feedback import Agent, Feedback, FeedbackLearner, FeedbackStore
from tnsai_eval.llm import (
    CachedLLM,
    Completion,
    OpenAIClient,
    ResponseStore,
    StoredRequest,
    TokenLogprob,
    ToolCall,
    Usage,
)
from tnsai_eval.testing import ScriptedLLM


def _entries(root: Path) -> list[dict[str, Any]]:
    """Every recorded entry of every cassette file under ``root``."""
    return [
        entry
        for path in sorted(root.glob("*.json"))
        for entry in json.loads(path.read_text())["replies"].values()
    ]


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: shipped"


def _agent_server_step(request: Recorded) -> bytes:
    """First turn: ask for the tool; once a tool result is in the conversation, answer."""
    messages = request.json["messages"]
    if any(m.get("role") == "tool" for m in messages):
        message: dict[str, Any] = {"role": "assistant", "content": "It shipped."}
        finish = "stop"
    else:
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"order_id": "7"}'},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    body = {"model": "m", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    return json.dumps(body).encode()


def test_an_agent_with_tools_acts_the_same_on_replay(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    server = FakeOpenAIServer(default=Step(body=_agent_server_step))
    with server, OpenAIClient("m", base_url=server.base_url, api_key="") as client:
        live = Agent(CachedLLM(client, store, mode="record"), tools=[lookup])
        assert live.chat("where is order 7?") == "It shipped."
        assert live.actions == ["lookup"]
    replayed = Agent(CachedLLM(ScriptedLLM(model="m"), store, mode="replay"), tools=[lookup])
    assert replayed.chat("where is order 7?") == "It shipped."
    assert replayed.actions == ["lookup"]
    entries = _entries(tmp_path)
    calls = [e["response"]["tool_calls"] for e in entries if e["response"]["tool_calls"]]
    assert calls == [[{"id": "c1", "name": "lookup", "arguments": {"order_id": "7"}}]]


def test_the_learner_drops_a_cut_off_rule_on_replay_too(tmp_path: Path) -> None:
    feedback = FeedbackStore.in_memory()
    for text in ("Too long.", "Wrong refund time.", "Be polite."):
        feedback.save(Feedback.correction(text))
    cut = Completion("RULE: Say sorry first.\nRULE: Always check the wa", finish_reason="length")
    store = ResponseStore(tmp_path)
    live = FeedbackLearner(CachedLLM(ScriptedLLM([cut]), store), feedback, ["prompt_adjustment"])
    assert live.learn().prompt_adjustments == ("Say sorry first.",)
    replay = CachedLLM(ScriptedLLM(), store, mode="replay")
    again = FeedbackLearner(replay, feedback, ["prompt_adjustment"])
    assert again.learn().prompt_adjustments == ("Say sorry first.",)
    assert replay.hits == 1


def test_logprobs_and_finish_reason_round_trip(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    reply = Completion(
        "yes",
        usage=Usage(3, 1),
        finish_reason="stop",
        tool_calls=(ToolCall("a", "f", {"x": [1, 2]}),),
        logprobs=(TokenLogprob("yes", -0.1, (("yes", -0.1), ("no", -2.5))),),
    )
    request = StoredRequest.build("m", "ok?", {"logprobs": True, "top_logprobs": 2})
    store.put(request, reply)
    back = store.get(request.key)
    assert back is not None
    assert back.finish_reason == "stop"
    assert back.tool_calls == reply.tool_calls
    assert back.logprobs == reply.logprobs
    assert (back.cached, back.attempts) == (True, 0)


@pytest.mark.parametrize("value", [10**400, -(10**400)], ids=["10**400", "-10**400"])
def test_a_replayed_logprob_beyond_any_float_is_a_store_error_naming_it(
    tmp_path: Path, value: int
) -> None:
    # A hand-edited (or hostile) recording: json holds the integer, float() cannot.
    store = ResponseStore(tmp_path)
    request = StoredRequest.build("m", "ok?", {"logprobs": True})
    store.put(request, Completion("yes", logprobs=(TokenLogprob("yes", -0.1, ()),)))
    (path,) = tmp_path.glob("*.json")
    data = json.loads(path.read_text())
    (entry,) = data["replies"].values()
    entry["response"]["logprobs"][0]["logprob"] = value
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match=r"logprobs\[0\]"):
        ResponseStore(tmp_path).get(request.key)


def test_format_1_recordings_are_still_read(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    request = StoredRequest.build("m", "hi")
    file = store.legacy_path(request.key)
    file.parent.mkdir(parents=True)
    old = {
        "format": 1,
        "key": request.key,
        "request": request.to_dict(),
        "response": {
            "text": "hello",
            "model": "m",
            "usage": {"prompt_tokens": 1, "completion_tokens": 1},
        },
    }
    file.write_text(json.dumps(old))
    back = store.get(request.key)
    assert back is not None
    assert (back.text, back.finish_reason, back.tool_calls, back.logprobs) == (
        "hello",
        None,
        (),
        None,
    )


def test_replaying_another_servers_recording_warns_once(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    CachedLLM(ScriptedLLM(default="a"), store, server="http://u:pw@10.0.0.1:8000/v1").chat("q1")
    CachedLLM(ScriptedLLM(default="b"), store, server="http://10.0.0.1:8000/v1").chat("q2")
    entries = _entries(tmp_path)
    assert {e["server"] for e in entries} == {
        "http://***@10.0.0.1:8000/v1",
        "http://10.0.0.1:8000/v1",
    }
    replay = CachedLLM(ScriptedLLM(), store, mode="replay", server="http://127.0.0.1:9999/v1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay.chat("q2")
        replay.chat("q2")
    mismatches = [w for w in caught if issubclass(w.category, ServerMismatchWarning)]
    assert len(mismatches) == 1
    assert "10.0.0.1:8000" in str(mismatches[0].message)
    same = CachedLLM(ScriptedLLM(), store, mode="replay", server="http://10.0.0.1:8000/v1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert same.chat("q2").text == "b"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"\xff\xfe not utf-8", "not UTF-8"),
        (
            b'{"format": 2, "response": {"text": "x"}, "n": ' + b"[" * 5000 + b"]" * 5000 + b"}",
            "nested too deeply",
        ),
        (
            b'{"format": 2, "response": {"text": "x", "usage": {"prompt_tokens": Infinity}}}',
            "not valid JSON",
        ),
        (b'{"format": 2, "response": {"text": null}}', "response.text must be a string"),
        (b'{"format": 2, "response": {"text": "x", "tool_calls": [{"id": 1}]}}', "tool_calls[0]"),
        (b'{"format": 9, "response": {"text": "x"}}', "not a format-1 or format-2 entry"),
    ],
)
def test_malformed_store_files_are_store_errors_naming_the_file(
    tmp_path: Path, content: bytes, fragment: str
) -> None:
    store = ResponseStore(tmp_path)
    key = StoredRequest.build("m", "hi").key
    file = store.legacy_path(key)
    file.parent.mkdir(parents=True)
    file.write_bytes(content)
    with pytest.raises(StoreError) as caught:
        store.get(key)
    assert fragment in str(caught.value)
    assert str(file) in str(caught.value)


def test_a_directory_where_a_recording_should_be_is_a_store_error(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    key = StoredRequest.build("m", "hi").key
    store.legacy_path(key).mkdir(parents=True)
    with pytest.raises(StoreError, match="cannot be read"):
        store.get(key)
