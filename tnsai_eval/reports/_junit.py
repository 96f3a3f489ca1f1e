"""JUnit XML with one testcase per case, so CI systems list cases natively.

Each tracked test becomes a ``<testsuite>`` (named by its node id); each of
its cases a ``<testcase>`` named by the case id and its input. A failing case
is a ``<failure>`` carrying expected and actual output; a case that failed to
run an ``<error>``; an unrecorded case is ``<skipped>`` (it was never asked,
so it neither passes nor fails). A test without case records (a
``tnsai_record`` metric, a norm check) is one testcase with its status. With
a comparison, a broken case says so in its failure message. Every text is
masked for secrets (``shown_text``) before it is written.

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

from tnsai_eval.reports._model import CaseRecord, CaseState, TrackedTest, shown_text

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


def _case_element(test: TrackedTest, case: CaseRecord, broken: set[tuple[str, str, str]]) -> str:
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
    if case.state is CaseState.UNRECORDED:
        body = '<skipped message="no recorded reply (run pytest --llm-record record)"/>'
    elif case.state is CaseState.ERROR:
        body = f"<error message={_attr(case.error or 'error')}>{_escape(detail)}</error>"
    elif case.passed:
        return head + "/>"
    else:
        was = " (passed in the baseline)" if (test.nodeid, case.metric, case.id) in broken else ""
        message = f"score {case.score:.3f} below the case threshold{was}"
        body = f"<failure message={_attr(message)}>{_escape(detail)}</failure>"
    return f"{head}>{body}</testcase>"


def _escape(text: str) -> str:
    return _xml_safe(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_junit(report: Report, *, comparison: Comparison | None = None) -> str:
    """The report as a JUnit XML document (a string)."""
    broken = {
        (c.nodeid, c.metric, c.id)
        for cmp in (comparison.cases if comparison else ())
        for c in cmp.broken
    }
    suites: list[str] = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for test in report.tests:
        elements: list[str] = []
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if test.cases:
            for case in test.cases:
                elements.append(_case_element(test, case, broken))
                counts["tests"] += 1
                if case.state is CaseState.UNRECORDED:
                    counts["skipped"] += 1
                elif case.state is CaseState.ERROR:
                    counts["errors"] += 1
                elif not case.passed:
                    counts["failures"] += 1
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
