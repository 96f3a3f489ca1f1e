"""One record per case and per refinement iteration, from the engine to the report and the frames.

Before, a case was copied field by field through three records (the
optimizer's ``CaseResult``, ``score_prompt``'s ``CaseScore``, the report's
``CaseRecord``) with two ``CaseState`` types, and a refinement iteration
through two ``IterationRecord`` classes; a field added to one (``error_type``)
never reached the report.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import tnsai_eval
from tests.plugin.conftest import read_json
from tnsai_eval import evaluation, frames, optimizer, records, refinement, reports
from tnsai_eval.errors import ConfigError, LLMConnectionError
from tnsai_eval.evaluation import score_prompt
from tnsai_eval.llm import Completion
from tnsai_eval.optimizer import PromptOptimizer, TestCase
from tnsai_eval.records import (
    CaseMetric,
    CaseRecord,
    CaseState,
    CheckKind,
    CheckOutcome,
    IterationRecord,
    ModelTurn,
    Step,
    StopReason,
    ToolCall,
    Trajectory,
    TrajectorySummary,
)
from tnsai_eval.records._summary import MAX_STEPS, STEP_TEXT_CHARS
from tnsai_eval.reports import Report, TestStatus, TrackedTest, decode_test

PACKAGE = Path(tnsai_eval.__file__).parent


def _defined(names: set[str]) -> dict[str, list[str]]:
    """Where each name is defined in the package: a class, or a module-level alias."""
    found: dict[str, list[str]] = {name: [] for name in names}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name in names:
                found[node.name].append(where)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found_here = [t.id for t in targets if isinstance(t, ast.Name) and t.id in names]
                for name in found_here:
                    found[name].append(where)
    return found


def test_one_case_record_one_case_state_one_iteration_record_are_defined() -> None:
    found = _defined(
        {"CaseRecord", "CaseState", "IterationRecord", "CaseResult", "CaseScore", "CheckOutcome",
         "PromptEvaluation", "Engine", "CallEvent"}
    )  # fmt: skip
    # Scoring has one home below the search, and a call one event record.
    assert found.pop("PromptEvaluation") == ["evaluation/_scoring.py"]
    assert found.pop("Engine") == ["evaluation/_engine.py"]
    assert found.pop("CallEvent") == ["llm/_front.py"]
    assert evaluation.PromptEvaluation.__dataclass_fields__["cases"].type == (
        "tuple[CaseRecord, ...]"
    )
    assert found == {
        "CaseRecord": ["records/_case.py"],
        "CaseState": ["records/_case.py"],
        "IterationRecord": ["records/_iteration.py"],
        "CheckOutcome": ["records/_iteration.py"],
        "CaseResult": [],
        "CaseScore": [],
    }
    # Each package that shows them gives the same objects.
    assert optimizer.CaseRecord is reports.CaseRecord is records.CaseRecord
    assert optimizer.CaseState is reports.CaseState is records.CaseState
    assert refinement.IterationRecord is reports.IterationRecord is records.IterationRecord
    assert refinement.CheckOutcome is records.CheckOutcome


class _Flaky:
    """Answers "Paris" for France; the connection fails for Peru."""

    model = "flaky"

    def chat(self, messages: object, **params: object) -> Completion:
        text = str(messages)
        if "Peru" in text:
            raise LLMConnectionError("connection refused")
        return Completion(text="Paris" if "France" in text else "Rome")


def test_the_engine_record_reaches_score_prompt_the_optimizer_and_the_callback() -> None:
    cases = [TestCase("France", "Paris", id="fr"), TestCase("Peru", "Lima")]
    seen: list[CaseRecord] = []
    result = score_prompt(_Flaky(), "Capital?", cases, on_case=seen.append, concurrency=1)
    france, peru = result.cases
    assert isinstance(france, CaseRecord)
    assert france in seen
    assert peru in seen
    assert (france.id, france.index, france.state, france.score) == ("fr", 0, "scored", 1.0)
    assert (peru.state, peru.score, peru.error_type) == (
        CaseState.ERROR,
        None,
        "LLMConnectionError",
    )
    assert peru.id == reports.case_ids([("Peru", "Lima", None)])[0]
    # The optimizer's rows are the same records, with where the run made them.
    run = PromptOptimizer(_Flaky(), candidate_strategies=["concise"], rewrite=False).optimize(
        "Capital?", cases
    )
    assert all(isinstance(row, CaseRecord) for row in run.case_results)
    first = run.case_results[0]
    assert (first.round, first.variant, first.strategy, first.split) == (0, 0, "initial", "train")
    frame = run.to_dataframe()
    failed = frame[frame["state"] == "error"]
    assert set(failed["error_type"]) == {"LLMConnectionError"}
    assert set(frame["case_id"]) == {"fr", peru.id}


def test_every_field_the_engine_records_reaches_the_report(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from tnsai_eval.errors import LLMConnectionError
        from tnsai_eval.llm import Completion

        class Flaky:
            model = "flaky"
            def chat(self, messages, **params):
                if "Peru" in str(messages):
                    raise LLMConnectionError("connection refused")
                return Completion(text="Paris")

        @pytest.fixture(scope="session")
        def llm():
            return Flaky()
        """
    )
    pytester.makepyfile(
        """
        def test_capitals(evaluate_prompt):
            evaluate_prompt("Capital?", [("France", "Paris"), ("Peru", "Lima")])
        """
    )
    pytester.runpytest_inprocess("--llm-record", "off", "--tnsai-report", "r.json")
    (test,) = read_json(pytester.path / "r.json")["tests"]
    france, peru = test["cases"]
    assert (france["state"], france["passed"], france["error_type"]) == ("scored", True, None)
    assert (peru["state"], peru["passed"], peru["error_type"]) == (
        "error",
        False,  # asked, and failed: it counts as failing
        "LLMConnectionError",
    )
    # The frames read the same record, its error and type included.
    frame = frames.report_cases(pytester.path / "r.json")
    row = frame.iloc[1]
    assert [row["state"], row["error_type"]] == ["error", "LLMConnectionError"]
    assert "connection refused" in str(row["error"])


