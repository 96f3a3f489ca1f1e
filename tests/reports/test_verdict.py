"""One verdict for a run: what the accept label accepts, and what it never does.

``gate_verdict`` decides from the comparison, the run's failed tests, pytest's
exit status and the pull request's decision (``PullRequestGate``, carried by
the gate baseline). Every output prints its headline; these tests pin the
rules the recipe test (``test_ci_recipe.py``) exercises end to end.
"""

from __future__ import annotations

from tnsai_eval.reports import (
    CaseRecord,
    CaseState,
    GateSettings,
    MetricStats,
    PullRequestGate,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    gate_verdict,
)


def _run(*tests: tuple[str, float]) -> Report:
    return Report(
        tests=tuple(
            TrackedTest(nodeid, TestStatus.PASSED, {"score": MetricStats("score", (value,))})
            for nodeid, value in tests
        )
    )


def test_a_removed_gated_test_fails_unless_the_label_accepts_it() -> None:
    base = _run(("t.py::a", 0.9), ("t.py::gone", 0.8))
    now = _run(("t.py::a", 0.9))
    comparison = compare(now, base)
    verdict = gate_verdict(now, comparison, pr=PullRequestGate("unchanged", "abc"))
    assert verdict.headline == "FAIL: missing evidence: 1 gated score(s) did not run"
    assert [c.name for c in verdict.failing] == ["tnsai gate: t.py::gone (score)"]
    labelled = PullRequestGate("unchanged", "abc", labelled=True)
    accepted = gate_verdict(now, comparison, pr=labelled)
    assert accepted.passed
    assert accepted.headline == "ACCEPTS 1 gated score(s) that no longer run"
    assert accepted.accepted == (
        "t.py::gone (score): did not run (not in this run: skipped, deselected, deleted, "
        "renamed or not collected)",
    )


def test_the_label_never_accepts_unrun_or_errored_cases() -> None:
    score = {"score": MetricStats("score", (1.0,))}
    scored = [CaseRecord(f"c{i}", "q", "x", output="x", score=1.0, passed=True) for i in range(10)]
    base = Report(tests=(TrackedTest("t.py::a", TestStatus.PASSED, score, cases=tuple(scored)),))
    labelled = PullRequestGate("unchanged", "abc", labelled=True)
    for state, words in (
        (CaseState.UNRECORDED, "1 case(s) not run"),
        (CaseState.ERROR, "1 errored (ServerError HTTP 500)"),
    ):
        first = CaseRecord("c0", "q", "x", state=state, error="ServerError: HTTP 500")
        test = TrackedTest("t.py::a", TestStatus.PASSED, score, cases=(first, *scored[1:]))
        now = Report(tests=(test,))
        verdict = gate_verdict(now, compare(now, base), pr=labelled)
        assert verdict.headline == f"FAIL: missing evidence: {words}", state


def test_changed_settings_fail_unless_labelled_and_the_base_settings_judge() -> None:
    base_settings = GateSettings.resolve(
        [({"tolerance": "0.05"}, "pytest.ini at the base")], ini=True
    )
    run_settings = GateSettings.resolve([({"tolerance": 0.5}, "ini tnsai_tolerance")])
    pr = PullRequestGate("unchanged", "abc", settings=base_settings)
    judged_by, changes = pr.judge_with(run_settings)
    assert judged_by is base_settings
    now, base = _run(("t.py::a", 0.7)), _run(("t.py::a", 0.9))
    verdict = gate_verdict(now, compare(now, base, settings=judged_by), pr=pr,
                           settings_changes=changes)  # fmt: skip
    assert verdict.headline == "FAIL: 1 regression(s); gate settings changed"
    assert verdict.problems[0].startswith(
        "gate settings changed: tolerance 0.05 (pytest.ini at the base) -> 0.5 "
        "(ini tnsai_tolerance)"
    )
    labelled = PullRequestGate("unchanged", "abc", labelled=True, settings=base_settings)
    judged_by, changes = labelled.judge_with(run_settings)
    assert judged_by is run_settings  # accepted: the new settings judge
    verdict = gate_verdict(now, compare(now, base, settings=judged_by), pr=labelled,
                           settings_changes=changes)  # fmt: skip
    assert verdict.passed
    assert verdict.headline.startswith("ACCEPTS new gate settings (tolerance 0.05")


def test_a_failed_test_and_a_bad_exit_status_never_pass() -> None:
    now = _run(("t.py::a", 0.9))
    comparison = compare(now, now)
    assert gate_verdict(now, comparison).headline == "PASS: no regressions"
    assert gate_verdict(now, comparison, exit_status=0).passed
    for status in (2, 3, 4, 5):
        verdict = gate_verdict(now, comparison, exit_status=status)
        assert not verdict.passed
        assert verdict.headline.startswith(f"FAIL: pytest exited {status} (")
    failed = Report(tests=(TrackedTest("t.py::a", TestStatus.FAILED, now.tests[0].metrics,
                                       message="prompt scored 0.9 < min_score 0.95"),))  # fmt: skip
    verdict = gate_verdict(failed, compare(failed, now), exit_status=1)
    assert verdict.headline == "FAIL: 1 failed test(s)"  # exit 1 is the failed test's
    (check,) = verdict.failing
    assert check.reason == "failed test: prompt scored 0.9 < min_score 0.95"
    # exit 1 with nothing tracked failing: a test the gate does not see failed.
    assert gate_verdict(now, comparison, exit_status=1).headline == (
        "FAIL: pytest exited 1 (a test failed)"
    )
