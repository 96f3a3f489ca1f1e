"""Issue 13: reply parsers that never make a task impossible, the json_schema
criterion (validated, and constraining revisions), and the input in the revision prompt."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tnsai_eval.agents import Agent
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Completion
from tnsai_eval.refinement import (
    CompletionCriteria,
    RefinementLoop,
    RefinementStatus,
    first_code_block,
    first_json_block,
    resolve_reply_parser,
    strip_code_fence,
)
from tnsai_eval.testing import ScriptedLLM

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}
# What SmolLM2-135M answers when asked for JSON: several blocks and chatter.
CHATTY = (
    'Here is the customer:\n```json\n{"name": "Alice", "age": 30}\n```\n'
    'And another one:\n```json\n{"name": "Bob"}\n```\nHope this helps!'
)


@pytest.mark.parametrize(
    ("reply", "parsed"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ("  [1, 2]\n", "[1, 2]"),
        (CHATTY, '{"name": "Alice", "age": 30}'),
        ('```\nnot json\n```\n```json\n{"b": 2}\n```', '{"b": 2}'),
        ('Result: {"x": {"y": [1, 2]}} done.', '{"x": {"y": [1, 2]}}'),
        ("{not json} then [3]", "[3]"),
        ("no JSON at all", "no JSON at all"),
    ],
)
def test_first_json_block(reply: str, parsed: str) -> None:
    assert first_json_block(reply) == parsed


def test_first_json_block_bounds_its_work() -> None:
    # Only the first 20 brackets are tried: a reply of brackets is not quadratic.
    assert first_json_block("{" * 5000) == "{" * 5000


def test_parsers_by_name() -> None:
    assert resolve_reply_parser("first_code_block") is first_code_block
    assert resolve_reply_parser("strip_code_fence") is strip_code_fence
    assert resolve_reply_parser("none") is None
    assert resolve_reply_parser(None) is None
    assert resolve_reply_parser(str.upper) is str.upper
    with pytest.raises(ConfigError, match="'first_block'") as info:
        resolve_reply_parser("first_block")
    assert "first_code_block" in str(info.value)


def test_json_criteria_pick_the_first_json_block_by_default() -> None:
    # The README's example: before, the chatty reply failed valid_json forever.
    criteria = CompletionCriteria.builder().valid_json().must_contain('"name"').build()
    loop = RefinementLoop("Return the customer as JSON", criteria, max_iterations=3)
    result = loop.execute(ScriptedLLM([CHATTY]), "name: Alice, age: 30")
    assert result.status is RefinementStatus.SUCCESS
    assert result.final_output == '{"name": "Alice", "age": 30}'
    assert result.iteration_count == 2


def test_other_criteria_keep_the_old_default() -> None:
    criteria = CompletionCriteria.builder().must_contain("Alice").build()
    loop = RefinementLoop("t", criteria)
    assert loop.reply_parser is strip_code_fence


def test_a_check_asking_for_a_fence_sees_the_raw_reply() -> None:
    fenced = "```python\nprint('hi')\n```\nThat prints hi."
    criteria = (
        CompletionCriteria.builder().must_contain("```python").matches_pattern(r"^print\(").build()
    )
    loop = RefinementLoop("Write Python in a fence", criteria, reply_parser=first_code_block)
    result = loop.execute(ScriptedLLM([fenced]), "draft")
    assert result.status is RefinementStatus.SUCCESS
    # The parsed output is what the loop returns; the fence check read the raw reply.
    assert result.final_output == "print('hi')"
    assert [c.source for c in criteria.checks if c.raw] == ["must_contain"]


def test_json_schema_validates_with_paths() -> None:
    criteria = CompletionCriteria.builder().json_schema(PERSON).build()
    ok, missing, wrong, broken = (
        criteria.evaluate(text)[0]
        for text in (
            '{"name": "Ada", "age": 3}',
            '{"name": "Ada"}',
            '{"name": 7, "age": -1}',
            "{name: Ada}",
        )
    )
    assert ok.passed
    assert not missing.passed
    assert "'age' is a required property" in missing.message
    assert "$.age: -1 is less than the minimum of 0" in wrong.message
    assert "$.name: 7 is not of type 'string'" in wrong.message
    assert "not valid JSON" in broken.message
    assert ok.name == "json_schema(required: name, age)"


def test_a_bad_schema_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="the schema is not valid"):
        CompletionCriteria.builder().json_schema({"type": "nonsense"})
    with pytest.raises(ConfigError, match="a mapping"):
        CompletionCriteria.builder().json_schema("object")  # type: ignore[arg-type]


def test_json_schema_constrains_revisions_where_the_client_takes_it() -> None:
    criteria = CompletionCriteria.builder().json_schema(PERSON).build()
    llm = ScriptedLLM(['{"name": "Alice", "age": 30}'])
    result = RefinementLoop("t", criteria).execute(llm, "Alice, 30")
    assert result.is_success
    sent = llm.calls[0].params["response_format"]
    assert sent["json_schema"]["schema"] == PERSON


def test_an_agent_is_revised_unconstrained() -> None:
    agent = Agent(ScriptedLLM(['{"name": "Alice", "age": 30}']))
    criteria = CompletionCriteria.builder().json_schema(PERSON).build()
    result = RefinementLoop("t", criteria).execute(agent, "Alice, 30")
    assert result.is_success


def test_a_client_refusing_response_format_is_asked_again_without() -> None:
    class Plain:
        def __init__(self) -> None:
            self.calls: list[dict[str, Any]] = []

        def chat(self, messages: Any, **params: Any) -> Completion:
            self.calls.append(params)
            if "response_format" in params:
                raise ConfigError("this client does not support parameter 'response_format'")
            return Completion(json.dumps({"name": "A", "age": 1}))

    plain = Plain()
    criteria = CompletionCriteria.builder().json_schema(PERSON).build()
    assert RefinementLoop("t", criteria).execute(plain, "x").is_success
    assert ["response_format" in c for c in plain.calls] == [True, False]


def test_the_revision_prompt_shows_the_input() -> None:
    criteria = CompletionCriteria.builder().valid_json().build()
    llm = ScriptedLLM(['{"name": "Alice"}'])
    RefinementLoop("Return the customer as JSON", criteria).execute(
        llm, "oops", input="Alice is 30 and lives in Paris."
    )
    prompt = llm.prompts[0]
    assert "## Input\n<<<INPUT\nAlice is 30 and lives in Paris.\nINPUT>>>" in prompt
    assert prompt.index("## Task") < prompt.index("## Input") < prompt.index("## Current output")


def test_input_must_be_text() -> None:
    criteria = CompletionCriteria.builder().valid_json().build()
    with pytest.raises(ConfigError, match="input must be a str"):
        RefinementLoop("t", criteria).execute(ScriptedLLM(), "x", input=3)  # type: ignore[arg-type]