def test_a_case_record_round_trips_through_the_report() -> None:
    record = CaseRecord(
        "c1",
        "2+2",
        "4",
        output=None,
        score=None,
        passed=None,
        state=CaseState.ERROR,
        tokens=3,
        error="LLMConnectionError: refused",
        error_type="LLMConnectionError",
        metric="score_2",
        sample=1,
    )
    test = TrackedTest("t.py::test_a", TestStatus.FAILED, cases=(record,))
    (decoded,) = decode_test(json.loads(json.dumps(test.to_dict())), 2, "tests[0]").cases
    # What the report keeps of a case: everything but where an optimizer run made it.
    assert decoded == record


def test_a_state_that_is_no_case_state_is_refused_by_name() -> None:
    assert CaseRecord("c", "q", "a", state="not_run").state is CaseState.NOT_RUN  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'skipped'"):
        CaseRecord("c", "q", "a", state="skipped")  # type: ignore[arg-type]


def test_a_refinement_iteration_in_the_report_is_the_loops_record() -> None:
    judge = CheckOutcome("llm_check('ok?')", False, "0.4 < 0.8", CheckKind.LLM, "llm_check",
                         score=0.4, tokens=12, reason="too vague")  # fmt: skip
    exact = CheckOutcome("must_contain('a')", True, "", CheckKind.DETERMINISTIC, "must_contain")
    record = IterationRecord(
        2, "an answer", (exact, judge), 0.5, improved=True, repeated=False,
        tokens=40, latency_s=0.2, revision="better", metric="refine_score",
    )  # fmt: skip
    test = TrackedTest("t.py::test_r", TestStatus.PASSED, refinements=(record,))
    data = json.loads(json.dumps(test.to_dict()))
    (decoded,) = decode_test(data, 2, "tests[0]").refinements
    assert decoded == record
    assert data["refinements"][0]["reasons"] == {"llm_check('ok?')": "too vague"}


def test_an_older_reports_refinements_still_read() -> None:
    older = {
        "nodeid": "t.py::test_r",
        "status": "passed",
        "refinements": [
            {
                "metric": "refine_score",
                "iteration": 1,
                "score": 0.5,
                "output": "draft",
                "passed_checks": ["valid_json"],
                "failed_checks": ["llm_check('ok?')"],
                "reasons": {"llm_check('ok?')": "too vague"},
            }
        ],
    }
    (iteration,) = decode_test(older, 2, "tests[0]").refinements
    assert [(c.name, c.passed, c.kind, c.reason) for c in iteration.checks] == [
        ("valid_json", True, CheckKind.DETERMINISTIC, ""),
        ("llm_check('ok?')", False, CheckKind.LLM, "too vague"),
    ]
    assert (iteration.metric, iteration.score, iteration.output) == ("refine_score", 0.5, "draft")


def test_the_report_cuts_an_iterations_output_after_masking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-" + "x" * 40
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    # Cut first, the secret's start would survive at the end of the 500 characters kept.
    output = "a" * 480 + secret + "b" * 100
    record = IterationRecord(1, output, (), 1.0, improved=False, repeated=False)
    written = Report(tests=(TrackedTest("t", TestStatus.PASSED, refinements=(record,)),)).to_dict()
    kept = written["tests"][0]["refinements"][0]["output"]
    assert kept == ("a" * 480 + "***" + "b" * 100)[:500] + "..."


def test_records_have_the_fields_the_report_and_the_engine_need() -> None:
    names = [f.name for f in dataclasses.fields(CaseRecord)]
    # The report's positional order is kept: CaseRecord(id, input, expected, output, score, passed).
    assert names[:6] == ["id", "input", "expected", "output", "score", "passed"]
    assert {"error_type", "index", "round", "variant", "strategy", "split"} <= set(names)


