"""Per-metric gate settings: direction, absolute or relative tolerance; costs only when asked."""

from __future__ import annotations

from typing import Any

import pytest

from tnsai_eval.errors import ConfigError
from tnsai_eval.reports import (
    ChangeKind,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
)


def _report(metric: MetricStats, *, tokens: int = 100, calls: int = 10) -> Report:
    test = TrackedTest("t::a", TestStatus.PASSED, {metric.name: metric}, tokens=tokens, calls=calls)
    return Report(tests=(test,))


def test_a_metric_tolerance_overrides_the_run_tolerance() -> None:
    old = _report(MetricStats("score", (0.8,)))
    loose = _report(MetricStats("score", (0.7,), tolerance=0.15))
    assert compare(loose, old, tolerance=0.05).passed
    strict = _report(MetricStats("score", (0.78,), tolerance=0.01))
    assert not compare(strict, old, tolerance=0.05).passed


def test_a_relative_tolerance_is_a_share_of_the_baseline() -> None:
    old = _report(MetricStats("latency_s", (2.0,), higher_is_better=False))
    ok = _report(MetricStats("latency_s", (2.3,), higher_is_better=False, tolerance=0.2,
                             relative=True))  # fmt: skip
    slow = _report(MetricStats("latency_s", (2.5,), higher_is_better=False, tolerance=0.2,
                               relative=True))  # fmt: skip
    assert compare(ok, old).passed
    (change,) = compare(slow, old).regressions
    assert change.allowed == pytest.approx(0.4)


def test_tokens_and_calls_are_gated_only_when_asked() -> None:
    old = _report(MetricStats("score", (0.8,)), tokens=100, calls=10)
    costly = _report(MetricStats("score", (0.8,)), tokens=200, calls=10)
    assert compare(costly, old).passed
    gated = compare(costly, old, gate_costs=0.2)
    assert [(c.metric, c.kind) for c in gated.regressions] == [("tokens", ChangeKind.REGRESSED)]
    assert compare(costly, old, gate_costs=1.5).passed


@pytest.mark.parametrize(("name", "value"), [("alpha", 0.0), ("alpha", 1.0), ("tolerance", -1.0),
                                             ("gate_costs", float("nan")), ("min_common", 1.5),
                                             ("min_common", float("nan"))])  # fmt: skip
def test_bad_gate_settings_name_the_value(name: str, value: float) -> None:
    report = _report(MetricStats("score", (0.8,)))
    settings: dict[str, Any] = {name: value}
    with pytest.raises(ConfigError, match=name):
        compare(report, report, **settings)


def test_an_unknown_gate_mode() -> None:
    report = _report(MetricStats("score", (0.8,)))
    with pytest.raises(ConfigError, match="gate must be one of tolerance, paired, got 'strict'"):
        compare(report, report, gate="strict")


def test_recorded_settings_are_used_unless_given_and_bad_ones_are_not_trusted() -> None:
    from tnsai_eval.reports import GateSettings

    recorded = {"gate": "paired", "tolerance": 0.1, "alpha": "0.01", "min_common": 0.9,
                "allow_unrecorded": "yes"}  # fmt: skip
    settings = GateSettings.resolve(
        [({"min_common": 0.5}, "given"), (recorded, "recorded in the report")]
    )
    assert settings.values() == {"gate": "paired", "tolerance": 0.1, "alpha": 0.05,
                                 "min_common": 0.5, "allow_unrecorded": False,
                                 "gate_costs": None, "gate_latency": None}  # fmt: skip
    assert settings.describe() == (
        "gate settings: gate paired (recorded in the report), tolerance 0.1 (recorded in the "
        "report), alpha 0.05 (default), min common 50% (given), unrecorded cases refused "
        "(default)"
    )
    # An ini file's strings are read as pytest reads them.
    ini = GateSettings.resolve([(recorded, "pytest.ini")], ini=True)
    assert (ini.alpha, ini.allow_unrecorded, ini.source("alpha")) == (0.01, True, "pytest.ini")


def test_gate_settings_show_what_changed_and_where_each_came_from() -> None:
    from tnsai_eval.reports import GateSettings

    base = GateSettings.resolve(
        [({"tolerance": "0.05"}, "pytest.ini at the base commit")], ini=True
    )
    loose = GateSettings.resolve([({"tolerance": 0.9, "gate": "tolerance"}, "ini tnsai_tolerance")])
    (change,) = base.changes(loose)
    assert str(change) == (
        "tolerance 0.05 (pytest.ini at the base commit) -> 0.9 (ini tnsai_tolerance)"
    )
    assert GateSettings.from_dict(base.to_dict()) == base
    assert GateSettings.from_dict(base.to_dict()).source("tolerance") == (  # type: ignore[union-attr]
        "pytest.ini at the base commit"
    )
    with pytest.raises(ConfigError, match="unknown gate setting"):
        GateSettings.given({"tolerence": 0.1})


def test_the_plugin_records_and_checks_its_evidence_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_m(tnsai_record):\n    tnsai_record('score', 0.5)\n")
    bad = pytester.runpytest_inprocess("--tnsai-min-common", "1.5")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--tnsai-min-common: expected a share between 0 and 1, got '1.5'"])
    pytester.makeini("[pytest]\ntnsai_allow_unrecorded = maybe\n")
    bad = pytester.runpytest_inprocess()
    bad.stderr.fnmatch_lines(["*ini tnsai_allow_unrecorded: expected true or false, got 'maybe'"])
    pytester.makeini("[pytest]\ntnsai_allow_unrecorded = true\n")
    ok = pytester.runpytest_inprocess("--tnsai-min-common", "0.5", "--tnsai-report", "r.json")
    ok.assert_outcomes(passed=1)
    import json

    config = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["config"]
    assert (config["min_common"], config["allow_unrecorded"]) == (0.5, True)
