"""AdaptivePromptEnricher: the appended section and when it learns again."""

from __future__ import annotations

import pytest

from tnsai_eval.errors import ConfigError, ServerError
from tnsai_eval.feedback import (
    AdaptivePromptEnricher,
    Feedback,
    FeedbackLearner,
    FeedbackStore,
)
from tnsai_eval.testing import ScriptedLLM


def _setup(
    rules: str = "RULE: Quote refund times.\nRULE: Ask for the order number.",
    preferences: str = "PREFERENCE: Short answers.",
) -> tuple[ScriptedLLM, FeedbackStore, AdaptivePromptEnricher]:
    llm = ScriptedLLM(
        fn=lambda messages, _params: rules if "'RULE:'" in messages[0].content else preferences
    )
    store = FeedbackStore.in_memory()
    learner = FeedbackLearner(llm, store)
    return llm, store, AdaptivePromptEnricher(learner, store)


def _add_three(store: FeedbackStore) -> None:
    store.save(Feedback.correction("Refunds take 5 days."))
    store.save(Feedback.preference("Be brief."))
    store.save(Feedback.thumbs_up("Great."))


def test_appends_rules_and_preferences_as_bullets() -> None:
    _llm, store, enricher = _setup()
    _add_three(store)
    assert enricher.enrich("You are a support agent.") == (
        "You are a support agent.\n"
        "\n"
        "## Learned Preferences\n"
        "\n"
        "### Rules\n"
        "- Quote refund times.\n"
        "- Ask for the order number.\n"
        "\n"
        "### Preferences\n"
        "- Short answers."
    )


def test_nothing_learned_leaves_the_prompt_unchanged() -> None:
    llm, store, enricher = _setup()
    store.save(Feedback.correction("only one"))  # below the minimum of 3
    assert enricher.enrich("Base.") == "Base."
    assert llm.calls == []


def test_empty_subsections_are_left_out() -> None:
    _llm, store, enricher = _setup(rules="no rules here")
    _add_three(store)
    assert enricher.enrich("Base.") == (
        "Base.\n\n## Learned Preferences\n\n### Preferences\n- Short answers."
    )


def test_learns_again_only_when_the_count_changed() -> None:
    llm, store, enricher = _setup()
    _add_three(store)
    first = enricher.enrich("A")
    assert len(llm.calls) == 2
    assert enricher.enrich("B").endswith(first.removeprefix("A"))
    assert enricher.enrich("C")
    assert len(llm.calls) == 2  # same count: the cached result is reused
    store.save(Feedback.thumbs_down("Slow."))
    enricher.enrich("D")
    assert len(llm.calls) == 4
    enricher.enrich("E")
    assert len(llm.calls) == 4
    store.clear()  # a changed count, even a smaller one, means learning again
    assert enricher.enrich("F") == "F"
    assert len(llm.calls) == 4  # ...which, below the minimum, calls nothing


def test_refresh_forces_learning() -> None:
    llm, store, enricher = _setup()
    _add_three(store)
    enricher.enrich("A")
    result = enricher.refresh()
    assert len(llm.calls) == 4
    assert enricher.last_result == result
    assert result.preferences == ("Short answers.",)


def test_a_failed_call_is_not_retried_until_the_count_changes() -> None:
    store = FeedbackStore.in_memory()
    llm = ScriptedLLM([ServerError("down", status=503)], default="RULE: Be kind.")
    enricher = AdaptivePromptEnricher(FeedbackLearner(llm, store, ["prompt_adjustment"]), store)
    _add_three(store)
    assert enricher.enrich("P") == "P"
    assert enricher.last_result.errors
    assert enricher.enrich("P") == "P"
    assert len(llm.calls) == 1
    store.save(Feedback.correction("Another."))
    assert enricher.enrich("P").endswith("### Rules\n- Be kind.")


def test_bad_arguments() -> None:
    store = FeedbackStore.in_memory()
    learner = FeedbackLearner(ScriptedLLM(), store)
    with pytest.raises(ConfigError, match="learner"):
        AdaptivePromptEnricher(object(), store)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="store"):
        AdaptivePromptEnricher(learner, object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="prompt"):
        AdaptivePromptEnricher(learner, store).enrich(None)  # type: ignore[arg-type]
