"""Figures of evaluation results, as ``matplotlib.figure.Figure`` objects.

Every function takes a frame from ``tnsai_eval.frames`` (or the result object
it is built from) and returns a new ``Figure``. Nothing touches pyplot's
global state: figures are never registered with a GUI manager, so they are
safe in scripts, threads and servers, and are garbage-collected like any
object. In a notebook, a ``Figure`` returned by a cell renders inline; save
one with ``fig.savefig(path)`` or get PNG bytes with ``to_png(fig)``.

``render_html`` / ``write_html`` lay a run report's tables and figures out as
one self-contained HTML page (what ``tnsai-eval report --html`` writes).

>>> fig = plot_score_progression({"baseline": [0.2, 0.5, 0.7], "tuned": [0.4, 0.8]})
>>> [line.get_label() for line in fig.axes[0].get_lines()]
['baseline', 'tuned']
"""

from __future__ import annotations

from tnsai_eval.plots._base import REGRESSION_COLOR, to_png
from tnsai_eval.plots._html import render_html, write_html
from tnsai_eval.plots._models import cost_frontier, score_vs_cost
from tnsai_eval.plots._optimizer import (
    plot_check_matrix,
    plot_confusion,
    plot_cost_per_round,
    plot_norm_checks,
    plot_optimizer_rounds,
    plot_score_progression,
    plot_variant_case_heatmap,
)
from tnsai_eval.plots._reports import (
    plot_case_deltas,
    plot_report_comparison,
    plot_report_scores,
    plot_report_trend,
)
from tnsai_eval.plots._trajectories import plot_steps_per_case, plot_tool_use

__all__ = [
    "REGRESSION_COLOR",
    "cost_frontier",
    "plot_case_deltas",
    "plot_check_matrix",
    "plot_confusion",
    "plot_cost_per_round",
    "plot_norm_checks",
    "plot_optimizer_rounds",
    "plot_report_comparison",
    "plot_report_scores",
    "plot_report_trend",
    "plot_score_progression",
    "plot_steps_per_case",
    "plot_tool_use",
    "plot_variant_case_heatmap",
    "render_html",
    "score_vs_cost",
    "to_png",
    "write_html",
]
