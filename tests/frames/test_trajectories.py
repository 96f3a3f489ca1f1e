"""The trajectory frames on the support desk agent's real runs (replayed, tools live)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.support_desk import METRICS, REPO, STORE, desk_cases, desk_evaluation
from tnsai_eval import frames
from tnsai_eval.errors import ConfigError
from tnsai_eval.evaluation import TargetEvaluation, score_target
from tnsai_eval.records import ModelTurn, ToolCall, Trajectory
from tnsai_eval.scoring import ContainsEvaluator, TestCase, ToolCallMatch


@pytest.fixture(scope="module")
def desk() -> TargetEvaluation:
    return desk_evaluation()


def test_one_row_per_step_with_the_agents_own_calls(desk: TargetEvaluation) -> None:
    steps = frames.trajectory_steps(desk)
    assert tuple(steps.columns) == frames.TRAJECTORY_STEP_COLUMNS
    assert len(steps) == sum(len(t.steps) for t in desk.trajectories if t is not None) == 134
    refund = steps[steps["case_id"] == "refund-A1002"]
    assert list(refund["step"]) == [0, 1, 2]
    assert list(refund["kind"]) == ["model", "tool", "model"]
    call = refund.iloc[1]
    assert call["tool"] == "lookup_order"
    assert json.loads(call["arguments"]) == {"order_id": "A1002"}
    # The desk's tool ran live: its result is the order it looked up.
    assert json.loads(call["result"])["item"] == "office chair"
    assert not isinstance(call["error"], str)
    turn = refund.iloc[2]
    assert turn["text"].startswith('{"answer": "You can refund an order')
    assert turn["tokens"] == 364
    assert set(steps["nodeid"]) == {desk.prompt}


def test_each_case_has_its_metrics_verdict_and_trajectory_summary(
    desk: TargetEvaluation,
) -> None:
    cases = frames.case_metrics(desk)
    assert tuple(cases.columns) == (*frames.CASE_METRIC_COLUMNS, *METRICS)
    assert list(cases["case_id"]) == [c.id for c in desk_cases()]
    # The means bench/README.md publishes for the same replies.
    assert round(cases["tool_calls_in_order"].mean(), 3) == 0.542
    assert round(cases["norms"].mean(), 3) == 0.875
    looping = cases.set_index("case_id").loc["where-A1006"]
    assert looping["tools"] == "lookup_order, check_policy, issue_refund"
    assert (looping["steps"], looping["tool_calls"]) == (7, 3)
    assert looping["stop_reason"] == "max_steps"
    assert looping["tool_call_f1"] == 0.5
    # A case passes when every metric passes: the combined record says the same.
    assert list(cases["passed"]) == [c.score == 1.0 for c in desk.cases]
    assert cases["passed"].sum() == 6


def test_a_case_that_raised_or_was_never_asked_keeps_its_row() -> None:
    def agent(text: str) -> Trajectory:
        if text == "boom":
            raise RuntimeError("the tool server is down")
        return Trajectory(text, (ModelTurn("ok"),), "ok")

    result = score_target(agent, [TestCase("fine", "ok"), TestCase("boom", "ok")],
                          evaluator=ContainsEvaluator())  # fmt: skip
    steps = frames.trajectory_steps(result)
    assert len(steps) == 1  # the failed case has no trajectory, so no step
    cases = frames.case_metrics(result).set_index("input")
    boom, fine = cases.loc["boom"].to_dict(), cases.loc["fine"].to_dict()
    assert boom["state"] == "error"
    assert boom["passed"] == False  # noqa: E712  (asked, and failed)
    assert "RuntimeError: the tool server is down" in str(boom["error"])
    assert pd.isna(boom["steps"])
    assert math.isnan(boom["contains"])
    assert fine["steps"] == 1
    assert fine["stop_reason"] == "answered"


def test_an_unrecorded_case_is_not_asked_rather_than_failed() -> None:
    new = TestCase("Where is my order A1099?", "shipped", id="where-A1099")
    result = desk_evaluation(cases=[*desk_cases()[:1], new])
    cases = frames.case_metrics(result).set_index("case_id")
    assert cases.loc["where-A1099", "state"] == "unrecorded"
    assert cases.loc["where-A1099", "passed"] is None
    assert cases.loc["where-A1001", "passed"] == True  # noqa: E712  (a numpy bool)


def test_one_metric_passes_at_its_own_threshold() -> None:
    def agent(text: str) -> Trajectory:
        return Trajectory(text, (ToolCall("a"), ModelTurn("done")), "done")

    case = TestCase("x", expected_tool_calls=[{"name": "a"}, {"name": "b"}])
    strict = score_target(agent, [case], evaluator=ToolCallMatch("subset", "ignore"))
    assert frames.case_metrics(strict)["passed"].tolist() == [True]
    lenient = score_target(agent, [case], evaluator=[ToolCallMatch("in_order", "ignore")])
    cases = frames.case_metrics(lenient)
    # In order, one of two expected calls found: 0.0 (all or nothing), so it fails.
    assert cases["tool_calls_in_order"].tolist() == [0.0]
    assert cases["passed"].tolist() == [False]


def test_secrets_are_masked_in_arguments_results_and_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DESK_API_KEY", "desk-secret-9f8e7d6c")

    def agent(text: str) -> Trajectory:
        call = ToolCall("login", {"key": "desk-secret-9f8e7d6c"},
                        result={"echo": "desk-secret-9f8e7d6c"})  # fmt: skip
        return Trajectory(text, (ModelTurn("using desk-secret-9f8e7d6c"), call), "ok")

    result = score_target(agent, [TestCase("desk-secret-9f8e7d6c", "ok")])
    shown = pd.concat([frames.trajectory_steps(result), frames.case_metrics(result)])
    text = shown.to_csv()
    assert "desk-secret" not in text
    assert text.count("***") >= 4


# -- from a run report: the same desk run through pytest's evaluate_target ---------------

DESK_SUITE = f"""
import sys
sys.path.insert(0, {str(REPO / "datasets")!r})
import make_support_desk as desk
from tnsai_eval.agents import Agent
from tnsai_eval.scoring import (ContainsEvaluator, FinalAnswer, NormCompliance, ToolCallF1,
                                ToolCallMatch)


