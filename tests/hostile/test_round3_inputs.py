"""Bad values that used to crash, hang or quietly disable a limit: each a clean, typed error.

Huge integers in plugin options, empty baseline paths, an unwritable report
path, NaN limits, dataset lines nested too deep or holding 5000-digit numbers,
a reply nested too deep for the JSON parser, report samples of +-1e300, and a
NaN in a CEL condition's state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tnsai_eval import datasets
from tnsai_eval.cli import main
from tnsai_eval.errors import ConditionError, ConfigError, DatasetError
from tnsai_eval.norms import ConditionEvaluator
from tnsai_eval.optimizer import OptimizerConfig
from tnsai_eval.refinement import CompletionCriteria, RefinementLoop, RefinementStatus
from tnsai_eval.testing import ScriptedLLM

HUGE = str(10**400)

# -- plugin options ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [[f"--llm-max-calls={HUGE}"], [f"--tnsai-repeat={HUGE}"], [f"--llm-max-calls=-{HUGE}"]]
)
def test_a_huge_integer_option_is_a_usage_error(pytester: pytest.Pytester, args: list[str]) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # was INTERNALERROR (OverflowError)
    assert f"got '{args[0].split('=')[1]}'" in result.stderr.str()


def test_a_huge_integer_in_the_ini_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\ntnsai_llm_max_calls = {HUGE}\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini tnsai_llm_max_calls" in result.stderr.str()


@pytest.mark.parametrize("option", ["--tnsai-baseline=", "--tnsai-report="])
def test_an_empty_path_option_is_a_usage_error(pytester: pytest.Pytester, option: str) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess(option)
    # An unset CI variable used to switch the gate off without a word.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "expected a path, got an empty value" in result.stderr.str()


def test_an_unwritable_report_path_fails_before_any_test_runs(pytester: pytest.Pytester) -> None:
    (pytester.path / "taken").write_text("a file, not a folder", encoding="utf-8")
    pytester.makepyfile(
        test_x="def test_x():\n    open('ran', 'w').close()\n",
    )
    result = pytester.runpytest_inprocess("--tnsai-report=taken/r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is not a directory" in result.stderr.str()
    assert not (pytester.path / "ran").exists()  # it used to run every test, then crash


def test_an_empty_baseline_path_is_an_error_for_the_report_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"schema_version": 2, "tests": []}), encoding="utf-8")
    assert main(["report", str(report), "--baseline", ""]) == 2
    assert "--baseline" in capsys.readouterr().err


# -- optimizer limits -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["max_calls", "max_tokens", "max_iterations"])
def test_a_nan_limit_is_refused(name: str) -> None:
    # NaN compares False with every bound: it used to switch the limit off.
    with pytest.raises(ConfigError, match=name):
        OptimizerConfig().replace(**{name: float("nan")})


# -- datasets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"input": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"input": "x", "expected": "y", "n": ' + "9" * 5000 + "}", "digits"),
    ],
)
def test_a_hostile_dataset_line_is_a_bad_line(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"input": "a", "expected": "b"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        datasets.load(path)
    (problem,) = caught.value.problems
    assert problem.startswith("line 2:")
    assert reason in problem


def test_none_is_not_a_dataset() -> None:
    with pytest.raises(DatasetError, match="got NoneType None"):
        datasets.load(None)  # type: ignore[arg-type]


def test_the_optimize_command_reports_a_deep_dataset_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    code = main(["optimize", str(path), "--out", str(tmp_path / "out")], llm=ScriptedLLM())
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert "nested too deeply" in err


# -- replies and reports ----------------------------------------------------------------


def test_a_reply_nested_too_deep_is_a_failed_check_and_the_loop_goes_on() -> None:
    criteria = CompletionCriteria.builder().valid_json().build()
    deep = "[" * 100_000 + "]" * 100_000
    llm = ScriptedLLM([deep, '{"ok": true}'])
    result = RefinementLoop("Emit JSON", criteria, max_iterations=3).execute(llm, "draft")
    # It used to end in ERROR after one iteration (RecursionError escaped the parser).
    assert result.status is RefinementStatus.SUCCESS
    assert "nested too deeply" in result.iterations[1].checks[0].message


@pytest.mark.parametrize("samples", [[1e300, -1e300], [1e308, 1e308]])
def test_samples_too_large_to_average_are_a_typed_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], samples: list[float]
) -> None:
    report = tmp_path / "r.json"
    test = {"nodeid": "t", "status": "passed", "metrics": {"score": {"samples": samples}}}
    report.write_text(json.dumps({"schema_version": 2, "tests": [test]}), encoding="utf-8")
    assert main(["report", str(report)]) == 2  # was an OverflowError traceback, exit 1
    assert "beyond +-1e+100" in capsys.readouterr().err


def test_a_nan_in_a_conditions_state_is_named_not_blamed_on_types() -> None:
    with pytest.raises(ConditionError) as caught:
        ConditionEvaluator().evaluate("score > 0.5", {"score": float("nan")})
    message = str(caught.value)
    assert "'score' hold NaN" in message
    assert "No such overload" not in message


def test_the_gate_compares_runs_with_thousands_of_flipped_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tnsai_eval.reports import CaseRecord, MetricStats, Report, TestStatus, TrackedTest

    def run(scores: list[float]) -> Path:
        cases = tuple(
            CaseRecord(f"c{i}", f"q{i}", "a", output="a", score=s, passed=s >= 0.5)
            for i, s in enumerate(scores)
        )
        mean = sum(scores) / len(scores)
        test = TrackedTest(
            "t.py::test_big",
            TestStatus.PASSED,
            metrics={"score": MetricStats("score", (mean,))},
            cases=cases,
        )
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.json"
        path.write_text(Report(tests=(test,)).to_json(), encoding="utf-8")
        return path

    # 1,100 cases broken and 900 fixed: 2,000 discordant pairs (the exact sum
    # overflowed a float from 1,024 and took quadratic time).
    baseline = run([1.0] * 1100 + [0.0] * 900)
    current = run([0.0] * 1100 + [1.0] * 900)
    code = main(["report", str(current), "--baseline", str(baseline), "--gate", "paired"])
    out = capsys.readouterr().out
    assert code == 1, out  # 0.55 -> 0.45 beyond the tolerance, and significant
    assert "1100 broken, 900 fixed" in out
