"""The optimizer and refinement frames of ``tnsai_eval.frames`` (re-exported there)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias, cast

import pandas as pd

from tnsai_eval._util.plain import json_ready
from tnsai_eval.errors import ConfigError
from tnsai_eval.frames._base import call_frame, require_columns
from tnsai_eval.optimizer import CASE_COLUMNS, OptimizationResult, RoundRecord, demos_text

if TYPE_CHECKING:
    from tnsai_eval.refinement import RefinementMetrics, RefinementResult

#: One run whose scores ``score_progressions`` can lay out.
ProgressionRun: TypeAlias = (
    "Sequence[float] | RefinementResult | RefinementMetrics | OptimizationResult"
)

__all__ = [
    "LEADERBOARD_COLUMNS",
    "OPTIMIZER_CASE_COLUMNS",
    "OPTIMIZER_ROUND_COLUMNS",
    "PARTIAL_STATUSES",
    "PROGRESSION_COLUMNS",
    "VARIANT_COLUMNS",
    "ProgressionRun",
    "best_so_far",
    "leaderboard",
    "optimizer_cases",
    "optimizer_rounds",
    "refinement_checks",
    "refinement_iterations",
    "score_progressions",
    "variant_scores",
]

#: ``optimizer_cases``: one row per (round, variant, case), exactly
#: ``OptimizationResult.to_dataframe()``'s columns. ``round`` 0 scores the
#: initial prompt; ``variant`` is the variant's id; ``case`` the case's index;
#: ``score`` is the evaluator's score in [0, 1] (NaN when the call failed, and
#: ``error`` then says why); ``tokens`` the call's total tokens; ``latency``
#: seconds; ``cached`` whether the reply came from a cache or response store;
#: ``split`` is ``train`` or ``validation``; ``details`` what the variant carries
#: beyond its instruction (system message, demos, response format; ``''`` for
#: none); ``reason`` the evaluator's explanation of the score when it gave one
#: (a judge's reason), else empty; ``case_id`` the case's stable id (as in the
#: plugin's reports), ``state`` its ``CaseState`` and ``error_type`` the class of
#: the exception behind ``error``.
OPTIMIZER_CASE_COLUMNS: tuple[str, ...] = CASE_COLUMNS
# A frame passed in (say, read back from results.csv of an older run) needs only these.
_CASE_REQUIRED = tuple(
    c
    for c in OPTIMIZER_CASE_COLUMNS
    if c not in ("error", "split", "details", "reason", "case_id", "state", "error_type")
)

#: ``optimizer_rounds``: one row per round, the fields of ``RoundRecord``:
#: ``round`` (0 = scoring the initial prompt), ``best_score`` and
#: ``best_variant`` after it, ``improved``, ``variants`` made in it, its
#: ``calls``, ``tokens`` and ``failed_calls``, and ``elapsed_s`` since the run
#: began.
OPTIMIZER_ROUND_COLUMNS = tuple(f.name for f in dataclasses.fields(RoundRecord))

#: ``variant_scores``: one row per (round, variant). ``score`` is the mean over
#: the cases scored; ``cases`` how many were scored; ``cached`` how many of their
#: replies came from a cache or a response store; ``tokens`` the rows' tokens;
#: ``best`` whether the variant holds the highest score seen so far (ties go to
#: the earlier one, as in the optimizer); ``details`` what the variant carries
#: beyond its instruction (``''`` when the case frame has no ``details``);
#: ``status`` the variant's ``VariantStatus`` value (empty for a bare case
#: frame): a ``dropped`` or ``incomplete`` variant's score is a partial mean,
#: over the cases racing or the budget let it reach, and is never ``best``.
VARIANT_COLUMNS = (
    "round",
    "variant",
    "strategy",
    "score",
    "cases",
    "cached",
    "tokens",
    "best",
    "details",
    "status",
)
#: Statuses whose ``score`` is a mean over only some of the cases (plots draw them hollow).
PARTIAL_STATUSES = frozenset({"dropped", "incomplete"})

#: ``leaderboard``: one row per variant scored, best first; ``rank`` from 1,
#: ``variant`` the variant's id (0 = the initial prompt), ``status`` scored,
#: dropped or incomplete; ``prompt`` the instruction as sent (inline demos
#: included), ``system`` its system message, ``demos`` its demo turns or
#: inline demos as ``style: input -> output | ...`` (``''`` for none),
#: ``response_format`` as JSON text, ``details`` a summary of those three.
LEADERBOARD_COLUMNS = (
    "rank",
    "variant",
    "round",
    "strategy",
    "score",
    "cases",
    "calls",
    "tokens",
    "status",
    "prompt",
    "system",
    "demos",
    "response_format",
    "details",
)

#: ``score_progressions``: one row per (run, step); ``step`` is the iteration
#: (from 1) of a refinement run, the round (from 0) of an optimization, else
#: the position (from 0) in a list of scores.
PROGRESSION_COLUMNS = ("run", "step", "score")


# -- optimizer -------------------------------------------------------------------------


def optimizer_cases(result: OptimizationResult | pd.DataFrame) -> pd.DataFrame:
    """One row per (round, variant, case) of an optimization (``OPTIMIZER_CASE_COLUMNS``).

    Accepts an ``OptimizationResult`` (delegates to its ``to_dataframe()``) or a
    frame that already has those columns (``error``, ``split``, ``reason``,
    ``case_id``, ``state`` and ``error_type`` may be absent: a frame read back
    from an older run's CSV file).
    """
    frame = (
        result
        if isinstance(result, pd.DataFrame)
        else call_frame(result, "to_dataframe", what="an OptimizationResult")
    )
    require_columns(frame, _CASE_REQUIRED, what="optimizer case frame")
    return frame


def optimizer_rounds(result: OptimizationResult | pd.DataFrame) -> pd.DataFrame:
    """One row per optimizer round (``OPTIMIZER_ROUND_COLUMNS``).

    Accepts an ``OptimizationResult`` (its ``rounds_dataframe()``) or a frame
    with at least ``round`` (each plot checks the further columns it draws).
    """
    if isinstance(result, pd.DataFrame):
        require_columns(result, ("round",), what="optimizer rounds frame")
        return result
    return call_frame(result, "rounds_dataframe", what="an OptimizationResult")


def variant_scores(result: OptimizationResult | pd.DataFrame) -> pd.DataFrame:
    """One row per (round, variant) with its mean score and cost (``VARIANT_COLUMNS``).

    Built from ``optimizer_cases``; rows are in the order the variants were scored.
    With an ``OptimizationResult``, ``status`` comes from its variant records
    and a partial score (dropped by racing, cut by the budget) is never
    marked ``best``: it may exceed the chosen best's mean only because it
    never reached the cases where it would have lost.
    """
    cases = optimizer_cases(result)
    if "split" in cases.columns:
        # Validation rows report on the winner; they never compete in a round.
        cases = cases[cases["split"].fillna("train") == "train"]
    work = cases.assign(_cached=cases["cached"].astype(bool).astype(int))
    grouped = work.groupby(["round", "variant"], sort=False, dropna=False)
    out = grouped.agg(
        strategy=("strategy", "first"),
        score=("score", "mean"),
        cases=("score", "count"),
        cached=("_cached", "sum"),
        tokens=("tokens", "sum"),
        details=("details", "first") if "details" in work.columns else ("strategy", "size"),
    ).reset_index()
    if "details" not in work.columns:
        out["details"] = ""
    out["details"] = out["details"].fillna("").astype(str)
    out["tokens"] = out["tokens"].astype(int)
    statuses = _variant_statuses(result)
    out["status"] = [statuses.get(int(v), "") for v in out["variant"]]
    best: list[bool] = []
    top = float("-inf")
    for score, status in zip(out["score"], out["status"], strict=True):
        full = status not in PARTIAL_STATUSES
        is_best = full and bool(pd.notna(score)) and float(score) > top
        top = float(score) if is_best else top
        best.append(is_best)
    out["best"] = best
    return out.loc[:, list(VARIANT_COLUMNS)]


def _variant_statuses(result: object) -> dict[int, str]:
    """Variant id -> status value, from a result's ``variants`` (empty for a frame)."""
    records = getattr(result, "variants", None)
    if isinstance(result, pd.DataFrame) or records is None:
        return {}
    return {int(v.id): str(getattr(v.status, "value", v.status)) for v in records}


def leaderboard(result: OptimizationResult) -> pd.DataFrame:
    """The variants an optimization scored, best first (``LEADERBOARD_COLUMNS``).

    Follows ``OptimizationResult.leaderboard()``: fully scored variants by
    score, then dropped and incomplete ones by their partial score (``score``
    shows that partial score, ``status`` says which). Duplicates are left out.
    """
    board = getattr(result, "leaderboard", None)
    if not callable(board):
        raise ConfigError(f"expected an OptimizationResult, got {type(result).__name__}")
    rows = [
        (
            rank,
            v.id,
            v.round,
            v.strategy,
            v.score if v.score is not None else v.partial_score,
            v.cases_scored,
            v.calls,
            v.tokens,
            getattr(v.status, "value", str(v.status)),
            v.prompt,
            v.system,
            demos_text(v.demos, v.demo_style),
            None
            if v.response_format is None
            else json.dumps(json_ready(v.response_format), sort_keys=True),
            v.spec.describe(),
        )
        for rank, v in enumerate(board(), start=1)
    ]
    return pd.DataFrame(rows, columns=list(LEADERBOARD_COLUMNS))


def best_so_far(result: OptimizationResult | pd.DataFrame) -> pd.Series:
    """The best score after each round (indexed by round; round 0 = the initial prompt).

    Taken from ``rounds_dataframe()["best_score"]`` when the result has it (that
    is the optimizer's own judgement, racing included), else the running
    maximum of ``variant_scores``.
    """
    if not isinstance(result, pd.DataFrame) and hasattr(result, "rounds_dataframe"):
        rounds = optimizer_rounds(result)
        if "best_score" in rounds.columns and not rounds.empty:
            series = rounds.set_index("round")["best_score"].astype(float)
            return series.sort_index().rename("best_score")
    per_round = variant_scores(result).groupby("round", sort=True)["score"].max()
    return per_round.cummax().rename("best_score")


# -- refinement ------------------------------------------------------------------------


def refinement_iterations(result: RefinementResult | pd.DataFrame) -> pd.DataFrame:
    """One row per checked iteration: ``RefinementResult.to_dataframe()``.

    Columns: ``iteration`` (from 1; 1 checks the draft), ``score`` (the share of
    checks passed), ``passed``, ``checks`` and ``failed`` (counts),
    ``failed_checks`` (their names, comma-separated), ``improved``,
    ``repeated``, ``tokens``, ``tokens_estimated``, ``latency_s``,
    ``checks_duration_s`` and ``output`` (the text checked). A frame passed in
    needs at least ``iteration``.
    """
    if isinstance(result, pd.DataFrame):
        require_columns(result, ("iteration",), what="refinement iteration frame")
        return result
    return call_frame(result, "to_dataframe", what="a RefinementResult")


def refinement_checks(result: RefinementResult | pd.DataFrame) -> pd.DataFrame:
    """One row per (iteration, check): ``RefinementResult.checks_dataframe()``.

    Columns: ``iteration``, ``check`` (its name), ``kind``, ``source``,
    ``passed``, ``skipped``, ``score``, ``message``, ``reason`` (the judge's
    own explanation for ``llm_check``, '' without one), ``duration_s``,
    ``tokens``. A frame passed in needs at least ``iteration``, ``check`` and
    ``passed``.
    """
    if isinstance(result, pd.DataFrame):
        require_columns(result, ("iteration", "check", "passed"), what="refinement check frame")
        return result
    return call_frame(result, "checks_dataframe", what="a RefinementResult")


# -- progressions ----------------------------------------------------------------------


def _progression(run: ProgressionRun) -> tuple[int, list[float]]:
    """The first step number and the scores of one run."""
    # By shape rather than by class, so that a result rebuilt elsewhere (a
    # notebook's stand-in, an older pickle) still lays out.
    metrics = getattr(run, "metrics", run)
    if hasattr(metrics, "score_progression"):
        # A refinement run: iteration 1 checks the draft.
        return 1, [float(s) for s in metrics.score_progression]
    if hasattr(run, "to_dataframe") and hasattr(run, "rounds_dataframe"):
        best = best_so_far(cast("OptimizationResult", run))
        return (int(best.index[0]) if len(best) else 0), [float(s) for s in best]
    if isinstance(run, Sequence) and not isinstance(cast(object, run), str):
        return 0, [float(s) for s in run]
    raise ConfigError(
        "expected a score sequence, a RefinementResult or an OptimizationResult, "
        f"got {type(run).__name__}"
    )


def score_progressions(
    runs: ProgressionRun | Mapping[str, ProgressionRun] | pd.DataFrame,
) -> pd.DataFrame:
    """Score progressions in long form (``PROGRESSION_COLUMNS``), for overlaying runs.

    ``runs`` is one run or a mapping of run name to run, where a run is a sequence
    of scores (steps 0, 1, ...), a ``RefinementResult`` (its
    ``metrics.score_progression``; steps are iterations, from 1) or an
    ``OptimizationResult`` (``best_so_far``; steps are rounds, 0 = the initial
    prompt). A frame with the columns already is returned as is.
    """
    if isinstance(runs, pd.DataFrame):
        require_columns(runs, PROGRESSION_COLUMNS, what="score progression frame")
        return runs
    named: Mapping[str, ProgressionRun] = runs if isinstance(runs, Mapping) else {"run": runs}
    rows = []
    for name, run in named.items():
        start, scores = _progression(run)
        rows += [(str(name), start + i, score) for i, score in enumerate(scores)]
    frame = pd.DataFrame(rows, columns=list(PROGRESSION_COLUMNS))
    return frame.astype({"run": object, "step": int, "score": float})
