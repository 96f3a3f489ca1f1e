"""observing(): every FrontClient's calls in a context reach a listener, with the case,
the system message and the call's parameters (what scoring a target counts per case)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from tnsai_eval.errors import ReplayMissError
from tnsai_eval.llm import CallEvent, FrontClient, observing, running_case
from tnsai_eval.testing import ScriptedLLM


def test_calls_of_any_client_in_threads_and_tasks_are_observed(tmp_path: Path) -> None:
    first = FrontClient(ScriptedLLM(default="a"))
    second = FrontClient(ScriptedLLM(default="b"), tmp_path, mode="record")
    seen: list[CallEvent] = []
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]

    async def app() -> None:
        await asyncio.to_thread(first.chat, messages, temperature=0)
        await second.achat("plain")

    with running_case("c1"), observing(seen.append):
        asyncio.run(app())
    first.chat("outside")  # no longer observed
    assert [(e.model, e.case_id, e.system) for e in seen] == [
        ("scripted", "c1", "Be brief."),
        ("scripted", "c1", ""),
    ]
    assert dict(seen[0].params) == {"temperature": 0}
    assert seen[1].total_tokens > 0  # estimated: the fake reports no usage


def test_a_replay_miss_is_observed_even_when_the_caller_swallows_it(tmp_path: Path) -> None:
    replay = FrontClient(ScriptedLLM(), tmp_path, mode="replay")
    seen: list[CallEvent] = []
    # An app that falls back to a canned answer when the model fails.
    with observing(seen.append), running_case("c2"), contextlib.suppress(ReplayMissError):
        replay.chat("never recorded")
    (event,) = seen
    assert isinstance(event.error, ReplayMissError)
    assert event.case_id == "c2"


def test_observers_nest_and_end_with_their_block() -> None:
    client = FrontClient(ScriptedLLM(default="x"))
    outer: list[CallEvent] = []
    inner: list[CallEvent] = []
    with observing(outer.append):
        with observing(inner.append):
            client.chat("one")
        client.chat("two")
    assert (len(outer), len(inner)) == (2, 1)
    with pytest.raises(ReplayMissError):
        FrontClient(ScriptedLLM(), Path("/nonexistent-store"), mode="replay").chat("q")
    assert len(outer) == 2
