"""``TrajectoryExplorer``: one case's trajectory, a model turn or a tool call at a time."""

from __future__ import annotations

import html
import json
import math

import ipywidgets as w
import pandas as pd

from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.widgets._common import DisplayMixin, pre_html, table_html

__all__ = ["TrajectoryExplorer"]

_STEP_TABLE = ("step", "kind", "tool", "arguments", "result", "error", "text")


class TrajectoryExplorer(DisplayMixin):
    """Choose a case, then step through what the agent did for it.

    ``source`` is what ``frames.trajectory_steps`` and ``frames.case_metrics``
    read: a ``TargetEvaluation``, or a run report of ``evaluate_target`` tests
    (a ``Report`` or its JSON file). The header shows the chosen case: its
    input, expected and final answers, whether it passed, why the run stopped
    and each metric's score. The slider (or ``previous`` / ``next``) picks a
    step: a model turn shows its reply, a tool call its arguments and result
    (or error). Below, the table of the steps so far.

    ::

        explorer = TrajectoryExplorer(score_target(factory, cases, evaluator=[...]))
        explorer                         # the last expression of a cell displays it
        explorer.case.value = "refund-A1002"   # the same as choosing it in the list
        explorer.next_button.click()
    """

    def __init__(self, source: frames.TrajectorySource, *, case: str | None = None) -> None:
        self.steps = frames.trajectory_steps(source)
        self.cases = frames.case_metrics(source)
        if self.cases.empty:
            raise ConfigError("the evaluation has no cases to explore")
        self.metrics = [c for c in self.cases.columns if c not in frames.CASE_METRIC_COLUMNS]
        ids = [str(i) for i in self.cases["case_id"]]
        if len(set(ids)) != len(ids):
            # Several tests or samples: the list must still name each row once.
            ids = [f"{i} · {n} #{s}" for i, n, s in
                   zip(ids, self.cases["nodeid"], self.cases["sample"], strict=True)]  # fmt: skip
        self._ids = ids
        options = [
            (f"{i} ({_verdict(p)})", i) for i, p in zip(ids, self.cases["passed"], strict=True)
        ]
        self.case = w.Dropdown(options=options, value=ids[0], description="case")
        self.slider = w.IntSlider(value=1, min=1, max=1, description="step",
                                  continuous_update=False)  # fmt: skip
        self.previous_button = w.Button(description="previous")
        self.next_button = w.Button(description="next")
        self.header = w.HTML()
        self.position = w.HTML()
        self.detail = w.HTML()
        self.table = w.HTML()
        passed = int(self.cases["passed"].eq(True).sum())
        title = (
            f"<b>Trajectories</b>: {len(self.cases)} case(s), {passed} passed, "
            f"{len(self.steps)} step(s)"
        )
        self.widget = w.VBox(
            [
                w.HTML(title),
                self.case,
                self.header,
                w.HBox([self.previous_button, self.slider, self.next_button]),
                self.position,
                self.detail,
                self.table,
            ]
        )
        self._quiet = False
        self.case.observe(self._on_case, names="value")
        self.slider.observe(lambda change: self._on_slide(), names="value")
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(+1))
        self.show(ids[0] if case is None else case)

    @property
    def case_steps(self) -> pd.DataFrame:
        """The steps of the chosen case (``TRAJECTORY_STEP_COLUMNS``)."""
        row = self._row()
        match = (
            (self.steps["nodeid"] == row["nodeid"])
            & (self.steps["case_id"] == row["case_id"])
            & (self.steps["sample"] == row["sample"])
        )
        found: pd.DataFrame = self.steps[match].reset_index(drop=True)
        return found

    def _row(self) -> pd.Series:
        return self.cases.iloc[self._ids.index(str(self.case.value))]

    def show(self, case: str, step: int = 1) -> None:
        """Show ``case`` (its id, as the list names it) at ``step`` (from 1)."""
        if case not in self._ids:
            known = ", ".join(self._ids[:10]) + (", ..." if len(self._ids) > 10 else "")
            raise ConfigError(f"no case {case!r}; the cases are {known}")
        self._quiet = True
        try:
            self.case.value = case
            count = len(self.case_steps)
            # A case with no trajectory still shows its header; the slider rests at 0.
            # min goes to 0 first: a slider refuses a min above its max at any moment.
            self.slider.min = 0
            self.slider.max = count
            self.slider.min = 1 if count else 0
            self.slider.value = min(max(step, self.slider.min), count)
            self.slider.disabled = count <= 1
        finally:
            self._quiet = False
        self.header.value = self._header_html()
        self._fill()

    def step(self, delta: int) -> None:
        """Move ``delta`` steps (the buttons move one); stops at the first and last."""
        target = min(max(self.slider.value + delta, self.slider.min), self.slider.max)
        self.slider.value = target  # the slider's observer fills the views

    def _on_case(self, change: dict[str, object]) -> None:
        if not self._quiet:
            self.show(str(change["new"]))

    def _on_slide(self) -> None:
        if not self._quiet:
            self._fill()

    def _header_html(self) -> str:
        row = self._row()
        lines = [
            ("input", row["input"]),
            ("expected", row["expected"]),
            ("answer", row["output"]),
        ]
        facts = [
            f"<b>{html.escape(str(row['case_id']))}</b>: {_verdict(row['passed'])}",
            f"state {html.escape(str(row['state']))}",
        ]
        if isinstance(row["stop_reason"], str):
            facts.append(f"stopped: {html.escape(row['stop_reason'])}")
        if isinstance(row["error"], str):
            facts.append(f"<span style='color: {plots.REGRESSION_COLOR}'>"
                         f"{html.escape(row['error'])}</span>")  # fmt: skip
        scores = ", ".join(f"{html.escape(m)} {_score(row[m])}" for m in self.metrics)
        texts = "".join(
            f"<div><b>{name}</b>: {html.escape(_one_line(value))}</div>"
            for name, value in lines
            if isinstance(value, str)
        )
        return f"<div>{' · '.join(facts)}</div><div>{scores}</div>{texts}"

    def _fill(self) -> None:
        steps = self.case_steps
        count = len(steps)
        self.previous_button.disabled = self.slider.value <= 1
        self.next_button.disabled = self.slider.value >= count
        if count == 0:
            self.position.value = "<i>no steps: the case has no trajectory</i>"
            self.detail.value = ""
            self.table.value = table_html(steps.loc[:, list(_STEP_TABLE)], empty="no steps")
            return
        index = int(self.slider.value) - 1
        current = steps.iloc[index]
        what = "model turn" if current["kind"] == "model" else f"tool call {current['tool']}"
        self.position.value = f"step {index + 1} of {count}: {html.escape(what)}"
        self.detail.value = _step_html(current)
        shown = steps.iloc[: index + 1].assign(step=lambda f: f["step"] + 1)
        self.table.value = table_html(shown.loc[:, list(_STEP_TABLE)], max_chars=60)


