"""tnsai_eval.reports (no pytest run involved) and `tnsai-eval report`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plugin.conftest import write_report
from tnsai_eval.cli import main
from tnsai_eval.errors import ConfigError
from tnsai_eval.reports import (
    COMPARISON_COLUMNS,
    SCHEMA_VERSION,
    ChangeKind,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
    load_report,
    read_report,
)


def _report(**scores: float | tuple[float, ...]) -> Report:
    tests = []
    for name, value in scores.items():
        samples = value if isinstance(value, tuple) else (value,)
        tests.append(
            TrackedTest(
                f"t.py::{name}", TestStatus.PASSED, {"score": MetricStats("score", samples)}
            )
        )
    return Report(tests=tuple(tests), config={"model": "m"})


def test_metric_interval_is_students_t_and_collapses_for_one_sample() -> None:
    one = MetricStats("score", (0.5,))
    assert (one.ci_low, one.ci_high) == (0.5, 0.5)
    three = MetricStats("score", (0.6, 0.8, 0.7))
    # mean 0.7, sd 0.1, t(2) = 4.303: half width 4.303 * 0.1 / sqrt(3)
    assert three.mean == pytest.approx(0.7)
    assert three.half_width == pytest.approx(4.303 * 0.1 / 3**0.5)
    assert three.ci_low < 0.7 < three.ci_high


def test_metric_rejects_non_numbers_by_name() -> None:
    with pytest.raises(ConfigError, match=r"metric 'score': sample 'high' is not a number"):
        MetricStats("score", ("high",))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"metric 'score': sample nan is not finite"):
        MetricStats("score", (0.5, float("nan")))


def test_report_round_trips_through_json(tmp_path: Path) -> None:
    report = _report(test_a=(0.5, 0.75), test_b=1.0)
    path = report.save(tmp_path / "sub" / "r.json")
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["tests"][0]["metrics"]["score"]["mean"] == 0.625
    again = read_report(path)
    assert again.tests == report.tests
    assert again.config == {"model": "m"}


def test_read_report_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        read_report(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 99, "tests": []}))
    with pytest.raises(
        ConfigError, match=r"\$\.schema_version: expected an integer from 1 to 3, got 99"
    ):
        read_report(bad)
    bad.write_text(json.dumps({"schema_version": 1, "tests": [{"nodeid": "x", "status": "meh"}]}))
    with pytest.raises(ConfigError, match=r"\$\.tests\[0\]\.status: expected one of .*got 'meh'"):
        read_report(bad)


def test_compare_classifies_every_change() -> None:
    baseline = _report(same=0.8, worse=0.9, better=0.5, gone=0.7, edge=0.9)
    current = _report(same=0.82, worse=0.7, better=0.9, fresh=0.4, edge=0.85)
    result = compare(current, baseline, tolerance=0.05)
    assert [c.nodeid for c in result.regressions] == ["t.py::worse"]
    assert result.regressions[0].delta == pytest.approx(-0.2)
    assert [c.nodeid for c in result.improved] == ["t.py::better"]
    # A drop of exactly the tolerance is allowed.
    assert {c.nodeid for c in result.unchanged} == {"t.py::same", "t.py::edge"}
    assert result.new == ("t.py::fresh",)
    assert result.vanished == ("t.py::gone",)
    assert not result.passed
    text = format_comparison(result)
    assert "1 regression(s) beyond tolerance 0.05" in text
    assert "t.py::worse" in text
    assert "-0.200" in text
    frame = result.to_dataframe()
    assert tuple(frame.columns) == COMPARISON_COLUMNS
    assert frame.iloc[0].to_dict() == {
        "nodeid": "t.py::worse",
        "metric": "score",
        "baseline": 0.9,
        "current": 0.7,
        "current_low": 0.7,
        "current_high": 0.7,
        "delta": pytest.approx(-0.2),
        "kind": "regressed",
    }
    assert list(frame["kind"]) == ["regressed", "improved", "unchanged", "unchanged"]


def test_compare_uses_the_interval_of_repeated_samples() -> None:
    baseline = _report(noisy=0.8)
    # Mean 0.7 is 0.1 below the baseline, but the interval reaches above 0.75.
    noisy = compare(_report(noisy=(0.5, 0.9, 0.7)), baseline, tolerance=0.05)
    assert noisy.passed
    assert noisy.unchanged[0].kind is ChangeKind.UNCHANGED
    steady = compare(_report(noisy=(0.69, 0.71, 0.7)), baseline, tolerance=0.05)
    assert not steady.passed


def test_compare_respects_lower_is_better_and_ungated_metrics() -> None:
    def one(latency: float, tokens: float) -> Report:
        metrics = {
            "latency": MetricStats("latency", (latency,), higher_is_better=False),
            "tokens": MetricStats("tokens", (tokens,), gate=False),
        }
        return Report(tests=(TrackedTest("t.py::x", TestStatus.PASSED, metrics),))

    result = compare(one(2.0, 900), one(1.0, 10), tolerance=0.5)
    assert [c.metric for c in result.regressions] == ["latency"]
    assert result.unchanged == ()
    assert result.improved == ()


@pytest.mark.parametrize("tolerance", [-1, float("nan"), float("inf"), True])
def test_compare_rejects_a_bad_tolerance(tolerance: float) -> None:
    with pytest.raises(
        ConfigError, match=f"tolerance must be a finite number >= 0, got {tolerance}"
    ):
        compare(_report(a=1.0), _report(a=0.0), tolerance=tolerance)


def test_load_report_gives_one_row_per_test(tmp_path: Path) -> None:
    path = _report(test_a=(0.5, 0.7), test_b=1.0).save(tmp_path / "r.json")
    frame = load_report(path)
    assert list(frame["nodeid"]) == ["t.py::test_a", "t.py::test_b"]
    assert frame["score"].tolist() == pytest.approx([0.6, 1.0])
    assert frame.attrs["schema_version"] == SCHEMA_VERSION
    assert frame.attrs["config"] == {"model": "m"}
    long = load_report(path, long=True)
    assert list(long.columns[:3]) == ["nodeid", "metric", "mean"]
    assert long["n"].tolist() == [2, 1]


def test_cli_report_prints_the_table_and_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_report(tmp_path / "old.json", {"t.py::a": 0.9, "t.py::b": 0.5})
    new = write_report(tmp_path / "new.json", {"t.py::a": 0.6, "t.py::c": 0.5}, model="smol")
    assert main(["report", str(new)]) == 0
    out = capsys.readouterr().out
    assert "model smol" in out
    assert "t.py::a" in out
    assert "0.600" in out
    assert main(["report", str(new), "--baseline", str(old)]) == 1
    out = capsys.readouterr().out
    assert "1 regression(s)" in out
    assert "-0.300" in out
    assert "new (not in baseline): 1" in out
    assert "vanished: 1" in out
    # A wider tolerance lets the drop through; t.py::b, gated in the baseline,
    # did not run: missing evidence, never a pass.
    assert main(["report", str(new), "--baseline", str(old), "--tolerance", "0.5"]) == 1
    out = capsys.readouterr().out
    assert "t.py::b (score): did not run" in out
    assert "tnsai-eval FAIL: missing evidence: 1 gated score(s) did not run" in out


def test_cli_report_names_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    assert "nope.json': does not exist" in capsys.readouterr().err
