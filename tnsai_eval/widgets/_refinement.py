"""``RefinementExplorer``: scrub through a refinement run, one iteration at a time."""

from __future__ import annotations

import html

import ipywidgets as w
import pandas as pd

from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.refinement import RefinementResult
from tnsai_eval.widgets._common import (
    DisplayMixin,
    diff_html,
    figure_png,
    image_widget,
    pre_html,
    table_html,
)

__all__ = ["RefinementExplorer"]


class RefinementExplorer(DisplayMixin):
    """A slider over a ``RefinementResult``'s iterations.

    For the chosen iteration it shows the output, a diff with the previous
    iteration's output, and each check with its message; below, the whole
    run's check matrix.

    ::

        explorer = RefinementExplorer(loop.execute(llm, draft))
        explorer                  # the last expression of a cell displays it
        explorer.slider.value = 2  # the same as dragging the slider
    """

    def __init__(self, result: RefinementResult | pd.DataFrame) -> None:
        self.iterations = frames.refinement_iterations(result)
        self.checks = frames.refinement_checks(result)
        # The views show these; a bare frame may lack them (the frame functions
        # need only the keys).
        frames.require_columns(
            self.iterations, ("iteration", "score", "output"), what="refinement iteration frame"
        )
        if self.iterations.empty:
            raise ConfigError("the refinement result has no checked iterations to explore")
        numbers = [int(i) for i in self.iterations["iteration"]]
        self._outputs = dict(zip(numbers, map(str, self.iterations["output"]), strict=True))
        self.slider = w.IntSlider(
            value=numbers[0],
            min=numbers[0],
            max=numbers[-1],
            description="iteration",
            continuous_update=False,
        )
        self.header = w.HTML()
        self.output = w.HTML()
        self.diff = w.HTML()
        self.check_table = w.HTML()
        self.tabs = w.Tab(
            children=[self.output, self.diff, self.check_table],
            titles=("output", "diff with previous", "checks"),
        )
        self.matrix = image_widget(figure_png(plots.plot_check_matrix(self.checks)))
        status = getattr(getattr(result, "status", None), "value", None)
        title = f"<b>Refinement</b>: {len(numbers)} iteration(s)"
        title += f", status <code>{html.escape(str(status))}</code>" if status else ""
        self.widget = w.VBox([w.HTML(title), self.slider, self.header, self.tabs, self.matrix])
        self.slider.observe(self._on_slide, names="value")
        self.show(numbers[0])

    def _on_slide(self, change: dict[str, object]) -> None:
        self.show(int(change["new"]))  # type: ignore[call-overload]

    def show(self, iteration: int) -> None:
        """Fill the views for ``iteration`` (the slider calls this)."""
        if iteration not in self._outputs:
            raise ConfigError(f"no iteration {iteration}; the run has {sorted(self._outputs)}")
        row = self.iterations[self.iterations["iteration"] == iteration].iloc[0]
        checks = self.checks[self.checks["iteration"] == iteration]
        passed = int(checks["passed"].sum())
        self.header.value = (
            f"iteration {iteration}: score {float(row['score']):.2f} "
            f"({passed}/{len(checks)} checks passed)"
        )
        current = self._outputs[iteration]
        self.output.value = pre_html(current)
        earlier = [i for i in self._outputs if i < iteration]
        if earlier:
            before = max(earlier)
            self.diff.value = diff_html(
                self._outputs[before],
                current,
                before_name=f"iteration {before}",
                after_name=f"iteration {iteration}",
            )
        else:
            self.diff.value = "<i>the first iteration checks the draft: nothing to compare</i>"
        shown = [c for c in ("check", "passed", "skipped", "message") if c in checks.columns]
        self.check_table.value = table_html(checks.loc[:, shown])
        if self.slider.value != iteration:
            self.slider.value = iteration
