"""A whole trajectory recorded and replayed: every model turn from the store, the tools live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tnsai_eval.agents import Agent
from tnsai_eval.errors import ReplayMissError
from tnsai_eval.llm import CachedLLM, Completion, MessagesInput, ResponseStore
from tnsai_eval.llm import ToolCall as Request
from tnsai_eval.testing import ScriptedLLM


def _model() -> ScriptedLLM:
    """Asks for the order, then answers with what the tool said."""

    def reply(messages: Any, params: dict[str, Any]) -> str | Completion:
        results = [m.content for m in messages if m.role == "tool"]
        if not results:
            return Completion("", tool_calls=(Request("c1", "lookup_order", {"order_id": "A1"}),))
        return f"Your order is {results[-1]}."

    return ScriptedLLM(fn=reply)


class NoModel:
    """Where the model would be in a replay: any call that reaches it fails the test."""

    model = "scripted"

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        raise AssertionError("a replay reached the model")


def _agent(llm: Any, status: str, ran: list[str]) -> Agent:
    def lookup_order(order_id: str) -> str:
        """Look up an order by its id."""
        ran.append(order_id)
        return status

    return Agent(llm, "You are a support desk.", tools=[lookup_order])


def test_a_replayed_trajectory_runs_the_tools_and_makes_no_live_call(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    recording = CachedLLM(_model(), store, mode="record")
    ran: list[str] = []
    recorded = _agent(recording, "shipped", ran).run("Where is A1?")
    assert recorded.output == "Your order is shipped."
    assert (recording.misses, recording.hits) == (2, 0)

    replaying = CachedLLM(NoModel(), store, mode="replay")
    replayed = _agent(replaying, "shipped", ran).run("Where is A1?")
    assert (replaying.misses, replaying.hits) == (0, 2)
    assert ran == ["A1", "A1"]  # the tool ran live both times
    assert (replayed.output, replayed.actions, replayed.calls) == (
        recorded.output,
        recorded.actions,
        recorded.calls,
    )
    assert all(turn.cached for turn in replayed.turns)


def test_a_changed_tool_result_makes_the_next_request_a_replay_miss(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    _agent(CachedLLM(_model(), store, mode="record"), "shipped", []).run("Where is A1?")
    replaying = CachedLLM(NoModel(), store, mode="replay")
    # The tool now says "delayed": the second request differs from the recorded one.
    with pytest.raises(ReplayMissError):
        _agent(replaying, "delayed", []).run("Where is A1?")
    assert (replaying.hits, replaying.misses) == (1, 1)
