"""Chance on the page: the constant-answer baseline, the gain's interval, one meaning of improved.

The scenario of the report behind these tests: on a three-label topic set, a
variant that makes the model answer "sports" to everything wins the search
(a training gain over a starting prompt that names no label) and scores a
third of the held-out cases: exactly what a constant answer scores.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval._util.stats import paired_bootstrap_interval, paired_proportions_interval
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import (
    ConstantBaseline,
    LabelEvaluator,
    PromptOptimizer,
    PromptStrategy,
    TestCase,
)
from tnsai_eval.testing import ScriptedLLM

S = PromptStrategy
LABELS = ("sports", "politics", "technology")
BRIEF = S.CONCISE.apply("Topic?")


def topics(n: int) -> list[TestCase]:
    """``n`` headlines, the three labels in turn (balanced)."""
    return [TestCase(f"headline {i}", LABELS[i % 3]) for i in range(n)]


def says_sports_when_brief(messages: list[Message], params: dict[str, Any]) -> str:
    """The starting prompt names no label; the brief one answers "sports" to everything."""
    text = messages[-1].content
    if text.startswith(REWRITE_MARK):
        return ""
    prompt, _ = split_message(text)
    return "sports" if "Be brief" in prompt else "It is a news headline."


def right_when_brief(messages: list[Message], params: dict[str, Any]) -> str:
    """The brief prompt gets every label right (the label is the input's index mod 3)."""
    text = messages[-1].content
    if text.startswith(REWRITE_MARK):
        return ""
    prompt, case_input = split_message(text)
    if "Be brief" not in prompt:
        return "It is a news headline."
    return LABELS[int(case_input.split()[-1]) % 3]


def run(fn: Any, n: int, **options: Any) -> Any:
    optimizer = PromptOptimizer(
        ScriptedLLM(fn=fn),
        candidate_strategies=[S.CONCISE],
        evaluator=LabelEvaluator(LABELS),
        rewrite=False,
        **options,
    )
    return optimizer.optimize("Topic?", topics(n))


def test_a_constant_answer_winner_is_flagged_and_not_improved() -> None:
    result = run(says_sports_when_brief, 40)
    assert result.best_prompt == BRIEF
    assert result.training_improved  # the search's view: 0.000 -> 0.321
    assert (result.initial_validation_score, result.validation_score) == (0.0, pytest.approx(1 / 3))
    assert result.validation_cases == 12
    baseline = result.constant_baseline
    assert isinstance(baseline, ConstantBaseline)
    assert baseline.label == "sports"
    assert baseline.score == pytest.approx(1 / 3)
    assert baseline.majority_rate == pytest.approx(1 / 3)
    assert baseline.cases == 12
    assert result.chance_flag == "answers 'sports' to 12 of 12: no better than a constant answer"
    assert not result.was_improved
    assert result.verdict == "inconclusive"
    assert result.headline.endswith(
        "p=0.125: inconclusive; constant answer 'sports' 0.333 (majority class 0.333); "
        "answers 'sports' to 12 of 12: no better than a constant answer"
    )


def test_a_significant_gain_by_a_constant_answer_is_still_not_improved() -> None:
    # 90 cases, 27 held out: +9/-0 is significant (p = 0.0039), but the
    # winner only answers "sports", which a constant prompt scores too.
    result = run(says_sports_when_brief, 90)
    assert result.validation_p_value is not None
    assert result.validation_p_value < 0.01
    low, _ = result.gain_interval
    assert low > 0
    assert result.chance_flag is not None
    assert not result.was_improved
    assert result.verdict == "inconclusive"


def test_a_real_gain_beyond_the_constant_answer_is_improved() -> None:
    result = run(right_when_brief, 40)
    assert (result.initial_validation_score, result.validation_score) == (0.0, 1.0)
    assert result.chance_flag is None
    assert result.was_improved
    assert result.verdict == "improved"
    # +12/-0 of 12: Newcombe's interval for the paired gain, at alpha 0.05.
    assert result.gain_interval == pytest.approx(paired_proportions_interval(0, 12, 0, 0))
    assert "gain +1.000, 95% CI [+0.657, +1.000]; +12/-0 cases" in result.headline
    # Against the constant answer ('sports', right on 4 of 12), case by case:
    # +8/-0, p = 0.0078, below alpha.
    assert result.constant_comparison == (8, 0, 0.0078125)
    # The same run at a stricter level: the interval widens; the gain over the
    # starting prompt (+12/-0, p = 0.00049) is still significant, but +8/-0
    # over the constant answer is not at 0.001, so it is not improved.
    strict = run(right_when_brief, 40, alpha=0.001)
    assert strict.gain_interval[0] < result.gain_interval[0]
    assert "99.9% CI" in strict.headline
    assert strict.validation_p_value is not None
    assert strict.validation_p_value < 0.001
    assert strict.chance_flag == (
        "not shown better than a constant answer ('sports' 0.333: +8/-0 cases, p=0.00781)"
    )
    assert not strict.was_improved


def test_a_gain_short_of_alpha_is_inconclusive() -> None:
    # 10 cases, 3 held out: +3/-0 has p = 0.25 at best.
    result = run(right_when_brief, 10)
    assert result.validation_p_value == 0.25
    assert result.verdict == "inconclusive"
    assert not result.was_improved
    assert result.training_improved


def test_no_held_out_split_is_never_improved() -> None:
    result = run(right_when_brief, 40, split=None)
    assert result.training_improved
    assert not result.was_improved
    assert result.verdict == "inconclusive"
    assert result.constant_baseline is None
    assert result.gain_interval is None


def test_the_unchanged_starting_prompt_is_unchanged() -> None:
    llm = ScriptedLLM(default="It is a news headline.")
    result = PromptOptimizer(
        llm, candidate_strategies=[S.CONCISE], evaluator=LabelEvaluator(LABELS), rewrite=False
    ).optimize("Topic?", topics(40))
    assert result.best_variant == 0
    assert result.verdict == "unchanged"


def test_the_confusion_table_counts_expected_by_answered() -> None:
    result = run(says_sports_when_brief, 40)
    table = result.confusion()
    assert list(table.columns) == [*LABELS, "(none)"]
    assert table.index.names == ["prompt", "expected"]
    # Held out: 12 cases, 4 per label. The initial prompt names no label ...
    assert table.loc[("initial", "sports")].tolist() == [0, 0, 0, 4]
    # ... the best answers "sports" to all of them.
    for label in LABELS:
        assert table.loc[("best", label)].tolist() == [4, 0, 0, 0]
    frame = result.held_out_dataframe()
    assert frame["what"].tolist() == [
        "initial", "best", "gain", "constant answer", "majority class"
    ]  # fmt: skip
    assert frame.set_index("what").loc["constant answer", "answer"] == "sports"
    assert json.loads(json.dumps(result.held_out_dict()))["constant_baseline"]["label"] == "sports"


def test_confusion_needs_labels() -> None:
    result = PromptOptimizer(
        ScriptedLLM(default="x"), candidate_strategies=[S.CONCISE], rewrite=False
    ).optimize("P", [TestCase(f"q{i}", "x") for i in range(5)])
    assert result.constant_baseline is None
    with pytest.raises(ConfigError, match="labels"):
        result.confusion()


def test_the_constant_answer_is_chosen_on_selection_cases_only() -> None:
    # Selection is mostly "politics"; the held-out cases mostly "sports": the
    # baseline answers what selection taught, scored where it was not chosen.
    selection = [TestCase(f"s{i}", "politics" if i % 4 else "sports") for i in range(20)]
    held_out = [TestCase(f"h{i}", "sports" if i % 4 else "politics") for i in range(8)]
    result = PromptOptimizer(
        ScriptedLLM(default="politics"),
        candidate_strategies=[S.CONCISE],
        labels=["sports", "politics"],
        rewrite=False,
    ).optimize("P", selection, validation_cases=held_out)
    baseline = result.constant_baseline
    assert baseline is not None
    assert (baseline.label, baseline.selection_score, baseline.score) == ("politics", 0.75, 0.25)
    assert (baseline.majority_label, baseline.majority_rate) == ("sports", 0.75)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, True, "0.05"])
