"""Scoring a prompt or a target on cases: the engine, ``score_prompt``, ``score_target``
and model comparison.

The library's one path for "how well does this prompt do on these cases":
the pytest plugin's ``evaluate_prompt``, ``tnsai-eval eval``,
``compare_models`` and every variant of an optimizer run score through the
same ``Engine`` (template, call parameters, in-run cache, budgets, error
rules), so a score means the same everywhere. ``tnsai_eval.optimizer`` is the
search above it.

>>> from tnsai_eval.scoring import TestCase
>>> from tnsai_eval.testing import ScriptedLLM
>>> llm = ScriptedLLM(rules=[(r"France", "Paris")], default="Rome")
>>> score_prompt(llm, "Capital?", [TestCase("France", "Paris")]).mean_score
1.0
"""

from tnsai_eval.evaluation._engine import (
    DEFAULT_CALL_PARAMS,
    Budget,
    Clock,
    Engine,
    Variant,
    check_concurrency,
    check_template,
)
from tnsai_eval.evaluation._models import (
    MODEL_CASE_COLUMNS,
    MODEL_SUMMARY_COLUMNS,
    ModelEvaluation,
    ModelResult,
    ModelsInput,
    evaluate_models,
    evaluate_target_models,
)
from tnsai_eval.evaluation._scoring import PromptEvaluation, ascore_prompt, score_prompt
from tnsai_eval.evaluation._stop import StopReason, VariantStatus
from tnsai_eval.evaluation._target import (
    CaseRun,
    TargetEvaluation,
    ascore_target,
    score_target,
    target_name,
)
from tnsai_eval.evaluation._variant import (
    DEFAULT_TEMPLATE,
    Demo,
    DemoStyle,
    PromptVariant,
    demos_text,
    examples_block,
)

__all__ = [
    "DEFAULT_CALL_PARAMS",
    "DEFAULT_TEMPLATE",
    "MODEL_CASE_COLUMNS",
    "MODEL_SUMMARY_COLUMNS",
    "Budget",
    "CaseRun",
    "Clock",
    "Demo",
    "DemoStyle",
    "Engine",
    "ModelEvaluation",
    "ModelResult",
    "ModelsInput",
    "PromptEvaluation",
    "PromptVariant",
    "StopReason",
    "TargetEvaluation",
    "Variant",
    "VariantStatus",
    "ascore_prompt",
    "ascore_target",
    "check_concurrency",
    "check_template",
    "demos_text",
    "evaluate_models",
    "evaluate_target_models",
    "examples_block",
    "score_prompt",
    "score_target",
    "target_name",
]
