"""datasets/feedback_examples.jsonl is well formed and covers every type."""

from __future__ import annotations

import json
from collections import Counter

from tests.feedback.conftest import DATASET
from tnsai_eval.feedback import FeedbackType


def test_every_line_is_an_input_and_a_feedback_type() -> None:
    lines = DATASET.read_text(encoding="utf-8").splitlines()
    assert 15 <= len(lines) <= 25
    rows = [json.loads(line) for line in lines]
    for number, row in enumerate(rows, 1):
        assert set(row) == {"input", "expected"}, number
        assert isinstance(row["input"], str), number
        assert len(row["input"].split()) >= 3, number
        assert row["expected"] == FeedbackType.parse(row["expected"]).value, number
    counts = Counter(row["expected"] for row in rows)
    assert set(counts) == {t.value for t in FeedbackType}
    assert min(counts.values()) >= 4
    assert len({row["input"] for row in rows}) == len(rows)  # no duplicates
