"""JUnit XML that says what the gate says: one testcase per gated score, then every case.

The first suite, ``tnsai gate``, holds one testcase per gated score of the
run or of its baseline, named ``tnsai gate: <test> (<metric>)``; it fails
exactly when the gate fails on that score, with the reason (``regressed:
...``, ``missing evidence: ...``, ``failed test: ...``), and one testcase
``tnsai gate: run`` fails when the run as a whole cannot pass (pytest exited
2 to 5, gate settings changed). So JUnit's failure count is the gate's: a
run the gate passes is green, one it fails is red, whatever its cases did.
A gated score's testcase also names its flipped agent cases, each with both
runs' tool calls side by side and the first divergence (``trajectory_lines``,
as the terminal shows them): in its failure, or in ``<system-out>`` when the
score passed.

Then each tracked test is a ``<testsuite>`` (named by its node id) with a
``<testcase>`` per case (named by the case id and its input), for the
record: a case never fails JUnit by itself, just as flips never fail the
gate by themselves. A passing case passes; any other is ``<skipped>`` with
what happened to it: broken (it passed in the baseline), failing (new, or
without a baseline), a known failure (it also failed in the baseline),
errored, or not run (unrecorded, or refused by the call budget). Every text
is masked for secrets (``shown_text``) before it is written.

>>> from tnsai_eval.reports import CaseRecord, Report, TestStatus, TrackedTest
>>> test = TrackedTest("t.py::test_a", TestStatus.FAILED,
...                    cases=(CaseRecord("c1", "2+2", "4", "5", 0.0, False),))
>>> print(render_junit(Report(tests=(test,))).splitlines()[1])
<testsuites name="tnsai-eval" tests="3" failures="1" errors="0" skipped="1">
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from tnsai_eval.reports._model import CaseRecord, CaseState, TrackedTest, shown_text, was_run
from tnsai_eval.reports._trajectory_text import trajectory_lines

if TYPE_CHECKING:
    from tnsai_eval.reports._cases import CaseChange
    from tnsai_eval.reports._compare import Comparison
    from tnsai_eval.reports._model import Report
    from tnsai_eval.reports._verdict import GateVerdict

__all__ = ["render_junit", "write_junit"]


def _xml_safe(text: str) -> str:
    # XML 1.0 cannot hold most control characters or lone surrogates, even escaped.
    return "".join(
        ch
        if ch in "\t\n\r"
        or (ch >= " " and not 0xD800 <= ord(ch) <= 0xDFFF and ch not in "\ufffe\uffff")
        else "?"
        for ch in text
    )


def _attr(value: str) -> str:
    return quoteattr(_xml_safe(shown_text(value, 500)))


def _case_element(
    test: TrackedTest, case: CaseRecord, before: dict[tuple[str, str, str], CaseChange]
) -> tuple[str, str]:
    """The case's ``<testcase>`` and the count it adds to (``""``: a pass)."""
    name = f"{case.id} {shown_text(case.input, 60)}"
    if case.sample:
        name += f" (sample {case.sample + 1})"
    head = (
        f"<testcase classname={_attr(test.nodeid)} name={_attr(name)} "
        f"time={quoteattr(f'{case.latency_s:.3f}')}"
    )
    detail = (
        f"input: {shown_text(case.input, 2000)}\nexpected: {shown_text(case.expected, 2000)}\n"
        f"output: {shown_text(case.output or '', 2000)}"
    )
    change = before.get((test.nodeid, case.metric, case.id))
    was = None if change is None else change.baseline_passed
    if change is not None and change.flip:
        detail += "\n" + "\n".join(trajectory_lines(change))
    if case.state is CaseState.NOT_RUN:
        message = "not run: budget (--llm-max-calls was spent)"
    elif not was_run(case):
        message = f"not run: {case.error or 'no recorded reply'}"
    elif case.state is CaseState.ERROR:
        message = f"errored: {case.error or 'error'} (left out of the comparison)"
    elif case.passed:
        return head + "/>", ""
    elif was is False:
        message = "known failure (also failed in the baseline)"
    else:
        score = "-" if case.score is None else f"{case.score:.3f}"
        why = "" if not before else " (passed in the baseline)" if was else " (new case)"
        flip = "broken: " if was else ""
        message = f"{flip}score {score} below the case threshold{why}"
    body = f"<skipped message={_attr(message)}>{_escape(detail)}</skipped>"
    return f"{head}>{body}</testcase>", "skipped"


