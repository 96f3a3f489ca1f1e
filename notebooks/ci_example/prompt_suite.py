"""A small prompt regression suite, run by notebooks/05_ci_reports.ipynb.

The prompts change with ``PROMPT_VERSION`` (v1, v2, v3), standing for the
prompt file at three commits. The file is not named ``test_*.py`` so that
``pytest notebooks`` (the nbval step) never collects it; the notebook passes it
to pytest by path.
"""

from __future__ import annotations

import os

from tnsai_eval import datasets
from tnsai_eval.optimizer import ContainsEvaluator

VERSION = os.environ.get("PROMPT_VERSION", "v1")

# One-word answers: a few tokens are plenty.
SHORT = {"temperature": 0.0, "max_tokens": 8}

SENTIMENT = {
    "v1": "Is the sentiment of this review positive or negative?",
    "v2": "Summarize the review.",  # a careless edit: no label asked for
    "v3": "Is the sentiment of this review positive or negative? Reply with one word.",
}
CAPITALS = {
    "v1": "Answer the geography question.",
    "v2": "Name the capital city.",
    "v3": "Name the capital city.",
}
ARITHMETIC = {
    "v1": "Solve the arithmetic problem.",
    "v2": "Solve the arithmetic problem.",
    "v3": "Solve the arithmetic problem. Reply with the number only.",
}


def test_sentiment(evaluate_prompt):
    evaluate_prompt(
        SENTIMENT[VERSION],
        datasets.load("sentiment")[:10],
        evaluator=ContainsEvaluator(),
        params=SHORT,
        min_score=0.5,
    )


def test_capitals(evaluate_prompt):
    evaluate_prompt(
        CAPITALS[VERSION],
        datasets.load("capitals")[:8],
        evaluator=ContainsEvaluator(),
        params={"temperature": 0.0, "max_tokens": 16},
        min_score=0.5,
    )


def test_arithmetic(evaluate_prompt):
    # The 135M model is weak at arithmetic: the bar is low, and still not always met.
    evaluate_prompt(
        ARITHMETIC[VERSION],
        datasets.load("arithmetic")[:8],
        evaluator=ContainsEvaluator(),
        params=SHORT,
        min_score=0.25,
    )
