"""``OptimizerDashboard``: choose the search, run it, watch it round by round, stop it."""

from __future__ import annotations

import html
import threading
from collections.abc import Sequence

import ipywidgets as w

from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.optimizer import (
    SEARCHES,
    OptimizationResult,
    ProgressEvent,
    PromptOptimizer,
    PromptStrategy,
    TestCase,
)
from tnsai_eval.widgets._common import (
    DisplayMixin,
    figure_png,
    image_widget,
    pre_html,
    set_png,
    table_html,
)

__all__ = ["OptimizerDashboard"]


class OptimizerDashboard(DisplayMixin):
    """Controls and a live view of ``PromptOptimizer.optimize``.

    Controls: a checkbox per strategy, a button per search mode (one for
    each in ``optimizer.SEARCHES``, its summary as the tooltip), a
    budget of calls and of seconds (0: none), and Run and Stop buttons; they
    start from the optimizer's own settings. While a run goes, the bar counts
    model calls against ``estimate_calls`` (an upper bound, so the bar jumps
    to full when the run stops early), the best prompt so far and the
    best-score-per-round plot update after every round, and at the end the
    leaderboard lists every variant scored, best first. A finished run also
    shows its held-out line (``OptimizationResult.headline``: the gain with its
    interval, the paired test, the verdict and, on a label task, the
    constant-answer baseline) and, on a label task, the answers-by-label plot
    (``plots.plot_confusion``). The optimizer given is
    not modified: each run uses a copy with the controls' settings and the
    dashboard's progress callback (chained to the optimizer's own
    ``progress``, if it has one).

    The Run button (and ``start()``) runs the optimization on a worker thread,
    so that the kernel stays free to receive the Stop click; Stop (and
    ``stop()``) sets the run's ``stop_event``, which ends it at the next call
    boundary with ``stop_reason`` ``"stopped"``, every score so far kept.
    ``run()`` is the blocking form, for a cell that needs the result next::

        dashboard = OptimizerDashboard(PromptOptimizer(llm), "Capital?", cases)
        display(dashboard)
        result = dashboard.run()      # or click Run, then Stop
    """

    def __init__(
        self,
        optimizer: PromptOptimizer,
        prompt: str,
        cases: Sequence[TestCase],
        *,
        validation_cases: Sequence[TestCase] | None = None,
    ) -> None:
        self.optimizer = optimizer
        self.prompt = prompt
        self.cases = list(cases)
        self.validation_cases = None if validation_cases is None else list(validation_cases)
        self.result: OptimizationResult | None = None
        self.error: BaseException | None = None
        self.round_best: list[float] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        chosen = set(optimizer.config.strategies)
        self.strategies = {
            s: w.Checkbox(
                value=s in chosen,
                description=s.value,
                indent=False,
                layout=w.Layout(width="auto", margin="0 12px 0 0"),
            )
            for s in PromptStrategy
        }
        # Read when the dashboard is made: a mode registered before shows as a button.
        modes = list(SEARCHES)
        self.search = w.ToggleButtons(
            options=[mode.name for mode in modes],
            tooltips=[mode.summary for mode in modes],
            value=optimizer.config.search,
            description="search",
        )
        self.max_calls = w.BoundedIntText(
            value=optimizer.config.max_calls or 0,
            min=0,
            max=10**9,
            description="max calls",
            tooltip="budget of model calls; 0: none",
            style={"description_width": "initial"},
            layout=w.Layout(width="180px"),
        )
        self.max_seconds = w.BoundedFloatText(
            value=optimizer.config.max_seconds or 0.0,
            min=0.0,
            max=10.0**9,
            description="max seconds",
            tooltip="budget of seconds; 0: none",
            style={"description_width": "initial"},
            layout=w.Layout(width="180px"),
        )
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.stop_button = w.Button(
            description="Stop", icon="stop", button_style="warning", disabled=True
        )
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self.bar = w.IntProgress(value=0, min=0, max=self._calls(optimizer), description="calls")
        self.status = w.HTML("<i>not started: choose the settings and click Run</i>")
        self.best_prompt = w.HTML(pre_html(prompt))
        self.plot = image_widget()
        self.held_out = w.HTML()
        self.confusion = image_widget()
        self.leaderboard = w.HTML()
        controls = w.VBox(
            [
                w.HTML("<b>Strategies</b>"),
                w.HBox(list(self.strategies.values()), layout=w.Layout(flex_flow="row wrap")),
                self.search,
                w.HBox([self.max_calls, self.max_seconds]),
                w.HBox([self.run_button, self.stop_button]),
            ]
        )
        self.widget = w.VBox(
            [
                controls,
                self.bar,
                self.status,
                w.HTML("<b>Best prompt so far</b>"),
                self.best_prompt,
                self.plot,
                self.held_out,
                self.confusion,
                self.leaderboard,
            ]
        )

    @property
    def running(self) -> bool:
        """Whether a run started with ``start()`` (the Run button) is still going."""
        return self._thread is not None and self._thread.is_alive()

    def configured(self) -> PromptOptimizer:
        """A copy of the optimizer with the controls' settings and the dashboard's progress."""
        strategies = tuple(s for s, box in self.strategies.items() if box.value)
        if not strategies and not self.optimizer.config.rewrite:
            raise ConfigError("choose at least one strategy: this optimizer has rewrite=False")
        chained = self.optimizer.config.progress

        def progress(event: ProgressEvent) -> None:
            self.handle_event(event)
            if chained is not None:
                chained(event)

        # A new optimizer with a new frozen config: the one given is never modified.
        return self.optimizer.with_options(
            candidate_strategies=strategies,
            search=self.search.value,
            max_calls=int(self.max_calls.value) or None,
            max_seconds=float(self.max_seconds.value) or None,
            progress=progress,
        )

    def run(self) -> OptimizationResult:
        """Run the optimization here, blocking, with live updates; returns the result."""
        if self.running:
            raise ConfigError("a run started with Run is still going: stop() or wait() first")
        runner = self._begin()
        result = self._execute(runner, reraise=True)
        assert result is not None  # reraise=True: a failed run raised
        return result

    def start(self) -> threading.Thread | None:
        """Start a run on a worker thread (the Run button); ``wait()`` returns its result.

        Returns the thread, or ``None`` when a run is already going or the
        controls are invalid (the status line says why).
        """
        if self.running:
            return None
        try:
            runner = self._begin()
        except ConfigError as exc:
            self.status.value = f"<b>cannot run:</b> {html.escape(str(exc))}"
            return None
        self._thread = threading.Thread(
            target=self._execute, args=(runner,), kwargs={"reraise": False}, daemon=True
        )
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """End the current run at its next call boundary (the Stop button)."""
        self._stop.set()
        if self.running:
            self.status.value = "stopping: waiting for the calls in flight…"

    def wait(self, timeout: float | None = None) -> OptimizationResult | None:
        """Wait for a run started with ``start()``; returns its result (``None`` if not done).

        A run that raised re-raises its exception here.
        """
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return None
        if self.error is not None:
            raise self.error
        return self.result

    def _begin(self) -> PromptOptimizer:
        runner = self.configured()
        self._stop = threading.Event()
        self.round_best = []
        self.result = None
        self.error = None
        self.bar.max = self._calls(runner)
        self.bar.value = 0
        self.bar.bar_style = ""
        self.status.value = "running…"
        self._set_controls(running=True)
        return runner

    def _calls(self, optimizer: PromptOptimizer) -> int:
        """The bar's length: ``estimate_calls`` for this run (at least 1)."""
        calls = optimizer.estimate_calls(
            self.prompt, self.cases, validation_cases=self.validation_cases
        )
        return max(int(calls), 1)

    def _execute(self, runner: PromptOptimizer, *, reraise: bool) -> OptimizationResult | None:
        try:
            result = runner.optimize(
                self.prompt,
                self.cases,
                validation_cases=self.validation_cases,
                stop_event=self._stop,
            )
        except Exception as exc:
            # Failed calls are handled inside the run; what reaches here (a bad
            # evaluator, a bug) ends it. Say so in the view, not just in a traceback
            # the user may have scrolled past (on a worker thread there is none),
            # and leave the rounds' plot as it was.
            self.error = exc
            self.bar.bar_style = "danger"
            self.status.value = f"failed: {html.escape(f'{type(exc).__name__}: {exc}')}"
            if reraise:
                raise
            return None
        finally:
            self._set_controls(running=False)
        self.finish(result)
        return result

    def _set_controls(self, *, running: bool) -> None:
        self.run_button.disabled = running
        self.stop_button.disabled = not running
        for box in (*self.strategies.values(), self.search, self.max_calls, self.max_seconds):
            box.disabled = running

    def handle_event(self, event: ProgressEvent) -> None:
        """Apply one ``ProgressEvent`` to the views (called by the optimizer)."""
        self.bar.value = min(int(event.calls), self.bar.max)
        best = "-" if event.best_score is None else f"{event.best_score:.3f}"
        self.status.value = f"round {event.round} · {event.calls} call(s) · best score {best}"
        record = getattr(event, "round_record", None)
        if record is None:
            return
        self.round_best.append(float(record.best_score))
        set_png(
            self.plot,
            figure_png(
                plots.plot_score_progression(
                    self.round_best, title="Best score after each round", xlabel="round"
                )
            ),
        )

    def finish(self, result: OptimizationResult) -> None:
        """Show the final state of ``result``: best prompt, plot and leaderboard.

        Also the way to show a finished run (one loaded or made elsewhere).
        """
        self.result = result
        self.bar.value = self.bar.max
        stop = str(getattr(result.stop_reason, "value", ""))
        self.bar.bar_style = "warning" if stop == "stopped" else "success"
        self.best_prompt.value = pre_html(str(result.best_prompt))
        self.status.value = (
            f"done: {result.rounds} round(s), {result.calls} call(s), "
            f"score {result.training_change.replace('->', '→')} "
            f"(stop reason: {html.escape(stop)})"
        )
        set_png(self.plot, figure_png(plots.plot_optimizer_rounds(result)))
        # The held-out line: gain, its interval, p, verdict and, on a label
        # task, what a constant answer scores; then the answers by label.
        self.held_out.value = "<b>Held out</b>" + pre_html(result.headline)
        if result.labels is not None:
            set_png(self.confusion, figure_png(plots.plot_confusion(result)))
        # Long prompts are shortened in the table, each whole in its cell's tooltip.
        board = frames.leaderboard(result)
        self.leaderboard.value = "<b>Leaderboard</b>" + table_html(board)
