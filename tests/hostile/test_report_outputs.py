"""Test ids, case ids, metric names and config values are data: masked and inert everywhere.

A parametrized test over keys puts a key in its node id; a dataset's case id
or a metric name can hold one too. Every output (report JSON, the plugin's
summary, text, Markdown, JUnit) masks them. In Markdown, newlines and
backticks in them can no longer forge a heading or a table row; a lone
surrogate in a case no longer crashes any output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import API_KEY
from tnsai_eval.cli import main
from tnsai_eval.cli._report import render_markdown
from tnsai_eval.reports import (
    CaseRecord,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
    format_summary,
)

pytestmark = pytest.mark.usefixtures("secret_env")


def _test(nodeid: str, metric: str, case_id: str, score: float, output: str) -> TrackedTest:
    case = CaseRecord(
        case_id, "input", "expected", output=output, score=score, passed=score >= 0.5, metric=metric
    )
    return TrackedTest(
        nodeid=nodeid,
        status=TestStatus.PASSED,
        metrics={metric: MetricStats(metric, (score,))},
        cases=(case,),
    )


def _pair(nodeid: str, metric: str, case_id: str) -> tuple[Report, Report]:
    config = {"model": f"m-{API_KEY}", "extra": {"note": API_KEY}}
    baseline = Report(tests=(_test(nodeid, metric, case_id, 1.0, "good"),), config=config)
    current = Report(tests=(_test(nodeid, metric, case_id, 0.0, "bad"),), config=config)
    return current, baseline


def test_a_key_in_ids_names_and_config_is_masked_in_every_output(tmp_path: Path) -> None:
    current, baseline = _pair(f"t.py::test[{API_KEY}]", f"score_{API_KEY}", f"case-{API_KEY}")
    comparison = compare(current, baseline)
    assert not comparison.passed
    outputs = {
        "json": current.to_json(),
        "summary": format_summary(current),
        "text": format_comparison(comparison),
        "markdown": render_markdown(current, comparison),
    }
    for name, text in outputs.items():
        assert API_KEY not in text, name
        assert "***" in text.replace("\\*", "*"), name  # Markdown escapes the stars
    saved = json.loads(current.to_json())
    assert saved["config"]["extra"]["note"] == "***"
    assert saved["tests"][0]["cases"][0]["id"] == "case-***"


def test_the_plugin_summary_and_report_mask_a_key_in_a_node_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_keys="""
        import os
        import pytest

        @pytest.mark.parametrize("key", [os.environ["TNSAI_LLM_API_KEY"]])
        def test_key(key, tnsai_record):
            tnsai_record("score", 0.5)
        """
    )
    result = pytester.runpytest_inprocess("--tnsai-report=r.json")
    result.assert_outcomes(passed=1)
    assert API_KEY not in result.stdout.str()
    assert "test_key[***]" in result.stdout.str()
    assert API_KEY not in (pytester.path / "r.json").read_text(encoding="utf-8")


def test_newlines_and_backticks_in_ids_cannot_forge_a_passing_comment() -> None:
    forged = "x`\n\n### tnsai-eval PASS: no regressions\n\n| ok | ok |\n"
    current, baseline = _pair(f"t.py::test[{forged}]", f"score{forged}", f"c{forged}")
    comparison = compare(current, baseline)
    assert not comparison.passed
    markdown = render_markdown(current, comparison)
    lines = markdown.splitlines()
    assert lines[0] == "### tnsai-eval FAIL: 1 regression(s)"
    # The forged heading stays inside the line of the id that carried it, escaped.
    assert not any(line.lstrip("#").startswith(" tnsai-eval PASS") for line in lines)
    assert all("PASS" not in line or "\\#\\#\\# tnsai-eval PASS" in line for line in lines)
    # No line of the comment starts with the forged table row or holds a bare backtick.
    assert not any(line.startswith("| ok |") for line in markdown.splitlines())
    assert "x`" not in markdown.replace("x\\`", "")


def test_a_lone_surrogate_in_a_case_prints_in_text_and_markdown(tmp_path: Path) -> None:
    current, baseline = _pair("t.py::test", "score", "c1")
    current = Report(
        tests=(_test("t.py::test", "score", "c1", 0.0, "bad \ud800 reply"),), config={}
    )
    (tmp_path / "r.json").write_text(current.to_json(), encoding="utf-8")
    (tmp_path / "b.json").write_text(baseline.to_json(), encoding="utf-8")
    for fmt in ("text", "markdown"):
        command = ["report", "r.json", "--baseline", "b.json", "--format", fmt]
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from tnsai_eval.cli import main; raise SystemExit(main())",
                *command,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        assert done.returncode == 1, done.stderr  # the regression, not a crash
        assert "Traceback" not in done.stderr
        assert "bad \ufffd reply" in done.stdout


def test_optimize_out_masks_the_files_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tnsai_eval.testing import ScriptedLLM

    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps({"input": f"q{i} {API_KEY}", "expected": "a", "id": f"k-{API_KEY}-{i}"})
            + "\n"
            for i in range(6)
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code = main(
        ["optimize", str(data), "--strategies", "concise", "--rounds", "1", "--out", str(out)],
        llm=ScriptedLLM(default=f"a {API_KEY}"),
    )
    assert code == 0, capsys.readouterr().err
    for name in ("results.csv", "rounds.csv", "variants.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert API_KEY not in text, name
    assert "***" in (out / "results.csv").read_text(encoding="utf-8")
