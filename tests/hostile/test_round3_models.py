"""Hostile schemas and replies at the model boundary: typed errors, bounded work.

A cyclic dict or a schema 500 objects deep as call parameters; a server that
sends a log-probability of 10**400 or a positive one; schemas whose grammar
for the embedded model would take gigabytes or minutes to build.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import CachedLLM, LocalLLM, OpenAIClient, ResponseStore, TokenLogprob
from tnsai_eval.llm._wire import completion_from_body
from tnsai_eval.testing import ScriptedLLM


def _deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _cyclic_schema() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    schema["properties"] = {"self": schema}
    return schema


def _format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}


@pytest.mark.parametrize("schema", [_deep_schema(500), _cyclic_schema()], ids=["deep", "cycle"])
def test_a_cyclic_or_absurdly_deep_schema_is_a_config_error(schema: dict[str, Any]) -> None:
    with FakeOpenAIServer(default=Step.ok("{}")) as server:
        client = OpenAIClient("m", base_url=server.base_url, api_key="", max_retries=0)
        with client, pytest.raises(ConfigError, match="nest deeper than"):
            client.chat("hi", response_format=_format(schema))
        assert server.requests == []  # refused before any I/O
    cached = CachedLLM(ScriptedLLM(default="{}"), ResponseStore(tempfile.mkdtemp()))
    with pytest.raises(ConfigError, match="nest deeper than"):
        cached.chat("hi", response_format=_format(schema))


def _with_logprob(value: object) -> dict[str, Any]:
    item = {"token": "x", "logprob": value, "top_logprobs": [{"token": "y", "logprob": value}]}
    message = {"role": "assistant", "content": "x"}
    return {
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop",
                "logprobs": {"content": [item]},
            }
        ]
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [(10**400, 0.0), (-(10**400), -9999.0), (3.5, 0.0)],
    ids=["10**400", "-10**400", "positive"],
)
def test_a_hostile_logprob_is_clamped_not_an_overflow(value: object, expected: float) -> None:
    completion = completion_from_body(_with_logprob(value), model="m", latency_s=0.0)
    assert completion.logprobs is not None
    (token,) = completion.logprobs
    assert token.logprob == expected
    assert token.top_logprobs == (("y", expected),)


def test_a_logprob_from_any_source_lies_in_its_range() -> None:
    # What a replayed recording builds: positive values are clamped there too.
    token = TokenLogprob("x", 2.0, (("y", 10**400),))
    assert token.logprob == 0.0
    assert token.top_logprobs == (("y", 0.0),)


# -- grammars for the embedded model ----------------------------------------------------


@pytest.fixture(scope="module")
def local() -> LocalLLM:
    return LocalLLM(max_tokens=4)


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "string", "minLength": 10**8}, "minLength is 100000000"),
        ({"type": "string", "minLength": 1e8}, "minLength is 100000000.0"),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 10**7}, "minItems"),
        ({"type": "string", "pattern": "^a{100000000}$"}, "pattern repeats"),
        (
            {
                "type": "object",
                "properties": {f"\u00e9{i}": {"type": "string"} for i in range(3000)},
            },
            "more than 256 properties",
        ),
        (_deep_schema(2000), "levels deep"),
    ],
    ids=["minLength", "float-minLength", "minItems", "regex", "properties", "deep"],
)
@pytest.mark.local_model
def test_a_schema_too_big_for_a_grammar_is_refused_before_compiling(
    local: LocalLLM, schema: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError, match="response_format schema") as caught:
        local.chat("hi", response_format=_format(schema))
    assert fragment in str(caught.value)


@pytest.mark.local_model
def test_the_grammar_cache_keeps_only_the_most_recent(local: LocalLLM) -> None:
    from tnsai_eval.llm import _local

    for i in range(_local._GRAMMAR_CACHE_SIZE + 10):
        schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"}}}
        _local._grammar(_format(schema))
    assert len(_local._GRAMMARS) == _local._GRAMMAR_CACHE_SIZE


# -- the judge --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"score": ' + str(10**400) + "}", "no numeric score"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"score": ' + "9" * 5000 + "}", "not JSON"),
    ],
    ids=["10**400", "deep", "5000-digits"],
)
def test_a_hostile_json_verdict_gives_no_score_not_an_exception(reply: str, reason: str) -> None:
    from tnsai_eval.scoring import Judge

    result = Judge(ScriptedLLM(default=reply), method="json_schema").grade("Polite?", "Thanks")
    assert result.score is None
    assert reason in result.reason


def test_a_judge_reads_hostile_logprobs_without_overflow() -> None:
    from tnsai_eval.llm import Completion
    from tnsai_eval.scoring import Judge

    class Hostile:
        model = "hostile"

        def chat(self, messages: object, **params: object) -> Completion:
            yes = TokenLogprob("Yes", 10**400, (("Yes", 800.0), ("No", -(10**400))))
            return Completion("Yes", logprobs=(yes,))

    result = Judge(Hostile(), method="logprobs").grade("Polite?", "Thanks")
    assert result.score == 1.0
