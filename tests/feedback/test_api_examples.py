"""The Feedback section of API.md, each statement run as written there."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import tnsai_eval.feedback as feedback_api
from tnsai_eval.feedback import (
    AdaptivePromptEnricher,
    Agent,
    Feedback,
    FeedbackCollector,
    FeedbackLearner,
    FeedbackStore,
    FeedbackType,
    LearningResult,
    LearningStrategy,
)
from tnsai_eval.testing import ScriptedLLM


def test_the_public_names() -> None:
    assert set(feedback_api.__all__) >= {
        "AdaptivePromptEnricher",
        "Agent",
        "Feedback",
        "FeedbackCollector",
        "FeedbackLearner",
        "FeedbackStore",
        "FeedbackType",
        "LearningResult",
        "LearningStrategy",
    }
    for name in feedback_api.__all__:
        home = "tnsai_eval.agents" if name == "Agent" else "tnsai_eval.feedback"
        assert getattr(feedback_api, name).__module__.startswith(home)


def test_feedback_type_members_and_parse() -> None:
    # `FeedbackType.parse("correction")` accepts any case; anything else raises ValueError.
    assert [t.name for t in FeedbackType] == ["POSITIVE", "NEGATIVE", "CORRECTION", "PREFERENCE"]
    assert FeedbackType.parse("correction") is FeedbackType.CORRECTION
    assert FeedbackType.parse("CoRrEcTiOn") is FeedbackType.CORRECTION
    with pytest.raises(ValueError, match="'meh'"):
        FeedbackType.parse("meh")


def test_feedback_constructor_and_factories() -> None:
    # Feedback(type, content, session_id=None, id=None, timestamp=None, metadata=None)
    fb = Feedback(FeedbackType.CORRECTION, "Use the customer's name.")
    assert isinstance(fb.id, str)
    assert fb.timestamp.utcoffset() == timedelta(0)
    assert Feedback.thumbs_up("x").type is FeedbackType.POSITIVE
    assert Feedback.thumbs_down("x").type is FeedbackType.NEGATIVE
    assert Feedback.correction("x").type is FeedbackType.CORRECTION
    assert Feedback.preference("x").type is FeedbackType.PREFERENCE
    copy = fb.with_session_id("sid")
    assert (copy.session_id, fb.session_id, copy.id) == ("sid", None, fb.id)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_feedback_store_methods(kind: str, tmp_path: Path) -> None:
    store = (
        FeedbackStore.in_memory() if kind == "memory" else FeedbackStore.sqlite(tmp_path / "f.db")
    )
    first = Feedback.thumbs_up("a", session_id="s")
    second = Feedback.correction("b")
    third = Feedback.preference("c", session_id="s")
    for fb in (first, second, third):
        store.save(fb)
    assert store.get_all() == [first, second, third]
    assert store.get_by_type(FeedbackType.CORRECTION) == [second]
    assert store.get_by_session("s") == [first, third]
    assert store.get_recent(2) == [second, third]  # the last 2 saved, oldest first
    assert store.count() == 3
    store.clear()
    assert store.count() == 0


def test_sqlite_persists_across_processes_of_the_program(tmp_path: Path) -> None:
    # "FeedbackStore.sqlite(path) persists across processes": a new store object
    # stands in for a new process here; test_sqlite_processes runs real ones.
    FeedbackStore.sqlite(tmp_path / "f.db").save(Feedback.correction("kept"))
    assert [fb.content for fb in FeedbackStore.sqlite(tmp_path / "f.db").get_all()] == ["kept"]


def test_collector() -> None:
    collector = FeedbackCollector()
    collector.record_user_feedback(FeedbackType.PREFERENCE, "Be brief.", metadata={"a": 1})
    collector.record_user_feedback("correction", "Say sorry.")
    collector.record_tool_call("search", ok=True)
    collector.record_tool_call("refund", ok=False, error="closed")
    assert [fb.type for fb in collector.feedback] == [
        FeedbackType.PREFERENCE,
        FeedbackType.CORRECTION,
        FeedbackType.POSITIVE,
        FeedbackType.NEGATIVE,
    ]


def test_agent_learned_behavior_block() -> None:
    def search(query: str) -> str:
        return f"results for {query}"

    def refund(order_id: str) -> str:
        raise RuntimeError("closed")

    llm = ScriptedLLM(default="Hello!")
    agent = Agent(llm, system_prompt="You are helpful.", tools=[search, refund], learning=True)
    assert agent.chat("hi") == "Hello!"
    agent.call_tool("search", query="shoes")
    with pytest.raises(RuntimeError):
        agent.call_tool("refund", order_id="1")
    assert agent.actions == ["search", "refund"]
    collector = agent.feedback_collector
    collector.record_user_feedback("correction", "Ask before refunding.")
    collector.record_user_feedback("preference", "Reply in French.")
    assert agent.system_prompt.endswith(
        "# Learned Behavior\n\n"
        "## Rules\n- Ask before refunding.\n\n"
        "## Preferences\n- Reply in French."
    )
    assert "search" not in agent.system_prompt
    assert "closed" not in agent.system_prompt

    quiet = Agent(llm, system_prompt="You are helpful.", learning=False)
    quiet.feedback_collector.record_user_feedback("correction", "Ask before refunding.")
    assert quiet.system_prompt == "You are helpful."


def test_learning_strategy_learner_and_result() -> None:
    assert [s.name for s in LearningStrategy] == [
        "PROMPT_ADJUSTMENT",
        "PREFERENCE_LEARNING",
        "EXAMPLE_COLLECTION",
    ]
    store = FeedbackStore.in_memory()
    llm = ScriptedLLM(
        fn=lambda messages, _p: (
            "RULE: Ask first." if "'RULE:'" in messages[0].content else "PREFERENCE: French."
        )
    )
    learner = FeedbackLearner(llm, store)  # strategies=<all three>, min_feedback_for_learning=3
    learner.record_feedback(Feedback.correction("You refunded without asking."))
    learner.record_feedback(Feedback.preference("Reply in French."))
    assert learner.learn() == LearningResult()  # below the minimum: empty
    learner.record_feedback(Feedback.thumbs_up("Good answer."))
    result = learner.learn()
    assert result == LearningResult(["Ask first."], ["French."], ["Good answer."], 3)
    assert result.has_learnings

    enricher = AdaptivePromptEnricher(learner, store)
    assert enricher.enrich("Base.") == (
        "Base.\n\n## Learned Preferences\n\n### Rules\n- Ask first.\n\n### Preferences\n- French."
    )
