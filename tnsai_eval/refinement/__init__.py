"""Refinement loop: revise an output until its completion criteria pass.

>>> from tnsai_eval.testing import ScriptedLLM
>>> criteria = CompletionCriteria.builder().valid_json().must_contain('"id"').build()
>>> llm = ScriptedLLM(['```json\\n{"id": 7}\\n```'])
>>> result = RefinementLoop("Write the record as JSON.", criteria).execute(llm, "id: 7")
>>> result.status.name, result.metrics.score_progression, result.final_output
('SUCCESS', (0.0, 1.0), '{"id": 7}')

See ``CompletionCriteria`` for the checks (and the order they run in),
``_commands`` for the contract of command checks (the model's output reaches a
command only as a temp file), ``StopHook`` for early stops and
``RefinementLoop`` for the iteration semantics.
"""

from tnsai_eval.refinement._checks import Check, CheckKind, CheckOutcome, Verdict
from tnsai_eval.refinement._criteria import CompletionCriteria, CompletionCriteriaBuilder
from tnsai_eval.refinement._hooks import LoopState, StopHook
from tnsai_eval.refinement._judge import parse_score
from tnsai_eval.refinement._loop import RefinementLoop
from tnsai_eval.refinement._prompt import revision_prompt, strip_code_fence
from tnsai_eval.refinement._result import (
    IterationRecord,
    RefinementMetrics,
    RefinementResult,
    RefinementStatus,
)

__all__ = [
    "Check",
    "CheckKind",
    "CheckOutcome",
    "CompletionCriteria",
    "CompletionCriteriaBuilder",
    "IterationRecord",
    "LoopState",
    "RefinementLoop",
    "RefinementMetrics",
    "RefinementResult",
    "RefinementStatus",
    "StopHook",
    "Verdict",
    "parse_score",
    "revision_prompt",
    "strip_code_fence",
]
