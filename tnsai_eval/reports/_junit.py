"""JUnit XML with one testcase per case, so CI systems list cases natively.

Each tracked test becomes a ``<testsuite>`` (named by its node id); each of
its cases a ``<testcase>`` named by the case id and its input. One verdict
everywhere: with a comparison, a case fails only when it is *broken* (it
passed in the baseline and fails now) or *new and failing*; a case that also
failed in the baseline is ``<skipped>`` with the message "known failure", so
a run whose gate is green gives a green JUnit report. Without a baseline every
case is new, and every failing case fails. A failure carries expected and
actual output; a case that failed to run is an ``<error>``; a case that was
not run (unrecorded, or refused by the call budget) is ``<skipped>``: it was
never asked, so it neither passes nor fails. A test without case records (a
``tnsai_record`` metric, a norm check) is one testcase with its status. Every
text is masked for secrets (``shown_text``) before it is written.

>>> from tnsai_eval.reports import CaseRecord, Report, TestStatus, TrackedTest
>>> test = TrackedTest("t.py::test_a", TestStatus.FAILED,
...                    cases=(CaseRecord("c1", "2+2", "4", "5", 0.0, False),))
>>> print(render_junit(Report(tests=(test,))).splitlines()[1])
<testsuites name="tnsai-eval" tests="1" failures="1" errors="0" skipped="0">
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

from tnsai_eval.reports._model import CaseRecord, CaseState, TrackedTest, shown_text, was_run

if TYPE_CHECKING:
    from tnsai_eval.reports._compare import Comparison
    from tnsai_eval.reports._model import Report

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
    test: TrackedTest, case: CaseRecord, before: dict[tuple[str, str, str], bool]
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
    if case.state is CaseState.NOT_RUN:
        body, outcome = (
            '<skipped message="not run: budget (--llm-max-calls was spent)"/>',
            "skipped",
        )
    elif not was_run(case):
        body = '<skipped message="no recorded reply (run pytest --llm-record record)"/>'
        outcome = "skipped"
    elif case.state is CaseState.ERROR:
        body = f"<error message={_attr(case.error or 'error')}>{_escape(detail)}</error>"
        outcome = "errors"
    elif case.passed:
        return head + "/>", ""
    elif before.get((test.nodeid, case.metric, case.id)) is False:
        body = '<skipped message="known failure (also failed in the baseline)"/>'
        outcome = "skipped"
    else:
        score = "-" if case.score is None else f"{case.score:.3f}"
        was = before.get((test.nodeid, case.metric, case.id))
        why = "" if not before else " (passed in the baseline)" if was else " (new case)"
        message = f"score {score} below the case threshold{why}"
        body = f"<failure message={_attr(message)}>{_escape(detail)}</failure>"
        outcome = "failures"
    return f"{head}>{body}</testcase>", outcome


def _escape(text: str) -> str:
    return _xml_safe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_junit(report: Report, *, comparison: Comparison | None = None) -> str:
    """The report as a JUnit XML document (a string)."""
    # Whether each case passed in the baseline. A case that failed there and
    # fails here is a known failure: the gate does not count it, neither does JUnit.
    before = {
        (c.nodeid, c.metric, c.id): c.baseline_passed
        for cmp in (comparison.cases if comparison else ())
        for c in cmp.changes
    }
    suites: list[str] = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for test in report.tests:
        elements: list[str] = []
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if test.cases:
            for case in test.cases:
                element, outcome = _case_element(test, case, before)
                elements.append(element)
                counts["tests"] += 1
                if outcome:
                    counts[outcome] += 1
        else:
            counts["tests"] = 1
            head = f"<testcase classname={_attr(test.nodeid)} name={_attr(test.nodeid)}"
            status = test.status.value
            if status == "passed":
                elements.append(head + "/>")
            elif status == "skipped":
                counts["skipped"] = 1
                elements.append(f"{head}><skipped/></testcase>")
            else:
                kind = "failure" if status == "failed" else "error"
                counts["failures" if kind == "failure" else "errors"] = 1
                elements.append(
                    f"{head}><{kind} message={_attr(test.message or status)}/></testcase>"
                )
        for key, value in counts.items():
            totals[key] += value
        attrs = " ".join(f'{k}="{v}"' for k, v in counts.items())
        suites.append(
            f"  <testsuite name={_attr(test.nodeid)} {attrs} "
            f"time={quoteattr(f'{test.duration_s:.3f}')}>\n    "
            + "\n    ".join(elements)
            + "\n  </testsuite>"
        )
    attrs = " ".join(f'{k}="{v}"' for k, v in totals.items())
    return "\n".join(
        [
            '<?xml version="1.0" encoding="utf-8"?>',
            f'<testsuites name="tnsai-eval" {attrs}>',
            *suites,
            "</testsuites>",
            "",
        ]
    )


def write_junit(
    path: str | os.PathLike[str], report: Report, *, comparison: Comparison | None = None
) -> Path:
    """Write ``render_junit(...)`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_junit(report, comparison=comparison), encoding="utf-8")
    return target
