"""Issue 13: @refine_until and refine() take reply_parser=, json_schema= and input=."""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from tnsai_eval.testing import ScriptedLLM

# What SmolLM2-135M answers when asked for JSON: blocks with chatter around them.
CHATTY = 'Sure!\\n```json\\n{"name": "Alice", "age": 30}\\n```\\nAnd ```json\\n{"x": 1}\\n``` too.'

@pytest.fixture(scope="session")
def llm():
    return ScriptedLLM(rules=[(r"Revise", CHATTY)])
"""

TESTS = """
import pytest
from pytest_plugin import refine_until
from tnsai_eval.refinement import first_code_block

SCHEMA = {"type": "object", "required": ["name", "age"]}


@refine_until(task="Return the customer as JSON", valid_json=True, must_contain='"name"')
def test_readme_example_takes_the_first_json_block(refine):
    result = refine("name: Alice, age: 30")
    assert result.iteration_count == 2
    assert result.final_output == '{"name": "Alice", "age": 30}'


@refine_until(task="Return the customer as JSON", valid_json=True, reply_parser=None)
def test_verbatim_replies_fail(refine):
    result = refine("name: Alice", check=False)
    assert not result.is_success
    assert "repeats the output checked at iteration 2" in result.reason


@refine_until(task="Return the customer as JSON", json_schema=SCHEMA,
              reply_parser="first_code_block")
def test_schema_and_a_named_parser(refine, llm):
    result = refine("name: Alice", input="Alice is 30.")
    assert result.is_success
    call = llm.calls[-1]
    assert call.params["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "Alice is 30." in call.prompt


def test_keywords_on_the_call(refine):
    result = refine("x", task="JSON please", json_schema=SCHEMA, reply_parser=first_code_block)
    assert result.is_success


@refine_until(task="t", valid_json=True, reply_parser="first_block")
def test_bad_parser_name(refine):
    refine("x")


@refine_until(task="t", json_schema="object")
def test_bad_schema(refine):
    refine("x")
"""


def test_reply_parser_json_schema_and_input(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_refining=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-rA")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 4, result.stdout.str()
    assert outcomes.get("errors", 0) + outcomes.get("failed", 0) == 2
    text = result.stdout.str()
    assert "reply_parser='first_block' is not valid" in text
    assert "json_schema='object' is not valid" in text
