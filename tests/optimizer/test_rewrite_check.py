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


# The rewrite that won exhaustive search on a fresh topic set: about one
# case, repeating the grader's words; it made the model answer "sports" to
# every headline.
JUNK = (
    "The topic of this headline is a sporting event where a tennis star has withdrawn "
    "from the Tour de France. The score is 0.00, which is the expected output for this "
    "headline."
)
TOPICS = [
    TestCase("Tennis star withdraws from the Tour de France after a fall", "sports"),
    TestCase("Parliament passes the budget after a long night", "politics"),
]


def test_the_junk_rewrite_is_rejected() -> None:
    problem = check_rewrite(JUNK, "What is the topic of this headline?", TOPICS)
    assert problem == "talks about grading ('score'), not the task"


@pytest.mark.parametrize(
    ("proposal", "reason"),
    [
        ("Name the topic. The expected output is one word.", "talks about grading"),
        ("Name the topic; answers are graded by exact match.", "talks about grading"),
        ("Name the topic to get a high score.", "talks about grading"),
        (
            "Name the topic, for example a tennis star withdrawing from the Tour de France.",
            "quotes a case's input ('Tennis star withdraws from the Tour de France after a fall')",
        ),
        (
            "If the headline says parliament passes the budget after a long night, "
            "answer politics.",
            "quotes a case's input",
        ),
    ],
)
def test_rewrites_that_do_not_generalize_are_rejected(proposal: str, reason: str) -> None:
    problem = check_rewrite(proposal, "What is the topic of this headline?", TOPICS)
    assert problem is not None
    assert reason in problem


def test_grading_words_the_task_itself_uses_are_allowed() -> None:
    task = "Score the review from 1 to 5."
    assert check_rewrite("Score the review from 1 (awful) to 5 (superb).", task) is None
    assert check_rewrite("Name the topic of the headline: sports, politics or technology.",
                         "What is the topic of this headline?", TOPICS) is None  # fmt: skip


def test_the_optimizer_rejects_the_junk_rewrite_and_never_scores_it() -> None:
    llm = ScriptedLLM(rules=[(r"You improve prompts", JUNK)], default="sports")
    optimizer = PromptOptimizer(
        llm, candidate_strategies=[PromptStrategy.CONCISE], max_iterations=1, target_score=1.0
    )
    result = optimizer.optimize("What is the topic of this headline?", TOPICS)
    assert result.rejected_rewrites == ("talks about grading ('score'), not the task",)
    assert all(v.strategy != "rewrite" for v in result.variants)
    assert not any(JUNK in prompt for prompt in llm.prompts if "You improve" not in prompt)


# The "rewrite" a small model proposed 23 times on a fresh three-label set:
# its own earlier reply to a headline, copied back.
COPIED = "Theft of the party\nOutput: technology"
HEADLINES = [
    TestCase("Theft of the party", "politics"),
    TestCase("Chip maker opens a new factory", "technology"),
]


@pytest.mark.parametrize(
    ("proposal", "replies", "reason"),
    [
        (COPIED, [COPIED], "repeats the model's reply to a case ('Theft of the party Output:"),
        ("Theft of the party: politics", [], "repeats a case's input ('Theft of the party')"),
        (
            "Name the topic. Theft of the party Output: technology",
            [COPIED],
            "repeats the model's reply to a case",
        ),
        ("Name the topic: chip maker opens a new factory.", [], "a case's input"),
    ],
)
def test_a_rewrite_that_repeats_a_case_or_a_reply_is_rejected(
    proposal: str, replies: list[str], reason: str
) -> None:
    problem = check_rewrite(proposal, "What is the topic?", HEADLINES, replies=replies)
    assert problem is not None
    assert reason in problem


def test_a_prompt_that_names_the_labels_the_model_answers_passes() -> None:
    # Replies of one or two words (the labels) are what a good prompt names.
    replies = ["technology", "politics", "sports", "It is politics"]
    proposal = "Name the topic of the headline in one word: sports, politics or technology."
    assert check_rewrite(proposal, "What is the topic?", HEADLINES, replies=replies) is None


def test_the_optimizer_rejects_a_rewrite_that_copies_its_own_reply() -> None:
    # The model answers every headline with COPIED, and proposes it as the
    # better prompt: rejected, not scored.
    llm = ScriptedLLM(rules=[(r"You improve prompts", COPIED)], default=COPIED)
    optimizer = PromptOptimizer(
        llm, candidate_strategies=[PromptStrategy.CONCISE], max_iterations=1, target_score=1.0
    )
    result = optimizer.optimize("What is the topic?", HEADLINES)
    assert result.rejected_rewrites == (
        "repeats the model's reply to a case ('Theft of the party Output: technology')",
    )
    assert all(v.strategy != "rewrite" for v in result.variants)
