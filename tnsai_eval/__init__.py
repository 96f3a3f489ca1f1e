"""tnsai-eval: an evaluation harness for LLM prompts and agents.

The public API is what ``__all__`` lists; everything else is private. The four
groups of the original module live in subpackages (``feedback``, ``norms``,
``refinement``, ``optimizer``); every model call goes through ``tnsai_eval.llm``.
Importing this package does not import pandas, matplotlib, ipywidgets or
llama.cpp: those load when a DataFrame, a figure, a widget or the embedded model
is first asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The exception tree is small and every module needs it: imported now.
from tnsai_eval.errors import (
    BadResponseError,
    CallBudgetExceeded,
    ClientRequestError,
    ConditionError,
    ConfigError,
    DatasetError,
    LLMConnectionError,
    LLMError,
    LLMTimeoutError,
    LocalModelUnavailable,
    LocalModelWarning,
    RateLimitError,
    ReplayMissError,
    ServerError,
    ServerMismatchWarning,
    StoreError,
    StoreWarning,
    TnsaiError,
)

if TYPE_CHECKING:
    from tnsai_eval.agents import Agent, Trajectory
    from tnsai_eval.feedback import (
        AdaptivePromptEnricher,
        Feedback,
        FeedbackCollector,
        FeedbackLearner,
        FeedbackStore,
        FeedbackType,
        LearningResult,
        LearningStrategy,
    )
    from tnsai_eval.frames import compare_models
    from tnsai_eval.llm import (
        CachedLLM,
        CallBudget,
        Completion,
        LLMClient,
        LocalLLM,
        Message,
        OpenAIClient,
        RecordMode,
        ResponseStore,
        Usage,
        default_llm,
    )
    from tnsai_eval.norms import (
        CheckResult,
        ConditionEvaluator,
        NormEngine,
        NormEntry,
        NormType,
        NormViolation,
        norm,
    )
    from tnsai_eval.optimizer import (
        ContainsEvaluator,
        DefaultPromptEvaluator,
        ExactMatchEvaluator,
        LabelEvaluator,
        LLMJudgeEvaluator,
        OptimizationResult,
        PromptEvaluator,
        PromptOptimizer,
        PromptStrategy,
        TestCase,
        TokenF1Evaluator,
        suggest_strategies,
    )
    from tnsai_eval.refinement import (
        CheckOutcome,
        CompletionCriteria,
        RefinementLoop,
        RefinementResult,
        RefinementStatus,
        StopHook,
    )

__version__ = "0.2.0"

__all__ = [
    "AdaptivePromptEnricher",
    "Agent",
    "BadResponseError",
    "CachedLLM",
    "CallBudget",
    "CallBudgetExceeded",
    "CheckOutcome",
    "CheckResult",
    "ClientRequestError",
    "Completion",
    "CompletionCriteria",
    "ConditionError",
    "ConditionEvaluator",
    "ConfigError",
    "ContainsEvaluator",
    "DatasetError",
    "DefaultPromptEvaluator",
    "ExactMatchEvaluator",
    "Feedback",
    "FeedbackCollector",
    "FeedbackLearner",
    "FeedbackStore",
    "FeedbackType",
    "LLMClient",
    "LLMConnectionError",
    "LLMError",
    "LLMJudgeEvaluator",
    "LLMTimeoutError",
    "LabelEvaluator",
    "LearningResult",
    "LearningStrategy",
    "LocalLLM",
    "LocalModelUnavailable",
    "LocalModelWarning",
    "Message",
    "NormEngine",
    "NormEntry",
    "NormType",
    "NormViolation",
    "OpenAIClient",
    "OptimizationResult",
    "PromptEvaluator",
    "PromptOptimizer",
    "PromptStrategy",
    "RateLimitError",
    "RecordMode",
    "RefinementLoop",
    "RefinementResult",
    "RefinementStatus",
    "ReplayMissError",
    "ResponseStore",
    "ServerError",
    "ServerMismatchWarning",
    "StopHook",
    "StoreError",
    "StoreWarning",
    "TestCase",
    "TnsaiError",
    "TokenF1Evaluator",
    "Trajectory",
    "Usage",
    "__version__",
    "compare_models",
    "default_llm",
    "norm",
    "suggest_strategies",
]

# Every other public name loads on first use (PEP 562), so that ``import
# tnsai_eval`` (and with it the pytest plugin, tnsai_eval.pytest, which pytest
# imports at start-up) costs almost nothing until a name is used: the HTTP
# client, SQLite stores and the optimizer load when asked for.
_LAZY: dict[str, str] = {
    "AdaptivePromptEnricher": "tnsai_eval.feedback",
    "Agent": "tnsai_eval.agents",
    "CachedLLM": "tnsai_eval.llm",
    "CallBudget": "tnsai_eval.llm",
    "CheckOutcome": "tnsai_eval.refinement",
    "CheckResult": "tnsai_eval.norms",
    "Completion": "tnsai_eval.llm",
    "CompletionCriteria": "tnsai_eval.refinement",
    "ConditionEvaluator": "tnsai_eval.norms",
    "ContainsEvaluator": "tnsai_eval.optimizer",
    "DefaultPromptEvaluator": "tnsai_eval.optimizer",
    "ExactMatchEvaluator": "tnsai_eval.optimizer",
    "Feedback": "tnsai_eval.feedback",
    "FeedbackCollector": "tnsai_eval.feedback",
    "FeedbackLearner": "tnsai_eval.feedback",
    "FeedbackStore": "tnsai_eval.feedback",
    "FeedbackType": "tnsai_eval.feedback",
    "LLMClient": "tnsai_eval.llm",
    "LLMJudgeEvaluator": "tnsai_eval.optimizer",
    "LabelEvaluator": "tnsai_eval.optimizer",
    "LearningResult": "tnsai_eval.feedback",
    "LearningStrategy": "tnsai_eval.feedback",
    "LocalLLM": "tnsai_eval.llm",
    "Message": "tnsai_eval.llm",
    "NormEngine": "tnsai_eval.norms",
    "NormEntry": "tnsai_eval.norms",
    "NormType": "tnsai_eval.norms",
    "NormViolation": "tnsai_eval.norms",
    "OpenAIClient": "tnsai_eval.llm",
    "OptimizationResult": "tnsai_eval.optimizer",
    "PromptEvaluator": "tnsai_eval.optimizer",
    "PromptOptimizer": "tnsai_eval.optimizer",
    "PromptStrategy": "tnsai_eval.optimizer",
    "RecordMode": "tnsai_eval.llm",
    "RefinementLoop": "tnsai_eval.refinement",
    "RefinementResult": "tnsai_eval.refinement",
    "RefinementStatus": "tnsai_eval.refinement",
    "ResponseStore": "tnsai_eval.llm",
    "StopHook": "tnsai_eval.refinement",
    "TestCase": "tnsai_eval.optimizer",
    "TokenF1Evaluator": "tnsai_eval.optimizer",
    "Trajectory": "tnsai_eval.agents",
    "Usage": "tnsai_eval.llm",
    "compare_models": "tnsai_eval.frames",
    "default_llm": "tnsai_eval.llm",
    "norm": "tnsai_eval.norms",
    "suggest_strategies": "tnsai_eval.optimizer",
}


# Subpackages that ``import tnsai_eval`` used to load eagerly: ``tnsai_eval.llm.X``
# after a bare ``import tnsai_eval`` keeps working.
_SUBPACKAGES = frozenset({"agents", "feedback", "llm", "norms", "optimizer", "refinement"})


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
