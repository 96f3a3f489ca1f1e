"""What turns a model's reply into a score: test cases, evaluators and the judge.

The optimizer, the refinement loop's ``llm_check``, the pytest plugin and the
dataset loader all score through this package, so each of them reads a reply
the same way. It sits below them and above ``tnsai_eval.llm`` (the judge calls
a model through an ``LLMClient``); it imports neither the optimizer nor any view.

* ``TestCase``: one input and the answer expected for it; ``split_cases``
  holds some out, ``check_cases`` validates a list of them.
* Evaluators (``PromptEvaluator``: ``evaluate(actual, expected) -> float`` in
  [0, 1]): ``ExactMatchEvaluator``, ``ContainsEvaluator``, ``LabelEvaluator``,
  ``TokenF1Evaluator``, ``DefaultPromptEvaluator`` and ``LLMJudgeEvaluator``;
  ``score_metric`` names what their mean is (an accuracy or a score),
  ``uses_expected`` whether they read the expected answer.
* Trajectory evaluators (``TrajectoryEvaluator``: ``evaluate_trajectory(trajectory,
  case) -> MetricScore``): ``ToolCallMatch`` and ``ToolCallF1`` (the tool calls
  against ``TestCase.expected_tool_calls``), ``FinalAnswer`` (any evaluator on
  the output), ``NormCompliance`` (``@norm``s under the case's ``state``) and
  ``TrajectoryJudge``; ``metrics_of`` names several evaluators as metrics.
* ``Judge``: grades a text against a yes/no question with whatever the client
  offers (log-probabilities, a JSON score, a ``SCORE:`` line);
  ``JudgeCalibration`` sets its threshold from labelled examples.

>>> from tnsai_eval.scoring import ContainsEvaluator, TestCase
>>> case = TestCase("What is the capital of France?", "Paris")
>>> ContainsEvaluator().evaluate("The capital is Paris.", case.expected)
1.0
"""

from tnsai_eval.scoring._answers import (
    ContainsEvaluator,
    ExactMatchEvaluator,
    TokenF1Evaluator,
    normalize_answer,
)
from tnsai_eval.scoring._calibration import JudgeCalibration, fit_threshold
from tnsai_eval.scoring._cases import TestCase, check_cases, split_cases
from tnsai_eval.scoring._default import DefaultPromptEvaluator
from tnsai_eval.scoring._evaluator import PromptEvaluator, uses_expected
from tnsai_eval.scoring._judge import Judge, JudgeMethod, JudgeResult
from tnsai_eval.scoring._label import LabelEvaluator, labels_response_format, score_metric
from tnsai_eval.scoring._llm_judge import LLMJudgeEvaluator, parse_judge_score
from tnsai_eval.scoring._params import DEFAULT_CALL_PARAMS
from tnsai_eval.scoring._tool_calls import (
    ArgumentMode,
    MatchMode,
    ToolCallF1,
    ToolCallMatch,
    calls_match,
    matched_pairs,
)
from tnsai_eval.scoring._trajectory import (
    FinalAnswer,
    Metric,
    MetricScore,
    NormCompliance,
    TrajectoryEvaluator,
    TrajectoryJudge,
    check_threshold,
    metrics_of,
    render_trajectory,
)

__all__ = [
    "DEFAULT_CALL_PARAMS",
    "ArgumentMode",
    "ContainsEvaluator",
    "DefaultPromptEvaluator",
    "ExactMatchEvaluator",
    "FinalAnswer",
    "Judge",
    "JudgeCalibration",
    "JudgeMethod",
    "JudgeResult",
    "LLMJudgeEvaluator",
    "LabelEvaluator",
    "MatchMode",
    "Metric",
    "MetricScore",
    "NormCompliance",
    "PromptEvaluator",
    "TestCase",
    "TokenF1Evaluator",
    "ToolCallF1",
    "ToolCallMatch",
    "TrajectoryEvaluator",
    "TrajectoryJudge",
    "calls_match",
    "check_cases",
    "check_threshold",
    "fit_threshold",
    "labels_response_format",
    "matched_pairs",
    "metrics_of",
    "normalize_answer",
    "parse_judge_score",
    "render_trajectory",
    "score_metric",
    "split_cases",
    "uses_expected",
]
