"""The top-level ``__all__`` is the public contract of API.md; pin it."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tnsai_eval
from tnsai_eval import scoring

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


def test_every_public_name_imports_from_the_top_level_in_a_fresh_interpreter() -> None:
    # The statement users write, name by name, with nothing imported before it
    # (the names load lazily, so an in-process test could lean on an earlier import).
    names = ", ".join(tnsai_eval.__all__)
    code = f"from tnsai_eval import {names}\nprint(len([{names}]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(len(tnsai_eval.__all__))


# Names that moved to tnsai_eval.scoring, and the public homes they keep.
MOVED_TO_SCORING = {
    "tnsai_eval.optimizer": (
        "TestCase", "split_cases", "PromptEvaluator", "DefaultPromptEvaluator",
        "ExactMatchEvaluator", "ContainsEvaluator", "LabelEvaluator", "TokenF1Evaluator",
        "LLMJudgeEvaluator", "normalize_answer", "score_metric", "labels_response_format",
        "parse_judge_score", "DEFAULT_CALL_PARAMS",
    ),
    "tnsai_eval": (
        "TestCase", "PromptEvaluator", "DefaultPromptEvaluator", "ExactMatchEvaluator",
        "ContainsEvaluator", "LabelEvaluator", "TokenF1Evaluator", "LLMJudgeEvaluator",
    ),
}  # fmt: skip
DEPRECATED_IN_LLM = ("Judge", "JudgeCalibration", "JudgeMethod", "JudgeResult", "fit_threshold")


@pytest.mark.parametrize("home", sorted(MOVED_TO_SCORING))
def test_moved_names_are_the_same_objects_at_their_old_homes(home: str) -> None:
    old = importlib.import_module(home)
    for name in MOVED_TO_SCORING[home]:
        assert getattr(old, name) is getattr(scoring, name), f"{home}.{name}"


MOVED_TO_EVALUATION = (
    "MODEL_CASE_COLUMNS", "MODEL_SUMMARY_COLUMNS", "ModelEvaluation", "ModelResult",
    "ModelsInput", "PromptEvaluation", "ascore_prompt", "evaluate_models", "score_prompt",
)  # fmt: skip


def test_scoring_still_imports_from_the_optimizer_with_a_deprecation_warning() -> None:
    from tnsai_eval import evaluation, optimizer

    for name in MOVED_TO_EVALUATION:
        with pytest.warns(DeprecationWarning, match=f"tnsai_eval.evaluation.{name}"):
            assert getattr(optimizer, name) is getattr(evaluation, name)
        assert name not in optimizer.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
        optimizer.Nonesuch  # noqa: B018 - the look-up is the test


def test_the_judge_still_imports_from_llm_with_a_deprecation_warning() -> None:
    from tnsai_eval import llm

    for name in DEPRECATED_IN_LLM:
        with pytest.warns(DeprecationWarning, match=f"tnsai_eval.scoring.{name}"):
            assert getattr(llm, name) is getattr(scoring, name)
    with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
        llm.Nonesuch  # noqa: B018 - the look-up is the test
