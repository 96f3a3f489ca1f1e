"""The tool-use and steps-per-case charts on the support desk agent's real runs.

The base run is the desk as bench/support_desk.py runs it (at most 4 model
calls a request); the head run allows 2. Both replay the same committed
replies: the first two requests of every run are the same, so the head is
the base cut short. Four runs looped (lookup_order, check_policy,
issue_refund, then the cap): the head stops them after lookup_order.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from tests.plots._axes import bars
from tests.support_desk import desk_evaluation
from tnsai_eval import frames, plots
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import TargetEvaluation

LOOPED = ["where-A1006", "where-A1012", "policy-09", "policy-12"]


@pytest.fixture(scope="module")
def base() -> TargetEvaluation:
    return desk_evaluation(max_steps=4)


@pytest.fixture(scope="module")
def head() -> TargetEvaluation:
    return desk_evaluation(max_steps=2)


def _rows(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_yticklabels()]


def _red_rows(fig: Figure) -> list[str]:
    return [
        t.get_text()
        for t in fig.axes[0].get_yticklabels()
        if to_hex(t.get_color()) == plots.REGRESSION_COLOR
    ]


def test_tool_use_counts_each_cases_calls(base: TargetEvaluation) -> None:
    fig = plots.plot_tool_use(base)
    ax = fig.axes[0]
    tools = [t.get_text() for t in ax.get_xticklabels()]
    assert tools == ["lookup_order", "check_policy", "issue_refund"]
    rows = _rows(fig)
    assert rows == [c.id for c in base.cases]
    grid = np.asarray(ax.images[0].get_array())
    looped = rows.index("where-A1006")
    assert grid[looped].tolist() == [1, 1, 1]
    assert grid[rows.index("talk-01")].tolist() == [1, 0, 0]
    assert grid[rows.index("policy-01")].tolist() == [0, 0, 0]
    assert int(grid.sum()) == sum(len(t.tool_calls) for t in base.trajectories if t)
    assert _red_rows(fig) == []  # nothing to compare with


def test_tool_use_base_against_head_marks_the_skipped_tools(
    base: TargetEvaluation, head: TargetEvaluation
) -> None:
    fig = plots.plot_tool_use(head, base)
    ax = fig.axes[0]
    assert ax.get_title() == "tool calls per case (base → head): 4 of 48 changed"
    assert _red_rows(fig) == LOOPED
    marks = [t.get_text() for t in ax.texts]
    # check_policy and issue_refund, once each in base, never in head, for each looped case.
    assert marks.count("1→0") == 8
    grid = np.asarray(ax.images[0].get_array())
    row = _rows(fig).index("policy-09")
    assert grid[row].tolist() == [1, 3, 3]  # lookup_order the same; the others fewer in head
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "same calls", "more in head", "fewer in head",
    ]  # fmt: skip


def test_tool_use_takes_frames_and_puts_changed_cases_first_when_cut(
    base: TargetEvaluation, head: TargetEvaluation
) -> None:
    fig = plots.plot_tool_use(
        frames.trajectory_steps(head), frames.trajectory_steps(base), max_cases=6
    )
    assert _rows(fig)[:4] == LOOPED
    assert len(_rows(fig)) == 6
    assert fig.axes[0].get_title().endswith("(42 more not shown)")


def test_steps_per_case_stacks_model_turns_and_tool_calls(base: TargetEvaluation) -> None:
    fig = plots.plot_steps_per_case(base)
    ax = fig.axes[0]
    rows = _rows(fig)
    drawn = bars(ax)
    model, tool = drawn[: len(rows)], drawn[len(rows) :]
    looped = rows.index("where-A1006")
    assert (model[looped].get_width(), tool[looped].get_width()) == (4, 3)
    assert tool[looped].get_x() == 4  # the tool calls stacked after the model turns
    total = sum(b.get_width() for b in drawn)
    assert total == sum(len(t.steps) for t in base.trajectories if t) == 134


def test_steps_per_case_base_against_head(base: TargetEvaluation, head: TargetEvaluation) -> None:
    fig = plots.plot_steps_per_case(head, base, labels=("4 steps", "2 steps"))
    ax = fig.axes[0]
    assert ax.get_title() == "steps per case (4 steps vs 2 steps): 4 of 48 changed"
    assert _red_rows(fig) == LOOPED
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "4 steps: model turns", "4 steps: tool calls", "2 steps: model turns",
        "2 steps: tool calls",
    ]  # fmt: skip
    n = len(_rows(fig))
    drawn = bars(ax)
    head_model, head_tool = drawn[2 * n : 3 * n], drawn[3 * n :]
    looped = _rows(fig).index("where-A1006")
    assert (head_model[looped].get_width(), head_tool[looped].get_width()) == (2, 1)


def test_charts_refuse_what_they_cannot_draw(base: TargetEvaluation) -> None:
    empty = frames.trajectory_steps(base).iloc[0:0]
    with pytest.raises(ConfigError, match="no trajectory steps"):
        plots.plot_tool_use(empty)
    with pytest.raises(ConfigError, match="lacks column"):
        plots.plot_steps_per_case(frames.case_metrics(base))
    with pytest.raises(ConfigError, match="max_cases must be an int >= 1, got 0"):
        plots.plot_tool_use(base, max_cases=0)
