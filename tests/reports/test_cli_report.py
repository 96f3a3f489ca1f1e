"""`tnsai-eval report`: text and markdown, JUnit, HTML case tables, exit codes 0/1/2."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tnsai_eval.cli import main
from tnsai_eval.reports import (
    CaseRecord,
    CaseState,
    MetricStats,
    PromptRecord,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
)


def _run(tmp_path: Path, name: str, passes: list[bool], *, prompt_hash: str) -> Path:
    cases = [
        CaseRecord(
            f"c{i}",
            f"question {i}",
            f"answer {i}",
            output=f"answer {i}" if ok else "nope",
            score=1.0 if ok else 0.0,
            passed=ok,
        )
        for i, ok in enumerate(passes)
    ]
    cases.append(CaseRecord("gone", "never asked", "x", state=CaseState.UNRECORDED))
    mean = sum(passes) / len(passes)
    test = TrackedTest(
        "t.py::test_support",
        TestStatus.PASSED,
        {"score": MetricStats("score", (mean,))},
        cases=tuple(cases),
        prompts=(PromptRecord("score", "Answer.", prompt_hash, "prompts/support.txt"),),
    )
    return Report(tests=(test,), config={"model": "m"}).save(tmp_path / name)


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    base = _run(tmp_path, "base.json", [True] * 8 + [False] * 2, prompt_hash="a1b2c3d4")
    same = _run(tmp_path, "same.json", [False, False] + [True] * 8, prompt_hash="e5f6a7b8")
    worse = _run(tmp_path, "worse.json", [False] * 6 + [True] * 4, prompt_hash="e5f6a7b8")
    return base, same, worse


def test_exit_codes_and_flipped_cases_worst_first(
    runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, same, worse = runs
    # Each run has a case without a recorded reply: no pass unless that is accepted.
    assert main(["report", str(same), "--baseline", str(base)]) == 1
    assert "1 of 11 case(s) not run" in capsys.readouterr().out
    assert main(["report", str(same), "--baseline", str(base), "--allow-unrecorded"]) == 0
    out = capsys.readouterr().out
    assert "flipped cases: 4 (2 broken, 2 fixed)" in out
    assert "prompt `prompts/support.txt` changed (a1b2c3d4 -> e5f6a7b8)" in out
    assert out.index("broken  c0") < out.index("fixed   c8")
    assert (
        "unrecorded (no reply in the store, or refused by the call budget; left out of the "
        "comparison): 1"
    ) in out
    allow = "--allow-unrecorded"
    assert main(["report", str(worse), "--baseline", str(base), allow]) == 1
    # Paired gate: 6 broken, 2 fixed is p = 0.14 on its own: not a regression.
    assert main(["report", str(worse), "--baseline", str(base), "--gate", "paired", allow]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as bad:
        main(["report", str(worse), "--baseline", str(base), "--alpha", "2"])
    assert bad.value.code == 2
    assert "--alpha: expected a number between 0 and 1" in capsys.readouterr().err


def test_markdown_for_a_pull_request(
    runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, _, worse = runs
    code = main(["report", str(worse), "--baseline", str(base), "--format", "markdown"])
    assert code == 1
    out = capsys.readouterr().out
    assert out.startswith("### tnsai-eval FAIL: 1 regression(s)")
    assert "| test | score [95% CI] | status | cases passed |" in out
    assert "| broken | c0 | question 0 | answer 0 |" in out
    # Ids are escaped: "_" would start emphasis.
    assert (
        "#### t.py::test\\_support (score): fell -0.400, 6 broken, 2 fixed, not significant, "
        "p = 0.145 over 10 common case(s)"
    ) in out


def test_junit_has_the_gates_testcases_then_one_per_case(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    base, _, worse = runs
    junit = tmp_path / "out" / "junit.xml"
    assert main(["report", str(worse), "--baseline", str(base), "--junit", str(junit)]) == 1
    root = ET.parse(junit).getroot()
    # The gate's suite (the score, the run) then the 11 cases: one failure, the gate's.
    assert root.attrib == {
        "name": "tnsai-eval",
        "tests": "13",
        "failures": "1",
        "errors": "0",
        "skipped": "7",
    }
    gate, cases_suite = root.findall("./testsuite")
    score, run = gate.findall("testcase")
    assert score.attrib["name"] == "tnsai gate: t.py::test_support (score)"
    failure = score.find("failure")
    assert failure is not None
    reason = failure.attrib["message"]
    assert reason.startswith("regressed: 0.800 -> 0.400")
    assert "missing evidence: 1 of 11 case(s) not run" in reason
    assert run.find("failure") is None
    cases = cases_suite.findall("testcase")
    assert len(cases) == 11
    broken = cases[0].find("skipped")
    assert broken is not None
    assert broken.attrib["message"].startswith("broken: ")
    assert "(passed in the baseline)" in broken.attrib["message"]
    assert "expected: answer 0" in (broken.text or "")
    assert cases[-1].find("skipped") is not None


def test_html_case_table_with_filters_and_flipped_outputs_side_by_side(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    base, same, _ = runs
    page_path = tmp_path / "page.html"
    argv = ["report", str(same), "--baseline", str(base), "--html", str(page_path)]
    assert main([*argv, "--allow-unrecorded"]) == 0
    page = page_path.read_text(encoding="utf-8")
    for kind in ("all", "flipped", "failing", "unrecorded"):
        assert f'value="{kind}"' in page
    assert 'data-kinds="all flipped broken failing"' in page
    assert 'data-kinds="all unrecorded"' in page
    assert page.count('<div class="side">') == 4  # one per flipped case
    assert "<div>baseline<pre>answer 0</pre></div><div>this run<pre>nope</pre></div>" in page


def test_bad_output_paths_fail_before_any_work(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _, _ = runs
    assert main(["report", str(base), "--junit", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_secrets_are_masked_in_every_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("TNSAI_LLM_API_KEY", secret)
    case = CaseRecord("c0", f"key is {secret}", "x", output=f"echo {secret}", score=0.0,
                      passed=False)  # fmt: skip
    score = {"score": MetricStats("score", (0.0,))}
    test = TrackedTest("t.py::test_leak", TestStatus.FAILED, score, cases=(case,))
    ok = CaseRecord("c0", "key is hidden", "x", output="x", score=1.0, passed=True)
    old = TrackedTest("t.py::test_leak", TestStatus.PASSED, {"score": MetricStats("score", (1.0,))},
                      cases=(ok,))  # fmt: skip
    new_path = Report(tests=(test,)).save(tmp_path / "new.json")
    old_path = Report(tests=(old,)).save(tmp_path / "old.json")
    assert secret not in new_path.read_text(encoding="utf-8")
    outputs = tmp_path / "junit.xml", tmp_path / "page.html"
    for fmt in ("text", "markdown"):
        main(["report", str(new_path), "--baseline", str(old_path), "--format", fmt,
              "--junit", str(outputs[0]), "--html", str(outputs[1])])  # fmt: skip
        assert secret not in capsys.readouterr().out
        for path in outputs:
            assert secret not in path.read_text(encoding="utf-8")
    comparison = compare(new_path, old_path)
    assert secret not in format_comparison(comparison, markdown=True)


def test_reports_sharing_no_test_compare_with_html_and_miss_the_old_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Regression: with no test in common the comparison frame had no 'delta'
    # column, so --html crashed with KeyError. The baseline's gated score did
    # not run in the new report: missing evidence (exit 1), not a crash.
    from tests.frames.conftest import save_report

    base = save_report(tmp_path / "base.json", {"t.py::test_capitals": 0.9})
    new = save_report(tmp_path / "new.json", {"t.py::test_arithmetic": 0.4})
    page = tmp_path / "page.html"
    assert main(["report", str(new), "--baseline", str(base), "--html", str(page)]) == 1
    assert "FAIL: missing evidence: 1 gated score(s) did not run" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert "test_arithmetic" in text
    assert "test_capitals" in text
