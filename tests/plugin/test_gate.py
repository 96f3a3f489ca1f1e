"""The JSON report, the baseline gate, --tnsai-repeat and pytest-xdist."""

from __future__ import annotations

import pytest

from tests.llm.fake_server import FakeOpenAIServer
from tests.plugin.conftest import read_json, write_report

SCORED = """
import os

def test_steady(tnsai_record):
    tnsai_record("score", 0.9)

def test_dropping(tnsai_record):
    tnsai_record("score", float(os.environ.get("DROPPING_SCORE", "0.8")))

def test_latency(tnsai_record):
    tnsai_record("latency_s", 1.5, higher_is_better=False)
    tnsai_record("tokens", 120, gate=False)
"""


def test_report_schema(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scored=SCORED)
    result = pytester.runpytest_inprocess("--tnsai-report", "out/report.json")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*report written to *out/report.json"])
    report = read_json(pytester.path / "out" / "report.json")
    assert report["schema_version"] == 3
    assert {"model", "record_mode", "repeat", "tolerance"} <= set(report["config"])
    assert report["totals"]["tests"] == 3
    latency = next(t for t in report["tests"] if t["nodeid"].endswith("test_latency"))
    assert latency["metrics"]["latency_s"]["higher_is_better"] is False
    assert latency["metrics"]["tokens"]["gate"] is False
    assert latency["metrics"]["tokens"]["samples"] == [120.0]


def test_baseline_gate_passes_and_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_scored=SCORED)
    write_report(
        pytester.path / "baseline.json",
        {
            "test_scored.py::test_steady": 0.9,
            "test_scored.py::test_dropping": 0.8,
            "test_scored.py::test_removed": 0.5,
        },
    )
    # test_removed, gated in the baseline, did not run: missing evidence, never a pass.
    missing = pytester.runpytest_inprocess("--tnsai-baseline", "baseline.json")
    assert missing.ret == pytest.ExitCode.TESTS_FAILED
    missing.stdout.fnmatch_lines(
        [
            "missing evidence in 1 test metric(s), not a pass (gate: tolerance): "
            "test_scored.py::test_removed (score): did not run*",
            "new (not in baseline): 1",
            "*test_scored.py::test_latency",
            "vanished: 1",
            "*test_scored.py::test_removed",
            "tnsai-eval FAIL: missing evidence: 1 gated score(s) did not run",
            "*3 passed, 1 missing evidence (tnsai gate)*",
        ]
    )
    write_report(
        pytester.path / "baseline.json",
        {"test_scored.py::test_steady": 0.9, "test_scored.py::test_dropping": 0.8},
    )
    passing = pytester.runpytest_inprocess("--tnsai-baseline", "baseline.json")
    assert passing.ret == pytest.ExitCode.OK
    passing.stdout.fnmatch_lines(
        [
            "*no regressions beyond tolerance 0.05 (gate: tolerance)",
            "tnsai-eval PASS: no regressions",
        ]
    )

    monkeypatch.setenv("DROPPING_SCORE", "0.6")
    failing = pytester.runpytest_inprocess("--tnsai-baseline", "baseline.json")
    failing.assert_outcomes(passed=3)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    failing.stdout.fnmatch_lines(
        [
            "1 regression(s) beyond tolerance 0.05 (gate: tolerance):",
            "*test*metric*baseline*current*delta*sign test p",
            "*test_scored.py::test_dropping*score*0.800*0.600*-0.200*",
            "tnsai-eval FAIL: 1 regression(s)",
        ]
    )
    # The ini twins: a wider tolerance lets the same drop through.
    pytester.makeini(
        "[pytest]\n"
        "tnsai_tolerance = 0.25\n"
        "tnsai_baseline = baseline.json\n"
        "tnsai_report = from-ini.json\n"
    )
    from_ini = pytester.runpytest_inprocess()
    assert from_ini.ret == pytest.ExitCode.OK
    from_ini.stdout.fnmatch_lines(["*no regressions beyond tolerance 0.25*"])
    assert read_json(pytester.path / "from-ini.json")["config"]["tolerance"] == 0.25