def _verdict(passed: object) -> str:
    # A frame cell: a (numpy) bool, or None / NaN for a case never asked.
    if passed is None or (isinstance(passed, float) and math.isnan(passed)):
        return "not asked"
    return "pass" if bool(passed) else "fail"


def _score(value: object) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "–"
    return f"{float(value):.2f}" if isinstance(value, int | float) else str(value)


def _one_line(text: str, width: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _pretty(text: str) -> str:
    """JSON text indented for reading; any other text as it is."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _step_html(step: pd.Series) -> str:
    if step["kind"] == "model":
        text = step["text"] if isinstance(step["text"], str) and step["text"] else ""
        body = pre_html(text) if text else "<i>(no text)</i>"
        return f"<div>{int(step['tokens'])} token(s)</div>{body}"
    parts = [f"<div><b>arguments</b></div>{pre_html(_pretty(str(step['arguments'])))}"]
    if isinstance(step["error"], str):
        parts.append(
            f"<div><b style='color: {plots.REGRESSION_COLOR}'>error</b></div>"
            f"{pre_html(step['error'])}"
        )
    elif isinstance(step["result"], str):
        parts.append(f"<div><b>result</b></div>{pre_html(_pretty(step['result']))}")
    else:
        parts.append("<div><i>no result</i></div>")
    return "".join(parts)
