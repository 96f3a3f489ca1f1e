"""Figures of evaluation results, as ``matplotlib.figure.Figure`` objects.

Every function takes a frame from ``tnsai_eval.frames`` (or the result object
it is built from) and returns a new ``Figure``. Nothing touches pyplot's
global state: figures are never registered with a GUI manager, so they are
safe in scripts, threads and servers, and are garbage-collected like any
object. In a notebook, a ``Figure`` returned by a cell renders inline; save
one with ``fig.savefig(path)`` or get PNG bytes with ``to_png(fig)``.

>>> fig = plot_score_progression({"baseline": [0.2, 0.5, 0.7], "tuned": [0.4, 0.8]})
>>> [line.get_label() for line in fig.axes[0].get_lines()]
['baseline', 'tuned']
"""

from __future__ import annotations

import io
import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from tnsai_eval import frames
from tnsai_eval.errors import ConfigError

__all__ = [
    "REGRESSION_COLOR",
    "plot_check_matrix",
    "plot_cost_per_round",
    "plot_optimizer_rounds",
    "plot_report_comparison",
    "plot_score_progression",
    "plot_variant_case_heatmap",
    "to_png",
]

#: Colour of regressed tests (and failed checks), so that a glance finds them.
REGRESSION_COLOR = "#d62728"
_PASS_COLOR = "#2ca02c"
_BASE_COLOR = "#9e9e9e"
_CURRENT_COLOR = "#1f77b4"


def to_png(fig: Figure, *, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (for widgets, HTML pages and files)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def _short(text: object, width: int) -> str:
    return textwrap.shorten(" ".join(str(text).split()), width=width, placeholder="…")


def _score_axis(ax: Any) -> None:
    # Scores live in [0, 1]; a fixed axis makes figures of different runs comparable.
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, alpha=0.3)


def plot_score_progression(
    runs: object, *, title: str = "Score progression", xlabel: str = "iteration"
) -> Figure:
    """One line per run: score (y) by step (x).

    ``runs`` is anything ``frames.score_progressions`` accepts: a result, a list
    of scores, a mapping of run name to either, or a (run, step, score) frame.
    """
    data = frames.score_progressions(runs)
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    for name, group in data.groupby("run", sort=False):
        ax.plot(
            group["step"].to_numpy(), group["score"].to_numpy(float), marker="o", label=str(name)
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score")
    ax.set_title(title)
    _score_axis(ax)
    if data["run"].nunique() > 1:
        ax.legend(loc="lower right")
    if len(data):
        ax.set_xticks(range(int(data["step"].max()) + 1))
    return fig


def plot_optimizer_rounds(result: object, *, title: str = "Optimizer rounds") -> Figure:
    """Each variant's mean score per round (points, coloured by strategy) and the best so far.

    ``result`` is an ``OptimizationResult`` or its ``to_dataframe()`` frame.
    The best-so-far line is the running maximum of the round-best scores.
    """
    scores = frames.variant_scores(result)
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    for strategy, group in scores.groupby("strategy", sort=False, dropna=False):
        label = "initial / rewrite" if pd.isna(strategy) else str(strategy)
        ax.scatter(group["round"], group["score"], label=label, alpha=0.8, zorder=3)
    best = scores.groupby("round", sort=True)["score"].max().cummax()
    ax.plot(
        best.index.to_numpy(),
        best.to_numpy(float),
        color="black",
        drawstyle="steps-post",
        label="best so far",
    )
    ax.set_xlabel("round")
    ax.set_ylabel("mean score over cases")
    ax.set_title(title)
    ax.set_xticks(sorted(scores["round"].unique()))
    _score_axis(ax)
    ax.legend(loc="lower right", fontsize="small")
    return fig


def _variant_label(row: pd.Series) -> str:
    strategy = row["strategy"]
    name = "initial" if pd.isna(strategy) or not str(strategy) else str(strategy)
    return f"r{row['round']} {_short(name, 28)}"


def plot_variant_case_heatmap(
    result: object, *, rounds: list[int] | None = None, title: str = "Score by variant and case"
) -> Figure:
    """A variant (rows) x case (columns) heatmap of scores, values written in cells.

    ``rounds`` keeps only those rounds. Rows are labelled ``r<round> <strategy>``,
    columns by the case's input (shortened). Unscored cells are blank.
    """
    cases = frames.optimizer_cases(result)
    if rounds is not None:
        cases = cases[cases["round"].isin(rounds)]
    if cases.empty:
        raise ConfigError(f"no optimizer rows to plot for rounds={rounds!r}")
    variants = cases.drop_duplicates(["round", "variant"]).reset_index(drop=True)
    variants["label"] = variants.apply(_variant_label, axis=1)
    inputs = cases.drop_duplicates("case").set_index("case")["input"]
    keyed = cases.merge(variants[["round", "variant", "label"]], on=["round", "variant"])
    matrix = keyed.pivot_table(
        index="label", columns="case", values="score", aggfunc="mean", sort=False
    ).reindex(index=variants["label"], columns=inputs.index)
    values = matrix.to_numpy(dtype=float)

    # Room for the row labels (up to ~32 characters) plus one column per case.
    fig = Figure(figsize=(4.0 + 0.9 * values.shape[1], 1.6 + 0.45 * values.shape[0]))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(values.shape[1]), [_short(i, 18) for i in inputs.values])
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_yticks(range(values.shape[0]), list(matrix.index))
    for (row, col), value in np.ndenumerate(values):
        if not np.isnan(value):
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if value < 0.5 else "black")  # fmt: skip
    ax.set_xlabel("case")
    ax.set_ylabel("variant")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="score")
    return fig


