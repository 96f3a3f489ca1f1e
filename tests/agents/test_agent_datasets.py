"""JSONL lines with an agent's expected tool calls and state: loaded, or named when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tnsai_eval import datasets
from tnsai_eval.errors import DatasetError
from tnsai_eval.records import ToolCall
from tnsai_eval.scoring import TestCase


def _write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "agent.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_tool_calls_and_state_are_loaded(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "input": "Refund A1",
            "expected_tool_calls": [
                {"name": "lookup_order", "arguments": {"order_id": "A1"}},
                {"name": "issue_refund"},
            ],
            "state": {"refundable": True},
        },
        {"input": "2+2", "expected": "4"},
    )
    agent_case, plain = datasets.load(path)
    assert agent_case == TestCase(
        "Refund A1",
        "",
        (ToolCall("lookup_order", {"order_id": "A1"}), ToolCall("issue_refund")),
        {"refundable": True},
    )
    assert (plain.expected_tool_calls, plain.state) == ((), None)
    # The same mappings given in code are checked the same way.
    (loaded,) = datasets.load_cases([{"input": "q", "expected_tool_calls": [{"name": "t"}]}])
    assert loaded.expected_tool_calls == (ToolCall("t"),)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"input": "q", "expected_tool_calls": "lookup"}, "must be a list of tool calls"),
        ({"input": "q", "expected_tool_calls": [{"arguments": {}}]}, "str 'name'"),
        ({"input": "q", "expected_tool_calls": [{"name": "t", "args": {}}]}, "unknown key"),
        (
            {"input": "q", "expected_tool_calls": [{"name": "t", "arguments": [1]}]},
            "arguments must be a mapping",
        ),
        ({"input": "q", "expected": "", "state": [1, 2]}, "'state' must be an object"),
        # Without "expected" a line loads (issue 34); without "input" it never does.
        ({"expected": "a"}, "missing key 'input'"),
    ],
)
def test_a_malformed_agent_line_is_named(tmp_path: Path, line: object, problem: str) -> None:
    path = _write(tmp_path, {"input": "fine", "expected": "x"}, line)
    with pytest.raises(DatasetError) as caught:
        datasets.load(path)
    assert "line 2" in str(caught.value)
    assert problem in str(caught.value)
