from __future__ import annotations

import pytest

from tnsai_eval.errors import ConfigError, LLMConnectionError
from tnsai_eval.scoring import (
    ContainsEvaluator,
    DefaultPromptEvaluator,
    ExactMatchEvaluator,
    LabelEvaluator,
    LLMJudgeEvaluator,
    PromptEvaluator,
    TokenF1Evaluator,
    normalize_answer,
    parse_judge_score,
)
from tnsai_eval.testing import ScriptedLLM


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  An   apple, a day ", "apple day"),
        ("PARIS.", "paris"),
        ("theatre", "theatre"),  # "the" only as a word
        ("", ""),
    ],
)
def test_normalize_answer_follows_squad(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_default_evaluator_match_after_normalization_is_one() -> None:
    assert DefaultPromptEvaluator().evaluate("  paris!! ", "Paris") == 1.0
    assert DefaultPromptEvaluator().evaluate("The answer", "answer") == 1.0


def test_default_evaluator_one_word_expected() -> None:
    # got: capital of france is paris (5 words); want: paris
    # keyword 1/1, length 1/5, phrase 1 (the word occurs) -> 0.5 + 0.04 + 0.3
    score = DefaultPromptEvaluator().evaluate("The capital of France is Paris.", "Paris")
    assert score == pytest.approx(0.84)


def test_default_evaluator_multi_word_terms() -> None:
    # want: quick brown fox jumps (4 words; keywords all 4; bigrams qb, bf, fj)
    # got: brown fox sleeps (3 words): keywords 2/4, length 3/4, bigrams {bf} -> 1/3
    score = DefaultPromptEvaluator().evaluate("brown fox sleeps", "the quick brown fox jumps")
    assert score == pytest.approx(0.5 * 0.5 + 0.2 * 0.75 + 0.3 / 3)


def test_default_evaluator_stopwords_are_not_keywords() -> None:
    # want: "is it in" -> every word a stopword, so all three count as keywords
    # got: "it" -> keywords 1/3, length 1/3, bigrams (is it),(it in) -> 0
    score = DefaultPromptEvaluator().evaluate("it", "is it in")
    assert score == pytest.approx(0.5 / 3 + 0.2 / 3)
    # want: "capital of peru" -> keywords {capital, peru}; "of" is a stopword
    # got: "peru" -> keywords 1/2, length 1/3, bigrams 0/2
    score = DefaultPromptEvaluator().evaluate("Peru", "capital of Peru")
    assert score == pytest.approx(0.25 + 0.2 / 3)


def test_default_evaluator_empty_sides() -> None:
    evaluator = DefaultPromptEvaluator()
    assert evaluator.evaluate("", "") == 1.0
    assert evaluator.evaluate("something", "") == 0.0
    assert evaluator.evaluate("", "Paris") == 0.0
    # A wrong answer of the right length still earns the length term.
    assert evaluator.evaluate("Lyon", "Paris") == pytest.approx(0.2)


def test_exact_match_with_and_without_normalization() -> None:
    assert ExactMatchEvaluator().evaluate("The Paris.", "paris") == 1.0
    assert ExactMatchEvaluator(normalize=False).evaluate("The Paris.", "paris") == 0.0
    assert ExactMatchEvaluator(normalize=False).evaluate(" paris\n", "paris") == 1.0


def test_contains_matches_whole_words_only() -> None:
    evaluator = ContainsEvaluator()
    assert evaluator.evaluate("I think it is Paris, France.", "paris france") == 1.0
    assert evaluator.evaluate("Parisian food", "Paris") == 0.0
    assert evaluator.evaluate("anything", "") == 1.0


def test_token_f1_hand_computed() -> None:
    evaluator = TokenF1Evaluator()
    # got: paris is capital (3) want: paris (1): p=1/3 r=1 -> 0.5
    assert evaluator.evaluate("Paris is the capital", "Paris") == pytest.approx(0.5)
    # repeated tokens count once each side: got a a b, want a b b -> common 2, p=r=2/3
    assert evaluator.evaluate("x x y", "x y y") == pytest.approx(2 / 3)
    assert evaluator.evaluate("", "") == 1.0
    assert evaluator.evaluate("", "x") == 0.0
    assert evaluator.evaluate("y", "x") == 0.0


def test_all_evaluators_satisfy_the_protocol() -> None:
    for evaluator in (
        DefaultPromptEvaluator(),
        ExactMatchEvaluator(),
        ContainsEvaluator(),
        TokenF1Evaluator(),
        LLMJudgeEvaluator(ScriptedLLM()),
    ):
        assert isinstance(evaluator, PromptEvaluator)


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("SCORE: 85", 0.85),
        ("score=40 because it is vague", 0.40),
        ("**Score**: 72", 0.72),
        ("I rate it 30/100.", 0.30),
        ("About 55% right", 0.55),
        ("Rating 9000 for effort; SCORE 12", 0.12),
        ("It was written in 2024 and I give it 64", 0.64),
        ("Score: 150", 1.0),
        ("90", 0.9),
        ("The answer is 100.", 1.0),  # what SmolLM2-135M actually replied once
        ("Score: 85.", 0.85),
        ("version 1.5 of 20", 0.015),
        ("no number here", None),
        ("", None),
    ],
)
def test_parse_judge_score_is_tolerant(reply: str, score: float | None) -> None:
    parsed = parse_judge_score(reply)
    if score is None:
        assert parsed is None
    else:
        assert parsed == pytest.approx(score)


