"""Per-case records, flips, the paired gate, unrecorded cases and the final summary line."""

from __future__ import annotations

import json

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tests.plugin.conftest import read_json, write_report

# A model that answers case i correctly unless i is listed in $WRONG (or, for
# prompt version 2, in $WRONG_V2): which cases fail is set per run.
FLIPPING_CONFTEST = """
import os
import re

import pytest
from tnsai_eval.llm import Completion


class Flipping:
    model = "flipping"

    def chat(self, messages, **params):
        text = messages if isinstance(messages, str) else messages[-1]["content"]
        i = int(re.search(r"question (\\d+)", text).group(1))
        key = "WRONG_V2" if "VERSION 2" in text else "WRONG"
        wrong = {int(x) for x in os.environ.get(key, "").split(",") if x}
        return Completion(text="nope" if i in wrong else f"answer {i}")


class Exact:
    def evaluate(self, actual, expected):
        return 1.0 if actual == expected else 0.0


@pytest.fixture(scope="session")
def llm():
    return Flipping()


@pytest.fixture
def exact():
    return Exact()
"""

SIX = """
from pathlib import Path

def test_support(evaluate_prompt, exact):
    cases = [(f"question {i}", f"answer {i}") for i in range(1, 7)]
    evaluate_prompt(Path("support.txt"), cases, evaluator=exact)
"""

FORTY = """
def test_suite(evaluate_prompt, exact):
    cases = [(f"question {i}", f"answer {i}") for i in range(1, 41)]
    evaluate_prompt("Answer exactly.", cases, evaluator=exact)
"""


@pytest.fixture
def flipping(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FLIPPING_CONFTEST)
    return pytester


