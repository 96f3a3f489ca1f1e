"""OptimizerDashboard, driven by a real PromptOptimizer over ScriptedLLM."""

from __future__ import annotations

import pytest

from tnsai_eval import frames
from tnsai_eval.optimizer import PromptOptimizer, TestCase
from tnsai_eval.testing import ScriptedLLM
from tnsai_eval.widgets import OptimizerDashboard

PNG = b"\x89PNG"


def _optimizer(**options: object) -> PromptOptimizer:
    llm = ScriptedLLM(rules=[(r"only the answer", lambda m: "4")], default="The answer is four.")
    return PromptOptimizer(
        llm, candidate_strategies=["answer_only"], rewrite=False, max_iterations=2, **options
    )


CASES = [TestCase("2 + 2", "4"), TestCase("1 + 3", "4")]


def test_dashboard_updates_per_round_and_ends_with_the_leaderboard() -> None:
    events: list[object] = []
    optimizer = _optimizer(progress=events.append)
    dashboard = OptimizerDashboard(optimizer, "Add the numbers.", CASES)
    assert dashboard.bar.max == optimizer.estimate_calls("Add the numbers.", CASES)
    assert "not started" in dashboard.status.value
    result = dashboard.run()
    # The optimizer's own callback still ran, and the optimizer was not modified.
    assert events
    assert optimizer.progress == events.append
    assert dashboard.result is result
    assert dashboard.round_best == [float(s) for s in result.rounds_dataframe()["best_score"]]
    assert dashboard.bar.value == dashboard.bar.max
    assert result.best_prompt in dashboard.best_prompt.value
    assert dashboard.plot.value.tobytes().startswith(PNG)
    board = dashboard.leaderboard.value
    assert "Leaderboard" in board
    assert board.index("answer_only") < board.index("initial")  # best first
    assert "done:" in dashboard.status.value
    assert f"{result.score:.3f}" in dashboard.status.value


def test_dashboard_handles_events_one_by_one() -> None:
    optimizer = _optimizer()
    dashboard = OptimizerDashboard(optimizer, "Add the numbers.", CASES)
    seen: list[tuple[int, str]] = []

    def watch(event: object) -> None:
        dashboard.handle_event(event)
        seen.append((dashboard.bar.value, dashboard.status.value))

    optimizer.progress = watch
    result = optimizer.optimize("Add the numbers.", CASES)
    calls = [value for value, _ in seen]
    assert calls == sorted(calls)
    assert seen[-1][0] == result.calls
    assert "round 1" in seen[-1][1]
    assert len(dashboard.round_best) == len(result.rounds_dataframe())


def test_leaderboard_frame_follows_the_result() -> None:
    result = _optimizer().optimize("Add the numbers.", CASES)
    board = frames.leaderboard(result)
    assert tuple(board.columns) == frames.LEADERBOARD_COLUMNS
    assert board["rank"].tolist() == list(range(1, len(board) + 1))
    assert board.loc[0, "prompt"] == result.best_prompt
    assert board.loc[0, "score"] == result.score


def test_dashboard_shows_a_failed_run_and_reraises() -> None:
    # A client's exceptions only fail their cases now (issue 10); a run that
    # cannot go on (here: the user's own progress callback breaks) still ends,
    # and the dashboard must say so rather than hang.
    def broken(event: object) -> None:
        raise RuntimeError("callback bug")

    optimizer = PromptOptimizer(ScriptedLLM(default="4"), max_iterations=1, progress=broken)
    dashboard = OptimizerDashboard(optimizer, "Add.", CASES)
    with pytest.raises(RuntimeError, match="callback bug"):
        dashboard.run()
    assert dashboard.status.value.startswith("failed: RuntimeError")
    assert dashboard.bar.bar_style == "danger"
    assert dashboard.result is None