def test_a_bad_alpha_is_a_config_error(alpha: object) -> None:
    with pytest.raises(ConfigError, match="alpha"):
        PromptOptimizer(ScriptedLLM(), alpha=alpha)


def test_partial_credit_gets_a_seeded_paired_bootstrap() -> None:
    def half_right(messages: list[Message], params: dict[str, Any]) -> str:
        prompt, case_input = split_message(messages[-1].content)
        if "Be brief" not in prompt:
            return "no idea"
        # Right on some cases, half right on others: differences with spread.
        return f"a{case_input[1:]}" + (" maybe" if int(case_input[1:]) % 2 else "")

    cases = [TestCase(f"q{i}", f"a{i}") for i in range(30)]
    optimizer = PromptOptimizer(
        ScriptedLLM(fn=half_right), candidate_strategies=[S.CONCISE], rewrite=False, seed=3
    )
    first, again = optimizer.optimize("P", cases), optimizer.optimize("P", cases)
    assert first.gain_interval == again.gain_interval
    rows = {
        (r.variant, r.index): float(r.score or 0.0)
        for r in first.case_results
        if r.split == "validation"
    }
    diffs = [rows[(first.best_variant, c)] - rows[(0, c)] for c in range(first.validation_cases)]
    assert len(set(diffs)) > 1  # partial credit with some spread: a real bootstrap
    assert first.gain_interval == paired_bootstrap_interval(diffs, alpha=0.05, seed=3)


