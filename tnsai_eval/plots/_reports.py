"""The pytest-report figures of ``tnsai_eval.plots`` (re-exported there)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from tnsai_eval import frames
from tnsai_eval.errors import ConfigError
from tnsai_eval.plots._base import (
    BASE_COLOR,
    CURRENT_COLOR,
    PASS_COLOR,
    REGRESSION_COLOR,
    nodeid_label,
    short,
)
from tnsai_eval.reports import Comparison

# The widest axis drawn: matplotlib's tick locator multiplies the span by up
# to 10, so a limit near the largest float (a hostile 1.5e308 s) overflows it.
_WIDEST = 1e300


def _value(number: float, *, sign: bool = False) -> str:
    """A bar's value label: two decimals, or three significant digits when that
    would be long (a latency or a token count far past a score's range).

    >>> _value(0.6666), _value(-0.1, sign=True), _value(1.5e308)
    ('0.67', '-0.10', '1.5e+308')
    """
    plus = "+" if sign else ""
    return f"{number:{plus}.2f}" if abs(number) < 1e6 else f"{number:{plus}.3g}"


__all__ = [
    "plot_case_deltas",
    "plot_report_comparison",
    "plot_report_scores",
    "plot_report_trend",
]


def plot_case_deltas(
    comparison: object, *, title: str = "Per-case change vs the baseline", max_cases: int = 60
) -> Figure:
    """One bar per case recorded in both runs: current - baseline score, worst first.

    ``comparison`` is a ``reports.Comparison`` or a ``frames.case_deltas``
    frame. Broken cases (pass -> fail) are red, fixed ones green, the rest
    grey; the first ``max_cases`` (the worst drops) are drawn.

    >>> from tnsai_eval.reports import CaseRecord, Report, TestStatus, TrackedTest, compare
    >>> def run(score):
    ...     case = CaseRecord("c1", "q", "a", "a", score, score >= 0.5)
    ...     return Report(tests=(TrackedTest("t::a", TestStatus.PASSED, cases=(case,)),))
    >>> len(plot_case_deltas(compare(run(0.0), run(1.0))).axes[0].patches)
    1
    """
    if max_cases < 1:
        raise ConfigError(f"max_cases must be >= 1, got {max_cases!r}")
    if isinstance(comparison, pd.DataFrame):
        data = comparison
    elif isinstance(comparison, Comparison):
        data = frames.case_deltas(comparison)
    else:
        raise ConfigError(
            "plot_case_deltas takes a reports.Comparison or a case_deltas frame, "
            f"got {comparison!r}"
        )
    frames.require_columns(data, frames.CASE_DELTA_COLUMNS, what="case deltas frame")
    data = data.sort_values("delta", kind="stable").head(max_cases).reset_index(drop=True)
    n = len(data)
    fig = Figure(figsize=(8.0, 1.4 + 0.28 * max(n, 1)), layout="constrained")
    ax = fig.add_subplot()
    ys = np.arange(n)
    colors = [
        REGRESSION_COLOR if flip == "broken" else PASS_COLOR if flip == "fixed" else "#999999"
        for flip in data["flip"]
    ]
    ax.barh(ys, data["delta"].to_numpy(float), color=colors)
    ax.set_yticks(ys, [short(f"{cid} {text}", 40) for cid, text in
                       zip(data["case_id"], data["input"], strict=True)])  # fmt: skip
    ax.invert_yaxis()
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("score change (current - baseline)")
    broken = int((data["flip"] == "broken").sum())
    fixed = int((data["flip"] == "fixed").sum())
    ax.set_title(f"{title} ({broken} broken, {fixed} fixed)")
    ax.legend(
        handles=[
            Patch(color=REGRESSION_COLOR, label="broken (pass -> fail)"),
            Patch(color=PASS_COLOR, label="fixed (fail -> pass)"),
            Patch(color="#999999", label="same verdict"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="small",
    )
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def plot_report_comparison(
    comparison: Comparison | pd.DataFrame,
    *,
    title: str = "Baseline vs current",
    max_tests: int = 40,
) -> Figure:
    """Baseline and current mean per (test, metric) as paired bars; regressions in red.

    ``comparison`` is a ``reports.Comparison`` or its ``frames.comparison_frame``.
    The current bar carries its 95% interval as an error bar when it has one.
    The first ``max_tests`` rows are drawn (regressions come first).
    """
    data = frames.comparison_frame(comparison)
    if max_tests < 1:
        raise ConfigError(f"max_tests must be >= 1, got {max_tests!r}")
    data = data.head(max_tests).reset_index(drop=True)
    n = len(data)
    show_metric = data["metric"].dropna().nunique() > 1
    fig = Figure(figsize=(8.0, 1.4 + 0.4 * max(n, 1)), layout="constrained")
    ax = fig.add_subplot()
    ys = np.arange(n)
    height = 0.38
    current = data["current"].to_numpy(float)
    baseline = data["baseline"].to_numpy(float)
    ax.barh(ys - height / 2, np.nan_to_num(baseline), height, color=BASE_COLOR)
    colors = [REGRESSION_COLOR if kind == "regressed" else CURRENT_COLOR for kind in data["kind"]]
    low = data["current_low"].to_numpy(float)
    high = data["current_high"].to_numpy(float)
    # A score outside its own interval (a test that recorded its own `score`
    # after evaluate_prompt) would give a negative bar: matplotlib refuses those.
    errors = np.clip(np.nan_to_num(np.vstack([current - low, high - current])), 0.0, None)
    ax.barh(ys + height / 2, np.nan_to_num(current), height, color=colors,
            xerr=errors if errors.any() else None, capsize=2)  # fmt: skip
    labels = [
        nodeid_label(nodeid, metric, show_metric=show_metric)
        for nodeid, metric in zip(data["nodeid"], data["metric"], strict=True)
    ]
    ax.set_yticks(ys, labels)
    for tick, kind in zip(ax.get_yticklabels(), data["kind"], strict=True):
        if kind == "regressed":
            tick.set_color(REGRESSION_COLOR)
            tick.set_fontweight("bold")
        elif kind in ("new", "vanished"):
            tick.set_fontstyle("italic")
    ax.invert_yaxis()  # first row (worst regression) on top
    ax.set_xlabel("mean")
    # Cost and latency rows share the axis with scores; a hostile report's
    # 1.5e308 s would overflow the margin below to inf, which matplotlib refuses.
    top = min(float(np.nanmax(np.concatenate([baseline, high, [1.0]]))), _WIDEST)
    # Room on the right for the value labels: a score that fell to 0 has no bar to see.
    ax.set_xlim(0, top * 1.25)
    for y, now, delta, kind in zip(ys, current, data["delta"], data["kind"], strict=True):
        if np.isnan(now):
            continue
        label = _value(now) if pd.isna(delta) else f"{_value(now)} ({_value(delta, sign=True)})"
        color = REGRESSION_COLOR if kind == "regressed" else "black"
        ax.text(top * 1.01, y + height / 2, label, va="center", fontsize=8, color=color)
    regressed = int((data["kind"] == "regressed").sum())
    ax.set_title(f"{title} ({regressed} regressed)")
    # Explicit handles: the first current bar may be red, and must not define the key.
    handles = [
        Patch(color=BASE_COLOR, label="baseline"),
        Patch(color=CURRENT_COLOR, label="current"),
        Patch(color=REGRESSION_COLOR, label="current (regressed)"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def plot_report_trend(
    reports: pd.DataFrame, *, metric: str = "score", title: str = "Trend across runs"
) -> Figure:
    """One line per test: ``metric`` (y) in each run (x, in the frame's order).

    ``reports`` is a ``frames.load_reports`` frame (``run``, ``nodeid`` and the
    metric column). A test missing from a run leaves a gap in its line.
    """
    frames.require_columns(reports, ("run", "nodeid", metric), what="reports frame")
    runs = list(dict.fromkeys(reports["run"]))
    table = reports.pivot_table(
        index="run", columns="nodeid", values=metric, aggfunc="mean", sort=False
    ).reindex(index=runs)
    fig = Figure(figsize=(7.0, 3.8), layout="constrained")
    ax = fig.add_subplot()
    xs = np.arange(len(runs))
    for nodeid in table.columns:
        ax.plot(xs, table[nodeid].to_numpy(float), marker="o",
                label=nodeid_label(nodeid, None, show_metric=False))  # fmt: skip
    ax.set_xticks(xs, [short(r, 16) for r in runs])
    ax.set_xlabel("run")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(table.columns) <= 12:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return fig


def plot_report_scores(
    report: pd.DataFrame, *, title: str = "Scores by test", max_tests: int = 60
) -> Figure:
    """Each test's score in one report as a bar (with its 95% interval); failures in red.

    ``report`` is a ``frames.load_report`` frame (``nodeid``, ``status``,
    ``score`` and, when present, ``score_low``/``score_high``). Tests without a
    score are left out. At most ``max_tests`` bars are drawn, failing tests
    first, then the lowest scores (the table beside the figure lists them all).
    """
    frames.require_columns(report, ("nodeid", "status", "score"), what="report frame")
    if max_tests < 1:
        raise ConfigError(f"max_tests must be >= 1, got {max_tests!r}")
    data = report[report["score"].notna()].reset_index(drop=True)
    total = len(data)
    if total > max_tests:
        order = data.assign(_ok=~data["status"].isin(("failed", "error")))
        data = order.sort_values(["_ok", "score"], kind="stable").head(max_tests)
        data = data.drop(columns="_ok").reset_index(drop=True)
        title = f"{title}: {max_tests} of {total}, failing and lowest first"
    n = len(data)
    fig = Figure(figsize=(8.0, 1.2 + 0.35 * max(n, 1)), layout="constrained")
    ax = fig.add_subplot()
    scores = data["score"].to_numpy(float)
    failing = data["status"].isin(("failed", "error")).to_numpy()
    colors = [REGRESSION_COLOR if bad else CURRENT_COLOR for bad in failing]
    errors = None
    if {"score_low", "score_high"} <= set(data.columns) and n:
        spread = np.vstack(
            [
                scores - data["score_low"].to_numpy(float),
                data["score_high"].to_numpy(float) - scores,
            ]
        )
        spread = np.clip(spread, 0.0, None)  # a score outside its interval: no negative bar
        errors = spread if np.nan_to_num(spread).any() else None
    ax.barh(np.arange(n), scores, color=colors, xerr=errors, capsize=2)
    ax.set_yticks(np.arange(n), [nodeid_label(t, None, show_metric=False) for t in data["nodeid"]])
    for tick, bad in zip(ax.get_yticklabels(), failing, strict=True):
        if bad:
            tick.set_color(REGRESSION_COLOR)
    ax.invert_yaxis()
    ax.set_xlim(0, max(1.0, float(np.nanmax(scores, initial=0.0))) * 1.02)
    ax.set_xlabel("score")
    ax.set_title(f"{title} ({int(failing.sum())} failing)")
    ax.grid(True, axis="x", alpha=0.3)
    return fig
