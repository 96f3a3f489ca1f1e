"""What agents did, drawn: which tools each case called, and how many steps each took.

Both charts take a ``frames.trajectory_steps`` frame (or what it is built
from: a ``TargetEvaluation``, or a run report of ``evaluate_target`` tests)
and optionally a second one, the baseline
(``base``), to draw the two runs of the same cases against each other. Cases
are matched by ``(nodeid, case_id, sample)``.
"""

from __future__ import annotations

from collections import Counter
from typing import TypeAlias

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from tnsai_eval import frames
from tnsai_eval._util.checks import whole
from tnsai_eval.errors import ConfigError
from tnsai_eval.plots._base import (
    BASE_COLOR,
    CURRENT_COLOR,
    REGRESSION_COLOR,
    plain,
    short,
)

__all__ = ["plot_steps_per_case", "plot_tool_use"]

#: What the charts draw: a ``trajectory_steps`` frame, or what it is built from.
Runs: TypeAlias = "pd.DataFrame | frames.TrajectorySource"
_Key = tuple[str, str, int]
# Cells of the tool-use chart with a baseline: no call in either run, the same
# calls, more calls in head than in base, fewer (a tool head skipped).
_SAME, _MORE, _FEWER = 1, 2, 3
_CELL_COLORS = ["#ffffff", "#c6dbef", CURRENT_COLOR, REGRESSION_COLOR]
_TOOL_COLOR = "#ff7f0e"
_LABEL_CHARS = 28


def _steps(source: Runs, what: str) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        frames.require_columns(
            source, frames.TRAJECTORY_STEP_COLUMNS, what=f"{what} (a trajectory_steps frame)"
        )
        return source
    return frames.trajectory_steps(source)


def _keys(frame: pd.DataFrame) -> list[_Key]:
    """The cases of ``frame`` in the order they first appear."""
    seen = zip(frame["nodeid"], frame["case_id"], frame["sample"], strict=True)
    return list(dict.fromkeys((str(n), str(c), int(s)) for n, c, s in seen))


def _labels(keys: list[_Key]) -> list[str]:
    # The case id says which case; the test (or target) and sample only when
    # the chart holds several.
    several_tests = len({k[0] for k in keys}) > 1
    several_samples = len({k[2] for k in keys}) > 1
    out = []
    for nodeid, case_id, sample in keys:
        text = f"{nodeid.rsplit('::', 1)[-1]} · {case_id}" if several_tests else case_id
        text += f" #{sample}" if several_samples else ""
        out.append(short(text, _LABEL_CHARS))
    return out


def _tool_counts(frame: pd.DataFrame) -> Counter[tuple[_Key, str]]:
    tools = frame[frame["kind"] == "tool"]
    return Counter(
        ((str(n), str(c), int(s)), str(t))
        for n, c, s, t in zip(
            tools["nodeid"], tools["case_id"], tools["sample"], tools["tool"], strict=True
        )
    )


def _shown(keys: list[_Key], changed: set[_Key], limit: int) -> list[_Key]:
    """The cases drawn: all of them, or when there are more than ``limit`` the changed
    ones first (they are what a reader looks for), then the rest, in order."""
    if not keys:
        raise ConfigError("no trajectory steps to plot: no case of the run has a trajectory")
    if len(keys) <= limit:
        return keys
    return ([k for k in keys if k in changed] + [k for k in keys if k not in changed])[:limit]


def _case_ticks(ax: Axes, keys: list[_Key], changed: set[_Key]) -> None:
    """One y tick per case, at 0, 1, 2...; the labels of the changed cases red."""
    ax.set_yticks(range(len(keys)), _labels(keys), fontsize=8)
    for tick, key in zip(ax.get_yticklabels(), keys, strict=True):
        if key in changed:
            tick.set_color(REGRESSION_COLOR)


def _title(given: str | None, default: str, left_out: int) -> str:
    text = default if given is None else plain(given)
    return text + (f" ({left_out} more not shown)" if left_out else "")


