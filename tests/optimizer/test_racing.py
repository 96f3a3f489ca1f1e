"""Racing's elimination rule on constructed ties, flips and clear losers.

The rule (``tnsai_eval.optimizer._racing``): drop a challenger only when it
can no longer win, or when a paired one-sided test over at least
``MIN_RACE_CASES`` shared cases says it is worse, with the 5% error rate
spread over the rungs where the test is made (the exact level for the
sign test, Pocock's for t, Bonferroni's for Hoeffding's bound); never on a
tie.
"""

from __future__ import annotations

import io
import random
import re
from collections.abc import Callable
from contextlib import redirect_stdout
from statistics import NormalDist
from typing import Any

import pytest

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval._util.stats import sequential_level, sequential_sign_level, sign_test
from tnsai_eval.cli._optimize import _print_report
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import (
    OptimizationResult,
    PromptOptimizer,
    PromptStrategy,
    StopReason,
    VariantStatus,
)
from tnsai_eval.optimizer._racing import (
    MIN_RACE_CASES,
    RACING_ALPHA,
    RacingBound,
    look_level,
    rung_sizes,
    surely_worse,
)
from tnsai_eval.optimizer._run import example_order
from tnsai_eval.scoring import ExactMatchEvaluator, TestCase
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


@pytest.mark.parametrize(("looks", "pocock"), [(2, 2.178), (3, 2.289), (4, 2.361), (5, 2.413)])
def test_each_look_gets_pococks_level_for_the_schedule(looks: int, pocock: float) -> None:
    # Pocock's published constants for equally spaced looks, two-sided 5%:
    # one side at 2.5% (crossing both bounds is negligible at these levels).
    sizes = tuple(10 * (k + 1) for k in range(looks))
    level = sequential_level(sizes, 0.025)
    assert abs(NormalDist().inv_cdf(1 - level) - pocock) < 0.005
    # Always between one look's level and Bonferroni's.
    assert 0.025 / looks < level < 0.025


def _false_drop_rate(
    n: int, test: RacingBound, draw: Callable[[random.Random], float], level: float
) -> float:
    """How often looks at racing's rungs drop a racer exactly as good as the leader."""
    rng, looks, runs = random.Random(0), rung_sizes(n)[:-1], 2000
    dropped = 0
    for _ in range(runs):
        diffs = [draw(rng) for _ in range(n)]
        dropped += any(surely_worse(diffs[:k], bound=test, alpha=level) for k in looks)
    return dropped / runs


def test_looking_after_every_rung_drops_an_equal_racer_about_alpha_of_the_time_by_t() -> None:
    # Continuous scores: Pocock's level is asymptotic and t an approximation
    # at 8-12 cases; 20,000 runs measured 5.5%.
    n, draw = 70, lambda rng: rng.random() - rng.random()
    rate = _false_drop_rate(n, "t", draw, look_level(rung_sizes(n)[:-1], "t"))
    assert rate <= 0.065
    # The simulation can tell: the unadjusted 5% at every look drops far more often.
    assert _false_drop_rate(n, "t", draw, RACING_ALPHA) > 2 * rate


