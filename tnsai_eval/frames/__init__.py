"""Results as tidy pandas DataFrames: one row per observation, documented columns.

Every view a notebook, a widget or a report shows is built from these frames,
so anything a user sees can also be had as a plain DataFrame.

=====================  ==========================================================
function               one row per ... (columns)
=====================  ==========================================================
optimizer_cases        (round, variant, case): ``OPTIMIZER_CASE_COLUMNS``
optimizer_rounds       round: ``OPTIMIZER_ROUND_COLUMNS``
variant_scores         (round, variant): ``VARIANT_COLUMNS``
leaderboard            variant scored, best first: ``LEADERBOARD_COLUMNS``
best_so_far            round: the best score after it (a Series)
refinement_iterations  iteration: ``RefinementResult.to_dataframe()`` (see function)
refinement_checks      (iteration, check): ``RefinementResult.checks_dataframe()`` (see function)
score_progressions     (run, step): ``PROGRESSION_COLUMNS``
learning_frame         learned item: ``LEARNING_COLUMNS``
feedback_frame         feedback item: ``FEEDBACK_COLUMNS``
norm_checks            (check, violation): ``NORM_CHECK_COLUMNS``
load_report            test (``tnsai_eval.reports.load_report``, re-exported; see its docstring)
load_reports           (run, test): ``run`` + ``load_report``'s columns
comparison_frame       (test, metric) of a baseline comparison: ``COMPARISON_COLUMNS``
report_cases           (report, test, case, sample): ``REPORT_CASE_COLUMNS``
case_deltas            case in both runs of a comparison: ``CASE_DELTA_COLUMNS``
compare_models         (model, case) of one prompt scored with several models
model_summary          model of a ``compare_models`` frame: score, cost, latency
model_verdict          each model against the first, case by case (flips, sign test)
trajectory_steps       (case, step) of a target's run or report: ``TRAJECTORY_STEP_COLUMNS``
case_metrics           case of a target's run or report: ``CASE_METRIC_COLUMNS`` + metrics
=====================  ==========================================================

>>> import pandas as pd
>>> score_progressions({"a": [0.2, 0.5], "b": [0.4]})
  run  step  score
0   a     0    0.2
1   a     1    0.5
2   b     0    0.4
"""

from __future__ import annotations

from tnsai_eval.frames._base import require_columns
from tnsai_eval.frames._feedback import (
    FEEDBACK_COLUMNS,
    LEARNING_COLUMNS,
    NORM_CHECK_COLUMNS,
    feedback_frame,
    learning_frame,
    norm_checks,
)
from tnsai_eval.frames._models import compare_models, model_summary, model_verdict
from tnsai_eval.frames._optimizer import (
    LEADERBOARD_COLUMNS,
    OPTIMIZER_CASE_COLUMNS,
    OPTIMIZER_ROUND_COLUMNS,
    PARTIAL_STATUSES,
    PROGRESSION_COLUMNS,
    VARIANT_COLUMNS,
    ProgressionRun,
    best_so_far,
    leaderboard,
    optimizer_cases,
    optimizer_rounds,
    refinement_checks,
    refinement_iterations,
    score_progressions,
    variant_scores,
)
from tnsai_eval.frames._reports import (
    CASE_DELTA_COLUMNS,
    COMPARISON_COLUMNS,
    REPORT_CASE_COLUMNS,
    case_deltas,
    compare_reports,
    comparison_frame,
    load_report,
    load_reports,
    report_cases,
)
from tnsai_eval.frames._trajectories import (
    CASE_METRIC_COLUMNS,
    TRAJECTORY_STEP_COLUMNS,
    TrajectorySource,
    case_metrics,
    trajectory_steps,
)

__all__ = [
    "CASE_DELTA_COLUMNS",
    "CASE_METRIC_COLUMNS",
    "COMPARISON_COLUMNS",
    "FEEDBACK_COLUMNS",
    "LEADERBOARD_COLUMNS",
    "LEARNING_COLUMNS",
    "NORM_CHECK_COLUMNS",
    "OPTIMIZER_CASE_COLUMNS",
    "OPTIMIZER_ROUND_COLUMNS",
    "PARTIAL_STATUSES",
    "PROGRESSION_COLUMNS",
    "REPORT_CASE_COLUMNS",
    "TRAJECTORY_STEP_COLUMNS",
    "VARIANT_COLUMNS",
    "ProgressionRun",
    "TrajectorySource",
    "best_so_far",
    "case_deltas",
    "case_metrics",
    "compare_models",
    "compare_reports",
    "comparison_frame",
    "feedback_frame",
    "leaderboard",
    "learning_frame",
    "load_report",
    "load_reports",
    "model_summary",
    "model_verdict",
    "norm_checks",
    "optimizer_cases",
    "optimizer_rounds",
    "refinement_checks",
    "refinement_iterations",
    "report_cases",
    "require_columns",
    "score_progressions",
    "trajectory_steps",
    "variant_scores",
]
