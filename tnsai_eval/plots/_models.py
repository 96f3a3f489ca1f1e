"""Score against cost, one point per model, with the cost/score frontier."""

from __future__ import annotations

import math
from typing import Any

from matplotlib.figure import Figure

from tnsai_eval.errors import ConfigError
from tnsai_eval.plots._base import BASE_COLOR, CURRENT_COLOR, plain, score_axis

__all__ = ["cost_frontier", "score_vs_cost"]


def cost_frontier(points: list[tuple[str, float, float]]) -> list[str]:
    """The models no other model beats: none is as cheap or cheaper with a higher score.

    ``points`` are ``(name, cost, score)``; the frontier is returned cheapest first.

    >>> cost_frontier([("a", 1.0, 0.5), ("b", 2.0, 0.4), ("c", 3.0, 0.9), ("d", 1.0, 0.6)])
    ['d', 'c']
    """
    best = -math.inf
    kept: list[str] = []
    for name, _, score in sorted(points, key=lambda p: (p[1], -p[2])):
        if score > best:
            kept.append(name)
            best = score
    return kept


def score_vs_cost(source: Any, *, title: str | None = None) -> Figure:
    """Each model's score (with its 95% interval) against its cost, and the frontier.

    ``source`` is ``frames.model_summary(...)``, a ``compare_models`` frame or
    an ``evaluate_models`` result. The x axis is the estimated cost where every
    model has declared prices, else tokens (in + out), which every model has.
    The frontier joins the models that no cheaper model outscores.
    """
    import pandas as pd

    from tnsai_eval.frames import model_summary

    summary = source if isinstance(source, pd.DataFrame) and "score_low" in source else (
        model_summary(source)
    )  # fmt: skip
    if summary.empty:
        raise ConfigError("score_vs_cost: no models to plot")
    priced = summary["cost"].notna().all()
    if priced:
        xs, label = [float(v) for v in summary["cost"]], "estimated cost"
    else:
        tokens = summary["tokens_in"] + summary["tokens_out"]
        xs, label = [float(v) for v in tokens], "tokens (in + out)"
    names = [str(n) for n in summary["model"]]
    scores = [float(v) for v in summary["score"]]
    lows = [s - float(v) for s, v in zip(scores, summary["score_low"], strict=True)]
    highs = [float(v) - s for s, v in zip(scores, summary["score_high"], strict=True)]
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    frontier = cost_frontier(list(zip(names, xs, scores, strict=True)))
    on = [n in frontier for n in names]
    ax.errorbar(xs, scores, yerr=[lows, highs], fmt="none", ecolor=BASE_COLOR, capsize=4)
    ax.scatter(xs, scores, c=[CURRENT_COLOR if f else BASE_COLOR for f in on], zorder=3)
    by_name = dict(zip(names, zip(xs, scores, strict=True), strict=True))
    line = [by_name[n] for n in frontier]
    ax.plot(
        [p[0] for p in line], [p[1] for p in line], color=CURRENT_COLOR, alpha=0.6,
        drawstyle="steps-post", label="cost/score frontier",
    )  # fmt: skip
    for name, x, y in zip(names, xs, scores, strict=True):
        # plain(): a name with two "$" (or a lone surrogate) is text, never mathtext.
        ax.annotate(plain(name), (x, y), textcoords="offset points", xytext=(6, 6), fontsize=9)
    score_axis(ax)
    ax.set_xlabel(label)
    ax.set_ylabel("score (95% interval)")
    ax.set_title(plain(title) if title else "score against cost")
    ax.legend(loc="lower right", fontsize=8)
    span = max(xs) - min(xs)
    pad = span * 0.15 if span else max(abs(xs[0]) * 0.15, 1e-9)
    ax.set_xlim(min(xs) - pad, max(xs) + pad)
    fig.tight_layout()
    return fig
