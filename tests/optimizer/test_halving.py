"""Halving (``search="halving"``): the upper half at each doubling of the cases, no test.

The rule is in ``tnsai_eval.optimizer._racing`` ("Halving"): rungs of 8, 16,
32, ... cases; after each, the better half of the racers by mean on the
cases seen goes on (rounded up), until one is left, which is scored on
every case. It is cheaper than racing and may drop the best variant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.optimizer.test_racing import race_three
from tnsai_eval.cli import main as cli_main
from tnsai_eval.evaluation import PromptVariant, Variant
from tnsai_eval.optimizer import PromptStrategy, VariantStatus
from tnsai_eval.optimizer._racing import _halve, rung_sizes
from tnsai_eval.optimizer._run import example_order
from tnsai_eval.testing import ScriptedLLM

S = PromptStrategy


def test_halvings_rungs_double() -> None:
    assert rung_sizes(40, growth=2) == [8, 16, 32, 40]
    assert rung_sizes(135, growth=2) == [8, 16, 32, 64, 128, 135]
    assert rung_sizes(5, growth=2) == [5]


def _variant(id_: int, right: int, seen: int = 8) -> Variant:
    """Right on the first ``right`` of ``seen`` cases."""
    scores: dict[int, float | None] = {i: float(i < right) for i in range(seen)}
    return Variant(id_, 1, f"v{id_}", PromptVariant(f"P{id_}"), 0, scores=scores)


def test_the_upper_half_goes_on_rounded_up_ties_to_the_incumbent_then_the_earlier() -> None:
    incumbent, *challengers = [_variant(0, 4), _variant(1, 6), _variant(2, 4), _variant(3, 4)]
    alive, dropped = _halve([incumbent, *challengers], incumbent, range(8), 40)
    # 6/8 first; then three at 4/8 for one place: the incumbent wins the tie.
    assert [v.id for v in alive] == [0, 1]
    assert dropped == 2
    assert [v.status for v in challengers] == [
        VariantStatus.SCORED,
        VariantStatus.DROPPED,
        VariantStatus.DROPPED,
    ]
    # Five racers: three go on; a tie between challengers goes to the earlier.
    five = [_variant(0, 1), _variant(1, 5), _variant(2, 3), _variant(3, 3), _variant(4, 7)]
    alive, dropped = _halve(five, five[0], range(8), 40)
    assert ([v.id for v in alive], dropped) == ([1, 2, 4], 2)


def test_an_incumbent_scored_on_every_case_is_kept_outside_the_ranking() -> None:
    # It costs nothing more; the survivor must beat its complete score to replace it.
    incumbent = _variant(0, 0, seen=40)  # scored on all 40 cases, right on none
    racers = [incumbent, _variant(1, 6), _variant(2, 5), _variant(3, 4)]
    alive, dropped = _halve(racers, incumbent, range(8), 40)
    assert [v.id for v in alive] == [0, 1, 2]
    assert dropped == 1
    assert incumbent.status is VariantStatus.SCORED


def test_halving_scores_the_survivor_on_every_case_and_costs_what_the_rule_says() -> None:
    # 40 cases; "P" right on 7 of the first 8 of the racing order only (not
    # at the target, so it races), CONCISE on the first 6 and on every case
    # from the 17th on, ANSWER_ONLY on none. Rung of 8: "P" 7/8, CONCISE 6/8,
    # ANSWER_ONLY 0/8: two of three go on. Rung of 16: "P" 7/16, CONCISE
    # 6/16: "P" goes on alone and is scored on every case.
    order = example_order(40, seed=0)
    first7 = {i + 1 for i in order[:7]}
    early = {i + 1 for i in order[:6]}
    late = {i + 1 for i in order[16:]}

    def right(who: str, number: int) -> bool:
        if who == "initial":
            return number in first7
        return who == "concise" and (number in early or number in late)

    halving, llm = race_three(right, 40, search="halving")
    initial, concise, answer_only = halving.variants
    assert (answer_only.status, answer_only.cases_scored) == (VariantStatus.DROPPED, 8)
    assert (concise.status, concise.cases_scored) == (VariantStatus.DROPPED, 16)
    # The survivor is scored on every case, so its score is complete.
    assert (initial.status, initial.cases_scored) == (VariantStatus.SCORED, 40)
    assert halving.best_prompt == "P"
    assert halving.calls == len(llm.prompts) == 8 + 2 * 8 + 2 * 8 + 24
    assert halving.history[1].racing_note == (
        "halving dropped 2 challenger(s) (2 in the lower half of a rung); "
        "no test, so a dropped variant may have been the best"
    )
    # Racing keeps CONCISE (behind on 1 flip at 8 cases, never surely worse;
    # 0.75 over every case), and it wins: halving lost the best variant on
    # its early rungs. This is the price of no test; the held-out score says
    # whether a pick is better than the start.
    racing, _ = race_three(right, 40)
    assert racing.best_prompt == S.CONCISE.apply("P")
    assert racing.score == pytest.approx(0.75)
    assert halving.score == pytest.approx(0.175)


def test_halving_keeps_a_clear_winner_for_less_than_racing() -> None:
    # CONCISE right on every case, ANSWER_ONLY on every other, "P" on none.
    def right(who: str, number: int) -> bool:
        return who == "concise" or (who == "answer_only" and number % 2 == 0)

    halving, _ = race_three(right, 100, search="halving")
    racing, _ = race_three(right, 100)
    exhaustive, _ = race_three(right, 100, search="exhaustive")
    assert halving.best_prompt == racing.best_prompt == exhaustive.best_prompt
    assert halving.best_prompt == S.CONCISE.apply("P")
    assert halving.score == 1.0
    assert halving.calls <= racing.calls < exhaustive.calls


def test_the_cli_runs_halving_and_prints_its_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The model answers "Paris" to everything: right on 1 of capitals' cases.
    code = cli_main(
        [
            "optimize", "capitals", "--prompt", "Capital?", "--strategies", "concise,role",
            "--search", "halving", "--no-rewrite", "--split", "0", "--out", str(tmp_path),
            "--no-progress",
        ],
        llm=ScriptedLLM(default="Paris"),
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "halving search" in printed
    assert "halving dropped" in printed
