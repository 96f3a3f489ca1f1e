"""Refinement loop: revise an output until its completion criteria pass.

>>> from tnsai_eval.testing import ScriptedLLM
>>> criteria = CompletionCriteria.builder().valid_json().must_contain('"id"').build()
>>> llm = ScriptedLLM(['```json\\n{"id": 7}\\n```'])
>>> result = RefinementLoop("Write the record as JSON.", criteria).execute(llm, "id: 7")
>>> result.status.name, result.metrics.score_progression, result.final_output
('SUCCESS', [0.0, 1.0], '{"id": 7}')

See ``CompletionCriteria`` for the checks (and the order they run in: string,
regex, JSON and count checks, then custom predicates, then commands, then judge
models; ``llm_check`` checks are skipped, counted as failed, while a cheaper check
fails, unless the builder's ``llm_checks_always()`` is set), ``StopHook`` for
early stops and ``RefinementLoop`` for the iteration semantics.

Command checks (``compiler_check``, ``test_command``, ``lint_check``) are a
security boundary: the model's output reaches the command only as a file.
``$OUTPUT`` becomes the shell-quoted path of a temp file in a private temp
directory; the command runs under ``sh -c`` in its own process group, which is
killed whole at the timeout (30 s unless ``timeout_s=``); the directory is
always removed; exit status 0 passes, and otherwise the last 4 KiB of the
command's stdout and stderr become the check's message, which the revision
prompt shows the model.

Replies are unwrapped when they are, as a whole, one markdown fenced block
(``strip_code_fence``, the default ``reply_parser``). The embedded
SmolLM2-135M model answers a JSON revision request with a ```json block and
then a sentence about it; with ``reply_parser=first_code_block`` (take the
first block) it turns ``name: Alice, age: 30`` into JSON that passes
``valid_json`` and ``must_contain`` in one revision (tests/refinement/
test_local_model.py); with the default parser the sentence fails
``valid_json``.

Where this package reads API.md in a particular way:

* ``StopHook.on_score_above(t)`` fires at ``score >= t`` (inclusive, despite
  the name), so that ``on_score_above(1.0)`` can fire at all.
* ``RefinementMetrics.score_progression`` is a ``list`` as API.md says, built
  afresh from the record's ``scores`` tuple on each access: the record stays
  frozen and a caller who mutates the list changes nothing.
  ``total_iterations`` and ``final_score`` are derived from ``scores`` too.
* ``llm_check`` before ``with_llm`` raises ``ConfigError`` at the
  ``llm_check`` call, not at ``build()``.
"""

from tnsai_eval.records import CheckKind, CheckOutcome, IterationRecord
from tnsai_eval.refinement._checks import Check, Verdict
from tnsai_eval.refinement._criteria import CompletionCriteria, CompletionCriteriaBuilder
from tnsai_eval.refinement._hooks import LoopState, StopHook
from tnsai_eval.refinement._judge import parse_score
from tnsai_eval.refinement._loop import RefinementLoop
from tnsai_eval.refinement._prompt import (
    REPLY_PARSERS,
    first_code_block,
    first_json_block,
    resolve_reply_parser,
    revision_prompt,
    strip_code_fence,
)
from tnsai_eval.refinement._result import RefinementMetrics, RefinementResult, RefinementStatus
from tnsai_eval.refinement._spec import CRITERIA_OPTIONS, CriteriaSpec

__all__ = [
    "CRITERIA_OPTIONS",
    "REPLY_PARSERS",
    "Check",
    "CheckKind",
    "CheckOutcome",
    "CompletionCriteria",
    "CompletionCriteriaBuilder",
    "CriteriaSpec",
    "IterationRecord",
    "LoopState",
    "RefinementLoop",
    "RefinementMetrics",
    "RefinementResult",
    "RefinementStatus",
    "StopHook",
    "Verdict",
    "first_code_block",
    "first_json_block",
    "parse_score",
    "resolve_reply_parser",
    "revision_prompt",
    "strip_code_fence",
]
