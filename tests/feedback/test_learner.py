"""FeedbackLearner with a scripted model: prompts, calls, parsing, failures."""

from __future__ import annotations

from typing import Any

import pytest

from tnsai_eval.errors import ConfigError, LLMTimeoutError, ServerError
from tnsai_eval.feedback import (
    Feedback,
    FeedbackLearner,
    FeedbackStore,
    LearningResult,
    LearningStrategy,
)
from tnsai_eval.feedback._learner import extract_prefixed_lines
from tnsai_eval.llm import Completion, Message
from tnsai_eval.testing import ScriptedLLM


def _store(*items: Feedback) -> FeedbackStore:
    store = FeedbackStore.in_memory()
    for fb in items:
        store.save(fb)
    return store


def _mixed_store() -> FeedbackStore:
    return _store(
        Feedback.correction("Refunds take 5 days, not 1."),
        Feedback.thumbs_down("You ignored my question."),
        Feedback.preference("Short answers please."),
        Feedback.thumbs_up("Perfect, thanks!"),
        Feedback.thumbs_up("Clear steps."),
    )


def _by_task(rules: object = "RULE: r", preferences: object = "PREFERENCE: p") -> ScriptedLLM:
    # The system message says which extraction a call is; the rules read it.
    def reply(messages: list[Message], params: dict[str, Any]) -> str | Completion:
        system = messages[0].content
        chosen = rules if "'RULE:'" in system else preferences
        if isinstance(chosen, BaseException):
            raise chosen
        assert isinstance(chosen, str)
        return chosen

    return ScriptedLLM(fn=reply)


def test_below_the_minimum_nothing_is_called() -> None:
    llm = ScriptedLLM()
    store = _store(Feedback.correction("a"), Feedback.preference("b"))
    result = FeedbackLearner(llm, store).learn()
    assert result == LearningResult()
    assert not result.has_learnings
    assert result.feedback_analyzed == 0
    assert llm.calls == []


def test_the_minimum_is_configurable_and_inclusive() -> None:
    llm = _by_task()
    store = _store(Feedback.correction("a"), Feedback.preference("b"))
    assert FeedbackLearner(llm, store, min_feedback_for_learning=2).learn().has_learnings
    assert not FeedbackLearner(llm, store, min_feedback_for_learning=3).learn().has_learnings


def test_all_three_strategies_by_default() -> None:
    llm = _by_task("RULE: Quote refund times exactly.", "PREFERENCE: Keep answers short.")
    learner = FeedbackLearner(llm, _mixed_store())
    assert learner.strategies == tuple(LearningStrategy)
    result = learner.learn()
    assert result.prompt_adjustments == ("Quote refund times exactly.",)
    assert result.preferences == ("Keep answers short.",)
    assert result.good_examples == ("Perfect, thanks!", "Clear steps.")
    assert result.feedback_analyzed == 5
    assert result.errors == ()
    assert result.has_learnings
    assert len(llm.calls) == 2  # one per model-backed strategy, none for examples


def test_prompt_adjustment_reads_corrections_and_negatives_only() -> None:
    llm = ScriptedLLM(default="RULE: x y z")
    FeedbackLearner(llm, _mixed_store(), [LearningStrategy.PROMPT_ADJUSTMENT]).learn()
    (call,) = llm.calls
    assert call.prompt == "Feedback:\n- Refunds take 5 days, not 1.\n- You ignored my question."
    assert "'RULE:'" in call.system
    assert [m.role for m in call.messages] == ["system", "user", "assistant", "user"]
    assert call.params["temperature"] == 0
    assert call.params["max_tokens"] == 200


def test_preference_learning_reads_preferences_and_corrections_only() -> None:
    llm = ScriptedLLM(default="PREFERENCE: x")
    FeedbackLearner(llm, _mixed_store(), ["preference_learning"]).learn()
    (call,) = llm.calls
    assert call.prompt == "Feedback:\n- Refunds take 5 days, not 1.\n- Short answers please."
    assert "'PREFERENCE:'" in call.system


