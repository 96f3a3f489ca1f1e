"""Hand-built frames with the documented columns, so tests need no model and no core."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypedDict, Unpack, cast

import matplotlib
import pandas as pd
import pytest

from tnsai_eval.optimizer import OptimizationResult
from tnsai_eval.refinement import RefinementResult
from tnsai_eval.reports import MetricStats, Report, TestStatus, TrackedTest

# No display in tests; Figure objects never need one, but a stray pyplot call would.
matplotlib.use("Agg")


def _case_rows() -> list[dict[str, object]]:
    """Round 0: the initial prompt; round 1: two variants; round 2: one variant (cached)."""
    inputs = [("2+2?", "4"), ("3+3?", "6")]
    plan = [
        # round, variant id, strategy, scores per case, cached, details
        (0, 0, "initial", [0.0, 0.5], False, ""),
        (1, 1, "chain_of_thought", [1.0, 0.5], False, ""),
        (1, 2, "concise", [0.25, 0.25], False, "system message"),
        (2, 3, "concise", [1.0, 1.0], True, "system message; 2 demo(s) as chat"),
    ]
    rows: list[dict[str, object]] = []
    for rnd, variant, strategy, scores, cached, details in plan:
        for case, ((question, expected), score) in enumerate(zip(inputs, scores, strict=True)):
            rows.append(
                {
                    "round": rnd,
                    "variant": variant,
                    "strategy": strategy,
                    "case": case,
                    "input": question,
                    "expected": expected,
                    "output": expected if score == 1.0 else "?",
                    "score": score,
                    "tokens": 10 + case,
                    "latency": 0.01,
                    "cached": cached,
                    "error": None,
                    "split": "train",
                    "details": details,
                    "reason": None,
                    "case_id": f"c{case}",
                    "state": "scored",
                    "error_type": None,
                }
            )
    # A validation row: it reports on the winner and must never count in a round.
    rows.append({**rows[-1], "case": 0, "input": "9+9?", "score": 0.0, "split": "validation"})
    return rows


@pytest.fixture
def cases_frame() -> pd.DataFrame:
    return pd.DataFrame(_case_rows())


class FakeOptimization:
    """Duck-typed stand-in for OptimizationResult (its two frame methods)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self.best_prompt = "Think step by step. Answer briefly."
        self.score = 1.0

    def to_dataframe(self) -> pd.DataFrame:
        return self._frame.copy()

    def rounds_dataframe(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "round": [0, 1, 2],
                "best_score": [0.25, 0.75, 1.0],
                "calls": [2, 5, 0],
                "tokens": [21, 60, 0],
            }
        )


@pytest.fixture
def optimization(cases_frame: pd.DataFrame) -> OptimizationResult:
    # Cast here, once: a real OptimizationResult derives its frames from a run, and
    # these tests need exact hand-built frames. The frames and plots read results
    # by their two frame methods, which is all the stand-in has.
    return cast("OptimizationResult", FakeOptimization(cases_frame))


@pytest.fixture
def checks_frame() -> pd.DataFrame:
    """Three iterations of two checks; valid_json passes from iteration 2, contains at 3."""
    passed = {"valid_json": [False, True, True], "must_contain(name)": [False, False, True]}
    rows = [
        {"iteration": i + 1, "check": check, "passed": ok, "message": "" if ok else "failed"}
        for check, oks in passed.items()
        for i, ok in enumerate(oks)
    ]
    return pd.DataFrame(rows)


@pytest.fixture
def bare_refinement(checks_frame: pd.DataFrame) -> RefinementResult:
    """A stand-in result whose frames are known objects: ``checks_frame`` and an
    iteration frame with scores but no ``output`` column."""
    # Cast here, once: the frames and widgets read a result by its two frame
    # methods, and only a stand-in can return a given object (to check delegation)
    # or a frame that lacks a column.
    iterations = pd.DataFrame({"iteration": [1, 2, 3], "score": [0.0, 0.5, 1.0]})
    return cast(
        "RefinementResult",
        SimpleNamespace(to_dataframe=lambda: iterations, checks_dataframe=lambda: checks_frame),
    )


class Counts(TypedDict, total=False):
    """The integer counts of a ``TrackedTest`` that ``save_report`` sets on every test."""

    samples: int
    passed_samples: int
    calls: int
    tokens: int
    cache_hits: int


def save_report(
    path: Path,
    scores: Mapping[str, float],
    failed: tuple[str, ...] = (),
    *,
    config: Mapping[str, Any] | None = None,
    **counts: Unpack[Counts],
) -> Path:
    """A pytest JSON report at ``path``: one test per score, ``failed`` ones FAILED.

    ``counts`` (``calls``, ``tokens``...) are set on every test.
    """
    tests = tuple(
        TrackedTest(
            nodeid,
            TestStatus.FAILED if nodeid in failed else TestStatus.PASSED,
            {"score": MetricStats("score", (score,))},
            **counts,
        )
        for nodeid, score in scores.items()
    )
    return Report(tests=tests, config=dict(config or {})).save(path)