def _flipped_runs(comparison: Comparison | None, nodeid: str, metric: str) -> str:
    """The flipped agent cases of one gated score (and of its per-metric parts), each
    case once: both runs' tool calls and the first divergence."""
    lines: list[str] = []
    seen: set[str] = set()
    for cmp in comparison.cases if comparison is not None else ():
        if cmp.nodeid != nodeid or not (
            cmp.metric == metric or cmp.metric.startswith(metric + ".")
        ):
            continue
        for change in cmp.flipped:
            block = trajectory_lines(change)
            if block and change.id not in seen:
                seen.add(change.id)
                lines.extend(block)
    return "\n".join(lines)


def _gate_suite(verdict: GateVerdict, comparison: Comparison | None) -> tuple[str, dict[str, int]]:
    """The ``tnsai gate`` suite: a testcase per gated score, and one for the run."""
    elements: list[str] = []
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    named = [
        (c.name, c.passed, c.reason, _flipped_runs(comparison, c.nodeid, c.metric))
        for c in verdict.checks
    ]
    named.append(("tnsai gate: run", not verdict.problems, "; ".join(verdict.problems), ""))
    for name, passed, reason, runs in named:
        counts["tests"] += 1
        head = f'<testcase classname="tnsai gate" name={_attr(name)}'
        if passed:
            out = f"<system-out>{_escape(runs)}</system-out>" if runs else ""
            elements.append(f"{head}>{out}</testcase>" if out else head + "/>")
            continue
        counts["failures"] += 1
        text = shown_text(reason, 4000) + (f"\n\n{runs}" if runs else "")
        elements.append(
            f"{head}><failure message={_attr(reason)}>{_escape(text)}</failure></testcase>"
        )
    return _suite('"tnsai gate"', counts, elements), counts


def _attrs(counts: dict[str, int]) -> str:
    return " ".join(f'{k}="{v}"' for k, v in counts.items())


def _suite(name: str, counts: dict[str, int], elements: list[str], time: str = "") -> str:
    """A ``<testsuite>`` of ``elements`` (``name``: its quoted name attribute)."""
    head = f"  <testsuite name={name} {_attrs(counts)}{time}>\n    "
    return head + "\n    ".join(elements) + "\n  </testsuite>"


def _escape(text: str) -> str:
    return _xml_safe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_junit(
    report: Report, *, comparison: Comparison | None = None, verdict: GateVerdict | None = None
) -> str:
    """The report as a JUnit XML document (a string), with the gate's ``verdict``
    (``gate_verdict(report, comparison)`` unless given)."""
    from tnsai_eval.reports._verdict import gate_verdict

    if verdict is None:
        verdict = gate_verdict(report, comparison)
    # Each case's change from the baseline: whether it passed there (a case
    # that failed there and fails here is a known failure), and its runs.
    before = {
        (c.nodeid, c.metric, c.id): c
        for cmp in (comparison.cases if comparison else ())
        for c in cmp.changes
    }
    gate, totals = _gate_suite(verdict, comparison)
    suites: list[str] = [gate]
    for test in report.tests:
        elements: list[str] = []
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for case in test.cases:
            element, outcome = _case_element(test, case, before)
            elements.append(element)
            counts["tests"] += 1
            if outcome:
                counts[outcome] += 1
        if not test.cases:
            # No cases: the test's status, for the record (the gate suite judges it).
            counts["tests"] = 1
            head = f"<testcase classname={_attr(test.nodeid)} name={_attr(test.nodeid)}"
            if test.status.value == "passed":
                elements.append(head + "/>")
            else:
                counts["skipped"] = 1
                message = (
                    f"{test.status.value}: {test.message}" if test.message else test.status.value
                )
                elements.append(f"{head}><skipped message={_attr(message)}/></testcase>")
        for key, value in counts.items():
            totals[key] += value
        time = f" time={quoteattr(f'{test.duration_s:.3f}')}"
        suites.append(_suite(_attr(test.nodeid), counts, elements, time))
    return "\n".join(
        [
            '<?xml version="1.0" encoding="utf-8"?>',
            f'<testsuites name="tnsai-eval" {_attrs(totals)}>',
            *suites,
            "</testsuites>",
            "",
        ]
    )


def write_junit(
    path: str | os.PathLike[str],
    report: Report,
    *,
    comparison: Comparison | None = None,
    verdict: GateVerdict | None = None,
) -> Path:
    """Write ``render_junit(...)`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = render_junit(report, comparison=comparison, verdict=verdict)
    target.write_text(text, encoding="utf-8")
    return target