def test_newcombe_matches_the_published_example() -> None:
    # Fagerland, Lydersen and Laake, the paired table (59, 6; 16, 80): -0.0621 [-0.1186, -0.0046].
    low, high = paired_proportions_interval(59, 6, 16, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)
    # Swapping the two prompts mirrors the interval.
    low2, high2 = paired_proportions_interval(59, 16, 6, 80)
    assert (low2, high2) == pytest.approx((-high, -low))
    with pytest.raises(ValueError, match="paired counts"):
        paired_proportions_interval(0, 0, 0, 0)


def test_beating_the_constant_answer_by_four_flips_of_thirty_is_not_improved() -> None:
    # 30 held-out cases, 20 "yes" and 10 "no"; selection is mostly "yes" too,
    # so the constant answer is "yes" (0.667 held out). The brief prompt gets
    # every "yes" right and 4 of the 10 "no": 0.800, and 26 of its 30 replies
    # say "yes" (87%, under the 90% that marks a constant answer). Against
    # the starting prompt (no label) that is +24/-0; against the constant
    # answer, case by case, +4/-0, p = 0.125: not shown better than it. (A
    # point comparison, 0.800 > 0.667, called this improved.)
    selection = [TestCase(f"s{i}", "yes" if i % 4 else "no") for i in range(20)]
    held_out = [TestCase(f"h{i}", "yes" if i < 20 else "no") for i in range(30)]
    knows_no = {"h20", "h21", "h22", "h23"} | {f"s{i}" for i in range(0, 20, 4)}

    def answer(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return ""
        prompt, case_input = split_message(text)
        if "Be brief" not in prompt:
            return "It depends."
        return "no" if case_input in knows_no else "yes"

    result = PromptOptimizer(
        ScriptedLLM(fn=answer),
        candidate_strategies=[S.CONCISE],
        evaluator=LabelEvaluator(["yes", "no"]),
        rewrite=False,
    ).optimize("Is it so?", selection, validation_cases=held_out)
    assert result.best_prompt == S.CONCISE.apply("Is it so?")
    assert (result.initial_validation_score, result.validation_score) == (0.0, 0.8)
    assert (result.validation_better, result.validation_worse) == (24, 0)
    assert result.validation_p_value is not None
    assert result.validation_p_value < 1e-6
    baseline = result.constant_baseline
    assert baseline is not None
    assert baseline.label == "yes"
    assert baseline.score == pytest.approx(2 / 3)
    assert result.constant_comparison == (4, 0, 0.125)
    assert result.chance_flag == (
        "not shown better than a constant answer ('yes' 0.667: +4/-0 cases, p=0.125)"
    )
    assert not result.was_improved
    assert result.verdict == "inconclusive"
    assert result.held_out_dict()["constant_comparison"] == [4, 0, 0.125]


def test_the_headline_counts_the_cases_its_means_are_over() -> None:
    # One held-out call fails after its retries for both prompts: the means,
    # the flips and the headline's count are all over the other 11 cases.
    def answer(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return ""
        prompt, case_input = split_message(text)
        if case_input == "h3":
            raise RuntimeError("the server gave up on this one")
        return "yes" if "Be brief" in prompt else "It depends."

    selection = [TestCase(f"s{i}", "yes") for i in range(10)]
    held_out = [TestCase(f"h{i}", "yes") for i in range(12)]
    result = PromptOptimizer(
        ScriptedLLM(fn=answer),
        candidate_strategies=[S.CONCISE],
        evaluator=LabelEvaluator(["yes", "no"]),
        rewrite=False,
    ).optimize("Is it so?", selection, validation_cases=held_out)
    assert (result.validation_cases, result.validation_scored) == (12, 11)
    assert (result.initial_validation_score, result.validation_score) == (0.0, 1.0)
    assert (result.validation_better, result.validation_worse) == (11, 0)
    assert result.headline.startswith(
        "held-out accuracy 0.000 -> 1.000 on 11 cases (1 of 12 left out: a call failed): "
        "gain +1.000"
    )
    assert result.held_out_dataframe().set_index("what").loc["best", "cases"] == 11