def _sign_false_drop_rate(looks: tuple[int, ...], level: float, flip_share: float) -> float:
    """Like ``_false_drop_rate`` for the sign test, 100,000 runs at once (numpy).

    Each case flips with probability ``flip_share``, either way alike. The
    p-values come from ``sign_test`` itself, not from the dynamic program
    that chose the level.
    """
    import numpy as np

    runs, n = 100_000, looks[-1]
    rng = np.random.default_rng(0)
    flips = rng.random((runs, n), dtype=np.float32) < flip_share
    wins = flips & (rng.random((runs, n), dtype=np.float32) < 0.5)
    at = np.array(looks) - 1
    flipped = flips.cumsum(axis=1, dtype=np.int16)[:, at]
    won = wins.cumsum(axis=1, dtype=np.int16)[:, at]
    p_value = np.full((n + 1, n + 1), 2.0)  # 2.0: ahead or level, never dropped
    for m in range(n + 1):
        for b in range((m + 1) // 2):
            p_value[m, b] = sign_test(b, m - b, alternative="less")
    return float((p_value[flipped, won] <= level).any(axis=1).mean())


def test_the_sign_tests_exact_level_drops_an_equal_racer_at_most_alpha_of_the_time() -> None:
    # Racing's six looks at 70 cases. The level (0.0244) is the largest p-value
    # the dynamic program found to keep false drops at or below 5% for every
    # share of flipped cases; 100,000 runs (standard error 0.0007) confirm it
    # at several shares, the worst near 0.9.
    looks = tuple(rung_sizes(70)[:-1])
    level = look_level(looks, "sign")
    assert level == sequential_sign_level(looks)
    assert round(level, 4) == 0.0244
    rates = {share: _sign_false_drop_rate(looks, level, share) for share in (0.4, 0.9, 1.0)}
    assert all(rate <= RACING_ALPHA + 0.0021 for rate in rates.values()), rates
    # It spends nearly all of the 5%: at Pocock's level (0.014), which racing
    # used before, the same runs drop only 2.9% at worst, and at 5% per look 10%.
    assert rates[0.9] >= 0.045, rates
    assert _sign_false_drop_rate(looks, sequential_level(looks), 0.9) < 0.03
    assert _sign_false_drop_rate(looks, RACING_ALPHA, 0.9) > 0.09


def test_the_sign_tests_exact_level_is_a_p_value_it_can_reach() -> None:
    # Comparing a p-value with `<=` against the level is then exact.
    looks = tuple(rung_sizes(40)[:-1])
    level = sequential_sign_level(looks)
    reachable = {
        sign_test(b, m - b, alternative="less") for m in range(1, 28) for b in range(m // 2 + 1)
    }
    assert level in reachable
    assert round(level, 4) == 0.0327  # Pocock's: 0.0198
    # One look needs no adjustment; beyond 100 cases, Pocock's level.
    assert sequential_sign_level((8,)) == 0.05
    assert sequential_sign_level((8, 12, 18, 27, 41, 62, 93, 140)) == sequential_level(
        (8, 12, 18, 27, 41, 62, 93, 140)
    )


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
        "racing dropped 1 challenger(s) (1 surely worse than the leader by the paired sign test)"
    )
    # Exhaustive search would score it on all 100 cases.
    assert result.calls == 100 + 1 + MIN_RACE_CASES


def _behind_after_the_first_rung(right: int, *, ahead: bool = False) -> OptimizationResult:
    """40 cases; "P" right on the first 8 of the racing order, CONCISE on ``right`` of them.

    With ``ahead``, "P" is wrong on the last of those 8 and CONCISE right on it.
    """
    order = example_order(40, seed=2)
    first = [i + 1 for i in order[:8]]

    def reply(who: str, number: int) -> bool:
        if ahead and number == first[-1]:
            return who == "concise"
        return number in first and (who == "initial" or number in first[:right])

    return race(reply, 40, seed=2)


def test_a_loser_behind_on_few_flips_is_kept_when_looks_share_alpha() -> None:
    # The initial prompt is right on 7 of 40 cases, 7 of the first 8 of the
    # racing order; CONCISE is right on none of them but on the eighth, and
    # wrong everywhere else. After the first rung it is behind on 7 flips and
    # ahead on 1, and ties on every case after: p = 9/256 = 0.035 at each of
    # the 4 looks, below 0.05 but above the level each look gets (0.0327,
    # the sign test's exact level for the schedule). It cannot be ruled out as
    # hopeless before the last look either ((1 + 32) / 40 > 7 / 40).
    result = _behind_after_the_first_rung(0, ahead=True)
    assert len(rung_sizes(40)) - 1 == 4
    assert concise(result).status is VariantStatus.SCORED
    assert concise(result).cases_scored == 40
    note = result.history[1].racing_note
    assert note is not None
    assert "declined to eliminate 1 challenger(s) behind the leader but not surely worse" in note
    assert "(sign test, alpha 0.05 over 4 look(s) from 8 cases, 0.0327 each)" in note


@pytest.mark.parametrize(
    "right",
    [
        # Behind on 6 flips: p = 1/64 = 0.0156, above Bonferroni's 0.05 / 4 = 0.0125.
        2,
        # Behind on 5 flips: p = 1/32 = 0.031, above Pocock's 0.0198 too.
        3,
    ],
    ids=["above-bonferroni", "above-pocock"],
)
def test_a_loser_below_the_exact_level_is_dropped_at_the_first_rung(right: int) -> None:
    # As above, but CONCISE is right on `right` of the first 8 and ahead on
    # none. The sign test's exact level for the 4 looks of 40 cases (0.0327)
    # drops it there; the looser splits racing used before kept it to the
    # end. It is not hopeless ((3 + 32) / 40 > 0.2): the test drops it.
    result = _behind_after_the_first_rung(right)
    assert concise(result).status is VariantStatus.DROPPED
    assert concise(result).cases_scored == 8
    assert result.history[1].racing_note == (
        "racing dropped 1 challenger(s) (1 surely worse than the leader by the paired sign test)"
    )


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
    # Behind on no case, ahead on the rest: never dropped, scored on every case.
    assert concise(racing).status is VariantStatus.SCORED
    assert concise(racing).cases_scored == n
    # The starting prompt (right on no case) races too: it ties on the first
    # rung, then is behind on 4 flips of 12 (p = 1/16, kept) and on 10 of 18
    # (p = 2**-10 < 0.05 / 4 looks): dropped there, so racing costs less.
    initial = racing.variants[0]
    assert initial.status is VariantStatus.DROPPED
    assert initial.cases_scored == 18
    assert racing.calls == 18 + 1 + n == exhaustive.calls - (n - 18)


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
        max_calls=8 + 5,
    ).optimize("P", numbered(20))
    order = example_order(20, seed=0)
    # The starting prompt "P" was scored on the first rung (8 cases) before the round.
    assert [split_message(text)[1] for text in llm.prompts[:8]] == [f"q{i + 1}" for i in order[:8]]
    sent = [split_message(text) for text in llm.prompts[8:]]
    assert [case for _, case in sent] == [f"q{order[0] + 1}"] * 2 + [f"q{order[1] + 1}"] * 2 + [
        f"q{order[2] + 1}"
    ]
    assert ["Be brief" in prompt for prompt, _ in sent] == [True, False, True, False, True]
    assert result.calls == 13


