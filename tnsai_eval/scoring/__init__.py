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
* ``Judge``: grades a text against a yes/no question with whatever the client
  offers (log-probabilities, a JSON score, a ``SCORE:`` line);
  ``JudgeCalibration`` sets its threshold from labelled examples.

>>> from tnsai_eval.scoring import ContainsEvaluator, TestCase
>>> case = TestCase("What is the capital of France?", "Paris")
>>> ContainsEvaluator().evaluate("The capital is Paris.", case.expected)
1.0
"""

from tnsai_eval.scoring._calibration import JudgeCalibration, fit_threshold
from tnsai_eval.scoring._cases import TestCase, check_cases, split_cases
from tnsai_eval.scoring._contains import ContainsEvaluator
from tnsai_eval.scoring._default import DefaultPromptEvaluator
from tnsai_eval.scoring._evaluator import PromptEvaluator, uses_expected
from tnsai_eval.scoring._exact import ExactMatchEvaluator
from tnsai_eval.scoring._f1 import TokenF1Evaluator
from tnsai_eval.scoring._judge import Judge, JudgeMethod, JudgeResult
from tnsai_eval.scoring._label import LabelEvaluator, labels_response_format
from tnsai_eval.scoring._llm_judge import LLMJudgeEvaluator, parse_judge_score
from tnsai_eval.scoring._metric import score_metric
from tnsai_eval.scoring._normalize import normalize_answer
from tnsai_eval.scoring._params import DEFAULT_CALL_PARAMS

__all__ = [
    "DEFAULT_CALL_PARAMS",
    "ContainsEvaluator",
    "DefaultPromptEvaluator",
    "ExactMatchEvaluator",
    "Judge",
    "JudgeCalibration",
    "JudgeMethod",
    "JudgeResult",
    "LLMJudgeEvaluator",
    "LabelEvaluator",
    "PromptEvaluator",
    "TestCase",
    "TokenF1Evaluator",
    "check_cases",
    "fit_threshold",
    "labels_response_format",
    "normalize_answer",
    "parse_judge_score",
    "score_metric",
    "split_cases",
    "uses_expected",
]
