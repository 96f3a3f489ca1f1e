"""Held-out by default: the seeded split, no leakage into selection or demos,
the paired test in the result, and ``split=None`` / explicit validation."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval._util.stats import sign_test
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import PromptOptimizer, PromptStrategy, StopReason
from tnsai_eval.scoring import ContainsEvaluator, TestCase, split_cases
from tnsai_eval.testing import ScriptedLLM

S = PromptStrategy
BRIEF = S.CONCISE.apply("P")


def labelled(n: int) -> list[TestCase]:
    return [TestCase(f"review {i}", "positive" if i % 4 else "negative") for i in range(n)]


def right_when_brief(messages: list[Message], params: dict[str, Any]) -> str:
    text = messages[-1].content
    if text.startswith(REWRITE_MARK):
        return "Say the answer."
    prompt, case_input = split_message(text)
    return f"a{case_input[1:]}" if "Be brief" in prompt else "no idea"


def numbered(n: int) -> list[TestCase]:
    return [TestCase(f"q{i}", f"a{i}") for i in range(1, n + 1)]


def test_the_split_is_seeded_stratified_and_disjoint() -> None:
    cases = labelled(40)  # 30 positive, 10 negative
    selection, held_out = split_cases(cases, 0.3, seed=0)
    assert (len(selection), len(held_out)) == (28, 12)
    assert Counter(c.expected for c in held_out) == {"positive": 9, "negative": 3}
    assert not {c.input for c in selection} & {c.input for c in held_out}
    assert split_cases(cases, 0.3, seed=0) == (selection, held_out)
    assert split_cases(cases, 0.3, seed=1) != (selection, held_out)


def test_a_repeated_input_stays_on_one_side() -> None:
    cases = [*numbered(10), TestCase("q3", "a3 again")]
    selection, held_out = split_cases(cases, 0.5, seed=2)
    sides = {c.input for c in selection}, {c.input for c in held_out}
    assert not sides[0] & sides[1]
    assert len(selection) + len(held_out) == 11


def test_too_few_cases_hold_nothing_out() -> None:
    assert split_cases(numbered(1), 0.3, seed=0) == (numbered(1), [])
    assert split_cases(numbered(3), 0.1, seed=0) == (numbered(3), [])


@pytest.mark.parametrize("split", [0, 1, 1.5, -0.1, True, "0.3"])
def test_a_bad_split_is_a_config_error(split: object) -> None:
    with pytest.raises(ConfigError, match="split must be the held-out share"):
        PromptOptimizer(ScriptedLLM(), split=split)


@pytest.mark.parametrize("search", ["exhaustive", "racing", "halving"])
def test_no_held_out_case_is_scored_during_selection_or_shown_as_a_demo(search: str) -> None:
    cases = numbered(20)
    llm = ScriptedLLM(fn=right_when_brief)
    optimizer = PromptOptimizer(
        llm,
        search=search,
        candidate_strategies=[S.FEW_SHOT, S.CONCISE],
        demo_sets=4,
        few_shot_examples=3,
        concurrency=1,
        max_iterations=2,
        target_score=1.0,
    )
    _selection, held_out = optimizer.split_cases(cases)
    result = optimizer.optimize("P", cases)
    held_inputs = {c.input for c in held_out}
    assert len(held_out) == 6 == result.validation_cases
    assert result.selection_cases == 14
    validation_calls = 0
    for call in llm.calls:
        text = "\n".join(m.content for m in call.messages)
        leaked = {i for i in held_inputs if f"\n{i}\n" in f"\n{text}\n" or f": {i}\n" in text}
        if not leaked:
            continue
        # Only the final validation calls may carry a held-out input, alone,
        # with the initial or the best prompt and no demo turn.
        validation_calls += 1
        prompt, case_input = split_message(call.messages[-1].content)
        assert leaked == {case_input}
        assert len(call.messages) == 1
        assert prompt in ("P", result.best_prompt)
    assert validation_calls == 2 * 6
    train = [r for r in result.case_results if r.split == "train"]
    assert not {r.input for r in train} & held_inputs
    assert {r.input for r in result.case_results if r.split == "validation"} == held_inputs
    for variant in result.variants:
        assert not {d.input for d in variant.demos} & held_inputs


def test_the_result_reports_held_out_scores_and_the_paired_test() -> None:
    optimizer = PromptOptimizer(
        ScriptedLLM(fn=right_when_brief),
        candidate_strategies=[S.CONCISE],
        rewrite=False,
        concurrency=1,
    )
    result = optimizer.optimize("P", numbered(20))
    assert result.best_prompt == BRIEF
    assert result.initial_validation_score == pytest.approx(0.1)
    assert result.validation_score == 1.0
    assert (result.validation_better, result.validation_worse) == (6, 0)
    assert result.validation_p_value == sign_test(6, 0) == pytest.approx(0.03125)
    assert result.validation_interval == (1.0, 1.0)
    # Partial credit: the gain's interval is a paired bootstrap, here of six
    # equal differences (0.1 -> 1.0 on each), so it is that difference.
    assert result.gain_interval == pytest.approx((0.9, 0.9))
    assert result.headline == (
        "held-out 0.100 -> 1.000 on 6 cases: gain +0.900, 95% CI [+0.900, +0.900]; "
        "+6/-0 cases, p=0.0312: improved"
    )
    assert result.was_improved
    assert result.verdict == "improved"
    # Chosen on the selection cases only: the training score is over 14.
    assert result.score == 1.0
    assert sum(1 for r in result.case_results if r.split == "train" and r.variant == 0) == 14


def test_an_unchanged_prompt_has_no_flips_and_p_one() -> None:
    result = PromptOptimizer(
        ScriptedLLM(default="no idea"), candidate_strategies=[S.CONCISE], rewrite=False
    ).optimize("P", numbered(10))
    assert result.best_variant == 0
    assert (result.validation_better, result.validation_worse) == (0, 0)
    assert result.validation_p_value == 1.0
    assert result.headline.endswith("+0/-0 cases, p=1: unchanged")
    assert result.verdict == "unchanged"
    assert not result.was_improved


def test_split_none_keeps_the_old_behaviour() -> None:
    llm = ScriptedLLM(fn=right_when_brief)
    result = PromptOptimizer(
        llm, candidate_strategies=[S.CONCISE], rewrite=False, split=None
    ).optimize("P", numbered(10))
    assert (result.selection_cases, result.validation_cases) == (10, 0)
    assert result.validation_score is None
    assert result.validation_p_value is None
    assert all(r.split == "train" for r in result.case_results)
    assert result.headline == "training 0.100 -> 1.000 on 10 cases (nothing held out)"


def test_an_accuracy_says_so_in_the_headline() -> None:
    from tnsai_eval.scoring import ExactMatchEvaluator

    llm = ScriptedLLM(fn=right_when_brief)
    exact = PromptOptimizer(llm, candidate_strategies=[S.CONCISE], rewrite=False,
                            evaluator=ExactMatchEvaluator())  # fmt: skip
    result = exact.optimize("P", numbered(10))
    assert result.metric == "accuracy"
    assert result.headline.startswith("held-out accuracy ")
    unsplit = exact.with_options(split=None).optimize("P", numbered(10))
    assert unsplit.headline.startswith("training accuracy ")
    # The default evaluator's means are scores, not accuracies.
    default = PromptOptimizer(llm, candidate_strategies=[S.CONCISE], rewrite=False)
    assert default.optimize("P", numbered(10)).headline.startswith("held-out 0.")


def test_explicit_validation_cases_mean_selection_on_every_case() -> None:
    result = PromptOptimizer(
        ScriptedLLM(fn=right_when_brief), candidate_strategies=[S.CONCISE], rewrite=False
    ).optimize("P", numbered(10), validation_cases=[TestCase("q50", "a50")])
    assert (result.selection_cases, result.validation_cases) == (10, 1)
    assert result.validation_score == 1.0
    assert (result.validation_better, result.validation_worse) == (1, 0)


def test_the_held_out_check_is_set_aside_before_the_search_spends_the_budget() -> None:
    llm = ScriptedLLM(fn=right_when_brief)
    result = PromptOptimizer(
        llm,
        candidate_strategies=[S.CONCISE],
        rewrite=False,
        concurrency=1,
        max_calls=14 + 14 + 3,
    ).optimize("P", numbered(20))
    # 12 of the 31 calls (6 held-out cases, twice) are kept for the check: the
    # search gets 19, so round 1 is cut after 5 cases. The starting prompt is
    # still the best, so its check needs 6 calls: the other 6 go back to the
    # search (CONCISE gets 11 cases, still short of 14), and the check runs.
    assert result.stop_reason is StopReason.MAX_CALLS
    assert [v.cases_scored for v in result.variants] == [14, 11]
    assert result.validation_score is not None
    assert result.validation_p_value is not None
    assert not result.headline.startswith("held-out score incomplete")
    assert len(llm.calls) == result.calls == 14 + 11 + 6


def test_contains_evaluator_and_the_split_together() -> None:
    # A smoke test of a label dataset: stratified held-out of each label.
    cases = labelled(20)
    result = PromptOptimizer(
        ScriptedLLM(default="positive"),
        evaluator=ContainsEvaluator(),
        candidate_strategies=[S.CONCISE],
        rewrite=False,
    ).optimize("Label it.", cases)
    held = [r for r in result.case_results if r.split == "validation"]
    assert Counter(r.expected for r in held) == {"positive": 4, "negative": 2}
