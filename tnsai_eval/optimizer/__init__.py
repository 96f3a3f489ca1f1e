"""The prompt optimizer: strategies, the search and its results.

The optimizer is search only: it scores every variant through
``tnsai_eval.evaluation`` (the engine, ``score_prompt``, model comparison),
whose names it first published and still resolves here, with a
``DeprecationWarning``, for one release. Test cases and evaluators live in
``tnsai_eval.scoring``; they are also importable from here.

>>> from tnsai_eval.optimizer import PromptOptimizer, PromptStrategy, TestCase
>>> from tnsai_eval.testing import ScriptedLLM
>>> llm = ScriptedLLM(rules=[(r"only the answer", "4")], default="The answer is four.")
>>> optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"], rewrite=False)
>>> result = optimizer.optimize("Add the numbers.", [TestCase("2 + 2", "4")])
>>> result.initial_score < result.score == 1.0
True
"""

from tnsai_eval._util.moved import moved_names
from tnsai_eval.evaluation import DEFAULT_TEMPLATE, Demo, PromptVariant, demos_text
from tnsai_eval.optimizer._chance import ConstantBaseline
from tnsai_eval.optimizer._config import DEFAULT_CONFIG, OptimizerConfig, SearchMode
from tnsai_eval.optimizer._optimizer import PromptOptimizer
from tnsai_eval.optimizer._racing import RacingBound
from tnsai_eval.optimizer._records import (
    EventKind,
    ProgressEvent,
    RoundRecord,
    StopReason,
    VariantRecord,
    VariantStatus,
)
from tnsai_eval.optimizer._result import CASE_COLUMNS, OptimizationResult
from tnsai_eval.optimizer._rewrite import check_rewrite
from tnsai_eval.optimizer._search import SEARCHES, Search, SearchRegistry
from tnsai_eval.optimizer._strategies import (
    DEFAULT_STRATEGIES,
    SMALL_MODEL_STRATEGIES,
    PromptStrategy,
    suggest_strategies,
)
from tnsai_eval.records import CaseRecord, CaseState
from tnsai_eval.scoring import (
    DEFAULT_CALL_PARAMS,
    ContainsEvaluator,
    DefaultPromptEvaluator,
    ExactMatchEvaluator,
    LabelEvaluator,
    LLMJudgeEvaluator,
    PromptEvaluator,
    TestCase,
    TokenF1Evaluator,
    labels_response_format,
    normalize_answer,
    parse_judge_score,
    score_metric,
    split_cases,
)

__all__ = [
    "CASE_COLUMNS",
    "DEFAULT_CALL_PARAMS",
    "DEFAULT_CONFIG",
    "DEFAULT_STRATEGIES",
    "DEFAULT_TEMPLATE",
    "SEARCHES",
    "SMALL_MODEL_STRATEGIES",
    "CaseRecord",
    "CaseState",
    "ConstantBaseline",
    "ContainsEvaluator",
    "DefaultPromptEvaluator",
    "Demo",
    "EventKind",
    "ExactMatchEvaluator",
    "LLMJudgeEvaluator",
    "LabelEvaluator",
    "OptimizationResult",
    "OptimizerConfig",
    "ProgressEvent",
    "PromptEvaluator",
    "PromptOptimizer",
    "PromptStrategy",
    "PromptVariant",
    "RacingBound",
    "RoundRecord",
    "Search",
    "SearchMode",
    "SearchRegistry",
    "StopReason",
    "TestCase",
    "TokenF1Evaluator",
    "VariantRecord",
    "VariantStatus",
    "check_rewrite",
    "demos_text",
    "labels_response_format",
    "normalize_answer",
    "parse_judge_score",
    "score_metric",
    "split_cases",
    "suggest_strategies",
]

# Scoring moved to ``tnsai_eval.evaluation``; its names still resolve here, with
# a DeprecationWarning, for one release.
__getattr__ = moved_names(
    __name__,
    "tnsai_eval.evaluation",
    (
        "MODEL_CASE_COLUMNS",
        "MODEL_SUMMARY_COLUMNS",
        "ModelEvaluation",
        "ModelResult",
        "ModelsInput",
        "PromptEvaluation",
        "ascore_prompt",
        "evaluate_models",
        "score_prompt",
    ),
)
