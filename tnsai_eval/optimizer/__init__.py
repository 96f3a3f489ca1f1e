"""The prompt optimizer: test cases, strategies, evaluators, the search and its results.

>>> from tnsai_eval.optimizer import PromptOptimizer, PromptStrategy, TestCase
>>> from tnsai_eval.testing import ScriptedLLM
>>> llm = ScriptedLLM(rules=[(r"only the answer", "4")], default="The answer is four.")
>>> optimizer = PromptOptimizer(llm, candidate_strategies=["answer_only"], rewrite=False)
>>> result = optimizer.optimize("Add the numbers.", [TestCase("2 + 2", "4")])
>>> result.initial_score < result.score == 1.0
True
"""

from tnsai_eval.optimizer._cases import TestCase, split_cases
from tnsai_eval.optimizer._chance import ConstantBaseline
from tnsai_eval.optimizer._config import OptimizerConfig, SearchMode
from tnsai_eval.optimizer._engine import DEFAULT_CALL_PARAMS, DEFAULT_TEMPLATE
from tnsai_eval.optimizer._evaluators import (
    ContainsEvaluator,
    DefaultPromptEvaluator,
    ExactMatchEvaluator,
    LabelEvaluator,
    PromptEvaluator,
    TokenF1Evaluator,
    labels_response_format,
    normalize_answer,
    score_metric,
)
from tnsai_eval.optimizer._judge import LLMJudgeEvaluator, parse_judge_score
from tnsai_eval.optimizer._optimizer import PromptOptimizer
from tnsai_eval.optimizer._racing import RacingBound
from tnsai_eval.optimizer._records import (
    CaseResult,
    EventKind,
    ProgressEvent,
    RoundRecord,
    StopReason,
    VariantRecord,
    VariantStatus,
)
from tnsai_eval.optimizer._result import OptimizationResult
from tnsai_eval.optimizer._rewrite import check_rewrite
from tnsai_eval.optimizer._scoring import (
    CaseScore,
    CaseState,
    PromptEvaluation,
    ascore_prompt,
    score_prompt,
)
from tnsai_eval.optimizer._strategies import (
    DEFAULT_STRATEGIES,
    PromptStrategy,
    suggest_strategies,
)
from tnsai_eval.optimizer._variant import Demo, PromptVariant

__all__ = [
    "DEFAULT_CALL_PARAMS",
    "DEFAULT_STRATEGIES",
    "DEFAULT_TEMPLATE",
    "CaseResult",
    "CaseScore",
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
    "PromptEvaluation",
    "PromptEvaluator",
    "PromptOptimizer",
    "PromptStrategy",
    "PromptVariant",
    "RacingBound",
    "RoundRecord",
    "SearchMode",
    "StopReason",
    "TestCase",
    "TokenF1Evaluator",
    "VariantRecord",
    "VariantStatus",
    "ascore_prompt",
    "check_rewrite",
    "labels_response_format",
    "normalize_answer",
    "parse_judge_score",
    "score_metric",
    "score_prompt",
    "split_cases",
    "suggest_strategies",
]
