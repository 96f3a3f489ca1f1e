"""``ReportBrowser``: load pytest JSON reports, compare with a baseline, filter, plot."""

from __future__ import annotations

import html
import os
from collections.abc import Iterable
from pathlib import Path

import ipywidgets as w
import pandas as pd

from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.widgets._common import DisplayMixin, figure_png, image_widget, set_png, table_html

__all__ = ["ReportBrowser"]

_NO_BASELINE = "(none)"
_FILTERS = ("all", "failing", "regressed")
_FAILING = ("failed", "error")
_SHOWN = (
    "nodeid",
    "status",
    "score",
    "case_pass_rate",
    "sample_pass_rate",
    "iterations",
    "calls",
    "tokens",
    "cache_hits",
)


class ReportBrowser(DisplayMixin):
    """Browse one or more ``--tnsai-report`` JSON files.

    The last report loaded is the current run. Choosing a baseline (any other
    loaded report) compares the two as the CI gate does (``tolerance`` as in
    ``--tnsai-tolerance``) and plots baseline vs current; with no baseline the
    plot is each test's score across the loaded runs. The filter keeps all
    tests, the failing ones (status failed or error in the current run) or the
    regressed ones (needs a baseline).

    ::

        browser = ReportBrowser(["reports/main.json", "reports/branch.json"], baseline="main")
        browser.filter.value = "regressed"   # the same as clicking "regressed"
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]] = (),
        *,
        baseline: str | None = None,
        tolerance: float = 0.05,
    ) -> None:
        self.tolerance = tolerance
        self.paths_box = w.Textarea(placeholder="one report path per line", rows=3)
        self.load_button = w.Button(description="load")
        self.baseline = w.Dropdown(
            options=[_NO_BASELINE], value=_NO_BASELINE, description="baseline"
        )
        self.filter = w.ToggleButtons(options=_FILTERS, value="all", description="show")
        self.status = w.HTML()
        self.table = w.HTML()
        self.plot = image_widget()
        self.reports = pd.DataFrame()
        self.comparison: pd.DataFrame | None = None
        self._paths: dict[str, Path] = {}
        self.load_button.on_click(lambda _: self._load_from_box())
        self._quiet = False
        self.baseline.observe(lambda _: self._changed(), names="value")
        self.filter.observe(lambda _: self._changed(), names="value")
        self.widget = w.VBox(
            [
                w.HBox([self.paths_box, self.load_button]),
                w.HBox([self.baseline, self.filter]),
                self.status,
                self.table,
                self.plot,
            ]
        )
        given = [Path(p) for p in paths]
        if given:
            self.paths_box.value = "\n".join(map(str, given))
            self.load(given, baseline=baseline)

    @property
    def current_run(self) -> str | None:
        """The name of the current (last loaded) run."""
        return next(reversed(self._paths), None)

    def _load_from_box(self) -> None:
        paths = [line.strip() for line in str(self.paths_box.value).splitlines() if line.strip()]
        try:
            self.load(paths)
        except ConfigError as exc:
            self.status.value = (
                f"<b style='color: {plots.REGRESSION_COLOR}'>error:</b> {html.escape(str(exc))}"
            )

    def load(self, paths: Iterable[str | os.PathLike[str]], *, baseline: str | None = None) -> None:
        """Load reports (run names are the file stems); the last one is the current run.

        Without ``baseline``, the baseline already chosen stays chosen while it
        is still among the earlier runs.
        """
        files = [Path(p) for p in paths]
        names = _unique_names(files)
        if baseline is not None and baseline not in names[:-1]:
            raise ConfigError(f"baseline {baseline!r} is not one of the earlier runs {names[:-1]}")
        if baseline is None and self.baseline.value in names[:-1]:
            # Loading more runs keeps the baseline chosen (an earlier run still loaded).
            baseline = str(self.baseline.value)
        # Read everything before changing anything: a bad file or baseline
        # leaves the reports already shown in place.
        reports = frames.load_reports(dict(zip(names, files, strict=True)))
        self.reports = reports
        self._paths = dict(zip(names, files, strict=True))
        # Setting options resets the value; one update once both are set, not two.
        self._quiet = True
        try:
            self.baseline.options = [_NO_BASELINE, *names[:-1]]
            self.baseline.value = baseline or _NO_BASELINE
        finally:
            self._quiet = False
        self.update()

    def _changed(self) -> None:
        if not self._quiet:
            self.update()

    def update(self) -> None:
        """Recompute the comparison, the filtered table and the plot from the controls."""
        run = self.current_run
        if run is None:
            self.status.value = "<i>no reports loaded</i>"
            return
        current = self.reports[self.reports["run"] == run]
        failing = set(current.loc[current["status"].isin(_FAILING), "nodeid"])
        base = self.baseline.value
        self.comparison = None
        if base != _NO_BASELINE:
            self.comparison = frames.compare_reports(
                self._paths[run], self._paths[base], tolerance=self.tolerance
            )
        table = current.loc[:, [c for c in _SHOWN if c in current.columns]]
        if self.comparison is not None:
            table = self.comparison
        mode = self.filter.value
        note = ""
        if mode == "failing":
            table = table[table["nodeid"].isin(failing)]
        elif mode == "regressed":
            if self.comparison is None:
                note = " (choose a baseline to see regressions)"
                table = table.iloc[0:0]
            else:
                table = table[table["kind"] == "regressed"]
        regressed = (
            0 if self.comparison is None else int((self.comparison["kind"] == "regressed").sum())
        )
        self.status.value = (
            f"run <code>{run}</code>: {len(current)} test(s), {len(failing)} failing"
            + (
                f", {regressed} regressed against <code>{base}</code>"
                if base != _NO_BASELINE
                else ""
            )
            + note
        )
        self.table.value = table_html(table, empty="no tests match" + note)
        if self.comparison is not None:
            shown = self.comparison[self.comparison["nodeid"].isin(table["nodeid"])]
            figure = plots.plot_report_comparison(shown if not shown.empty else self.comparison)
        else:
            figure = plots.plot_report_trend(self.reports)
        set_png(self.plot, figure_png(figure))


def _unique_names(files: list[Path]) -> list[str]:
    # Reports are often all named report.json in different folders: fall back
    # to parent/stem, then to a position suffix, so every run has its own name.
    names = [f.stem for f in files]
    if len(set(names)) < len(names):
        names = [f"{f.parent.name}/{f.stem}" for f in files]
    if len(set(names)) < len(names):
        names = [f"{name}#{i}" for i, name in enumerate(names)]
    return names
