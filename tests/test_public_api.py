"""The top-level ``__all__`` is the public contract of API.md; pin it."""

from __future__ import annotations

import subprocess
import sys

import tnsai_eval

# Every name API.md promises at the top level.
API_MD_NAMES = {
    # LLM boundary
    "Message", "Usage", "Completion", "LLMClient", "OpenAIClient", "LocalLLM",
    "default_llm", "ResponseStore", "CachedLLM", "ReplayMissError", "TnsaiError", "LLMError",
    # Feedback
    "FeedbackType", "Feedback", "FeedbackStore", "FeedbackCollector", "Agent",
    "LearningStrategy", "FeedbackLearner", "LearningResult", "AdaptivePromptEnricher",
    # Norms
    "NormType", "NormEntry", "norm", "NormEngine", "CheckResult", "NormViolation",
    "ConditionEvaluator", "ConditionError",
    # Refinement loop
    "CompletionCriteria", "StopHook", "RefinementLoop", "RefinementStatus", "RefinementResult",
    # Prompt optimizer
    "TestCase", "PromptStrategy", "PromptEvaluator", "DefaultPromptEvaluator",
    "PromptOptimizer", "OptimizationResult",
}  # fmt: skip


def test_all_names_resolve_and_are_sorted() -> None:
    for name in tnsai_eval.__all__:
        assert hasattr(tnsai_eval, name), name
    assert list(tnsai_eval.__all__) == sorted(tnsai_eval.__all__)
    assert len(set(tnsai_eval.__all__)) == len(tnsai_eval.__all__)


def test_api_md_names_are_exported() -> None:
    missing = API_MD_NAMES - set(tnsai_eval.__all__)
    assert not missing, f"API.md names missing from tnsai_eval.__all__: {sorted(missing)}"


def test_testing_fakes_live_in_testing_module() -> None:
    from tnsai_eval.testing import ScriptedLLM

    assert isinstance(ScriptedLLM(["x"]), tnsai_eval.LLMClient)


def test_import_is_light() -> None:
    # Heavy optional libraries load on first use, never at import.
    code = (
        "import sys, tnsai_eval; "
        "print(','.join(m for m in ('pandas', 'matplotlib', 'ipywidgets', 'llama_cpp', 'cel') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_value_errors_are_value_errors() -> None:
    assert issubclass(tnsai_eval.ConfigError, ValueError)
    assert issubclass(tnsai_eval.ConditionError, ValueError)
    assert issubclass(tnsai_eval.ReplayMissError, tnsai_eval.LLMError)