def test_fix_three_break_three_same_mean_reports_all_six_flips(
    flipping: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    flipping.makepyfile(test_support=SIX)
    (flipping.path / "support.txt").write_text("VERSION 1: answer briefly.\n")
    monkeypatch.setenv("WRONG", "4,5,6")
    base = flipping.runpytest_inprocess("--tnsai-report", "base.json")
    base.assert_outcomes(passed=1)
    baseline = read_json(flipping.path / "base.json")
    test = baseline["tests"][0]
    assert baseline["schema_version"] == 3
    assert test["case_pass_rate"] == 0.5
    assert [c["passed"] for c in test["cases"]] == [True] * 3 + [False] * 3
    assert test["prompts"][0]["file"].endswith("support.txt")
    assert "pass_rate" not in test

    (flipping.path / "support.txt").write_text("VERSION 2: answer briefly.\n")
    monkeypatch.setenv("WRONG_V2", "1,2,3")
    new = flipping.runpytest_inprocess("--tnsai-baseline", "base.json", "--tnsai-report", "n.json")
    # Same mean (0.5): the gate passes, but every flip is listed, broken first.
    assert new.ret == pytest.ExitCode.OK
    old_hash = test["prompts"][0]["hash"]
    new_hash = read_json(flipping.path / "n.json")["tests"][0]["prompts"][0]["hash"]
    assert old_hash != new_hash
    new.stdout.fnmatch_lines(
        [
            "*no regressions beyond tolerance 0.05*",
            "flipped cases: 6 (3 broken, 3 fixed); flips alone never fail the run",
            "*test_support.py::test_support (score): held +0.000, 3 broken, 3 fixed over 6 "
            "common case(s)*",
            f"*prompt `*support.txt` changed ({old_hash} -> {new_hash}): 3 case(s) fixed, 3 broken",
            "*flip*case*input*expected*before*after*delta",
            "*",
            "*broken*question 1*answer 1*1.00 'answer 1'*0.00 'nope'*-1.00",
            "*broken*question 2*",
            "*broken*question 3*",
            "*fixed*question 4*0.00 'nope'*1.00 'answer 4'*+1.00",
            "*fixed*question 5*",
            "*fixed*question 6*",
        ]
    )


@pytest.mark.parametrize(
    ("wrong", "gate", "regressed"),
    [
        # 4 broken, 1 fixed: the mean drops 0.075, beyond the 0.05 tolerance,
        # but 4 of 5 flips going one way is p = 0.19: noise for the paired gate.
        ("1,2,3,4", "tolerance", True),
        ("1,2,3,4", "paired", False),
        # 8 broken, 1 fixed: p = 0.02, and the mean drops 0.175: a real drop.
        ("1,2,3,4,5,6,7,8", "paired", True),
        ("1,2,3,4,5,6,7,8", "tolerance", True),
    ],
)
def test_paired_gate_passes_noise_and_fails_a_real_drop_on_40_cases(
    flipping: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    wrong: str,
    gate: str,
    regressed: bool,
) -> None:
    flipping.makepyfile(test_suite=FORTY)
    monkeypatch.setenv("WRONG", "40")
    flipping.runpytest_inprocess("--tnsai-report", "base.json").assert_outcomes(passed=1)
    monkeypatch.setenv("WRONG", wrong)
    result = flipping.runpytest_inprocess(
        "--tnsai-baseline", "base.json", "--tnsai-gate", gate, "--tnsai-alpha", "0.05"
    )
    broken = len(wrong.split(","))
    result.stdout.fnmatch_lines([f"flipped cases: {broken + 1} ({broken} broken, 1 fixed)*"])
    if regressed:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines([f"1 regression(s) beyond tolerance 0.05 (gate: {gate}*"])
    else:
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(["no regressions beyond tolerance 0.05 (gate: paired, *"])


def test_every_run_prints_the_mean_with_a_95_percent_interval(
    flipping: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    flipping.makepyfile(test_suite=FORTY)
    monkeypatch.setenv("WRONG", "1,2,3,4,5,6,7,8,9,10")
    result = flipping.runpytest_inprocess()
    # 30 of 40 cases right: mean 0.75, t interval over the cases.
    result.stdout.fnmatch_lines(
        ["*test*score [[]95% CI[]]*cases passed*", "*test_suite*0.750 [[]0.614, 0.886[]]*30/40*"]
    )


def test_the_final_summary_line_shows_a_gate_failure(
    flipping: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    flipping.makepyfile(test_suite=FORTY)
    flipping.runpytest_inprocess("--tnsai-report", "base.json").assert_outcomes(passed=1)
    monkeypatch.setenv("WRONG", "1,2,3,4,5,6,7,8")
    result = flipping.runpytest_inprocess("--tnsai-baseline", "base.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    last = result.stdout.lines[-1]
    assert "1 passed, 1 regressed (tnsai gate) in " in last
    assert last.startswith("=")


def test_a_version_1_baseline_still_compares(
    flipping: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    flipping.makepyfile(test_suite=FORTY)
    baseline = write_report(flipping.path / "v1.json", {"test_suite.py::test_suite": 1.0})
    data = json.loads(baseline.read_text())
    data["tests"][0].update(samples=1, passed_samples=1, pass_rate=1.0)
    baseline.write_text(json.dumps(data))
    monkeypatch.setenv("WRONG", "1,2,3,4")
    result = flipping.runpytest_inprocess("--tnsai-baseline", "v1.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_suite.py::test_suite*score*1.000*0.900*-0.100*"])
    # A version 1 baseline has no cases: nothing to flip, nothing to list.
    assert "flipped cases" not in result.stdout.str()


UNRECORDED = """
import os

def test_capitals(evaluate_prompt):
    count = int(os.environ.get("CASES", "2"))
    cases = [(f"What is the capital of France? ({i})", "Paris") for i in range(count)]
    evaluate_prompt("Answer in one word.", cases, concurrency=1)
"""


def test_unrecorded_cases_are_listed_once_with_the_record_command_never_scored_zero(
    pytester: pytest.Pytester, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_capitals=UNRECORDED)
    model = ["--llm-base-url", server.base_url, "--llm-model", "fake", "--llm-store", "store"]
    recorded = pytester.runpytest_inprocess(*model, "--llm-record", "record", "--tnsai-report",
                                            "base.json")  # fmt: skip
    recorded.assert_outcomes(passed=1)
    assert len(server.requests) == 2

    # CI replays; two new cases were never recorded.
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("CASES", "4")
    result = pytester.runpytest_inprocess(
        *model, "--tnsai-report", "r.json", "--tnsai-baseline", "base.json"
    )
    result.assert_outcomes(failed=1)
    assert len(server.requests) == 2  # replay called nothing
    out = result.stdout.str()
    # One failure message for both cases, naming the command that records them.
    assert out.count("2 of 4 case(s) unrecorded") == 2  # the failure, and pytest's short summary
    result.stdout.fnmatch_lines(
        [
            "*2 of 4 case(s) unrecorded (no reply in the store store; replay mode (CI=true)); "
            "they are not scored. Record them with:",
            "*pytest --llm-record record test_capitals.py::test_capitals",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*test_capitals.py::test_capitals*1.000*2/2 (2 unrecorded)*",
            "2 case(s) in 1 test(s) have no recorded reply and were not scored; record them with:",
            "*pytest --llm-record record test_capitals.py::test_capitals",
            "*unrecorded (no reply in the store, or refused by the call budget; left out of "
            "the comparison): 2",
        ]
    )
    # The gate never calls this a pass, and pytest's last line says why it failed.
    result.stdout.fnmatch_lines(
        [
            "missing evidence in 1 test metric(s), not a pass (gate: tolerance): "
            "test_capitals.py::test_capitals (score): 2 of 4 case(s) not run*",
            "*1 failed, 1 missing evidence (tnsai gate)*",
        ]
    )
    test = read_json(pytester.path / "r.json")["tests"][0]
    states = [c["state"] for c in test["cases"]]
    assert states == ["scored", "scored", "unrecorded", "unrecorded"]
    assert [c["score"] for c in test["cases"][2:]] == [None, None]
    # Never a 0: the mean is over the two recorded cases.
    assert test["metrics"]["score"]["samples"] == [1.0]
    assert test["case_pass_rate"] == 1.0


def test_case_threshold_defaults_to_the_datasets_declared_threshold(
    scripted: pytest.Pytester,
) -> None:
    data = scripted.path / "caps.jsonl"
    data.write_text(
        '{"input": "What is the capital of France?", "expected": "Paris", "id": "fr"}\n'
        '{"input": "What is the capital of Spain?", "expected": "Madrid"}\n'
    )
    (scripted.path / "caps.meta.json").write_text('{"threshold": 0.1}')
    scripted.makepyfile(
        test_caps="""
        from pathlib import Path

        def test_declared(evaluate_prompt):
            evaluate_prompt("Answer in one word.", Path("caps.jsonl"))

        def test_given(evaluate_prompt):
            evaluate_prompt("Answer in one word.", Path("caps.jsonl"), case_threshold=0.9,
                            name="strict")
        """
    )
    scripted.runpytest_inprocess("--tnsai-report", "r.json").assert_outcomes(passed=2)
    tests = {t["nodeid"]: t for t in read_json(scripted.path / "r.json")["tests"]}
    declared = tests["test_caps.py::test_declared"]["cases"]
    # Spain is answered "Lisbon": a low score, still >= the declared 0.1.
    assert declared[0]["id"] == "fr"
    assert [c["passed"] for c in declared] == [True, True]
    strict = tests["test_caps.py::test_given"]["cases"]
    assert [c["passed"] for c in strict] == [True, False]
    assert {c["metric"] for c in strict} == {"strict"}


def test_refine_iterations_are_stored(scripted: pytest.Pytester) -> None:
    scripted.makepyfile(
        test_refined="""
        from tnsai_eval.pytest import refine_until

        @refine_until(task="Return the record as JSON", valid_json=True, must_contain='"id"')
        def test_succeeds(refine):
            refine("id: 7")
        """
    )
    scripted.runpytest_inprocess("--tnsai-report", "r.json").assert_outcomes(passed=1)
    (test,) = read_json(scripted.path / "r.json")["tests"]
    iterations = test["refinements"]
    assert [i["iteration"] for i in iterations] == [1, 2]
    assert iterations[0]["output"] == "id: 7"
    checks = ["must_contain('\"id\"')", "valid_json"]  # in declaration order
    assert iterations[0]["failed_checks"] == checks
    second = iterations[1]
    assert {k: second[k] for k in ("metric", "iteration", "score", "output", "improved")} == {
        "metric": "refine_score",
        "iteration": 2,
        "score": 1.0,
        "output": '{"id": 7}',
        "improved": True,
    }
    assert (second["passed_checks"], second["failed_checks"], second["reasons"]) == (checks, [], {})
    # The report keeps the loop's own record: every check's whole outcome.
    assert [(c["name"], c["passed"], c["kind"], c["source"]) for c in second["checks"]] == [
        (checks[0], True, "deterministic", "must_contain"),
        (checks[1], True, "deterministic", "valid_json"),
    ]
    # Read back, it is the record the refinement loop made (its metric added).
    from tnsai_eval.reports import read_report

    (decoded,) = read_report(scripted.path / "r.json").tests
    assert [(c.name, c.passed) for c in decoded.refinements[0].checks] == [
        (checks[0], False),
        (checks[1], False),
    ]
    assert decoded.refinements[1].passed
    assert decoded.refinements[1].metric == "refine_score"


def test_the_judges_reason_is_kept_in_the_refinement_and_case_records(
    scripted: pytest.Pytester,
) -> None:
    scripted.makepyfile(
        test_judged="""
        from tnsai_eval.optimizer import LLMJudgeEvaluator
        from tnsai_eval.pytest import refine_until

        @refine_until(task="Return JSON", valid_json=True,
                      llm_check=("Is it a JSON record?", 0.8))
        def test_refined(refine):
            refine("id: 7")

        def test_graded(evaluate_prompt, llm):
            evaluate_prompt("Answer.", [("capital of Spain?", "Madrid")],
                            evaluator=LLMJudgeEvaluator(llm, method="score_line"),
                            case_threshold=0.5)
        """
    )
    scripted.runpytest_inprocess("--tnsai-report", "r.json").assert_outcomes(passed=2)
    tests = {t["nodeid"]: t for t in read_json(scripted.path / "r.json")["tests"]}
    refined = tests["test_judged.py::test_refined"]["refinements"]
    # The draft fails valid_json, so the judge is skipped (no reason); the
    # revision is judged, and its reason is kept beside the check's name.
    assert refined[0]["reasons"] == {}
    assert refined[1]["reasons"] == {"llm_check('Is it a JSON record?')": "It is a JSON record."}
    (case,) = tests["test_judged.py::test_graded"]["cases"]
    assert (case["output"], case["score"], case["reason"]) == (
        "Lisbon",
        0.9,
        "It is a JSON record.",
    )
    # Read back, the report keeps both.
    from tnsai_eval.reports import read_report

    decoded = {t.nodeid: t for t in read_report(scripted.path / "r.json").tests}
    assert decoded["test_judged.py::test_graded"].cases[0].reason == "It is a JSON record."
    iteration = decoded["test_judged.py::test_refined"].refinements[1]
    assert {c.name: c.reason for c in iteration.checks if c.reason} == {
        "llm_check('Is it a JSON record?')": "It is a JSON record."
    }


def test_tnsai_record_declares_a_relative_tolerance(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_latency="""
        import os

        def test_latency(tnsai_record):
            value = float(os.environ.get("LATENCY", "2.0"))
            tnsai_record("latency_s", value, higher_is_better=False, tolerance=0.2, relative=True)
        """
    )
    pytester.runpytest_inprocess("--tnsai-report", "base.json").assert_outcomes(passed=1)
    metric = read_json(pytester.path / "base.json")["tests"][0]["metrics"]["latency_s"]
    assert (metric["tolerance"], metric["relative"]) == (0.2, True)
    monkeypatch.setenv("LATENCY", "2.3")  # +15%: within 20% of 2.0
    assert pytester.runpytest_inprocess("--tnsai-baseline", "base.json").ret == 0
    monkeypatch.setenv("LATENCY", "2.5")  # +25%
    assert pytester.runpytest_inprocess("--tnsai-baseline", "base.json").ret == 1