def plot_tool_use(
    head: Runs,
    base: Runs | None = None,
    *,
    labels: tuple[str, str] = ("base", "head"),
    max_cases: int = 60,
    title: str | None = None,
) -> Figure:
    """Which tools each case called: a case x tool grid of call counts.

    ``head`` (and ``base``) are ``frames.trajectory_steps`` frames or what
    they are built from (``TargetEvaluation``s, reports). Alone, each cell
    holds how often the case called the tool (darker: more). With ``base``,
    each cell compares the two runs: pale where both called the tool as
    often, blue where head called it more, red where head called it less (a
    tool it skipped), marked ``base→head``; the labels of the cases whose
    calls changed are red. At most
    ``max_cases`` rows are drawn (the changed cases first when there are
    more); the title says how many were left out.
    """
    whole("max_cases", max_cases, 1)
    now = _steps(head, "head")
    before = None if base is None else _steps(base, "base")
    now_counts = _tool_counts(now)
    before_counts = Counter[tuple[_Key, str]]() if before is None else _tool_counts(before)
    all_keys = list(dict.fromkeys([*_keys(now), *([] if before is None else _keys(before))]))
    tools = list(dict.fromkeys(t for _, t in [*before_counts, *now_counts]))
    changed = {
        key for key in all_keys
        if before is not None
        and any(now_counts[(key, t)] != before_counts[(key, t)] for t in tools)
    }  # fmt: skip
    keys = _shown(all_keys, changed, max_cases)
    fig = Figure(figsize=(max(5.0, 2.6 + 1.1 * max(len(tools), 1)), 1.4 + 0.26 * len(keys)))
    ax = fig.add_subplot()
    grid = np.zeros((len(keys), max(len(tools), 1)), dtype=int)
    for row, key in enumerate(keys):
        for col, tool in enumerate(tools):
            new, old = now_counts[(key, tool)], before_counts[(key, tool)]
            if before is None:
                grid[row, col] = new
                if new:
                    ax.text(col, row, str(new), ha="center", va="center", fontsize=8,
                            color="white" if new > 1 else "black")  # fmt: skip
                continue
            if new == old:
                grid[row, col] = _SAME if new else 0
                text = str(new) if new else ""
            else:
                grid[row, col] = _MORE if new > old else _FEWER
                text = f"{old}→{new}"
            if text:
                color = "black" if grid[row, col] == _SAME else "white"
                ax.text(col, row, text, ha="center", va="center", fontsize=8, color=color)
    if before is None:
        ax.imshow(grid, cmap="Blues", vmin=0, vmax=max(2, int(grid.max()) + 1), aspect="auto")
    else:
        ax.imshow(grid, cmap=ListedColormap(_CELL_COLORS), vmin=0, vmax=3, aspect="auto")
        ax.legend(
            handles=[
                Patch(color=_CELL_COLORS[_SAME], label="same calls"),
                Patch(color=CURRENT_COLOR, label=f"more in {labels[1]}"),
                Patch(color=REGRESSION_COLOR, label=f"fewer in {labels[1]}"),
            ],
            loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
        )  # fmt: skip
    ax.set_xticks(range(len(tools)), [plain(t) for t in tools] or ["(no tool called)"])
    ax.tick_params(axis="x", labeltop=True, labelbottom=False, rotation=30)
    _case_ticks(ax, keys, changed)
    default = "tool calls per case"
    if before is not None:
        default += f" ({labels[0]} → {labels[1]}): {len(changed)} of {len(all_keys)} changed"
    ax.set_title(_title(title, default, len(all_keys) - len(keys)), fontsize=10)
    fig.tight_layout()
    return fig


def _step_kinds(frame: pd.DataFrame) -> dict[_Key, tuple[int, int]]:
    """(model turns, tool calls) per case."""
    out = dict.fromkeys(_keys(frame), (0, 0))
    for nodeid, case_id, sample, kind in frame[["nodeid", "case_id", "sample", "kind"]].itertuples(
        index=False
    ):
        key = (str(nodeid), str(case_id), int(sample))
        model, tool = out[key]
        out[key] = (model + (kind == "model"), tool + (kind == "tool"))
    return out


def plot_steps_per_case(
    head: Runs,
    base: Runs | None = None,
    *,
    labels: tuple[str, str] = ("base", "head"),
    max_cases: int = 60,
    title: str | None = None,
) -> Figure:
    """How many steps each case took: model turns and tool calls, one bar per case.

    ``head`` (and ``base``) are ``frames.trajectory_steps`` frames or what
    they are built from (``TargetEvaluation``s, reports). Alone, each bar
    stacks the case's model turns and its tool calls. With ``base``, each
    case has two bars, base (grey) and head, each stacked the same way; the
    labels of the cases whose step count changed are red. At most
    ``max_cases`` cases (those that changed first).
    """
    whole("max_cases", max_cases, 1)
    now = _step_kinds(_steps(head, "head"))
    before = None if base is None else _step_kinds(_steps(base, "base"))
    all_keys = list(dict.fromkeys([*now, *(before or {})]))
    changed = set() if before is None else {
        k for k in all_keys if sum(now.get(k, (0, 0))) != sum(before.get(k, (0, 0)))
    }  # fmt: skip
    keys = _shown(all_keys, changed, max_cases)
    fig = Figure(figsize=(6.4, 1.4 + (0.42 if before else 0.26) * len(keys)))
    ax = fig.add_subplot()
    rows = np.arange(len(keys), dtype=float)
    runs: list[tuple[str, dict[_Key, tuple[int, int]], float, str, float]] = [
        (labels[1], now, 0.0, CURRENT_COLOR, 1.0)
    ]
    height = 0.7
    if before is not None:
        height = 0.38
        runs = [
            (labels[0], before, -0.2, BASE_COLOR, 0.9),
            (labels[1], now, 0.2, CURRENT_COLOR, 1.0),
        ]
    for name, counts, offset, color, alpha in runs:
        model = [counts.get(k, (0, 0))[0] for k in keys]
        tool = [counts.get(k, (0, 0))[1] for k in keys]
        prefix = f"{name}: " if before is not None else ""
        ax.barh(rows + offset, model, height=height, color=color, alpha=alpha,
                label=f"{prefix}model turns")  # fmt: skip
        ax.barh(rows + offset, tool, left=model, height=height, color=_TOOL_COLOR,
                alpha=0.55 if before is not None and name == labels[0] else 1.0,
                label=f"{prefix}tool calls")  # fmt: skip
    _case_ticks(ax, keys, changed)
    ax.invert_yaxis()  # the first case on top, as in a table
    ax.set_xlabel("steps")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    default = "steps per case"
    if before is not None:
        default += f" ({labels[0]} vs {labels[1]}): {len(changed)} of {len(all_keys)} changed"
    ax.set_title(_title(title, default, len(all_keys) - len(keys)), fontsize=10)
    fig.tight_layout()
    return fig