def test_example_collection_needs_no_call_and_keeps_text_as_given() -> None:
    llm = ScriptedLLM()
    store = _store(
        Feedback.thumbs_up("  Spaces   kept  "),
        Feedback.thumbs_up("  Spaces   kept  "),
        Feedback.correction("c"),
    )
    result = FeedbackLearner(llm, store, ["EXAMPLE_COLLECTION"]).learn()
    assert result.good_examples == ("  Spaces   kept  ", "  Spaces   kept  ")
    assert result.prompt_adjustments == result.preferences == ()
    assert llm.calls == []


def test_no_relevant_feedback_means_no_call() -> None:
    llm = ScriptedLLM()
    store = _store(*[Feedback.thumbs_up(f"good {i}") for i in range(4)])
    result = FeedbackLearner(llm, store).learn()
    assert llm.calls == []
    assert result.good_examples == tuple(f"good {i}" for i in range(4))


@pytest.mark.parametrize("error", [ServerError("down", status=503), LLMTimeoutError("slow")])
def test_a_failed_rules_call_leaves_only_the_rules_empty(error: Exception) -> None:
    llm = _by_task(rules=error, preferences="PREFERENCE: Keep answers short.")
    result = FeedbackLearner(llm, _mixed_store()).learn()
    assert result.prompt_adjustments == ()
    assert result.preferences == ("Keep answers short.",)
    assert result.good_examples == ("Perfect, thanks!", "Clear steps.")
    (message,) = result.errors
    assert message.startswith("prompt_adjustment: ")
    assert type(error).__name__ in message


def test_a_failed_preferences_call_leaves_only_the_preferences_empty() -> None:
    llm = _by_task(rules="RULE: Quote refund times.", preferences=ServerError("x", status=500))
    result = FeedbackLearner(llm, _mixed_store()).learn()
    assert result.prompt_adjustments == ("Quote refund times.",)
    assert result.preferences == ()
    assert result.good_examples
    assert result.errors[0].startswith("preference_learning: ")


def test_any_exception_empties_only_its_list() -> None:
    # "A failed call leaves that list empty": a client bug (KeyError) too.
    llm = ScriptedLLM([KeyError("bug"), "PREFERENCE: Be brief."])
    result = FeedbackLearner(
        llm, _mixed_store(), ["prompt_adjustment", "preference_learning"]
    ).learn()
    assert result.prompt_adjustments == ()
    assert result.preferences == ("Be brief.",)
    assert len(result.errors) == 1
    assert "KeyError" in result.errors[0]


def test_base_exceptions_are_not_contained() -> None:
    llm = ScriptedLLM([KeyboardInterrupt()])
    with pytest.raises(KeyboardInterrupt):
        FeedbackLearner(llm, _mixed_store(), ["prompt_adjustment"]).learn()


def test_only_prefixed_lines_are_kept_tolerantly() -> None:
    reply = "\n".join(
        [
            "Here are the rules:",
            "RULE: Quote refund times exactly.",
            "   rule: Greet the customer by name.",
            "- RULE: Ask for the order number first.",
            "* Rule: Never ask for card numbers.",
            "1. RULE: Apologise before explaining.",
            "2) RULE: Link the help centre article.",
            "**RULE:** Keep answers under 100 words.",
            "3. **Rule 4:** Confirm the fix worked.",
            "RULES are important",
            "The RULE: in the middle does not count",
            "RULE:",
            "RULE: 42",
            "RULE: quote refund times   EXACTLY",
            "- rule: Ask for the order number first",
        ]
    )
    assert extract_prefixed_lines(reply, "RULE") == [
        "Quote refund times exactly.",
        "Greet the customer by name.",
        "Ask for the order number first.",
        "Never ask for card numbers.",
        "Apologise before explaining.",
        "Link the help centre article.",
        "Keep answers under 100 words.",
        "Confirm the fix worked.",
    ]