def test_desk(evaluate_target, llm):
    def factory():
        return Agent(llm, desk.SYSTEM_PROMPT, tools=desk.TOOLS, max_steps=4, learning=False,
                     llm_params={{"temperature": 0.0, "max_tokens": 96}}, send_tool_schemas=True)

    evaluate_target(factory, {str(REPO / "datasets" / "support_desk.jsonl")!r},
                    evaluator=[ToolCallMatch("in_order", "subset"), ToolCallF1("subset"),
                               NormCompliance(desk.SupportDesk), FinalAnswer(ContainsEvaluator())])
"""


@pytest.fixture(scope="module")
def desk_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The --tnsai-report of the desk's pytest run, replayed from the committed store."""
    folder = tmp_path_factory.mktemp("desk-report")
    shutil.copytree(STORE, folder / "store")
    (folder / "test_desk.py").write_text(DESK_SUITE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_desk.py",
         "--llm-store=store", "--llm-record=replay", "--tnsai-report=report.json"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "report.json"


def test_a_reports_cases_are_the_runs_cases(desk: TargetEvaluation, desk_report: Path) -> None:
    from_report = frames.case_metrics(desk_report)
    from_run = frames.case_metrics(desk)
    # One row per case: the report's per-metric records (score.<metric>) are not cases.
    assert len(from_report) == 48
    assert set(from_report["nodeid"]) == {"test_desk.py::test_desk"}
    same = ["case_id", "sample", "state", "passed", "steps", "tool_calls", "tools",
            "stop_reason", *METRICS]  # fmt: skip
    assert tuple(from_report.columns) == (*frames.CASE_METRIC_COLUMNS, *METRICS)
    pd.testing.assert_frame_equal(from_report[same], from_run[same])


def test_a_reports_steps_are_the_runs_steps_cut_to_the_summary(
    desk: TargetEvaluation, desk_report: Path
) -> None:
    from_report = frames.trajectory_steps(desk_report)
    from_run = frames.trajectory_steps(desk)
    same = ["case_id", "step", "kind", "tool", "arguments", "result", "error", "tokens"]
    pd.testing.assert_frame_equal(from_report[same], from_run[same])
    # The report keeps a model turn's first 300 characters ("..." marks a cut).
    cut = 0
    for kept, whole in zip(from_report["text"], from_run["text"], strict=True):
        if isinstance(whole, str) and len(whole) > 300:
            cut += 1
            assert kept.endswith("...")
            assert whole.startswith(kept[:-3])
        else:
            assert kept == whole or (pd.isna(kept) and pd.isna(whole))
    assert cut > 0


def test_the_report_of_eval_agent_reads_as_the_run(desk: TargetEvaluation, tmp_path: Path) -> None:
    # `tnsai-eval eval --agent` on the same committed replies: its report.json (one
    # test, scored by ToolCallMatch in order, the data set's default) has the same runs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TNSAI_LLM_")}
    done = subprocess.run(
        [sys.executable, "-m", "tnsai_eval.cli", "eval", "datasets/support_desk.jsonl",
         "--agent", "datasets/make_support_desk.py:make_agent", "--store", str(STORE),
         "--record", "replay", "--out", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    from_report = frames.case_metrics(tmp_path / "report.json")
    from_run = frames.case_metrics(desk)
    same = ["case_id", "steps", "tool_calls", "tools", "stop_reason", "tool_calls_in_order"]
    pd.testing.assert_frame_equal(from_report[same], from_run[same])
    assert list(from_report["passed"]) == list(from_run["tool_calls_in_order"] == 1.0)
    assert len(frames.trajectory_steps(tmp_path / "report.json")) == 134


def test_a_prompt_report_has_no_agent_cases() -> None:
    # The example suite's committed baseline: prompt tests only. (Notebook 05's
    # reports are written when it runs, so a fresh clone does not have them.)
    for report in (REPO / "examples" / "baseline.json",):
        assert frames.case_metrics(report).empty
        assert frames.trajectory_steps(report).empty
        assert tuple(frames.case_metrics(report).columns) == frames.CASE_METRIC_COLUMNS


def test_other_sources_are_refused_with_their_type() -> None:
    with pytest.raises(ConfigError, match=r"expected a TargetEvaluation.*got list"):
        frames.trajectory_steps([])  # type: ignore[arg-type]
