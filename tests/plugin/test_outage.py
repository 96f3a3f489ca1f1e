"""An outage is not a prompt regression (issue 33, item 6).

Cases whose call failed (HTTP 500 after every retry) used to count as broken
flips: ``FAIL: 1 regression(s)``, the same text on both sides and no reason.
They are left out of means and flips, like unrecorded ones, and the verdict
says what is missing: ``missing evidence: 2 errored (ServerError HTTP 500)``,
in the terminal, the Markdown, JUnit and the model comparison.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest

from tests.llm.fake_server import FakeOpenAIServer, Step
from tnsai_eval.cli import main
from tnsai_eval.reports import (
    CaseRecord,
    CaseState,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare_report_models,
    format_model_comparison,
)

SUITE = """
from tnsai_eval.scoring import ContainsEvaluator

CASES = [(f"ticket {i}", f"ticket {i}") for i in range(6)]


def test_echo(evaluate_prompt):
    evaluate_prompt("Repeat the ticket.", CASES, evaluator=ContainsEvaluator())
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:  # echoes each prompt: every case passes
        yield running


def test_failed_calls_are_missing_evidence_not_broken_cases(
    pytester: pytest.Pytester, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makepyfile(test_echo=SUITE)
    pytester.makeini(
        f"[pytest]\ntnsai_llm_base_url = {server.base_url}\ntnsai_llm_model = echo\n"
        "tnsai_llm_record = off\ntnsai_llm_concurrency = 1\n"
    )
    pytester.runpytest_inprocess("--tnsai-report", "base.json").assert_outcomes(passed=1)
    # The server fails the next two cases: three attempts each (two retries), HTTP 500.
    server.script(*[Step.error(500, "overloaded", retry_after="0")] * 6)
    run = pytester.runpytest_inprocess("--tnsai-baseline", "base.json", "--tnsai-report", "r.json")
    assert run.ret == pytest.ExitCode.TESTS_FAILED
    out = run.stdout.str()
    assert "tnsai-eval FAIL: missing evidence: 2 errored (ServerError HTTP 500)" in out
    assert "regression" not in out.replace("no regressions", "")
    assert "flipped cases: 0 (0 broken, 0 fixed)" in out
    assert "1 missing evidence (tnsai gate)" in out
    # The stand-alone gate, in Markdown and JUnit: the same words, and each error in its row.
    junit = pytester.path / "junit.xml"
    argv = ["report", "r.json", "--baseline", "base.json", "--format", "markdown"]
    capsys.readouterr()
    assert main([*[str(pytester.path / a) if a.endswith(".json") else a for a in argv],
                 "--junit", str(junit)]) == 1  # fmt: skip
    markdown = capsys.readouterr().out
    first = markdown.splitlines()[0]
    assert first.startswith(
        "### tnsai-eval FAIL: missing evidence: 2 errored (ServerError HTTP 500)"
    )
    assert "answered HTTP 500" in markdown  # the error, in the errored case's line
    (failed,) = [
        c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None
    ]
    assert failed.attrib["name"] == "tnsai gate: test_echo.py::test_echo (score)"
    assert "2 errored (ServerError HTTP 500)" in failed.find("failure").attrib["message"]  # type: ignore[union-attr]


def _model_run(model: str, errored: tuple[int, ...]) -> TrackedTest:
    cases = tuple(
        CaseRecord(
            f"c{i}", f"ticket {i}", "x", state=CaseState.ERROR, error_type="ServerError",
            error=f"ServerError: http://127.0.0.1/v1 answered HTTP 500: down ({model})",
        )
        if i in errored
        else CaseRecord(f"c{i}", f"ticket {i}", "x", output="x", score=1.0, passed=True)
        for i in range(6)
    )  # fmt: skip
    return TrackedTest(
        f"t.py::test_q[{model}]",
        TestStatus.PASSED,
        {"score": MetricStats("score", (1.0,))},
        cases=cases,
        model=model,
    )


def test_the_model_comparison_says_errored_not_regressed() -> None:
    report = Report((_model_run("old", ()), _model_run("new", (0,))), {"models": ["old", "new"]})
    result = compare_report_models(report, "old", "new")
    assert not result.passed
    assert [row.verdict for row in result.rows] == ["unchanged"]
    assert result.comparison.flipped == ()
    for markdown in (False, True):
        text = format_model_comparison(result, markdown=markdown)
        assert "1 errored (ServerError HTTP 500)" in text
