"""``stop_event``: a run ends at the next call boundary, keeping every score so far."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import PromptOptimizer, StopReason
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM

CASES = [TestCase(f"q{i}", f"a{i}") for i in range(6)]


def _stopping_llm(stop: threading.Event, *, after: int, right: bool = True) -> ScriptedLLM:
    """Answers every case (right or wrong) and sets ``stop`` during its ``after``-th call."""
    count = 0

    def answer(messages: list[Message], params: dict[str, Any]) -> str:
        nonlocal count
        count += 1
        if count == after:
            stop.set()
        text = messages[-1].content
        return "a" + text.rsplit("q", 1)[-1] if right else "no"

    return ScriptedLLM(fn=answer)


def test_stop_event_ends_the_run_at_the_next_call_and_keeps_the_scores() -> None:
    stop = threading.Event()
    llm = _stopping_llm(stop, after=3)
    optimizer = PromptOptimizer(llm, concurrency=1, max_iterations=3, rewrite=False)
    result = optimizer.optimize("Answer.", CASES, stop_event=stop)
    assert result.stop_reason is StopReason.STOPPED
    # The call that set the event was in flight: it finished and was scored;
    # none started after it.
    assert result.calls == 3
    assert len(llm.calls) == 3
    frame = result.to_dataframe()
    assert len(frame) == 3
    assert frame["score"].tolist() == [1.0, 1.0, 1.0]
    assert result.initial_score == 1.0
    assert result.rounds == 0


def test_stop_event_set_between_rounds_ends_before_the_next_round() -> None:
    stop = threading.Event()
    # The initial prompt's six cases, then one round of four strategies: the
    # 12th call is in round 1, so round 1 is cut short and round 2 never starts.
    # Wrong answers: the target is never reached, so only the stop ends the run.
    llm = _stopping_llm(stop, after=12, right=False)
    optimizer = PromptOptimizer(llm, concurrency=1, max_iterations=3, rewrite=False)
    result = optimizer.optimize("Answer.", CASES, stop_event=stop)
    assert result.stop_reason is StopReason.STOPPED
    assert result.calls == 12
    assert result.rounds == 1
    assert set(result.to_dataframe()["round"]) == {0, 1}


def test_stop_event_from_another_thread_while_a_call_waits() -> None:
    # The way the dashboard uses it: the run is in a worker thread, Stop is
    # clicked on another one while a call is in flight.
    in_call = threading.Event()
    release = threading.Event()
    stop = threading.Event()

    def answer(messages: list[Message], params: dict[str, Any]) -> str:
        in_call.set()
        release.wait(timeout=30)
        return "a0"

    optimizer = PromptOptimizer(ScriptedLLM(fn=answer), concurrency=1, rewrite=False)
    results: list[Any] = []
    worker = threading.Thread(
        target=lambda: results.append(optimizer.optimize("Answer.", CASES, stop_event=stop))
    )
    worker.start()
    assert in_call.wait(timeout=30)
    stop.set()
    release.set()
    worker.join(timeout=60)
    assert not worker.is_alive()
    (result,) = results
    assert result.stop_reason is StopReason.STOPPED
    assert result.calls == 1
    assert result.to_dataframe()["score"].tolist() == [1.0]


def test_aoptimize_takes_stop_event_and_a_set_event_scores_nothing() -> None:
    stop = threading.Event()
    stop.set()
    llm = ScriptedLLM(default="a0")
    result = asyncio.run(PromptOptimizer(llm).aoptimize("Answer.", CASES, stop_event=stop))
    assert result.stop_reason is StopReason.STOPPED
    assert result.calls == 0
    assert llm.calls == []


def test_stop_event_must_be_a_threading_event() -> None:
    with pytest.raises(ConfigError, match=r"stop_event must be a threading\.Event"):
        PromptOptimizer(ScriptedLLM(default="x")).optimize(
            "Answer.",
            CASES,
            stop_event=True,  # type: ignore[arg-type]
        )