REPEATED = """
import itertools

SCORES = itertools.cycle([0.6, 0.8, 1.0])
RUNS = itertools.count()

def test_sampled(tnsai_record):
    tnsai_record("score", next(SCORES))

def test_flaky(tnsai_record):
    tnsai_record("score", 1.0)
    assert next(RUNS) != 1

def test_untracked():
    pass
"""


def test_repeat_reports_mean_interval_and_pass_rate(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_repeated=REPEATED)
    result = pytester.runpytest_inprocess("--tnsai-repeat", "3", "--tnsai-report", "r.json")
    # One result per test, whatever the number of samples.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*1 of 3 samples failed (samples [[]2[]])*",
            "*test_repeated.py::test_flaky*1.000*failed (2/3)*",
            "*test_repeated.py::test_sampled*0.800 [[]0.303, 1.297[]]*passed (3/3)*",
        ]
    )
    tests = {t["nodeid"].split("::")[1]: t for t in read_json(pytester.path / "r.json")["tests"]}
    assert set(tests) == {"test_sampled", "test_flaky"}
    assert tests["test_sampled"]["metrics"]["score"]["samples"] == [0.6, 0.8, 1.0]
    assert tests["test_flaky"]["sample_pass_rate"] == pytest.approx(2 / 3)
    assert tests["test_flaky"]["case_pass_rate"] is None  # no case records


def test_repeat_gates_on_the_interval_not_one_sample(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_repeated=REPEATED.replace("assert next(RUNS) != 1", "pass"))
    write_report(pytester.path / "baseline.json", {"test_repeated.py::test_sampled": 0.95})
    # One sample (0.6) is 0.35 below the baseline: a regression.
    single = pytester.runpytest_inprocess("--tnsai-baseline", "baseline.json")
    assert single.ret == pytest.ExitCode.TESTS_FAILED
    single.stdout.fnmatch_lines(["*test_repeated.py::test_sampled*0.950*0.600*-0.350*"])
    # Three samples (mean 0.8, 95% interval up to 1.297) do not show a drop
    # beyond the tolerance: the gate passes although the mean is lower.
    sampled = pytester.runpytest_inprocess(
        "--tnsai-repeat", "3", "--tnsai-baseline", "baseline.json"
    )
    assert sampled.ret == pytest.ExitCode.OK
    sampled.stdout.fnmatch_lines(["*no regressions beyond tolerance 0.05*"])


XDIST_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_case(n, tnsai_record, evaluate_prompt):
    evaluate_prompt("Answer in one word.", [(f"What is the capital of France? {n}", "Paris")])
    tnsai_record("score", n / 10)
"""


def test_xdist_workers_record_and_report_to_the_controller(
    pytester: pytest.Pytester, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model named only in the environment: the workers' `llm` fixtures see
    # it, and the controller's report must say what answered on them.
    monkeypatch.setenv("TNSAI_LLM_MODEL", "fake")
    pytester.makepyfile(test_dist=XDIST_TESTS)
    write_report(pytester.path / "baseline.json", {"test_dist.py::test_case[5]": 0.9})
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        f"--llm-base-url={server.base_url}",
        "--llm-model=fake",
        "--llm-record=record",
        "--llm-store=store",
        "--tnsai-report=r.json",
        "--tnsai-baseline=baseline.json",
    )
    result.assert_outcomes(passed=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # test_case[5] dropped 0.9 -> 0.5
    result.stdout.fnmatch_lines(["*test_dist.py::test_case[[]5[]]*0.900*0.500*-0.400*"])
    # Both workers recorded into one store at the same time, and the controller
    # saw every worker's tests.
    assert len(server.requests) == 6
    assert len(list((pytester.path / "store").rglob("*.json"))) == 6
    report = read_json(pytester.path / "r.json")
    assert len(report["tests"]) == 6
    assert report["totals"]["calls"] == 6
    assert report["config"]["model"] == "fake"
    scores = sorted(t["metrics"]["score"]["mean"] for t in report["tests"])
    assert scores == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
