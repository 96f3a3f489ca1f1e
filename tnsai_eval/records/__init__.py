"""What a run records: one case of one prompt, one check of one output, one refinement
iteration, one agent's trajectory (and the summary of it a report keeps).

These are the records every other package shares. The optimizer's engine
makes a ``CaseRecord`` for each case it scores; ``score_prompt`` returns
them, the pytest plugin and ``tnsai-eval eval`` add what the report needs
(the metric, the repeat sample, pass or fail at the case threshold) and keep
the same record in the report, and the frames and plots read it there. A
refinement's ``IterationRecord`` travels the same way, from the loop to the
report. So a new field is added in one place, and a case has one ``CaseState``.

>>> record = CaseRecord("c1", "2+2", "4", output="4", score=1.0, passed=True)
>>> record.state, record.asked, record.passes(0.5)
(<CaseState.SCORED: 'scored'>, True, True)
>>> CaseRecord("c2", "3+3", "6", state=CaseState.NOT_RUN).asked
False
"""

from __future__ import annotations

from tnsai_eval.records._case import CaseMetric, CaseRecord, CaseState, case_ids
from tnsai_eval.records._iteration import CheckKind, CheckOutcome, IterationRecord
from tnsai_eval.records._summary import StepKind, StepSummary, TrajectorySummary
from tnsai_eval.records._trajectory import (
    ModelTurn,
    Step,
    StopReason,
    ToolCall,
    Trajectory,
    tool_calls_from,
)

__all__ = [
    "CaseMetric",
    "CaseRecord",
    "CaseState",
    "CheckKind",
    "CheckOutcome",
    "IterationRecord",
    "ModelTurn",
    "Step",
    "StepKind",
    "StepSummary",
    "StopReason",
    "ToolCall",
    "Trajectory",
    "TrajectorySummary",
    "case_ids",
    "tool_calls_from",
]
