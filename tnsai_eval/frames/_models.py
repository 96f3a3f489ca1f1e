"""Models side by side as DataFrames: ``compare_models`` and its summary view."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeVar

from tnsai_eval.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from tnsai_eval.datasets import CasesInput
    from tnsai_eval.evaluation import ModelEvaluation, ModelsInput

__all__ = ["compare_models", "model_summary", "model_verdict"]

# Where the tidy frame keeps its summary view and its paired verdict (pandas
# carries ``attrs`` along).
_SUMMARY = "tnsai_model_summary"
_T = TypeVar("_T")
_VERDICT = "tnsai_model_verdict"


def compare_models(
    prompt: str | os.PathLike[str],
    dataset: CasesInput,
    models: ModelsInput,
    **options: Any,
) -> pd.DataFrame:
    """Score ``prompt`` on ``dataset`` with each model: one row per model and case.

    The columns are ``tnsai_eval.evaluation.MODEL_CASE_COLUMNS`` (model, case,
    input, expected, output, score, passed, state, tokens, cached, latency_s,
    error). ``model_summary(frame)`` is its summary view, one row per model:
    score with its 95% interval, pass rate, tokens in and out, estimated cost
    and the p50/p95 latency of live calls (``MODEL_SUMMARY_COLUMNS``).
    The dataset (a shipped name, a JSONL path or cases) is resolved as
    ``evaluate_prompt`` resolves it: its ``NAME.meta.json`` chooses the
    evaluator, the case threshold and ``constrain`` unless given. The other
    ``options`` are ``tnsai_eval.evaluation.evaluate_models``'s (``table``,
    ``model_params``, ``store``, ``record_mode``, ``progress``...), which
    does the scoring.

    >>> from tnsai_eval.testing import ScriptedLLM
    >>> frame = compare_models("Capital?", [("France", "Paris")],
    ...                        {"a": ScriptedLLM(default="Paris")}, progress=False)
    >>> frame[["model", "input", "output", "score"]]
      model   input output  score
    0     a  France  Paris    1.0
    >>> model_summary(frame)[["model", "score", "pass_rate"]]
      model  score  pass_rate
    0     a    1.0        1.0
    """
    from tnsai_eval.datasets import scoring_plan
    from tnsai_eval.evaluation import evaluate_models

    plan = scoring_plan(
        dataset,
        evaluator=options.pop("evaluator", None),
        threshold=options.pop("threshold", None),
        params=options.pop("params", None),
        constrain=options.pop("constrain", None),
    )
    label = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) else "<cases>"
    evaluation = evaluate_models(
        prompt, plan.cases, models, evaluator=plan.evaluator, params=plan.params,
        threshold=plan.threshold, dataset=label, notes=plan.notes, **options,
    )  # fmt: skip
    frame = evaluation.to_dataframe()
    frame.attrs[_SUMMARY] = evaluation.summary()
    frame.attrs[_VERDICT] = evaluation.format_verdicts()
    return frame


def model_verdict(source: pd.DataFrame | ModelEvaluation) -> str:
    """The paired verdict of each model against the first of a ``compare_models`` frame (or
    an ``evaluate_models`` result): flipped cases and the sign test, as ``tnsai-eval eval``
    and pytest's ``--tnsai-compare-models`` print it ('' with one model)."""
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _carried(source, _VERDICT, str, "model verdict")
    return source.format_verdicts()


def model_summary(source: pd.DataFrame | ModelEvaluation) -> pd.DataFrame:
    """One row per model (``MODEL_SUMMARY_COLUMNS``) of a ``compare_models`` frame or an
    ``evaluate_models`` result."""
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _carried(source, _SUMMARY, pd.DataFrame, "model summary").copy()
    summary_of = getattr(source, "summary", None)
    if not callable(summary_of):
        raise ConfigError(f"expected a compare_models frame or a ModelEvaluation, got {source!r}")
    result: pd.DataFrame = summary_of()
    return result


def _carried(frame: pd.DataFrame, key: str, kind: type[_T], what: str) -> _T:
    value = frame.attrs.get(key)
    if not isinstance(value, kind):
        raise ConfigError(
            f"this DataFrame carries no {what}: pass the frame compare_models returned "
            "(or its ModelEvaluation)"
        )
    return value