def test_judge_asks_the_model_and_skips_obvious_matches() -> None:
    llm = ScriptedLLM(default="SCORE: 60")
    judge = LLMJudgeEvaluator(llm)
    assert judge.evaluate("Lyon", "Paris") == pytest.approx(0.6)
    assert "Expected answer: Paris" in llm.prompts[0]
    assert "Answer: Lyon" in llm.prompts[0]
    assert llm.calls[0].params == {"temperature": 0.0, "max_tokens": 64}
    assert judge.evaluate("paris.", "Paris") == 1.0
    assert len(llm.calls) == 1


def test_judge_unreadable_reply_uses_fallback_or_zero() -> None:
    assert LLMJudgeEvaluator(ScriptedLLM(default="hmm")).evaluate("Lyon", "Paris") == 0.0
    judge = LLMJudgeEvaluator(ScriptedLLM(default="hmm"), fallback=TokenF1Evaluator())
    assert judge.evaluate("Paris France", "Paris") == pytest.approx(2 / 3)


def test_judge_failure_raises_the_llm_error() -> None:
    judge = LLMJudgeEvaluator(ScriptedLLM([LLMConnectionError("down")]))
    with pytest.raises(LLMConnectionError):
        judge.evaluate("Lyon", "Paris")


# -- LabelEvaluator ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("positive", "positive"),
        ("Negative.", "negative"),
        ("The sentiment of this review is positive.", "positive"),
        ('{"label": "negative"}', "negative"),
        ("positive or negative", None),
        ("It is hard to say.", None),
        ("positively great", None),
        ("", None),
    ],
)
def test_label_of_finds_the_one_label(reply: str, label: str | None) -> None:
    assert LabelEvaluator(["positive", "negative"]).label_of(reply) == label


def test_label_scores_are_accuracy() -> None:
    judge = LabelEvaluator(["positive", "negative"])
    replies = ["positive", "Negative!", "positive or negative", "I think it's positive"]
    expected = ["positive", "positive", "negative", "positive"]
    assert [judge.evaluate(r, e) for r, e in zip(replies, expected, strict=True)] == [
        1.0,
        0.0,
        0.0,
        1.0,
    ]


@pytest.mark.parametrize("labels", [["one"], ["a", "A"], ["x", "!"]])
def test_label_evaluator_rejects_bad_labels(labels: list[str]) -> None:
    with pytest.raises(ConfigError, match="label"):
        LabelEvaluator(labels)
