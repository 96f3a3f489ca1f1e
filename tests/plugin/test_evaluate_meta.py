"""Issue 13: evaluate_prompt scores a dataset with the evaluator its NAME.meta.json declares."""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from tnsai_eval.testing import ScriptedLLM

@pytest.fixture(scope="session")
def llm():
    # Right for the reviews that say "loved", wordy always: a label evaluator
    # reads the label out of the sentence; the default evaluator would not give 1.0.
    return ScriptedLLM(rules=[(r"loved", "The sentiment is positive.")], default="negative")
"""

TESTS = """
from tnsai_eval.optimizer import ExactMatchEvaluator


def test_label_accuracy(evaluate_prompt, llm):
    result = evaluate_prompt("Classify the sentiment.", "sentiment")
    assert set(c.score for c in result.cases) <= {0.0, 1.0}
    assert result.mean_score == 0.5 + 1 / 20  # the 10 negatives and "I loved this film"
    assert "response_format" not in llm.calls[-1].params


def test_an_explicit_evaluator_wins(evaluate_prompt):
    result = evaluate_prompt("Classify.", "sentiment", evaluator=ExactMatchEvaluator())
    assert result.mean_score == 0.5


def test_constrained(evaluate_prompt, llm):
    evaluate_prompt("Classify.", "sentiment", constrain=True)
    schema = llm.calls[-1].params["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["label"]["enum"] == ["positive", "negative"]


def test_constrain_needs_labels(evaluate_prompt):
    evaluate_prompt("Answer.", "capitals", constrain=True)
"""


def test_evaluate_prompt_reads_the_sidecar(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_meta=TESTS)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-rA", "-s")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 3, result.stdout.str()
    text = result.stdout.str()
    assert (
        "evaluate_prompt: label evaluator (scores are accuracy; labels: positive, negative), "
        "from sentiment.meta.json" in text
    )
    assert "evaluate_prompt: replies constrained to positive, negative" in text
    assert "constrain needs labels to constrain replies to: 'capitals' declares none" in text
