"""Every view of the leaderboard keeps a partial score (racing-dropped) below the chosen best,
or marks it as partial wherever its number could read as better.

Racing drops a challenger on the cases it has seen; its mean over them (its
partial score) can exceed the best's mean over every case, because the best did
worse on cases the challenger never reached. Shown bare, that partial 0.333
reads as beating the best's 0.1875.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from typing import Any

import pytest

from tests.optimizer.conftest import REWRITE_MARK, split_message
from tnsai_eval import frames, plots
from tnsai_eval.cli._optimize import _print_report
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import OptimizationResult, PromptOptimizer, PromptStrategy, VariantStatus
from tnsai_eval.optimizer._run import example_order
from tnsai_eval.scoring import ExactMatchEvaluator, TestCase
from tnsai_eval.testing import ScriptedLLM

N, SEED = 64, 0


@pytest.fixture(scope="module")
def raced() -> OptimizationResult:
    order = example_order(N, SEED)  # racing's seeded order: rungs of 8, 12, 18... cases
    # The initial prompt is right on the first 12 cases of that order only
    # (12/64 = 0.1875). CONCISE ties it on 4 of the first 8 and loses the
    # other 8 of the first 12: behind on 8 of 8 flipped cases, it is dropped
    # (exact sign test) at 12 cases with a partial mean of 4/12 = 0.333,
    # above the best's 0.1875, though it would have been right on every case
    # racing never showed it.
    first_twelve = set(order[:12])
    loses = set(order[1:8:2]) | set(order[8:12])

    def reply(messages: list[Message], params: dict[str, Any]) -> str:
        text = messages[-1].content
        if text.startswith(REWRITE_MARK):
            return "REWRITTEN"
        prompt, case_input = split_message(text)
        i = int(case_input[1:])
        right = i in first_twelve if prompt == "P" else "Be brief" in prompt and i not in loses
        return f"a{i}" if right else "no idea"

    return PromptOptimizer(
        ScriptedLLM(fn=reply),
        split=None,
        evaluator=ExactMatchEvaluator(),
        candidate_strategies=[PromptStrategy.CONCISE],
        search="racing",
        concurrency=1,
        max_iterations=1,
        seed=SEED,
    ).optimize("P", [TestCase(f"q{i}", f"a{i}") for i in range(N)])


def test_the_scenario_has_a_dropped_variant_whose_partial_score_beats_the_best(
    raced: OptimizationResult,
) -> None:
    dropped = next(v for v in raced.variants if v.strategy == "concise")
    assert dropped.status is VariantStatus.DROPPED
    assert raced.best_variant == 0
    assert (dropped.cases_scored, raced.score) == (12, 0.1875)
    assert dropped.partial_score == pytest.approx(1 / 3)


def test_the_result_ranks_the_partial_score_below_the_best(raced: OptimizationResult) -> None:
    board = raced.leaderboard()
    assert board[0].id == raced.best_variant
    assert [v.status for v in board[1:]] == [VariantStatus.DROPPED] * (len(board) - 1)


def test_the_cli_marks_the_partial_score(raced: OptimizationResult) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        _print_report(raced)
    rows = [line for line in out.getvalue().splitlines() if "concise" in line or "initial" in line]
    assert rows[0].lstrip().startswith("1*")
    assert "initial" in rows[0]
    assert "0.333~" in rows[1]


def test_the_frames_mark_it_and_never_call_it_best(raced: OptimizationResult) -> None:
    board = frames.leaderboard(raced)
    assert board.loc[0, "variant"] == raced.best_variant
    concise = board[board["strategy"] == "concise"].iloc[0]
    assert (concise["score"], concise["status"]) == (pytest.approx(1 / 3), "dropped")
    scores = frames.variant_scores(raced).set_index("strategy")
    # A partial mean is not "the highest score seen so far": the run never chose it.
    assert scores["best"].to_dict() == {"initial": True, "concise": False, "rewrite": False}
    assert scores.loc["concise", "status"] == "dropped"


def test_the_rounds_plot_draws_partial_scores_hollow(raced: OptimizationResult) -> None:
    figure = plots.plot_optimizer_rounds(raced)
    legend = figure.axes[0].get_legend()
    assert legend is not None
    labels = [text.get_text() for text in legend.get_texts()]
    assert "concise (partial)" in labels
    assert "initial" in labels