# -- the starting prompt races too ----------------------------------------------------


def who_of(prompt: str) -> str:
    if "Be brief" in prompt:
        return "concise"
    if "only the answer" in prompt:
        return "answer_only"
    return "initial"


def race_three(
    right: Any, n: int, *, search: str = "racing", split: float | None = None, **options: Any
) -> tuple[OptimizationResult, ScriptedLLM]:
    """One round of CONCISE and ANSWER_ONLY against "P", right on case n when ``right(who, n)``."""

    def fn(messages: list[Message], params: dict[str, Any]) -> str:
        prompt, case_input = split_message(messages[-1].content)
        number = int(case_input[1:])
        return f"a{number}" if right(who_of(prompt), number) else "no idea"

    llm = ScriptedLLM(fn=fn)
    settings: dict[str, Any] = {
        "candidate_strategies": [S.CONCISE, S.ANSWER_ONLY],
        "evaluator": ExactMatchEvaluator(),
        "rewrite": False,
        "search": search,
        "split": split,
        "concurrency": 1,
        "max_iterations": 1,
        "target_score": 1.0,
    }
    settings.update(options)
    return PromptOptimizer(llm, **settings).optimize("P", numbered(n)), llm


def beats_a_bad_start(n: int) -> Any:
    """The starting prompt is right on no case; CONCISE on all but ten late in the
    racing order (0.9); ANSWER_ONLY on three cases in four (0.75)."""
    late = {i + 1 for i in example_order(n, seed=0)[n // 2 : n // 2 + 10]}

    def right(who: str, number: int) -> bool:
        if who == "concise":
            return number not in late
        return who == "answer_only" and number % 4 != 0

    return right


def test_a_bad_starting_prompt_is_dropped_when_every_challenger_beats_it() -> None:
    # The defect: racing compared challengers only with the starting prompt,
    # scored on every case first, so when every challenger beat it nothing was
    # dropped and racing cost what exhaustive search costs.
    racing, llm = race_three(beats_a_bad_start(100), 100)
    exhaustive, _ = race_three(beats_a_bad_start(100), 100, search="exhaustive")
    assert racing.best_prompt == exhaustive.best_prompt == S.CONCISE.apply("P")
    assert racing.score == exhaustive.score == 0.9
    initial = racing.variants[0]
    # Behind CONCISE (the leader) on all 8 flips of the first rung: p = 2**-8
    # < 0.05 / 7 looks. Scored on those 8 cases only, before the round.
    assert initial.status is VariantStatus.DROPPED
    assert (initial.cases_scored, initial.score, initial.partial_score) == (8, None, 0.0)
    assert racing.history[0].racing_note == (
        "racing scored the starting prompt on the first 8 of 100 selection cases; "
        "it races with the challengers of round 1"
    )
    note = racing.history[1].racing_note
    assert note is not None
    assert note.startswith("racing dropped the starting prompt and 1 ")
    assert racing.variants[2].status is VariantStatus.DROPPED  # ANSWER_ONLY, behind CONCISE
    assert racing.calls == len(llm.calls) < 0.6 * exhaustive.calls
    assert exhaustive.calls == 300
    # The training figures say the starting prompt's mean is over 8 cases only.
    assert (racing.initial_cases, exhaustive.initial_cases) == (8, 100)
    assert racing.training_change == "0.000 (on 8 of 100 cases) -> 0.900"
    assert racing.training_improved
    # What racing saved, counted against what exhaustive search spent.
    saved = exhaustive.calls - racing.calls
    assert racing.racing_report == f"racing saved {saved} of 300 requests ({saved / 300:.0%})"
    assert exhaustive.racing_report is None
    assert racing.best_variant == 1
    out = io.StringIO()
    with redirect_stdout(out):
        _print_report(racing)
    report = out.getvalue()
    assert "training accuracy 0.000 (on 8 of 100 cases) -> 0.900 (training gain)" in report
    assert re.search(r"\n +\d+ +0\.000~ +8 +0 +initial +P\n", report)


def test_a_dropped_starting_prompt_still_gets_its_held_out_score() -> None:
    result, llm = race_three(beats_a_bad_start(100), 100, split=0.3)
    assert result.variants[0].status is VariantStatus.DROPPED
    assert (result.selection_cases, result.validation_cases) == (70, 30)
    held = [r for r in result.case_results if r.split == "validation"]
    assert sorted(r.variant for r in held) == [0] * 30 + [result.best_variant] * 30
    assert result.initial_validation_score == 0.0
    right = beats_a_bad_start(100)
    best = [r for r in held if r.variant == result.best_variant]
    assert result.validation_score == sum(right("concise", int(r.input[1:])) for r in best) / 30
    assert result.validation_better == sum(r.score == 1.0 for r in best)
    assert result.calls == len(llm.calls)


@pytest.mark.parametrize(
    "right",
    [
        # CONCISE and ANSWER_ONLY right on the same cases: a tie on every case.
        lambda who, number: who != "initial" and number % 3 != 0,
        # Right on the same 40; on 60 others each right where the other is wrong.
        lambda who, number: (
            who != "initial" and (number <= 40 or (number % 2 == 0) == (who == "concise"))
        ),
    ],
    ids=["every-case", "balanced-flips"],
)
def test_a_challenger_that_ties_the_leader_is_never_dropped(right: Any) -> None:
    racing, _ = race_three(right, 100)
    exhaustive, _ = race_three(right, 100, search="exhaustive")
    concise_, answer_only = racing.variants[1:]
    assert concise_.status is answer_only.status is VariantStatus.SCORED
    assert concise_.cases_scored == answer_only.cases_scored == 100
    assert concise_.score == answer_only.score
    # The starting prompt, right on no case, is dropped; of the tied two the
    # earlier wins, as in exhaustive search.
    assert racing.variants[0].status is VariantStatus.DROPPED
    assert racing.best_prompt == exhaustive.best_prompt == S.CONCISE.apply("P")
    assert racing.calls < exhaustive.calls


def test_a_starting_prompt_that_ties_the_best_challenger_is_never_dropped() -> None:
    # "P" and CONCISE right on the same 90 cases; ANSWER_ONLY on every other one.
    def right(who: str, number: int) -> bool:
        return number % 10 != 7 if who != "answer_only" else number % 2 == 0

    racing, _ = race_three(right, 100)
    initial, concise_, answer_only = racing.variants
    assert initial.status is concise_.status is VariantStatus.SCORED
    assert initial.cases_scored == concise_.cases_scored == 100
    assert answer_only.status is VariantStatus.DROPPED
    assert racing.best_variant == 0
    assert not racing.was_improved
    assert racing.history[1].racing_note is not None
    assert "starting prompt" not in racing.history[1].racing_note
    assert racing.initial_cases == 100
    assert racing.training_change == "0.900 -> 0.900"


def test_a_starting_prompt_right_on_the_first_rung_has_not_reached_the_target() -> None:
    # Right on the first 8 cases of the racing order only: 1.0 there is no final
    # score, so the round runs, and CONCISE (right everywhere) wins.
    first = {i + 1 for i in example_order(40, seed=0)[:8]}
    result, _ = race_three(lambda who, number: who == "concise" or number in first, 40)
    assert (result.rounds, len(result.history)) == (1, 2)
    assert result.stop_reason is StopReason.TARGET_REACHED  # by CONCISE, after the round
    assert result.best_prompt == S.CONCISE.apply("P")
    assert result.score == 1.0
    assert result.variants[0].status is VariantStatus.DROPPED


def test_a_starting_prompt_at_the_target_stops_the_run_as_exhaustive_search_does() -> None:
    # Right everywhere: 1.0 on the first rung is at the target, so it is
    # scored on every case before any round, and the run stops there, with
    # the calls exhaustive search makes (it once raced two challengers first).
    runs = {
        search: race_three(lambda who, number: who == "initial", 40, search=search)[0]
        for search in ("racing", "exhaustive")
    }
    for result in runs.values():
        assert (result.rounds, result.stop_reason) == (0, StopReason.TARGET_REACHED)
        assert (result.calls, result.score, result.best_prompt) == (40, 1.0, "P")
        assert result.initial_cases == 40


def test_a_starting_prompt_that_leads_alone_is_scored_on_every_case_at_once() -> None:
    # "P" is right on every case but the second of the racing order (7 of 8 on
    # the first rung: below the target, so the round runs); CONCISE on all but
    # the first two, ANSWER_ONLY on the first and third only. After the first
    # rung "P" leads alone (ANSWER_ONLY, behind on 5 flips, p = 2**-5, is not
    # yet surely worse at 0.05 over 7 looks, 0.0192 each), so it is scored on
    # the rest of its cases with the second rung; its complete 0.99 then
    # shows that neither challenger (at best 0.98 and 0.90) can win.
    order = example_order(100, seed=0)
    wrong = {"initial": {order[1] + 1}, "concise": {order[0] + 1, order[1] + 1}}
    right = {order[0] + 1, order[2] + 1}  # ANSWER_ONLY's
    racing, llm = race_three(
        lambda who, number: number not in wrong[who] if who in wrong else number in right,
        100,
    )
    initial, concise_, answer_only = racing.variants
    assert (initial.status, initial.cases_scored, initial.score) == (
        VariantStatus.SCORED,
        100,
        0.99,
    )
    assert (concise_.status, concise_.cases_scored) == (VariantStatus.DROPPED, 12)
    assert (answer_only.status, answer_only.cases_scored) == (VariantStatus.DROPPED, 12)
    assert racing.history[1].racing_note == (
        "racing dropped 2 challenger(s) (2 that could no longer win)"
    )
    # 8 + 2 x 8 (first rung) + 3 x 4 (second rung, case by case, "P" too)
    # + 88 (the rest of "P").
    sent = [(who_of(p), c) for p, c in map(split_message, llm.prompts)]
    assert sent[24:36] == [
        (w, f"q{i + 1}") for i in order[8:12] for w in ("initial", "concise", "answer_only")
    ]
    assert sent[36:] == [("initial", f"q{i + 1}") for i in order[12:]]
    assert racing.calls == 8 + 16 + 12 + 88


@pytest.mark.parametrize("level", [sequential_level, sequential_sign_level])
def test_a_bad_schedule_or_alpha_is_named(level: Callable[..., float]) -> None:
    with pytest.raises(ValueError, match=r"increasing, got \(8, 8\)"):
        level((8, 8))
    with pytest.raises(ValueError, match=r"got \(\)"):
        level(())
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 0.5\), got 0.7"):
        level((8, 12), 0.7)


def test_racing_says_when_every_drop_came_at_the_last_look() -> None:
    # 20 cases: looks after 8, 12 and 18 cases. Everyone is right on the
    # first 12 cases of the racing order; after that only CONCISE is, so
    # the others fall behind only by the last look (18), where they are
    # dropped: ANSWER_ONLY saves its 2 remaining cases, the starting prompt
    # nothing (at the target on the first rung, it was scored on every case).
    order = example_order(20, seed=0)
    late = {i + 1 for i in order[12:]}

    def right(who: str, number: int) -> bool:
        return who == "concise" or number not in late

    racing, _ = race_three(right, 20)
    exhaustive, _ = race_three(right, 20, search="exhaustive")
    statuses = [(v.strategy, v.status, v.cases_scored) for v in racing.variants]
    assert statuses == [
        ("initial", VariantStatus.DROPPED, 20),
        ("concise", VariantStatus.SCORED, 20),
        ("answer_only", VariantStatus.DROPPED, 18),
    ]
    saved = exhaustive.calls - racing.calls
    assert saved == 2
    assert racing.racing_report == (
        f"racing saved {saved} of {exhaustive.calls} requests: every drop at the last look"
    )