def test_a_trajectory_summary_is_masked_before_it_is_cut_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-" + "t" * 40
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    # Cut first, the secret's start would survive at the end of the characters kept.
    result = "r" * (STEP_TEXT_CHARS - 10) + secret + "tail" * 20
    steps: list[Step] = [ModelTurn(tokens=5), ToolCall("lookup", {"key": secret}, result=result)]
    steps += [ToolCall("again", {"n": n}) for n in range(MAX_STEPS + 5)]
    run = Trajectory("q", steps=tuple(steps), output=f"done {secret}", calls=3, tokens=40)
    summary = TrajectorySummary.of(run)
    lookup = summary.steps[1]
    assert lookup.arguments == '{"key": "***"}'
    kept = ("r" * (STEP_TEXT_CHARS - 10) + "***" + "tail" * 20)[:STEP_TEXT_CHARS]
    assert lookup.result == kept + "..."
    assert len(summary.steps) == MAX_STEPS
    assert summary.dropped == len(steps) - MAX_STEPS
    assert summary.tools[:2] == ("lookup", "again")
    assert secret not in json.dumps(summary.to_dict())


def test_a_target_case_record_round_trips_with_its_trajectory_and_verdicts() -> None:
    run = Trajectory(
        "Refund A1",
        steps=(ModelTurn(tokens=9), ToolCall("issue_refund", {"order_id": "A1"}, error="Denied")),
        output="Sorry.",
        stop_reason=StopReason.MAX_STEPS,
    )
    record = CaseRecord(
        "c1",
        "Refund A1",
        "",
        output="Sorry.",
        score=0.0,
        passed=False,
        reason="norms 0.00 fail",
        trajectory=TrajectorySummary.of(run),
        metric_scores=(
            CaseMetric("tool_calls_in_order", 1.0, True),
            CaseMetric("norms", 0.0, False, "call 1: prohibited", ("call 1: prohibited",)),
        ),
    )
    test = TrackedTest("t.py::test_desk", TestStatus.FAILED, cases=(record,))
    report = Report(tests=(test,))
    assert report.schema_version == reports.SCHEMA_VERSION == 3
    data = json.loads(report.to_json())
    (decoded,) = decode_test(data["tests"][0], 3, "tests[0]").cases
    assert decoded == record
    assert decoded.violations == ("call 1: prohibited",)
    # A prompt's records keep the keys they had: no empty trajectory or verdicts.
    plain = CaseRecord("c2", "2+2", "4", output="4", score=1.0, passed=True).to_dict()
    assert "trajectory" not in plain
    assert "metric_scores" not in plain


def test_evaluate_target_keeps_each_cases_trajectory_and_verdicts_in_the_report(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest
        from tnsai_eval.llm import Completion, ToolCall
        from tnsai_eval.testing import ScriptedLLM

        def reply(messages, params):
            if not any(m.role == "tool" for m in messages):
                order = messages[-1].content.split()[-1]
                return Completion("", tool_calls=(ToolCall("c1", "issue_refund",
                                                           {"order_id": order}),))
            return "Refunded."

        @pytest.fixture(scope="session")
        def llm():
            return ScriptedLLM(fn=reply)
        """
    )
    pytester.makepyfile(
        """
        from tnsai_eval.agents import Agent
        from tnsai_eval.norms import NormEntry, NormType
        from tnsai_eval.scoring import NormCompliance, TestCase, ToolCallMatch

        def issue_refund(order_id: str) -> str:
            "Refund an order."
            if order_id == "B2":
                raise KeyError(order_id)
            return "ok"

        def test_desk(llm, evaluate_target):
            cases = [TestCase("Refund A1", "", [{"name": "issue_refund"}], {"vip": True}),
                     TestCase("Refund B2", "", [{"name": "issue_refund"}], {"vip": False})]
            norms = NormCompliance([NormEntry(NormType.PROHIBITION, "vip == false",
                                              "issue_refund", "no refund unless vip")])
            evaluate_target(lambda: Agent(llm, "Desk.", tools=[issue_refund]), cases,
                            evaluator=[ToolCallMatch(arguments="ignore"), norms])
        """
    )
    pytester.runpytest_inprocess("--llm-record", "off", "--tnsai-report", "r.json")
    (test,) = read_json(pytester.path / "r.json")["tests"]
    assert read_json(pytester.path / "r.json")["schema_version"] == 3
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for case in test["cases"]:
        by_metric.setdefault(case["metric"], []).append(case)
    vip, other = by_metric["score"]
    assert [s["name"] for s in vip["trajectory"]["steps"] if s["kind"] == "tool_call"] == [
        "issue_refund"
    ]
    refund = next(s for s in other["trajectory"]["steps"] if s["kind"] == "tool_call")
    assert (refund["arguments"], refund["error"]) == ('{"order_id": "B2"}', "KeyError: 'B2'")
    assert other["trajectory"]["stop_reason"] == "answered"
    assert other["metric_scores"]["norms"]["passed"] is False
    assert other["metric_scores"]["norms"]["violations"] == [
        "call 1: action 'issue_refund' is prohibited: no refund unless vip; "
        "its condition `vip == false` holds with vip=False"
    ]
    assert vip["metric_scores"]["norms"] == {
        "score": 1.0, "passed": True, "reason": None, "violations": []
    }  # fmt: skip
    assert vip["metric_scores"]["tool_calls_in_order"]["passed"] is True
    # Each metric's own records do not repeat the trajectory.
    assert all("trajectory" not in c for c in by_metric["score.norms"])
