"""Racing's elimination rule on constructed ties, flips and clear losers.

The rule (``tnsai_eval.optimizer._racing``): drop a challenger only when it
can no longer win, or when a paired one-sided test over at least
``MIN_RACE_CASES`` shared cases says it is worse, with the 5% error rate
spread over the rungs where the test is made; never on a tie.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import (
    ExactMatchEvaluator,
    OptimizationResult,
    PromptOptimizer,
    PromptStrategy,
    TestCase,
    VariantStatus,
)
from tnsai_eval.optimizer._racing import MIN_RACE_CASES, rung_sizes, surely_worse
from tnsai_eval.optimizer._run import example_order
from tnsai_eval.testing import ScriptedLLM

S = PromptStrategy
BOUNDS = ("auto", "sign", "t", "hoeffding")


def numbered(n: int) -> list[TestCase]:
    return [TestCase(f"q{i}", f"a{i}") for i in range(1, n + 1)]


def scripted(reply: Any) -> ScriptedLLM:
    """A model right on case ``n`` when ``reply(who, n)``; ``who`` is "initial" or "concise"."""

    def fn(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return ""  # no rewrite variant
        prompt, case_input = split_message(text)
        number = int(case_input[1:])
        right = reply("concise" if "Be brief" in prompt else "initial", number)
        return f"a{number}" if right else "no idea"

    return ScriptedLLM(fn=fn)


def race(
    reply: Any, n: int, *, seed: int = 0, search: str = "racing", bound: str = "auto"
) -> OptimizationResult:
    """One round of CONCISE against the initial prompt "P", scored 0/1."""
    return PromptOptimizer(
        scripted(reply),
        candidate_strategies=[S.CONCISE],
        evaluator=ExactMatchEvaluator(),
        search=search,
        racing_bound=bound,
        split=None,
        seed=seed,
        concurrency=1,
        max_iterations=1,
        target_score=1.0,
    ).optimize("P", numbered(n))


def concise(result: OptimizationResult) -> Any:
    (variant,) = [v for v in result.variants if v.strategy == "concise"]
    return variant


def test_rungs_start_at_the_minimum_and_grow_by_half() -> None:
    assert MIN_RACE_CASES == 8
    assert rung_sizes(70) == [8, 12, 18, 27, 41, 62, 70]
    assert rung_sizes(20) == [8, 12, 18, 20]
    assert rung_sizes(8) == [8]
    assert rung_sizes(5) == [5]
    assert rung_sizes(0) == []


@pytest.mark.parametrize("bound", BOUNDS)
def test_a_tie_is_never_surely_worse(bound: str) -> None:
    assert not surely_worse([0.0] * 500, bound=bound)  # type: ignore[arg-type]
    # As many flips one way as the other: a tie too, however many.
    assert not surely_worse([-1.0, 1.0] * 200, bound=bound)  # type: ignore[arg-type]
    assert not surely_worse([-0.5, 0.5] * 200, bound=bound)  # type: ignore[arg-type]


@pytest.mark.parametrize("bound", BOUNDS)
def test_nothing_is_surely_worse_before_the_minimum(bound: str) -> None:
    assert not surely_worse([-1.0] * (MIN_RACE_CASES - 1), bound=bound)  # type: ignore[arg-type]


def test_the_sign_test_counts_flips_not_ties() -> None:
    # Behind on 8 flipped cases, 100 ties: p = 2**-8 for the sign test; the
    # mean difference (-0.07) is inside Hoeffding's +-0.26 at 108 cases.
    diffs = [-1.0] * 8 + [0.0] * 100
    assert surely_worse(diffs, bound="sign")
    assert surely_worse(diffs)  # auto: 0/1 scores take the sign test
    assert not surely_worse(diffs, bound="hoeffding")
    # Seven flips one way and one the other: p = 9/256 > 0.025.
    assert not surely_worse([-1.0] * 7 + [1.0] + [0.0] * 100, alpha=0.025)


def test_each_look_gets_only_its_share_of_alpha() -> None:
    six = [-1.0] * 6 + [0.0] * 10  # p = 1/64 = 0.016
    assert surely_worse(six, alpha=0.05)
    assert not surely_worse(six, alpha=0.05 / 4)


@pytest.mark.parametrize(
    "right",
    [
        lambda number: number % 2 == 0,  # both right on the same half of the cases
        # Both right on all but the same one, the first in the racing order:
        # from the first rung on, the challenger can at best tie (0.99), which
        # no rule may drop either.
        lambda number: number != example_order(100, seed=0)[0] + 1,
    ],
    ids=["half", "all-but-one"],
)
def test_a_challenger_that_ties_on_every_case_is_never_dropped(right: Any) -> None:
    result = race(lambda who, number: right(number), 100)
    assert concise(result).status is VariantStatus.SCORED
    assert concise(result).cases_scored == 100
    assert result.history[1].racing_note is None
    assert not result.was_improved  # a tie never replaces the best


def test_balanced_flips_are_a_tie_and_never_dropped() -> None:
    # Right on the same 40 cases; on 60 others each is right where the other is wrong.
    def reply(who: str, number: int) -> bool:
        if number <= 40:
            return True
        return (number % 2 == 0) == (who == "initial")

    result = race(reply, 100)
    assert concise(result).status is VariantStatus.SCORED
    assert concise(result).cases_scored == 100


def test_a_clear_loser_is_dropped_at_the_first_rung_not_before() -> None:
    # The initial prompt is right on 90 of 100 cases (wrong on 10 late in the
    # racing order), CONCISE on none: behind on all 8 flips of the first rung,
    # p = 2**-8 < 0.05 / 7 looks. (It could still reach 0.92 > 0.90, so the
    # test drops it, not the "cannot win" rule.)
    order = example_order(100, seed=1)
    late = {i + 1 for i in order[50:60]}
    result = race(lambda who, number: who == "initial" and number not in late, 100, seed=1)
    loser = concise(result)
    assert loser.status is VariantStatus.DROPPED
    assert loser.cases_scored == MIN_RACE_CASES  # the first rung, and no fewer
    seen = {r.input for r in result.case_results if r.strategy == "concise"}
    assert seen == {f"q{i + 1}" for i in order[:MIN_RACE_CASES]}
    assert result.history[1].racing_note == (
        "racing dropped 1 challenger(s) (1 surely worse by the paired sign test)"
    )
    # Exhaustive search would score it on all 100 cases.
    assert result.calls == 100 + 1 + MIN_RACE_CASES


def test_a_loser_behind_on_few_flips_is_kept_when_looks_share_alpha() -> None:
    # The initial prompt is right on 8 of 40 cases, the first 8 of the racing
    # order; CONCISE is right on 2 of them and wrong everywhere else. After the
    # first rung it is behind on 6 flips and ties on every case after: p =
    # 1/64 at each of the 4 looks, below 0.05 but above 0.05 / 4. It cannot be
    # ruled out as hopeless before the last look either ((2 + 13) / 40 > 0.2).
    order = example_order(40, seed=2)
    first = [i + 1 for i in order[:8]]

    def reply(who: str, number: int) -> bool:
        return number in first and (who == "initial" or number in first[:2])

    result = race(reply, 40, seed=2)
    assert len(rung_sizes(40)) - 1 == 4
    assert concise(result).status is VariantStatus.SCORED
    assert concise(result).cases_scored == 40
    note = result.history[1].racing_note
    assert note is not None
    assert "declined to eliminate 1 challenger(s) behind but not surely worse" in note
    assert "(sign test, alpha 0.05 over 4 look(s) from 8 cases)" in note


def test_a_challenger_that_ties_early_and_wins_later_is_kept() -> None:
    # The defect: racing dropped any challenger not ahead on the first rung.
    n, seed = 40, 4
    order = example_order(n, seed)
    first = {i + 1 for i in order[:MIN_RACE_CASES]}

    def reply(who: str, number: int) -> bool:
        return who == "concise" and number not in first

    racing = race(reply, n, seed=seed)
    exhaustive = race(reply, n, seed=seed, search="exhaustive")
    assert racing.best_prompt == exhaustive.best_prompt == S.CONCISE.apply("P")
    # Behind on no case, ahead on the rest: never dropped, so it costs what exhaustive costs.
    assert racing.calls == exhaustive.calls
    assert concise(racing).status is VariantStatus.SCORED


def test_racing_bound_names_are_checked() -> None:
    with pytest.raises(ConfigError, match="racing_bound must be one of auto, sign, t, hoeffding"):
        PromptOptimizer(scripted(None), racing_bound="bonferroni")


def test_challengers_are_scored_case_by_case_across_each_other() -> None:
    # So that a budget ending mid-rung leaves every challenger with evidence
    # on the same cases: CONCISE and ANSWER_ONLY alternate on one case at a time.
    llm = ScriptedLLM(default="no idea")
    result = PromptOptimizer(
        llm,
        candidate_strategies=[S.CONCISE, S.ANSWER_ONLY],
        evaluator=ExactMatchEvaluator(),
        search="racing",
        rewrite=False,
        split=None,
        concurrency=1,
        max_iterations=1,
        max_calls=20 + 5,
    ).optimize("P", numbered(20))
    order = example_order(20, seed=0)
    sent = [split_message(text) for text in llm.prompts[20:]]
    assert [case for _, case in sent] == [f"q{order[0] + 1}"] * 2 + [f"q{order[1] + 1}"] * 2 + [
        f"q{order[2] + 1}"
    ]
    assert ["Be brief" in prompt for prompt, _ in sent] == [True, False, True, False, True]
    assert result.calls == 25