def plot_check_matrix(result: object, *, title: str = "Checks by iteration") -> Figure:
    """Checks (rows) x iterations (columns): green passed, red failed, blank not run.

    ``result`` is a ``RefinementResult`` or its ``checks_dataframe()`` frame.
    """
    checks = frames.refinement_checks(result)
    if checks.empty:
        raise ConfigError("the refinement result has no checked iterations to plot")
    matrix = checks.pivot_table(
        index="check", columns="iteration", values="passed", aggfunc="min", sort=False
    )
    iterations = sorted(checks["iteration"].unique())
    matrix = matrix.reindex(columns=iterations)
    values = matrix.to_numpy(dtype=float)

    fig = Figure(figsize=(1.8 + 0.6 * len(iterations), 1.0 + 0.45 * len(matrix)))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    cmap = ListedColormap([REGRESSION_COLOR, _PASS_COLOR])
    ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for (row, col), value in np.ndenumerate(values):
        if not np.isnan(value):
            mark = "pass" if value >= 0.5 else "fail"
            ax.text(col, row, mark, ha="center", va="center", color="white", fontsize=8)
    ax.set_xticks(range(len(iterations)), [str(i) for i in iterations])
    ax.set_yticks(range(len(matrix)), [_short(c, 40) for c in matrix.index])
    ax.set_xlabel("iteration")
    ax.set_title(title)
    return fig


def plot_report_comparison(
    comparison: pd.DataFrame, *, title: str = "Baseline vs current", max_tests: int = 40
) -> Figure:
    """Baseline and current value per test as paired bars; regressions in red.

    ``comparison`` is a ``frames.compare_reports`` frame (``COMPARISON_COLUMNS``).
    The first ``max_tests`` rows are drawn (that function puts regressions first).
    """
    frames.require_columns(comparison, frames.COMPARISON_COLUMNS, what="comparison frame")
    if max_tests < 1:
        raise ConfigError(f"max_tests must be >= 1, got {max_tests!r}")
    data = comparison.head(max_tests).reset_index(drop=True)
    n = len(data)
    fig = Figure(figsize=(8.0, 1.4 + 0.4 * max(n, 1)), layout="constrained")
    ax = fig.add_subplot()
    ys = np.arange(n)
    height = 0.38
    ax.barh(ys - height / 2, data["baseline"].fillna(0.0), height, color=_BASE_COLOR,
            label="baseline")  # fmt: skip
    colors = [
        REGRESSION_COLOR if status == "regressed" else _CURRENT_COLOR for status in data["status"]
    ]
    ax.barh(ys + height / 2, data["current"].fillna(0.0), height, color=colors, label="current")
    ax.set_yticks(ys, [_short(t, 50) for t in data["test"]])
    for tick, status in zip(ax.get_yticklabels(), data["status"], strict=True):
        if status == "regressed":
            tick.set_color(REGRESSION_COLOR)
            tick.set_fontweight("bold")
    ax.invert_yaxis()  # first row (worst regression) on top
    ax.set_xlabel("score")
    ax.set_xlim(0, max(1.0, float(np.nanmax(data[["baseline", "current"]].to_numpy(float)))
                       if n else 1.0))  # fmt: skip
    regressed = int((data["status"] == "regressed").sum())
    ax.set_title(f"{title} ({regressed} regressed)")
    # Explicit handles: the first current bar may be red, and must not define the key.
    handles = [
        Patch(color=_BASE_COLOR, label="baseline"),
        Patch(color=_CURRENT_COLOR, label="current"),
        Patch(color=REGRESSION_COLOR, label="current (regressed)"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def _cost_frame(result: object) -> pd.DataFrame:
    if isinstance(result, pd.DataFrame) and {"round", "calls", "tokens"} <= set(result.columns):
        return result.groupby("round", sort=True)[["calls", "tokens"]].sum().reset_index()
    scores = frames.variant_scores(result)
    return scores.groupby("round", sort=True)[["calls", "tokens"]].sum().reset_index()


def plot_cost_per_round(result: object, *, title: str = "Cost per round") -> Figure:
    """Model calls (left) and tokens (right) spent per round; cached replies cost nothing.

    ``result`` is an ``OptimizationResult``, its case frame, or any frame with
    ``round``, ``calls`` and ``tokens`` columns (summed per round).
    """
    cost = _cost_frame(result)
    fig = Figure(figsize=(7.0, 3.0), layout="constrained")
    calls_ax, tokens_ax = fig.subplots(1, 2)
    calls_ax.bar(cost["round"], cost["calls"], color=_CURRENT_COLOR)
    calls_ax.set_ylabel("calls")
    tokens_ax.bar(cost["round"], cost["tokens"], color="#ff7f0e")
    tokens_ax.set_ylabel("tokens")
    for ax in (calls_ax, tokens_ax):
        ax.set_xlabel("round")
        ax.set_xticks(list(cost["round"]))
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"{title}: {int(cost['calls'].sum())} calls, {int(cost['tokens'].sum())} tokens")
    return fig
