"""The first test a user copies scores labels honestly and says which model to record with."""

from __future__ import annotations

import ast
from pathlib import Path

from tnsai_eval.scoring import ContainsEvaluator, LabelEvaluator

ROOT = Path(__file__).resolve().parents[2]


def test_a_reply_listing_every_label_is_not_a_correct_label() -> None:
    reply = "Billing, shipping, or repair?"
    assert ContainsEvaluator().evaluate(reply, "shipping") == 1.0  # the trap
    assert LabelEvaluator(["billing", "shipping", "repair"]).evaluate(reply, "shipping") == 0.0


def test_the_examples_score_labels_with_label_evaluator() -> None:
    source = (ROOT / "examples" / "test_support_assistant.py").read_text(encoding="utf-8")
    called = {
        node.func.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert "LabelEvaluator" in called
    assert "ContainsEvaluator" not in source


def test_the_readme_says_which_model_to_record_baselines_with() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pytest_section = readme.split("### In pytest", 1)[1].split("\n## ", 1)[0]
    text = " ".join(pytest_section.split())
    assert (
        "the embedded model is for wiring, CI replay and offline demos; record the baselines "
        "you gate on with the model you ship"
    ) in text
    assert "LabelEvaluator" in text
