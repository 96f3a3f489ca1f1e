"""check_rewrite: a model's proposal is scored only when it is a prompt for the task."""

from __future__ import annotations

import pytest

from tnsai_eval.optimizer import PromptOptimizer, PromptStrategy, check_rewrite
from tnsai_eval.scoring import TestCase
from tnsai_eval.testing import ScriptedLLM

SENTIMENT = [TestCase("I loved it", "positive"), TestCase("Awful food", "negative")]


@pytest.mark.parametrize(
    ("proposal", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("I'm ready to help. What's your next prompt?", "greeting"),
        ("Hello! Classify the sentiment.", "greeting"),
        ("How can I assist you with the sentiment task today?", "greeting"),
        ("Classify the sentiment. Could you provide more examples?", "question back"),
        ("What would you like me to classify?", "question back"),
        ("Write a poem about the sea.", "shares no word"),
    ],
)
def test_non_prompts_are_rejected(proposal: str, reason: str) -> None:
    problem = check_rewrite(proposal, "Classify the sentiment.", SENTIMENT)
    assert problem is not None
    assert reason in problem


@pytest.mark.parametrize(
    "proposal",
    [
        "Classify the sentiment of the review. Reply with one word.",
        "Is the review positive or negative? Reply with one word.",
        "You are a sentiment classifier. Answer positive or negative.",
        "What is the sentiment of this text?",
    ],
)
def test_prompts_for_the_task_pass(proposal: str) -> None:
    assert check_rewrite(proposal, "Classify the sentiment.", SENTIMENT) is None


def test_the_optimizer_counts_and_skips_rejected_rewrites() -> None:
    # The small model's real answer to a rewrite request, seen on the demo.
    llm = ScriptedLLM(
        rules=[(r"You improve prompts", "I'm ready to help. What's your next prompt?")],
        default="maybe",
    )
    optimizer = PromptOptimizer(
        llm, candidate_strategies=[PromptStrategy.CONCISE], max_iterations=2, target_score=1.0
    )
    result = optimizer.optimize("Classify the sentiment.", SENTIMENT)
    assert result.rejected_rewrites == ("a greeting or offer of help, not a prompt",) * 2
    assert all(v.strategy != "rewrite" for v in result.variants)
