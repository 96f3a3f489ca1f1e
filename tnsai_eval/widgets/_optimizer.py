"""``OptimizerDashboard``: run a prompt optimization and watch it, round by round."""

from __future__ import annotations

import copy
import html
from collections.abc import Sequence
from typing import Any

import ipywidgets as w

from tnsai_eval import frames, plots
from tnsai_eval.plots._base import short
from tnsai_eval.widgets._common import DisplayMixin, figure_png, pre_html, table_html

__all__ = ["OptimizerDashboard"]


class OptimizerDashboard(DisplayMixin):
    """Live view of ``PromptOptimizer.optimize``: progress, best prompt, score plot, leaderboard.

    ``run()`` runs the optimization (blocking, like ``optimize``); while it
    runs the bar counts model calls against ``estimate_calls`` (an upper
    bound, so the bar jumps to full when the run stops early), the best prompt
    so far and the best-score-per-round plot update after every round, and at
    the end the leaderboard table lists every variant scored, best first. The
    optimizer given is not modified: a copy carries the dashboard's progress
    callback (chained to the optimizer's own ``progress``, if it has one).

    Display it first, then run it (in the same cell or a later one)::

        dashboard = OptimizerDashboard(PromptOptimizer(llm), "Capital?", cases)
        display(dashboard)
        result = dashboard.run()
    """

    def __init__(
        self,
        optimizer: Any,
        prompt: str,
        cases: Sequence[Any],
        *,
        validation_cases: Sequence[Any] | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.prompt = prompt
        self.cases = list(cases)
        self.validation_cases = None if validation_cases is None else list(validation_cases)
        self.result: Any = None
        self.round_best: list[float] = []
        estimate = optimizer.estimate_calls(prompt, self.cases, validation_cases=validation_cases)
        self.bar = w.IntProgress(value=0, min=0, max=max(int(estimate), 1), description="calls")
        self.status = w.HTML("<i>not started: call run()</i>")
        self.best_prompt = w.HTML(pre_html(prompt))
        self.plot = w.Image(format="png")
        self.leaderboard = w.HTML()
        self.widget = w.VBox(
            [
                self.bar,
                self.status,
                w.HTML("<b>Best prompt so far</b>"),
                self.best_prompt,
                self.plot,
                self.leaderboard,
            ]
        )

    def run(self) -> Any:
        """Run the optimization with live updates; returns the ``OptimizationResult``."""
        runner = copy.copy(self.optimizer)
        chained = self.optimizer.progress

        def progress(event: Any) -> None:
            self.handle_event(event)
            if chained is not None:
                chained(event)

        runner.progress = progress
        self.round_best = []
        self.status.value = "running…"
        validation = self.validation_cases
        try:
            result = runner.optimize(self.prompt, self.cases, validation_cases=validation)
        except Exception as exc:
            # Failed calls are handled inside the run; what reaches here (a bad
            # evaluator, a bug) ends it. Say so in the view, not just in a traceback
            # the user may have scrolled past, and leave the rounds' plot as it was.
            self.bar.bar_style = "danger"
            self.status.value = f"failed: {html.escape(f'{type(exc).__name__}: {exc}')}"
            raise
        self.finish(result)
        return result

    def handle_event(self, event: Any) -> None:
        """Apply one ``ProgressEvent`` to the views (called by the optimizer)."""
        self.bar.value = min(int(event.calls), self.bar.max)
        best = "-" if event.best_score is None else f"{event.best_score:.3f}"
        self.status.value = f"round {event.round} · {event.calls} call(s) · best score {best}"
        record = getattr(event, "round_record", None)
        if record is None:
            return
        self.round_best.append(float(record.best_score))
        self.plot.value = figure_png(
            plots.plot_score_progression(
                self.round_best, title="Best score after each round", xlabel="round"
            )
        )

    def finish(self, result: Any) -> None:
        """Show the final state of ``result``: best prompt, plot and leaderboard."""
        self.result = result
        self.bar.value = self.bar.max
        self.bar.bar_style = "success"
        self.best_prompt.value = pre_html(str(result.best_prompt))
        self.status.value = (
            f"done: {result.rounds} round(s), {result.calls} call(s), "
            f"score {result.initial_score:.3f} → {result.score:.3f} "
            f"(stopped: {html.escape(str(getattr(result.stop_reason, 'value', '')))})"
        )
        self.plot.value = figure_png(plots.plot_optimizer_rounds(result))
        board = frames.leaderboard(result)
        board = board.assign(prompt=board["prompt"].map(lambda p: short(p, 90)))
        self.leaderboard.value = "<b>Leaderboard</b>" + table_html(board)
