"""Malformed reports and baselines: every one is a ReportError naming the file and the field.

The hostile-input audit found 13 of 31 malformed files escaping as raw
TypeError/AttributeError/ValueError/OverflowError/RecursionError/
UnicodeDecodeError/IsADirectoryError, ``"gate": "false"`` read as true and
``schema_version: true`` accepted. Each case below is one such file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tnsai_eval.cli import main
from tnsai_eval.errors import ReportError
from tnsai_eval.reports import CaseState, read_report


def _test(**fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "nodeid": "t.py::test_a",
        "status": "passed",
        "metrics": {"score": {"samples": [0.5]}},
    }
    entry.update(fields)
    return entry


def _report(*tests: object, **fields: Any) -> dict[str, Any]:
    # Tests may be any JSON value: the table below feeds the decoder wrong shapes.
    data: dict[str, Any] = {"schema_version": 2, "tests": list(tests) or [_test()]}
    data.update(fields)
    return data


def _metric(**fields: Any) -> dict[str, Any]:
    return _test(metrics={"score": {"samples": [0.5], **fields}})


def _case(**fields: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": "c1",
        "input": "2+2",
        "expected": "4",
        "output": "4",
        "score": 1.0,
        "passed": True,
        "state": "scored",
    }
    case.update(fields)
    return _test(cases=[case])


# (name, file content as bytes or JSON data, the JSON path named, words of the reason)
MALFORMED: list[tuple[str, Any, str, str]] = [
    ("not utf-8", b'{"schema_version": 2, "tests": []}\xff\xfe', "", "is not UTF-8"),
    ("empty", b"", "", "is empty"),
    ("blank", b"  \n", "", "is empty"),
    ("truncated", b'{"schema_version": 2, "tests": [', "", "is not valid JSON"),
    ("deeply nested", b"[" * 100_000 + b"]" * 100_000, "", "nested too deeply"),
    ("NaN sample", b'{"schema_version": 2, "tests": [{"nodeid": "a", "status": "passed", '
     b'"metrics": {"s": {"samples": [NaN]}}}]}', "", "NaN is not a finite number"),
    ("huge integer literal", b'{"schema_version": ' + b"9" * 5000 + b"}", "", "not valid JSON"),
    ("top-level array", [], "$", "expected an object, got an array"),
    ("top-level null", None, "$", "expected an object, got null"),
    ("no schema_version", {"tests": []}, "$.schema_version", "got None"),
    ("schema_version true", _report(schema_version=True), "$.schema_version", "got True"),
    ("schema_version string", _report(schema_version="2"), "$.schema_version", "got '2'"),
    ("schema_version 99", _report(schema_version=99), "$.schema_version", "from 1 to 3"),
    ("schema_version float", _report(schema_version=1.0), "$.schema_version", "got 1.0"),
    ("tests an object", _report(tests={}), "$.tests", "expected an array"),
    ("test a string", _report("t.py::test_a"), "$.tests[0]", "expected an object"),
    ("nodeid a number", _report(_test(nodeid=3)), "$.tests[0].nodeid",
     "expected a string"),
    ("status unknown", _report(_test(status="meh")), "$.tests[0].status", "got 'meh'"),
    ("metrics a list", _report(_test(metrics=[])), "$.tests[0].metrics", "expected an object"),
    ("samples missing", _report(_test(metrics={"score": {}})),
     "$.tests[0].metrics.score.samples", "is missing"),
    ("samples empty", _report(_test(metrics={"score": {"samples": []}})),
     "$.tests[0].metrics.score.samples", "at least one sample"),
    ("sample a string", _report(_test(metrics={"score": {"samples": ["0.5"]}})),
     "$.tests[0].metrics.score.samples[0]", "expected a number"),
    ("sample 1e999", b'{"schema_version": 2, "tests": [{"nodeid": "a", "status": "passed", '
     b'"metrics": {"s": {"samples": [1e999]}}}]}', "$.tests[0].metrics.s.samples[0]",
     "finite number"),
    ("sample too large for a float", b'{"schema_version": 2, "tests": [{"nodeid": "a", '
     b'"status": "passed", "metrics": {"s": {"samples": [' + b"9" * 400 + b"]}}}]}",
     "$.tests[0].metrics.s.samples[0]", "too large"),
    ('gate "false"', _report(_metric(gate="false")), "$.tests[0].metrics.score.gate",
     "expected true or false"),
    ("higher_is_better 0", _report(_metric(higher_is_better=0)),
     "$.tests[0].metrics.score.higher_is_better", "expected true or false"),
    ("negative tolerance", _report(_metric(tolerance=-1)), "$.tests[0].metrics.score.tolerance",
     ">= 0"),
    ("calls a string", _report(_test(calls="3")), "$.tests[0].calls", "expected an integer"),
    ("samples zero", _report(_test(samples=0)), "$.tests[0].samples", ">= 1"),
    ("passed_samples > samples", _report(_test(samples=1, passed_samples=2)),
     "$.tests[0].passed_samples", "more than samples"),
    ("config a list", _report(config=[]), "$.config", "expected an object"),
    ("duplicate test", _report(_test(), _test()), "$.tests[1].nodeid", "appears twice"),
    ("cases an object", _report(_test(cases={})), "$.tests[0].cases", "expected an array"),
    ("case state unknown", _report(_case(state="lost")), "$.tests[0].cases[0].state",
     "got 'lost'"),
    ("case score above 1", _report(_case(score=1.5)), "$.tests[0].cases[0].score", "<= 1"),
    ("case passed a string", _report(_case(passed="yes")), "$.tests[0].cases[0].passed",
     "expected true or false"),
    ("scored case without score", _report(_case(score=None)), "$.tests[0].cases[0]",
     "needs a score"),
    ("case id blank", _report(_case(id=" ")), "$.tests[0].cases[0].id", "non-blank"),
    ("trajectory a list", _report(_case(trajectory=[])), "$.tests[0].cases[0].trajectory",
     "expected an object"),
    ("stop_reason unknown", _report(_case(trajectory={"stop_reason": "bored"})),
     "$.tests[0].cases[0].trajectory.stop_reason", "got 'bored'"),
    ("step kind missing", _report(_case(trajectory={"steps": [{"name": "a"}]})),
     "$.tests[0].cases[0].trajectory.steps[0].kind", "is missing"),
    ("step kind unknown", _report(_case(trajectory={"steps": [{"kind": "nap"}]})),
     "$.tests[0].cases[0].trajectory.steps[0].kind", "got 'nap'"),
    ("tool call without a name", _report(_case(trajectory={"steps": [{"kind": "tool_call"}]})),
     "$.tests[0].cases[0].trajectory.steps[0].name", "non-blank"),
    ("tool arguments an object", _report(_case(trajectory={"steps": [
        {"kind": "tool_call", "name": "a", "arguments": {"x": 1}}]})),
     "$.tests[0].cases[0].trajectory.steps[0].arguments", "expected a string"),
    ("step tokens negative", _report(_case(trajectory={"steps": [
        {"kind": "model_turn", "tokens": -1}]})),
     "$.tests[0].cases[0].trajectory.steps[0].tokens", ">= 0"),
    ("metric_scores a list", _report(_case(metric_scores=[])),
     "$.tests[0].cases[0].metric_scores", "expected an object"),
    ("metric score above 1", _report(_case(metric_scores={"norms": {"score": 2}})),
     "$.tests[0].cases[0].metric_scores.norms.score", "<= 1"),
    ("metric passed a string", _report(_case(metric_scores={"norms": {"passed": "no"}})),
     "$.tests[0].cases[0].metric_scores.norms.passed", "expected true or false"),
    ("violations a string", _report(_case(metric_scores={"norms": {"violations": "x"}})),
     "$.tests[0].cases[0].metric_scores.norms.violations", "expected an array"),
]  # fmt: skip


def _write(path: Path, content: Any) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return path


def test_there_are_at_least_31_malformed_files() -> None:
    assert len(MALFORMED) >= 31


@pytest.mark.parametrize(("content", "field", "reason"), [m[1:] for m in MALFORMED],
                         ids=[m[0] for m in MALFORMED])  # fmt: skip
def test_a_malformed_report_is_a_report_error_naming_file_and_field(
    tmp_path: Path, content: Any, field: str, reason: str
) -> None:
    path = _write(tmp_path / "bad.json", content)
    with pytest.raises(ReportError) as caught:
        read_report(path)
    message = str(caught.value)
    assert f"report file {str(path)!r}" in message
    assert reason in message
    assert caught.value.file == str(path)
    assert caught.value.field == field
    if field:
        assert f"{field}: " in message


def test_a_directory_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="is a directory"):
        read_report(tmp_path)
    with pytest.raises(ReportError, match="does not exist"):
        read_report(tmp_path / "missing.json")


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_report()).encode("utf-8"))
    assert read_report(path).tests[0].nodeid == "t.py::test_a"


def test_unknown_keys_are_ignored_and_v1_is_read(tmp_path: Path) -> None:
    v1 = {
        "schema_version": 1,
        "tests": [_test(pass_rate=1.0, future_field={"x": 1})],
        "totals": {"tests": 1},
    }
    report = read_report(_write(tmp_path / "v1.json", v1))
    assert report.schema_version == 1
    assert report.tests[0].cases == ()


def test_a_v2_report_round_trips_with_cases(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.json", _report(_case(state="unrecorded", score=None, passed=None)))
    report = read_report(path)
    assert report.tests[0].cases[0].state is CaseState.UNRECORDED
    again = read_report(report.save(tmp_path / "again.json"))
    assert again.tests == report.tests


def test_a_v2_report_is_read_with_no_trajectories_and_a_v3_one_round_trips_them(
    tmp_path: Path,
) -> None:
    v2 = read_report(_write(tmp_path / "v2.json", _report(_case())))
    assert v2.schema_version == 2
    (case,) = v2.tests[0].cases
    assert (case.trajectory, case.metric_scores) == (None, ())
    trajectory = {
        "stop_reason": "max_steps",
        "calls": 4,
        "tokens": 90,
        "dropped": 2,
        "steps": [
            {"kind": "model_turn", "text": "", "tokens": 30, "latency_s": 0.5},
            {"kind": "tool_call", "name": "lookup_order", "arguments": '{"order_id": "A1"}',
             "result": '{"paid": 5}', "error": None, "latency_s": 0.01},
            {"kind": "tool_call", "name": "issue_refund", "arguments": "{}", "result": None,
             "error": "KeyError: 'A1'", "latency_s": 0.0},
        ],
    }  # fmt: skip
    verdicts = {
        "tool_calls_in_order": {"score": 0.5, "passed": False, "reason": "missed one",
                                "violations": []},
        "norms": {"score": 0.0, "passed": False, "reason": "call 2: prohibited",
                  "violations": ["call 2: prohibited"]},
    }  # fmt: skip
    data = _report(_case(trajectory=trajectory, metric_scores=verdicts), schema_version=3)
    report = read_report(_write(tmp_path / "v3.json", data))
    (case,) = report.tests[0].cases
    assert case.trajectory is not None
    assert case.trajectory.tools == ("lookup_order", "issue_refund")
    assert (case.trajectory.stop_reason.value, case.trajectory.dropped) == ("max_steps", 2)
    assert [e.error for e in case.trajectory.errors] == ["KeyError: 'A1'"]
    assert [m.name for m in case.metric_scores] == ["tool_calls_in_order", "norms"]
    assert case.violations == ("call 2: prohibited",)
    written = json.loads(report.to_json())
    assert written["tests"][0]["cases"][0]["trajectory"] == trajectory
    assert written["tests"][0]["cases"][0]["metric_scores"] == verdicts
    assert read_report(report.save(tmp_path / "again.json")).tests == report.tests


@pytest.mark.parametrize("name", ["not utf-8", "deeply nested", 'gate "false"', "top-level null"])
def test_cli_report_exits_2_naming_the_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    content, field = next((m[1], m[2]) for m in MALFORMED if m[0] == name)
    path = _write(tmp_path / "bad.json", content)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert field in err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["not utf-8", "deeply nested", 'gate "false"', "sample 1e999"])
def test_a_malformed_baseline_is_a_usage_error_not_an_internal_error(
    pytester: pytest.Pytester, name: str
) -> None:
    content, field = next((m[1], m[2]) for m in MALFORMED if m[0] == name)
    _write(pytester.path / "baseline.json", content)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_inprocess("--tnsai-baseline", "baseline.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--tnsai-baseline: report file" in err
    assert field in err
    assert "INTERNALERROR" not in err + result.stdout.str()
