"""The HTML page's model-against-model section lists the flipped cases (issue 34).

A baseline comparison on the page shows each flipped case with both outputs
side by side; the model comparison (``report --compare-models A B --html``)
now does the same, labelled with the two models' names.
"""

from __future__ import annotations

import re

from tnsai_eval.plots import render_html
from tnsai_eval.reports import (
    CaseRecord,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare_report_models,
)


def _run(model: str, outputs: tuple[str, ...]) -> TrackedTest:
    cases = tuple(
        CaseRecord(f"c{i}", f"question {i}", "yes", o, float(o == "yes"), o == "yes")
        for i, o in enumerate(outputs)
    )
    score = MetricStats("score", (sum(c.score or 0.0 for c in cases) / len(cases),))
    return TrackedTest(
        f"t.py::test_q[{model}]", TestStatus.PASSED, {"score": score}, cases=cases, model=model
    )


def test_the_model_section_lists_each_flip_with_both_outputs() -> None:
    report = Report(
        (_run("big", ("yes", "yes", "no", "yes")), _run("small", ("yes", "nope", "yes", "nah"))),
        {"models": ["big", "small"]},
    )
    models = compare_report_models(report, "big", "small")
    page = render_html(report, models=models)
    section = page[page.index("<h2>Model small against big") :]
    assert "Flipped cases, big (A) to small (B): 3 (2 broken, 1 fixed)" in section
    assert "<code>t.py::test_q</code> (score): 2 broken, 1 fixed of 4 common case(s)" in section
    # Broken first, each with the input and both outputs side by side under the models' names.
    flips = re.findall(r"<p><b>(\w+)</b> <code>(c\d)</code>: question", section)
    assert flips == [("broken", "c1"), ("broken", "c3"), ("fixed", "c2")]
    assert '<div class="side"><div>A: big<pre>yes</pre></div><div>B: small<pre>nope</pre>' in (
        section
    )
