"""The optimizer, refinement and norm figures of ``tnsai_eval.plots`` (re-exported there)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from tnsai_eval import frames
from tnsai_eval.errors import ConfigError
from tnsai_eval.frames import PARTIAL_STATUSES, ProgressionRun
from tnsai_eval.plots._base import (
    BASE_COLOR,
    CURRENT_COLOR,
    PASS_COLOR,
    REGRESSION_COLOR,
    score_axis,
    short,
)

if TYPE_CHECKING:
    from tnsai_eval.optimizer import OptimizationResult
    from tnsai_eval.refinement import RefinementResult

__all__ = [
    "plot_check_matrix",
    "plot_confusion",
    "plot_cost_per_round",
    "plot_norm_checks",
    "plot_optimizer_rounds",
    "plot_score_progression",
    "plot_variant_case_heatmap",
]

_MARKERS = ("o", "s", "^", "D", "v", "P")
_LINESTYLES = ("-", "--", ":", "-.")
# The check matrix's value for a skipped check: between fail (0) and pass (1).
_SKIPPED = 0.5


def plot_score_progression(
    runs: ProgressionRun | Mapping[str, ProgressionRun] | pd.DataFrame,
    *,
    title: str = "Score progression",
    xlabel: str = "iteration",
) -> Figure:
    """One line per run: score (y) by step (x).

    ``runs`` is anything ``frames.score_progressions`` accepts: a result, a list
    of scores, a mapping of run name to either, or a (run, step, score) frame.
    """
    data = frames.score_progressions(runs)
    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    # Runs often share scores (two searches ending on the same best): each line has
    # its own marker, size and dash, so one drawn over another still shows both.
    for index, (name, group) in enumerate(data.groupby("run", sort=False)):
        ax.plot(
            group["step"].to_numpy(),
            group["score"].to_numpy(float),
            marker=_MARKERS[index % len(_MARKERS)],
            markersize=max(9 - 2 * index, 4),
            markerfacecolor="none" if index == 0 else None,
            linestyle=_LINESTYLES[index % len(_LINESTYLES)],
            linewidth=max(2.5 - 0.5 * index, 1.0),
            label=str(name),
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("score")
    ax.set_title(title)
    score_axis(ax)
    if data["run"].nunique() > 1:
        ax.legend(loc="lower right")
    if len(data):
        ax.set_xticks(range(int(data["step"].min()), int(data["step"].max()) + 1))
    return fig


def plot_optimizer_rounds(
    result: OptimizationResult | pd.DataFrame, *, title: str = "Optimizer rounds"
) -> Figure:
    """Each variant's mean score per round (points, coloured by strategy) and the best so far.

    The legend names each strategy with what its variants carry beyond the
    instruction (``demos [3 demo(s) as chat, 3 bootstrapped]``,
    ``initial [system message]``).

    ``result`` is an ``OptimizationResult`` or its ``to_dataframe()`` frame.
    The best-so-far line is ``frames.best_so_far``: the optimizer's best score
    after each round (with a bare frame, the running maximum of the variants').
    Variants scored on only some cases (dropped by racing, cut by the budget)
    are drawn hollow and labelled "(partial)".
    """
    scores = frames.variant_scores(result)
    fig = Figure(figsize=(7.6, 3.8), layout="constrained")
    ax = fig.add_subplot()
    # One colour per strategy and variant details: two demo sets (one as chat
    # turns, one with a system message) are told apart in the legend.
    keyed = scores.assign(
        _key=[
            _legend_label(st, d)
            for st, d in zip(scores["strategy"], scores["details"], strict=True)
        ],
        _partial=scores["status"].isin(PARTIAL_STATUSES),
    )
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, group) in enumerate(keyed.groupby("_key", sort=False)):
        color = colors[i % len(colors)]
        full, cut = group[~group["_partial"]], group[group["_partial"]]
        if not full.empty:
            ax.scatter(
                full["round"], full["score"], label=str(label), color=color, alpha=0.8, zorder=3
            )
        if not cut.empty:
            # A partial mean (dropped by racing, cut by the budget) is drawn
            # hollow: it may sit above the best only because it saw fewer cases.
            ax.scatter(
                cut["round"],
                cut["score"],
                label=f"{label} (partial)",
                facecolors="none",
                edgecolors=color,
                zorder=3,
            )
    best = frames.best_so_far(result)
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
    score_axis(ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return fig


def _legend_label(strategy: object, details: object) -> str:
    """``strategy [details]``, e.g. ``demos [system message; 3 demo(s) as chat]``."""
    name = "initial" if pd.isna(strategy) or not str(strategy) else str(strategy)  # type: ignore[call-overload]
    extra = "" if pd.isna(details) else str(details)  # type: ignore[call-overload]
    return f"{name} [{short(extra, 64)}]" if extra else name


def _variant_label(round_: object, variant: object, strategy: object, details: object = "") -> str:
    name = "initial" if pd.isna(strategy) or not str(strategy) else str(strategy)  # type: ignore[call-overload]
    extra = "" if pd.isna(details) or not str(details) else f" [{short(details, 40)}]"  # type: ignore[call-overload]
    return f"r{round_} v{variant} {short(name, 24)}{extra}"


def plot_variant_case_heatmap(
    result: OptimizationResult | pd.DataFrame,
    *,
    rounds: list[int] | None = None,
    title: str = "Score by variant and case",
) -> Figure:
    """A variant (rows) x case (columns) heatmap of scores, values written in cells.

    ``rounds`` keeps only those rounds. Rows are labelled ``r<round> v<variant>
    <strategy> [<details>]`` (details: what the variant carries beyond its
    instruction: system message, demos, response format), columns by the
    case's input (shortened). Cells of failed calls
    are blank. Validation rows, when present, are left out.
    """
    cases = frames.optimizer_cases(result)
    if "split" in cases.columns:
        cases = cases[cases["split"].fillna("train") == "train"]
    if rounds is not None:
        cases = cases[cases["round"].isin(rounds)]
    if cases.empty:
        raise ConfigError(f"no optimizer rows to plot for rounds={rounds!r}")
    variants = cases.drop_duplicates(["round", "variant"])
    inputs = cases.drop_duplicates("case").set_index("case")["input"]
    matrix = cases.pivot_table(
        index=["round", "variant"], columns="case", values="score", aggfunc="mean", sort=False
    ).reindex(index=pd.MultiIndex.from_frame(variants[["round", "variant"]]), columns=inputs.index)
    values = matrix.to_numpy(dtype=float)
    details = variants["details"] if "details" in variants.columns else [""] * len(variants)
    labels = [
        _variant_label(r, v, st, d)
        for (r, v, st), d in zip(
            variants[["round", "variant", "strategy"]].itertuples(index=False), details, strict=True
        )
    ]

    # Room for the row labels (up to ~32 characters) plus one column per case.
    fig = Figure(figsize=(4.0 + 0.9 * values.shape[1], 1.6 + 0.45 * values.shape[0]))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(values.shape[1]), [short(i, 18) for i in inputs.values])
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_yticks(range(values.shape[0]), labels)
    for (row, col), value in np.ndenumerate(values):
        if not np.isnan(value):
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if value < 0.5 else "black")  # fmt: skip
    ax.set_xlabel("case")
    ax.set_ylabel("variant")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="score")
    return fig


def plot_confusion(result: OptimizationResult, *, title: str = "Answers by label") -> Figure:
    """The initial and the best prompt's confusion tables side by side (a label task).

    One panel per prompt from ``result.confusion()``: rows the expected
    label, columns the label answered (``(none)``: no label or several),
    counts written in the cells. On the held-out cases when there are any.
    A best prompt that answers one label to everything shows as a single
    filled column.
    """
    table = result.confusion()
    prompts = list(dict.fromkeys(table.index.get_level_values("prompt")))
    columns = [str(c) for c in table.columns]
    most = max(1, int(table.to_numpy().max()))
    fig = Figure(figsize=(1.8 + 1.6 * len(columns) * len(prompts), 1.4 + 0.5 * len(table) / 2))
    fig.set_layout_engine("constrained")
    axes = fig.subplots(1, len(prompts), squeeze=False)[0]
    image = None
    for ax, prompt in zip(axes, prompts, strict=True):
        block = table.xs(prompt, level="prompt")
        values = block.to_numpy(dtype=float)
        image = ax.imshow(values, cmap="Blues", vmin=0.0, vmax=most, aspect="auto")
        ax.set_xticks(range(len(columns)), [short(c, 14) for c in columns])
        ax.tick_params(axis="x", labelrotation=30)
        ax.set_yticks(range(len(block.index)), [short(str(i), 14) for i in block.index])
        for (row, col), value in np.ndenumerate(values):
            ax.text(col, row, f"{int(value)}", ha="center", va="center", fontsize=9,
                    color="white" if value > most / 2 else "black")  # fmt: skip
        ax.set_xlabel("answered")
        ax.set_title(f"{prompt} prompt")
    axes[0].set_ylabel("expected")
    fig.suptitle(title)
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="cases")
    return fig


def plot_check_matrix(
    result: RefinementResult | pd.DataFrame, *, title: str = "Checks by iteration"
) -> Figure:
    """Checks (rows) x iterations (columns): green passed, red failed, grey skipped.

    ``result`` is a ``RefinementResult`` or its ``checks_dataframe()`` frame. A
    check the loop skipped (an ``llm_check`` while a cheaper check fails; counted
    as failed) is grey when the frame has a ``skipped`` column; a check that was
    not run at an iteration is blank.
    """
    checks = frames.refinement_checks(result)
    if checks.empty:
        raise ConfigError("the refinement result has no checked iterations to plot")
    state = checks["passed"].astype(float)
    if "skipped" in checks.columns:
        state = state.mask(checks["skipped"].fillna(False).astype(bool), _SKIPPED)
    matrix = checks.assign(_state=state).pivot_table(
        index="check", columns="iteration", values="_state", aggfunc="min", sort=False
    )
    iterations = sorted(checks["iteration"].unique())
    matrix = matrix.reindex(columns=iterations)
    values = matrix.to_numpy(dtype=float)

    fig = Figure(figsize=(1.8 + 0.6 * len(iterations), 1.0 + 0.45 * len(matrix)))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    cmap = ListedColormap([REGRESSION_COLOR, BASE_COLOR, PASS_COLOR])
    ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    marks = {0.0: "fail", _SKIPPED: "skip", 1.0: "pass"}
    for (row, col), value in np.ndenumerate(values):
        if not np.isnan(value):
            ax.text(col, row, marks[float(value)], ha="center", va="center", color="white",
                    fontsize=8)  # fmt: skip
    ax.set_xticks(range(len(iterations)), [str(i) for i in iterations])
    ax.set_yticks(range(len(matrix)), [short(c, 40) for c in matrix.index])
    ax.set_xlabel("iteration")
    ax.set_title(title)
    return fig


def plot_norm_checks(checks: pd.DataFrame, *, title: str = "Norm checks") -> Figure:
    """Checks (rows) x norms (columns): red where the check found a violation of the norm.

    ``checks`` is a ``frames.norm_checks`` frame. Columns are the norms that
    were violated at least once, labelled ``<type>: <action>``; a check with no
    violation is an all-green row. Cells hold the number of violations.
    """
    frames.require_columns(checks, frames.NORM_CHECK_COLUMNS, what="norm check frame")
    if checks.empty:
        raise ConfigError("no norm checks to plot")
    names = list(dict.fromkeys(checks["check"]))
    broken = checks[~checks["allowed"].astype(bool)]
    labels = broken["norm_type"].astype(str) + ": " + broken["norm_action"].astype(str)
    norms = list(dict.fromkeys(labels))
    counts = (
        broken.assign(norm=labels)
        .pivot_table(index="check", columns="norm", values="allowed", aggfunc="size")
        .reindex(index=names, columns=norms)
        .fillna(0)
    )
    values = counts.to_numpy(dtype=float) if norms else np.zeros((len(names), 1))
    fig = Figure(figsize=(2.6 + 1.6 * max(len(norms), 1), 1.2 + 0.45 * len(names)))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    ax.imshow(values > 0, cmap=ListedColormap([PASS_COLOR, REGRESSION_COLOR]), vmin=0, vmax=1,
              aspect="auto")  # fmt: skip
    for (row, col), value in np.ndenumerate(values):
        count = int(value)
        text = "ok" if count == 0 else f"{count} violation{'s' if count > 1 else ''}"
        ax.text(col, row, text, ha="center", va="center", color="white", fontsize=8)
    ax.set_xticks(range(values.shape[1]), [short(n, 30) for n in norms] or ["(no violations)"])
    ax.tick_params(axis="x", labelrotation=20)
    ax.set_yticks(range(len(names)), [short(n, 30) for n in names])
    ax.set_xlabel("norm")
    ax.set_ylabel("check")
    ax.set_title(title)
    return fig


def plot_cost_per_round(
    result: OptimizationResult | pd.DataFrame, *, title: str = "Cost per round"
) -> Figure:
    """Model calls (left) and tokens (right) per round.

    ``result`` is an ``OptimizationResult`` (its ``rounds_dataframe()``: the
    calls the optimizer sent, rewrite requests included and replies reused
    within the run excluded) or any frame with ``round``, ``calls`` and
    ``tokens`` columns (summed per round).
    """
    rounds = frames.optimizer_rounds(result)
    frames.require_columns(rounds, ("round", "calls", "tokens"), what="cost frame")
    cost = rounds.groupby("round", sort=True)[["calls", "tokens"]].sum().reset_index()
    fig = Figure(figsize=(7.0, 3.0), layout="constrained")
    calls_ax, tokens_ax = fig.subplots(1, 2)
    calls_ax.bar(cost["round"], cost["calls"], color=CURRENT_COLOR)
    calls_ax.set_ylabel("calls")
    tokens_ax.bar(cost["round"], cost["tokens"], color="#ff7f0e")
    tokens_ax.set_ylabel("tokens")
    for ax in (calls_ax, tokens_ax):
        ax.set_xlabel("round")
        ax.set_xticks(list(cost["round"]))
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"{title}: {int(cost['calls'].sum())} calls, {int(cost['tokens'].sum())} tokens")
    return fig
