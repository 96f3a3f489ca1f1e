"""No PASS without evidence; dropped versus regressed; what a suite can see; one verdict.

Each test here is a regression test for a defect of the stand-alone gate
(``tnsai-eval report``) and of the comparison it shares with the plugin.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest

from tnsai_eval.cli import main
from tnsai_eval.reports import (
    CaseRecord,
    CaseState,
    ChangeKind,
    MetricStats,
    PromptRecord,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    format_comparison,
)


def _test(
    passes: Sequence[bool | None],
    *,
    nodeid: str = "t.py::test_labels",
    prompt: str = "Label the ticket.",
    errors: tuple[int, ...] = (),
    allowed: bool = False,
) -> TrackedTest:
    """One test with a case per entry: True/False scored, None unrecorded.

    As the plugin does, a test with unrecorded cases fails unless the run
    allowed them (``allowed``, --tnsai-allow-unrecorded); one with errored cases fails.
    """
    cases = []
    for i, ok in enumerate(passes):
        if ok is None:
            cases.append(CaseRecord(f"c{i}", f"ticket {i}", "billing", state=CaseState.UNRECORDED))
        elif i in errors:
            cases.append(CaseRecord(f"c{i}", f"ticket {i}", "billing", state=CaseState.ERROR,
                                    error="TimeoutError: no reply"))  # fmt: skip
        else:
            cases.append(CaseRecord(f"c{i}", f"ticket {i}", "billing",
                                    output="billing" if ok else "shipping",
                                    score=1.0 if ok else 0.0, passed=ok))  # fmt: skip
    scored = [ok for ok in passes if ok is not None]
    metrics = {"score": MetricStats("score", (sum(scored) / len(scored),))} if scored else {}
    failed = (any(ok is None for ok in passes) and not allowed) or bool(errors)
    return TrackedTest(
        nodeid,
        TestStatus.FAILED if failed else TestStatus.PASSED,
        metrics,
        cases=tuple(cases),
        prompts=(PromptRecord("score", prompt, f"{abs(hash(prompt)) % 10**8:08d}", "p.txt"),),
    )


def _save(path: Path, *tests: TrackedTest, **config: object) -> Path:
    return Report(tests=tests, config=config).save(path)


# -- 2. the stand-alone gate passed a run that proved nothing ------------------------


def test_an_all_unrecorded_run_is_not_a_pass_nor_vanished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 12))
    run = _save(tmp_path / "run.json", _test([None] * 12))
    argv = ["report", str(run), "--baseline", str(base), "--gate", "paired"]
    assert main([*argv, "--format", "markdown"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "### tnsai-eval FAIL: missing evidence: 12 case(s) not run, 1 inconclusive score(s)"
    )
    assert "PASS" not in out
    assert "12 of 12 case(s) not run" in out
    assert "only 0 of the baseline's 12 case(s) in common" in out
    assert "vanished" not in out
    comparison = compare(run, base, gate="paired")
    assert [c.kind for c in comparison.inconclusive] == [ChangeKind.INCONCLUSIVE]
    assert comparison.vanished == ()
    assert math.isnan(float(comparison.to_dataframe()["current"].iloc[0]))
    assert comparison.to_dataframe().loc[0, "kind"] == "inconclusive"
    # Opting out of the unrecorded rule still leaves nothing in common: never a pass.
    assert main([*argv, "--allow-unrecorded"]) == 1


def test_a_few_unrecorded_cases_pass_only_when_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 12))
    run = _save(tmp_path / "run.json", _test([True] * 10 + [None] * 2))
    assert main(["report", str(run), "--baseline", str(base)]) == 1
    assert "2 of 12 case(s) not run" in capsys.readouterr().out
    # The pytest run that wrote it refused them (its test failed): one verdict, not a pass.
    assert main(["report", str(run), "--baseline", str(base), "--allow-unrecorded"]) == 1
    assert "FAIL: 1 failed test(s)" in capsys.readouterr().out
    # Allowed by the run that wrote the report, unless the command line says otherwise.
    allowed = _save(tmp_path / "allowed.json", _test([True] * 10 + [None] * 2, allowed=True),
                    allow_unrecorded=True)  # fmt: skip
    # 10 of 12 in common is above 80%: with unrecorded cases allowed, it passes.
    assert main(["report", str(allowed), "--baseline", str(base)]) == 0
    assert main(["report", str(allowed), "--baseline", str(base), "--no-allow-unrecorded"]) == 1
    # 9 of 12 (75%) is too few, unless the share asked for is lower.
    fewer = _save(tmp_path / "fewer.json", _test([True] * 9 + [None] * 3, allowed=True))
    argv = ["report", str(fewer), "--baseline", str(base), "--allow-unrecorded"]
    assert main(argv) == 1
    assert "only 9 of the baseline's 12 case(s) in common (needs 80%)" in capsys.readouterr().out
    assert main([*argv, "--min-common", "0.75"]) == 0


def test_errored_cases_are_never_a_pass(tmp_path: Path) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 12))
    run = _save(tmp_path / "run.json", _test([True] * 12, errors=(3,)))
    comparison = compare(run, base)
    assert not comparison.passed
    assert [s.reason for s in comparison.shortfalls] == ["1 errored (TimeoutError)"]
    assert main(["report", str(run), "--baseline", str(base), "--allow-unrecorded"]) == 1


def test_metrics_without_case_records_keep_the_tolerance_rule(tmp_path: Path) -> None:
    def recorded(value: float) -> TrackedTest:
        return TrackedTest("t.py::test_m", TestStatus.PASSED, {"m": MetricStats("m", (value,))})

    base = _save(tmp_path / "base.json", recorded(0.9))
    assert main(["report", str(_save(tmp_path / "a.json", recorded(0.88))), "--baseline",
                 str(base)]) == 0  # fmt: skip
    assert main(["report", str(_save(tmp_path / "b.json", recorded(0.7))), "--baseline",
                 str(base)]) == 1  # fmt: skip


# -- 3. a real drop read "no regressions" ---------------------------------------------


def test_a_drop_that_is_not_significant_is_dropped_and_says_what_the_suite_can_see(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The numbers: 0.583 -> 0.333 on 12 cases, 3 broken and 0 fixed, p = 0.125.
    base = _save(tmp_path / "base.json", _test([True] * 7 + [False] * 5))
    run = _save(tmp_path / "run.json", _test([True] * 4 + [False] * 8), gate="paired")
    comparison = compare(run, base, gate="paired")
    (change,) = comparison.dropped
    assert change.kind is ChangeKind.DROPPED
    assert (round(change.baseline, 3), round(change.current, 3)) == (0.583, 0.333)
    assert comparison.passed  # not failing, and not "unchanged" either
    assert comparison.to_dataframe().loc[0, "kind"] == "dropped"
    text = format_comparison(comparison)
    assert text.startswith(
        "no regressions beyond tolerance 0.05 (gate: paired, alpha 0.05); "
        "1 dropped score(s), not significant"
    )
    assert "no split of 3 flips is significant at alpha 0.05 (it takes at least 5 flips)" in text
    assert "the suite would need 18 common cases" in text
    assert main(["report", str(run), "--baseline", str(base), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### tnsai-eval PASS: no regressions; 1 dropped score(s) not significant")
    # The same drop under the tolerance gate is a regression, as before.
    assert compare(run, base).regressions


def test_a_rise_that_is_not_significant_stays_unchanged(tmp_path: Path) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 4 + [False] * 8))
    run = _save(tmp_path / "run.json", _test([True] * 7 + [False] * 5))
    comparison = compare(run, base, gate="paired")
    assert [c.kind for c in comparison.unchanged] == [ChangeKind.UNCHANGED]
    power = comparison.unchanged[0].detectability
    assert power is not None
    assert power.cases_needed is None  # no more broken than fixed: never a regression
    assert "no suite size would: not estimable" in format_comparison(comparison)


def test_no_flips_is_not_estimable(tmp_path: Path) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 12))
    run = _save(tmp_path / "run.json", _test([True] * 12))
    text = format_comparison(compare(run, base, gate="paired"))
    assert "no flipped cases: what the sign test at alpha 0.05 could see is not estimable" in text


def _tail(n: int, k: int) -> Fraction:
    """P(Bin(n, 1/2) >= k), exactly."""
    return Fraction(sum(math.comb(n, i) for i in range(k, n + 1)), 2**n)


def _direct(broken: int, fixed: int, common: int, alpha: float) -> tuple[int | None, int | None]:
    """Both figures by brute force over every split and every suite size."""
    level = Fraction(alpha)
    m = broken + fixed
    min_broken = next((k for k in range(m + 1) if _tail(m, k) < level), None)
    needed = None
    if broken > fixed:
        for size in range(common, 5000):
            b = math.floor(Fraction(broken * size, common) + Fraction(1, 2))
            f = math.floor(Fraction(fixed * size, common) + Fraction(1, 2))
            if b + f and _tail(b + f, b) < level:
                needed = size
                break
    return min_broken, needed


@pytest.mark.parametrize(
    ("broken", "fixed", "common", "alpha"),
    [(3, 0, 12, 0.05), (6, 2, 12, 0.05), (5, 1, 40, 0.05), (9, 3, 30, 0.01), (4, 4, 20, 0.05),
     (1, 0, 100, 0.05), (7, 0, 7, 0.05), (12, 5, 200, 0.10)],
)  # fmt: skip
def test_the_two_figures_match_a_direct_computation(
    broken: int, fixed: int, common: int, alpha: float
) -> None:
    from tnsai_eval.reports import detectability

    figures = detectability(broken=broken, fixed=fixed, common=common, alpha=alpha)
    assert (figures.min_broken, figures.cases_needed) == _direct(broken, fixed, common, alpha)
    assert not figures.beyond


def test_the_worked_example_of_docs_ci() -> None:
    from tnsai_eval.reports import detectability

    # 12 common cases, 3 flips (all broken), alpha 0.05, as docs/ci.md works it out.
    figures = detectability(broken=3, fixed=0, common=12, alpha=0.05)
    assert figures.min_broken is None
    assert figures.min_flips == 5  # 2**-4 = 0.0625 >= 0.05 > 2**-5 = 0.03125
    assert figures.cases_needed == 18  # 18 * 3/12 = 4.5 -> 5 broken: p = 1/32
    assert _tail(5, 5) == Fraction(1, 32)
    assert _tail(4, 4) == Fraction(1, 16)


# -- 4. the changed prompt was named but never shown -----------------------------------


def test_the_changed_prompt_is_shown_as_a_diff(tmp_path: Path) -> None:
    before = "\n".join(f"line {i}" for i in range(40)) + "\nAnswer in one word.\n"
    after = "\n".join(f"line {i}" for i in range(40)) + "\nAnswer with the label only.\n"
    after = after.replace("line 3\n", "line three ```\n")
    base = _save(tmp_path / "base.json", _test([True] * 12, prompt=before))
    run = _save(tmp_path / "run.json", _test([True] * 12, prompt=after))
    comparison = compare(run, base)
    terminal = format_comparison(comparison)
    assert "    -line 3\n    +line three ```" in terminal
    assert "+Answer with the label only." not in terminal  # shortened:
    assert "more diff line(s) in the Markdown/HTML report" in terminal
    markdown = format_comparison(comparison, markdown=True)
    assert "<details><summary>prompt diff</summary>" in markdown
    # The fence is longer than any backtick run in the prompt, so the prompt cannot close it.
    assert "\n````diff\n" in markdown
    assert "+line three ```" in markdown
    assert "+Answer with the label only." in markdown


# -- 6. reports disagreed with the gate ------------------------------------------------


def test_report_uses_the_gate_recorded_in_the_report_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 7 + [False] * 5))
    run = _save(tmp_path / "run.json", _test([True] * 4 + [False] * 8),
                gate="paired", tolerance=0.05, alpha=0.05)  # fmt: skip
    assert main(["report", str(run), "--baseline", str(base)]) == 0
    out = capsys.readouterr().out
    assert (
        "gate settings: gate paired (recorded in the report), tolerance 0.05 (recorded in the "
        "report), alpha 0.05 (recorded in the report), min common 80% (default)"
    ) in out
    assert main(["report", str(run), "--baseline", str(base), "--gate", "tolerance"]) == 1
    assert "gate tolerance (given)" in capsys.readouterr().out


def test_junit_fails_the_gated_score_exactly_when_the_gate_fails(tmp_path: Path) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 8 + [False] * 4))
    # c0 broken; c8..c11 failed before and still fail (known); c12 is new and failing.
    current = _test([False] + [True] * 7 + [False] * 4 + [False])
    run = _save(tmp_path / "run.json", current)
    junit = tmp_path / "junit.xml"
    assert main(["report", str(run), "--baseline", str(base), "--junit", str(junit)]) == 1
    root = ET.parse(junit).getroot()
    # One failure, the gate's: the score regressed (0.667 -> 0.583 beyond 0.05).
    assert (root.attrib["failures"], root.attrib["skipped"]) == ("1", "6")
    (failed,) = [case for case in root.iter("testcase") if case.find("failure") is not None]
    assert failed.attrib["name"] == "tnsai gate: t.py::test_labels (score)"
    assert failed.find("failure").attrib["message"].startswith("regressed: 0.667 -> 0.583")  # type: ignore[union-attr]
    messages = {
        case.attrib["name"].split()[0]: child.attrib.get("message", "")
        for case in root.iter("testcase")
        for child in case
    }
    # Cases are there for the record; a case never fails JUnit by itself.
    assert messages["c0"].startswith("broken: ")
    assert messages["c0"].endswith("(passed in the baseline)")
    assert messages["c12"].endswith("(new case)")
    assert all(messages[f"c{i}"] == "known failure (also failed in the baseline)"
               for i in range(8, 12))  # fmt: skip
    # Same prompt, same failures as the baseline: the gate is green, and so is JUnit.
    same = _save(tmp_path / "same.json", _test([True] * 8 + [False] * 4))
    assert main(["report", str(same), "--baseline", str(base), "--junit", str(junit)]) == 0
    assert ET.parse(junit).getroot().attrib["failures"] == "0"
    # One flip within the tolerance (paired gate: not significant): green, and so is JUnit.
    one = _save(tmp_path / "one.json", _test([False] + [True] * 7 + [False] * 4))
    argv = ["report", str(one), "--baseline", str(base), "--gate", "paired", "--junit", str(junit)]
    assert main(argv) == 0
    assert ET.parse(junit).getroot().attrib["failures"] == "0"


# -- the HTML page says the same words ---------------------------------------------------


def _page(tmp_path: Path, base: Path, run: Path, *extra: str) -> str:
    page = tmp_path / "page.html"
    main(["report", str(run), "--baseline", str(base), "--html", str(page), *extra])
    return page.read_text(encoding="utf-8")


def test_the_html_page_says_dropped_and_shows_the_prompt_diff(tmp_path: Path) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 7 + [False] * 5, prompt="Be brief.\n"))
    run = _save(tmp_path / "run.json", _test([True] * 4 + [False] * 8, prompt="Be <terse>.\n"),
                gate="paired")  # fmt: skip
    page = _page(tmp_path, base, run)
    assert "kind: unchanged" not in page
    assert '<tr class="dropped">' in page
    assert '<span class="verdict-warn">no regressions; 1 dropped score(s), not significant' in page
    assert "the suite would need 18 common cases" in page
    assert '<span class="del">-Be brief.</span><span class="add">+Be &lt;terse&gt;.</span>' in page
    assert "gate paired, alpha 0.05" in page
    assert "gate settings: gate paired (recorded in the report)" in page


def test_the_html_page_never_shows_a_green_verdict_without_evidence(tmp_path: Path) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 12))
    page = _page(tmp_path, base, _save(tmp_path / "run.json", _test([None] * 12)))
    assert '<span class="verdict-pass">' not in page
    assert "missing evidence in 1 test metric(s): not a pass" in page
    assert "12 of 12 case(s) not run" in page
    assert '<tr class="inconclusive">' in page


def test_cases_refused_by_the_call_budget_count_as_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _save(tmp_path / "base.json", _test([True] * 12))
    refused = tuple(
        CaseRecord(
            f"c{i}", f"ticket {i}", "billing", state=CaseState.NOT_RUN, error="not run: budget"
        )
        for i in range(6, 12)
    )
    scored = _test([True] * 6)
    run = _save(tmp_path / "run.json", TrackedTest(
        scored.nodeid, TestStatus.FAILED, scored.metrics, cases=(*scored.cases, *refused),
        prompts=scored.prompts))  # fmt: skip
    assert main(["report", str(run), "--baseline", str(base), "--allow-unrecorded"]) == 1
    out = capsys.readouterr().out
    assert "only 6 of the baseline's 12 case(s) in common" in out
    assert main(["report", str(run), "--baseline", str(base)]) == 1
    assert "6 of 12 case(s) not run" in capsys.readouterr().out
    junit = tmp_path / "junit.xml"
    main(["report", str(run), "--baseline", str(base), "--junit", str(junit)])
    root = ET.parse(junit).getroot()
    # The gate fails (missing evidence, a failed test): so does its testcase; the
    # refused cases are skipped, never failures of their own.
    assert (root.attrib["failures"], root.attrib["skipped"]) == ("1", "6")
