"""response_format end to end: checked once, translated per backend, enforced, recorded.

The schema tests run the embedded model in process and through the real
llama.cpp server; the rejection tests use the fault-injecting server.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tests.llm.conftest import LlamaServer
from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import ClientRequestError, ConfigError, StructuredOutputWarning
from tnsai_eval.llm import (
    CachedLLM,
    LocalLLM,
    OpenAIClient,
    ResponseStore,
    check_response_format,
    json_schema_format,
    unenforced_keywords,
)
from tnsai_eval.testing import ScriptedLLM

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer"},
        "city": {"type": "string", "enum": ["Paris", "Berlin", "Rome"]},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}
PERSON_FORMAT = json_schema_format(PERSON, "person")
ASK = "Alice is 30 years old and lives in Paris. Return her as JSON."


def _is_person(text: str) -> dict[str, object]:
    value = json.loads(text)
    assert set(value) == {"name", "age", "city"}
    assert isinstance(value["age"], int)
    assert value["city"] in ("Paris", "Berlin", "Rome")
    return value  # type: ignore[no-any-return]


# -- the shape ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("json", "must be a mapping"),
        ({"type": "xml"}, "'xml'"),
        ({"type": "json_schema"}, "needs a 'json_schema' object"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "needs a 'schema' object"),
        ({"type": "json_object", "schema": [1]}, "must be a JSON object"),
    ],
)
def test_a_bad_response_format_is_named_before_any_call(value: object, fragment: str) -> None:
    with pytest.raises(ConfigError, match="response_format") as info:
        check_response_format(value)
    assert fragment in str(info.value)


def test_unenforced_keywords_are_found_at_any_depth() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0, "multipleOf": 2}},
        "items": {"uniqueItems": True},
        "$defs": {"x": {"type": "string", "description": "fine"}},
    }
    assert unenforced_keywords(schema) == ["minimum", "multipleOf", "uniqueItems"]
    assert unenforced_keywords(PERSON) == []


def test_scripted_llm_checks_and_records_response_format() -> None:
    llm = ScriptedLLM(default="{}")
    llm.chat("x", response_format=PERSON_FORMAT, max_tokens=3)
    assert llm.calls[0].params == {"response_format": PERSON_FORMAT, "max_tokens": 3}
    with pytest.raises(ConfigError):
        llm.chat("x", response_format={"type": "yaml"})


# -- on the wire (fake server) ------------------------------------------------------


def test_openai_style_sends_the_openai_shape(fake_server: FakeOpenAIServer) -> None:
    with OpenAIClient("m", base_url=fake_server.base_url, api_key="") as llm:
        llm.chat("hi", response_format=PERSON_FORMAT)
    assert fake_server.requests[0].json["response_format"] == PERSON_FORMAT


def test_llama_cpp_style_sends_llama_cpps_shape(fake_server: FakeOpenAIServer) -> None:
    with OpenAIClient(
        "m", base_url=fake_server.base_url, api_key="", response_format_style="llama.cpp"
    ) as llm:
        llm.chat("hi", response_format=PERSON_FORMAT)
        llm.chat("hi", response_format={"type": "json_object"})
    sent = [r.json["response_format"] for r in fake_server.requests]
    assert sent == [{"type": "json_object", "schema": PERSON}, {"type": "json_object"}]


def test_bad_style_is_named() -> None:
    with pytest.raises(ConfigError, match="'xml'"):
        OpenAIClient("m", base_url="http://127.0.0.1:1/v1", response_format_style="xml")  # type: ignore[arg-type]


def test_a_server_rejecting_the_parameter_fails_once_and_says_so(
    fake_server: FakeOpenAIServer,
) -> None:
    # llama-cpp-python's server answers OpenAI's shape with HTTP 500; retrying
    # cannot help, so the client must not.
    fake_server.script(
        Step.error(500, message="'json_schema' is not a valid response_format type"),
        Step.ok("should never be reached"),
    )
    with (
        OpenAIClient("m", base_url=fake_server.base_url, api_key="", max_retries=3) as llm,
        pytest.raises(ClientRequestError) as info,
    ):
        llm.chat("hi", response_format=PERSON_FORMAT)
    assert len(fake_server.requests) == 1
    message = str(info.value)
    assert "rejected response_format" in message
    assert "response_format_style='llama.cpp'" in message
    assert (info.value.status, info.value.attempts) == (500, 1)


def test_an_unrelated_server_error_is_still_retried(fake_server: FakeOpenAIServer) -> None:
    fake_server.script(Step.error(503, message="overloaded"), Step.ok('{"a": 1}'))
    with OpenAIClient(
        "m", base_url=fake_server.base_url, api_key="", max_retries=1, backoff_base=0.0
    ) as llm:
        assert llm.chat("hi", response_format={"type": "json_object"}).text == '{"a": 1}'
    assert len(fake_server.requests) == 2


# -- enforced by the embedded model -------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalLLM:
    return LocalLLM(max_tokens=60)


@pytest.mark.local_model
def test_local_llm_honours_a_schema(local: LocalLLM) -> None:
    free = local.chat(ASK).text
    constrained = local.chat(ASK, response_format=PERSON_FORMAT).text
    # Free-form, the 135M model wraps its JSON in prose or a fence.
    with pytest.raises(json.JSONDecodeError):
        json.loads(free)
    # In the schema's own order (name, age, city), not alphabetical (age,
    # city, name): the grammar was once compiled from sorted-key text.
    assert list(_is_person(constrained)) == ["name", "age", "city"]
    # The llama.cpp shape is accepted in process too.
    other = local.chat(ASK, response_format={"type": "json_object", "schema": PERSON}).text
    assert other == constrained


@pytest.mark.local_model
def test_local_llm_warns_about_keywords_it_cannot_enforce(local: LocalLLM) -> None:
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer", "minimum": 0}},
        "required": ["age"],
    }
    with pytest.warns(StructuredOutputWarning, match="minimum"):
        reply = local.chat(ASK, response_format=json_schema_format(schema), max_tokens=20)
    assert isinstance(json.loads(reply.text)["age"], int)


@pytest.mark.local_model
def test_local_llm_json_object_gives_json(local: LocalLLM) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reply = local.chat(ASK, response_format={"type": "json_object"}, max_tokens=40)
    # Any JSON: an object starts at once, with no prose or fence before it
    # (it may be cut by max_tokens, since nothing bounds its keys).
    assert reply.text.startswith("{")
    if reply.finish_reason == "stop":
        json.loads(reply.text)


# -- the real llama.cpp server, and record/replay -------------------------------------


@pytest.mark.local_model
def test_llama_server_honours_a_schema_and_rejects_openais_shape(
    llama_server: LlamaServer,
) -> None:
    with OpenAIClient(
        llama_server.model,
        base_url=llama_server.base_url,
        timeout=60,
        response_format_style="llama.cpp",
    ) as llm:
        reply = llm.chat(ASK, response_format=PERSON_FORMAT, temperature=0, max_tokens=60)
    _is_person(reply.text)
    with (
        OpenAIClient(
            llama_server.model, base_url=llama_server.base_url, timeout=60, max_retries=2
        ) as naive,
        pytest.raises(ClientRequestError, match="rejected response_format") as info,
    ):
        naive.chat(ASK, response_format=PERSON_FORMAT, temperature=0, max_tokens=8)
    assert info.value.attempts == 1


@pytest.mark.local_model
def test_a_constrained_call_is_recorded_and_replayed(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    store = ResponseStore(tmp_path / "store")
    with OpenAIClient(
        llama_server.model,
        base_url=llama_server.base_url,
        timeout=60,
        response_format_style="llama.cpp",
    ) as llm:
        recorded = CachedLLM(llm, store, mode="record").chat(
            ASK, response_format=PERSON_FORMAT, temperature=0, max_tokens=60
        )
    _is_person(recorded.text)
    stored = json.loads(next(store.path.rglob("*.json")).read_text())
    assert "person" in json.dumps(stored)  # the schema is part of the recorded request
    replay = CachedLLM(ScriptedLLM(model=llama_server.model), store, mode="replay")
    again = replay.chat(ASK, response_format=PERSON_FORMAT, temperature=0, max_tokens=60)
    assert (again.text, again.cached) == (recorded.text, True)
    # Another schema is another request: not served from the recording.
    other = json_schema_format({"type": "object"}, "other")
    with pytest.raises(Exception, match="no recorded response"):
        replay.chat(ASK, response_format=other, temperature=0, max_tokens=60)
