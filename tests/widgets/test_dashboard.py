"""OptimizerDashboard, driven by a real PromptOptimizer over ScriptedLLM."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tnsai_eval import frames
from tnsai_eval.errors import ConfigError
from tnsai_eval.llm import Message
from tnsai_eval.optimizer import ProgressEvent, PromptOptimizer, PromptStrategy, StopReason
from tnsai_eval.scoring import LabelEvaluator, TestCase
from tnsai_eval.testing import ScriptedLLM
from tnsai_eval.widgets import OptimizerDashboard

PNG = b"\x89PNG"


def _optimizer(**options: object) -> PromptOptimizer:
    llm = ScriptedLLM(rules=[(r"only the answer", lambda m: "4")], default="The answer is four.")
    settings: dict[str, Any] = {"split": None, **options}  # two cases: nothing to hold out
    return PromptOptimizer(
        llm, candidate_strategies=["answer_only"], rewrite=False, max_iterations=2, **settings
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
    assert optimizer.config.progress == events.append
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

    def watch(event: ProgressEvent) -> None:
        dashboard.handle_event(event)
        seen.append((dashboard.bar.value, dashboard.status.value))

    result = optimizer.with_options(progress=watch).optimize("Add the numbers.", CASES)
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


# -- controls: strategies, search, budget, Run and Stop ----------------------------------


def test_controls_start_from_the_optimizer_and_configure_a_copy() -> None:
    optimizer = _optimizer(max_calls=50)
    dashboard = OptimizerDashboard(optimizer, "Add the numbers.", CASES)
    chosen = [s.value for s, box in dashboard.strategies.items() if box.value]
    assert chosen == ["answer_only"]
    assert dashboard.search.value == "exhaustive"
    assert dashboard.max_calls.value == 50
    assert dashboard.max_seconds.value == 0.0
    assert not dashboard.run_button.disabled
    assert dashboard.stop_button.disabled
    dashboard.strategies[PromptStrategy.CONCISE].value = True
    dashboard.search.value = "racing"
    dashboard.max_calls.value = 0
    dashboard.max_seconds.value = 30.0
    runner = dashboard.configured()
    assert set(runner.config.strategies) == {PromptStrategy.ANSWER_ONLY, PromptStrategy.CONCISE}
    assert (runner.config.search, runner.config.max_calls, runner.config.max_seconds) == (
        "racing",
        None,
        30.0,
    )
    # The optimizer given is left as it was.
    assert optimizer.config.candidate_strategies == (PromptStrategy.ANSWER_ONLY,)
    c = optimizer.config
    assert (c.search, c.max_calls, c.max_seconds) == (
        "exhaustive",
        50,
        None,
    )


def test_run_button_runs_on_a_worker_thread_with_the_chosen_budget() -> None:
    dashboard = OptimizerDashboard(_optimizer(), "Add the numbers.", CASES)
    dashboard.max_calls.value = 3
    dashboard.run_button.click()
    thread = dashboard._thread
    assert thread is not None
    assert thread is not threading.current_thread()
    result = dashboard.wait(timeout=60)
    assert result is not None
    assert result is dashboard.result
    assert result.calls == 3
    assert result.stop_reason is StopReason.MAX_CALLS
    assert "done:" in dashboard.status.value
    assert "max_calls" in dashboard.status.value
    assert not dashboard.run_button.disabled
    assert dashboard.stop_button.disabled


def _running(dashboard: OptimizerDashboard) -> bool:
    # Read through a call: mypy would keep dashboard.running narrowed to True
    # across the click that ends the run, and skip the checks after it.
    return dashboard.running


def test_stop_button_ends_a_running_run_and_keeps_its_scores() -> None:
    in_call = threading.Event()
    release = threading.Event()

    def answer(messages: list[Message], params: dict[str, Any]) -> str:
        in_call.set()
        release.wait(timeout=30)
        return "4"

    optimizer = PromptOptimizer(
        ScriptedLLM(fn=answer), candidate_strategies=["answer_only"], rewrite=False, concurrency=1
    )
    dashboard = OptimizerDashboard(optimizer, "Add the numbers.", CASES)
    dashboard.run_button.click()
    assert in_call.wait(timeout=30)
    # While the run goes the controls are locked and Stop is live.
    assert _running(dashboard)
    assert dashboard.run_button.disabled
    assert not dashboard.stop_button.disabled
    assert dashboard.search.disabled
    dashboard.stop_button.click()
    assert "stopping" in dashboard.status.value
    release.set()
    result = dashboard.wait(timeout=60)
    assert not dashboard.running
    assert result is not None
    assert result.stop_reason is StopReason.STOPPED
    assert result.calls == 1
    assert result.to_dataframe()["score"].tolist() == [1.0]
    assert "stop reason: stopped" in dashboard.status.value
    assert dashboard.bar.bar_style == "warning"
    assert not dashboard.run_button.disabled
    # A second run starts afresh: the stop of the first does not carry over.
    # Two of the three calls are set aside for the held-out check (one case).
    dashboard.max_calls.value = 3
    dashboard.run_button.click()
    second = dashboard.wait(timeout=60)
    assert second is not None
    assert second.stop_reason is StopReason.TARGET_REACHED
    assert second.calls == 2


def test_run_needs_a_strategy_when_rewrite_is_off() -> None:
    dashboard = OptimizerDashboard(_optimizer(), "Add the numbers.", CASES)
    dashboard.strategies[PromptStrategy.ANSWER_ONLY].value = False
    assert dashboard.start() is None
    assert "choose at least one strategy" in dashboard.status.value
    with pytest.raises(ConfigError, match="choose at least one strategy"):
        dashboard.run()


def test_a_failed_background_run_is_shown_and_reraised_by_wait() -> None:
    # A client's exceptions fail only their cases (issue 10): a broken progress
    # callback is what ends a run here.
    def broken(event: object) -> None:
        raise RuntimeError("callback bug")

    optimizer = PromptOptimizer(ScriptedLLM(default="4"), max_iterations=1, progress=broken)
    dashboard = OptimizerDashboard(optimizer, "Add.", CASES)
    dashboard.run_button.click()
    with pytest.raises(RuntimeError, match="callback bug"):
        dashboard.wait(timeout=60)
    assert "failed: RuntimeError" in dashboard.status.value
    assert dashboard.bar.bar_style == "danger"
    assert not dashboard.run_button.disabled


def test_dashboard_text_fallback_names_the_view() -> None:
    dashboard = OptimizerDashboard(_optimizer(), "Add the numbers.", CASES)
    bundle = dashboard._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"].startswith("OptimizerDashboard: an interactive view")
    assert "VBox(" not in bundle["text/plain"]


def test_a_finished_label_run_shows_the_held_out_line_and_the_answers_by_label() -> None:
    labels = ("sports", "politics", "technology")
    llm = ScriptedLLM(rules=[(r"only the answer", lambda m: "sports")], default="news")
    optimizer = PromptOptimizer(
        llm, candidate_strategies=["answer_only"], rewrite=False, evaluator=LabelEvaluator(labels)
    )
    cases = [TestCase(f"headline {i}", labels[i % 3]) for i in range(30)]
    dashboard = OptimizerDashboard(optimizer, "Topic?", cases)
    result = dashboard.run()
    shown = dashboard.held_out.value
    assert "constant answer &#x27;sports&#x27; 0.333" in shown
    assert "no better than a constant answer" in shown
    assert "95% CI" in shown
    assert dashboard.confusion.value.tobytes().startswith(PNG)
    assert result.chance_flag is not None
