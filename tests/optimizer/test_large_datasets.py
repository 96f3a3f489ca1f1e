"""The larger shipped datasets: big enough for a held-out split to mean something."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tnsai_eval import datasets
from tnsai_eval.scoring import TestCase

REPO = Path(__file__).resolve().parents[2]


def make_arithmetic() -> Any:
    """datasets/make_arithmetic.py, imported (it is a script, not a package module)."""
    folder = str(REPO / "datasets")
    sys.path.insert(0, folder)
    try:
        import make_arithmetic
    finally:
        sys.path.remove(folder)
    return make_arithmetic


def test_arithmetic_large_is_200_distinct_generated_problems() -> None:
    cases = datasets.load("arithmetic_large")
    expected = [
        TestCase(c["input"], c["expected"]) for c in make_arithmetic().make_distinct_cases()
    ]
    assert cases == expected
    assert len(cases) >= 200
    assert len({c.input for c in cases}) == len(cases)
    for case in cases:
        a, op, b = case.input.removeprefix("What is ").removesuffix("?").split()
        assert int(case.expected) == (int(a) + int(b) if op == "+" else int(a) - int(b))


def test_sentiment_large_is_100_balanced_labelled_reviews_not_in_the_small_set() -> None:
    cases = datasets.load("sentiment_large")
    assert len(cases) >= 100
    assert Counter(c.expected for c in cases) == {"positive": 50, "negative": 50}
    assert len({c.input for c in cases}) == len(cases)
    small = {c.input for c in datasets.load("sentiment")}
    assert not small & {c.input for c in cases}


def test_each_large_dataset_has_a_sidecar() -> None:
    for name, evaluator in (("arithmetic_large", "default"), ("sentiment_large", "label")):
        meta = json.loads((REPO / "datasets" / f"{name}.meta.json").read_text(encoding="utf-8"))
        assert meta["evaluator"] == evaluator
        assert set(meta) <= {"description", "evaluator", "labels", "threshold", "constrain"}
        assert meta["constrain"] is False
    labels = json.loads((REPO / "datasets" / "sentiment_large.meta.json").read_text())["labels"]
    assert sorted(labels) == ["negative", "positive"]


def test_arithmetic_heldout_is_100_generated_problems_in_no_other_set() -> None:
    script = make_arithmetic()
    cases = datasets.load("arithmetic_heldout")
    others = {c.input for name in ("arithmetic", "arithmetic_large") for c in datasets.load(name)}
    expected = script.make_distinct_cases(
        script.HELDOUT_SEED, script.HELDOUT_COUNT, avoid=frozenset(others)
    )
    assert cases == [TestCase(c["input"], c["expected"]) for c in expected]
    assert len(cases) == 100
    assert len({c.input for c in cases}) == len(cases)
    assert not others & {c.input for c in cases}
    for case in cases:
        a, op, b = case.input.removeprefix("What is ").removesuffix("?").split()
        assert int(case.expected) == (int(a) + int(b) if op == "+" else int(a) - int(b))


def test_sentiment_heldout_is_100_balanced_reviews_in_no_other_set() -> None:
    cases = datasets.load("sentiment_heldout")
    assert len(cases) == 100
    assert Counter(c.expected for c in cases) == {"positive": 50, "negative": 50}
    assert len({c.input for c in cases}) == len(cases)
    others = {c.input for name in ("sentiment", "sentiment_large") for c in datasets.load(name)}
    assert not others & {c.input for c in cases}
    meta = json.loads((REPO / "datasets" / "sentiment_heldout.meta.json").read_text("utf-8"))
    assert (meta["evaluator"], sorted(meta["labels"])) == ("label", ["negative", "positive"])
