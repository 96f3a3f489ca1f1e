"""Versioned run reports and the baseline comparison behind the CI gate.

A report is what one test run measured: for every tracked test its status, the
metrics it recorded (each with all its samples), and what it cost (model calls,
tokens, cache hits). The pytest plugin writes it with ``--tnsai-report``; it is
plain JSON meant to be committed as a baseline and diffed in review.

>>> score = MetricStats("score", (0.8, 0.9, 0.85))
>>> round(score.mean, 2), score.n
(0.85, 3)
>>> old = Report(tests=(TrackedTest("t.py::test_a", TestStatus.PASSED, {"score": score}),))
>>> new = Report(tests=(TrackedTest("t.py::test_a", TestStatus.PASSED,
...                                 {"score": MetricStats("score", (0.5,))}),))
>>> result = compare(new, old, tolerance=0.05)
>>> result.passed, [c.metric for c in result.regressions]
(False, ['score'])

Nothing here imports pytest or a view package: the CLI (``tnsai-eval report``)
and notebooks use the same code as the plugin's gate. ``write_junit`` writes a
run as JUnit XML; the HTML page, which draws figures, is ``tnsai_eval.plots.write_html``.
"""

from __future__ import annotations

from tnsai_eval.reports._cases import CaseChange, CaseComparison, GateMode, PromptChange
from tnsai_eval.reports._compare import (
    COMPARISON_COLUMNS,
    ChangeKind,
    Comparison,
    EvidenceKind,
    MetricChange,
    Shortfall,
    compare,
    count_labels,
    error_label,
    load_report,
)
from tnsai_eval.reports._costs import COST_METRICS, cost_line, format_cost
from tnsai_eval.reports._decode import decode_report, decode_test, read_report
from tnsai_eval.reports._gate import GATE_SETTING_NAMES, GateSettings, SettingChange
from tnsai_eval.reports._junit import render_junit, write_junit
from tnsai_eval.reports._model import (
    MERGE,
    SCHEMA_VERSION,
    CaseRecord,
    CaseState,
    IterationRecord,
    MergeRule,
    MetricStats,
    PromptRecord,
    Report,
    TestStatus,
    TrackedTest,
    case_ids,
    latency_figures,
    masked,
    prompt_hash,
    score_interval,
    shown_text,
    strip_model,
    was_run,
)
from tnsai_eval.reports._models import (
    ModelComparison,
    ModelRow,
    compare_report_models,
    format_model_changes,
    format_model_comparison,
    model_changes,
)
from tnsai_eval.reports._power import Detectability, detectability
from tnsai_eval.reports._tables import format_table, markdown_table
from tnsai_eval.reports._text import (
    format_comparison,
    format_summary,
    prompt_diff,
    summary_rows,
    verdict_line,
)
from tnsai_eval.reports._trajectories import MARK, AlignedCall, ToolDivergence, diverge
from tnsai_eval.reports._trajectory_text import trajectory_lines
from tnsai_eval.reports._verdict import (
    ACCEPT_LABEL,
    EXIT_MEANINGS,
    PR_GATE_KEY,
    GateCheck,
    GateVerdict,
    PullRequestGate,
    describe_missing,
    gate_verdict,
)

__all__ = [
    "ACCEPT_LABEL",
    "COMPARISON_COLUMNS",
    "COST_METRICS",
    "EXIT_MEANINGS",
    "GATE_SETTING_NAMES",
    "MARK",
    "MERGE",
    "PR_GATE_KEY",
    "SCHEMA_VERSION",
    "AlignedCall",
    "CaseChange",
    "CaseComparison",
    "CaseRecord",
    "CaseState",
    "ChangeKind",
    "Comparison",
    "Detectability",
    "EvidenceKind",
    "GateCheck",
    "GateMode",
    "GateSettings",
    "GateVerdict",
    "IterationRecord",
    "MergeRule",
    "MetricChange",
    "MetricStats",
    "ModelComparison",
    "ModelRow",
    "PromptChange",
    "PromptRecord",
    "PullRequestGate",
    "Report",
    "SettingChange",
    "Shortfall",
    "TestStatus",
    "ToolDivergence",
    "TrackedTest",
    "case_ids",
    "compare",
    "compare_report_models",
    "cost_line",
    "count_labels",
    "decode_report",
    "decode_test",
    "describe_missing",
    "detectability",
    "diverge",
    "error_label",
    "format_comparison",
    "format_cost",
    "format_model_changes",
    "format_model_comparison",
    "format_summary",
    "format_table",
    "gate_verdict",
    "latency_figures",
    "load_report",
    "markdown_table",
    "masked",
    "model_changes",
    "prompt_diff",
    "prompt_hash",
    "read_report",
    "render_junit",
    "score_interval",
    "shown_text",
    "strip_model",
    "summary_rows",
    "trajectory_lines",
    "verdict_line",
    "was_run",
    "write_junit",
]
