"""FeedbackLearner with the embedded SmolLM2-135M model on the example feedback."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tnsai_eval.feedback import Feedback, FeedbackLearner, FeedbackStore
from tnsai_eval.feedback._learner import _RULES
from tnsai_eval.llm import Completion, LocalLLM, MessagesInput

pytestmark = pytest.mark.local_model

# Words that say nothing about the feedback's subject.
_GENERIC = {"always", "never", "should", "before", "after", "customer", "customers", "answer"}


class CountingLLM:
    def __init__(self, inner: LocalLLM) -> None:
        self.inner = inner
        self.calls = 0

    def chat(self, messages: MessagesInput, **params: Any) -> Completion:
        self.calls += 1
        return self.inner.chat(messages, **params)


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in _GENERIC}


def test_rules_are_extracted_from_the_example_feedback(example_feedback: list[Feedback]) -> None:
    store = FeedbackStore.in_memory()
    for fb in example_feedback:
        store.save(fb)
    llm = CountingLLM(LocalLLM())
    # max_tokens kept small so the test stays short; a few lines are enough.
    learner = FeedbackLearner(llm, store, ["prompt_adjustment"], max_tokens=64)

    result = learner.learn()

    assert llm.calls == 1
    assert result.errors == ()
    assert result.feedback_analyzed == len(example_feedback) == 20
    rules = result.prompt_adjustments
    assert rules, "the embedded model produced no RULE: line"
    examples = {line.split(":", 1)[1].strip() for line in _RULES.example_answer}
    for rule in rules:
        assert len(rule.split()) >= 3, rule  # an instruction, not a fragment
        assert rule not in examples
    # Usable means about this feedback: at least one rule uses its subject words
    # (order number, refund, warranty, card, cache...).
    read = [fb.content for fb in example_feedback if fb.type in _RULES.reads]
    source_words = set().union(*(_content_words(text) for text in read))
    assert any(_content_words(rule) & source_words for rule in rules), rules
