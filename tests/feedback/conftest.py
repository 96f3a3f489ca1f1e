"""Fixtures for the feedback tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tnsai_eval.feedback import Feedback, FeedbackStore

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "feedback_examples.jsonl"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> FeedbackStore:
    """Each store implementation, empty: contract tests run against both."""
    if request.param == "memory":
        return FeedbackStore.in_memory()
    return FeedbackStore.sqlite(tmp_path / "feedback.db")


@pytest.fixture
def example_feedback() -> list[Feedback]:
    """datasets/feedback_examples.jsonl as Feedback records, in file order."""
    rows = [json.loads(line) for line in DATASET.read_text(encoding="utf-8").splitlines()]
    return [Feedback(row["expected"], row["input"]) for row in rows]