def test_extract_drops_excluded_lines() -> None:
    assert extract_prefixed_lines("RULE: A b.\nRULE: c d", "RULE", exclude=[" a B"]) == ["c d"]


def test_copies_of_the_prompt_examples_are_dropped() -> None:
    reply = (
        "RULE: Never call users 'mate'.\n"
        "RULE: Give only the price when asked for the price\n"
        "RULE: Ask for the order number."
    )
    llm = ScriptedLLM(default=reply)
    result = FeedbackLearner(llm, _mixed_store(), ["prompt_adjustment"]).learn()
    assert result.prompt_adjustments == ("Ask for the order number.",)


def test_a_reply_cut_off_by_max_tokens_loses_its_last_line() -> None:
    cut = Completion(
        text="RULE: Say sorry first.\nRULE: Always check the wa", finish_reason="length"
    )
    llm = ScriptedLLM([cut])
    result = FeedbackLearner(llm, _mixed_store(), ["prompt_adjustment"]).learn()
    assert result.prompt_adjustments == ("Say sorry first.",)


def test_only_the_most_recent_items_are_sent_each_trimmed() -> None:
    store = _store(*[Feedback.correction(f"fix {i} " + "x" * 50) for i in range(10)])
    llm = ScriptedLLM(default="RULE: r")
    learner = FeedbackLearner(
        llm, store, ["prompt_adjustment"], max_items_per_call=3, max_item_chars=20
    )
    learner.learn()
    lines = llm.calls[0].prompt.splitlines()[1:]
    expected = [f"- fix {i} " + "x" * 11 + "..." for i in (7, 8, 9)]  # 20 characters each
    assert lines == expected


def test_llm_params_and_max_tokens_are_passed() -> None:
    llm = ScriptedLLM(default="RULE: r")
    learner = FeedbackLearner(
        llm, _mixed_store(), ["prompt_adjustment"], max_tokens=64, llm_params={"seed": 3}
    )
    learner.learn()
    assert llm.calls[0].params == {"temperature": 0, "max_tokens": 64, "seed": 3}


def test_record_feedback_saves_to_the_store() -> None:
    store = FeedbackStore.in_memory()
    learner = FeedbackLearner(ScriptedLLM(), store)
    fb = Feedback.correction("x")
    learner.record_feedback(fb)
    assert store.get_all() == [fb]


def test_strategies_parse_and_deduplicate() -> None:
    learner = FeedbackLearner(
        ScriptedLLM(),
        FeedbackStore.in_memory(),
        ["Example_Collection", LearningStrategy.EXAMPLE_COLLECTION],
    )
    assert learner.strategies == (LearningStrategy.EXAMPLE_COLLECTION,)
    with pytest.raises(ConfigError, match="'examples'"):
        FeedbackLearner(ScriptedLLM(), FeedbackStore.in_memory(), ["examples"])


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("min_feedback_for_learning", -1),
        ("max_items_per_call", 0),
        ("max_tokens", 0),
        ("max_item_chars", True),
    ],
)
def test_bad_options_are_named(option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=option):
        FeedbackLearner(ScriptedLLM(), FeedbackStore.in_memory(), **{option: value})  # type: ignore[arg-type]


def test_store_must_be_a_feedback_store() -> None:
    with pytest.raises(ConfigError, match="FeedbackStore"):
        FeedbackLearner(ScriptedLLM(), [])  # type: ignore[arg-type]


def test_learning_result_holds_tuples() -> None:
    result = LearningResult(["a"], ["b"], ["c"], 3)
    assert (result.prompt_adjustments, result.preferences, result.good_examples) == (
        ("a",),
        ("b",),
        ("c",),
    )
    assert result.has_learnings
    assert LearningResult(good_examples=["only"]).has_learnings
    assert not LearningResult(feedback_analyzed=9, errors=["x"]).has_learnings
