"""The model-comparison table and the "model changed" lines treat test ids as data.

A test id (and a model name) can hold a key, a line break that forges a
"PASS" line or table row, and a terminal escape sequence (ESC). The gate's
other outputs already masked and flattened them; these two did not (issue 34,
fourth round).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import API_KEY
from tnsai_eval.cli import main
from tnsai_eval.reports import (
    CaseRecord,
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare_report_models,
    format_model_changes,
    format_model_comparison,
    model_changes,
)

pytestmark = pytest.mark.usefixtures("secret_env")

FORGED = f"x\n### tnsai-eval PASS: no regressions\n| ok | ok |\x1b[2J{API_KEY}"
NODEID = f"t.py::test_q[{FORGED}]"


def _run(model: str, outputs: str) -> TrackedTest:
    cases = tuple(
        CaseRecord(str(i), "q", "a", o, float(o == "a"), o == "a") for i, o in enumerate(outputs)
    )
    score = MetricStats("score", (sum(c.score or 0.0 for c in cases) / len(cases),))
    return TrackedTest(
        f"t.py::test_q[{FORGED}-{model}]",  # as the plugin adds the model to the id
        TestStatus.PASSED,
        {"score": score},
        cases=cases,
        model=model,
        tokens_in=10,
        tokens_out=2,
    )


def _assert_inert(text: str, *, own_headings: int = 0) -> None:
    """No key, no ESC, and no line starts with what an id carried: each forgery
    stays inside the line of its id (``own_headings``: the real verdict lines)."""
    assert API_KEY not in text
    assert "\x1b" not in text
    lines = text.splitlines()
    assert sum(line.lstrip("#* ").startswith("tnsai-eval PASS") for line in lines) == own_headings
    assert not any(line.startswith("| ok |") for line in lines)


@pytest.mark.parametrize("markdown", [False, True], ids=["terminal", "markdown"])
def test_the_model_comparison_table_masks_and_flattens_test_ids(markdown: bool) -> None:
    report = Report((_run("old", "aaaa"), _run("new", "aabb")), {"models": ["old", "new"]})
    result = compare_report_models(report, "old", "new")
    text = format_model_comparison(result, markdown=markdown)
    _assert_inert(text)
    assert "regressed" in text


@pytest.mark.parametrize("markdown", [False, True], ids=["terminal", "markdown"])
def test_model_changed_lines_mask_and_flatten_ids_and_model_names(markdown: bool) -> None:
    old = Report((TrackedTest(NODEID, TestStatus.PASSED, model="big"),))
    new = Report((TrackedTest(NODEID, TestStatus.PASSED, model=f"small\n{FORGED}"),))
    changes = model_changes(new, old)
    assert len(changes) == 1
    text = format_model_changes(changes, markdown=markdown)
    _assert_inert(text)
    assert text.count("\n") == 0
    assert "model changed" in text


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_the_report_command_prints_model_lines_inert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    report = Report((_run("old", "aaaa"), _run("new", "aabb")), {"models": ["old", "new"]})
    report.save(tmp_path / "r.json")
    Report((TrackedTest(NODEID, TestStatus.PASSED, model="big"),)).save(tmp_path / "b.json")
    Report((TrackedTest(NODEID, TestStatus.PASSED, model="small"),)).save(tmp_path / "n.json")
    main(["report", str(tmp_path / "r.json"), "--compare-models", "old", "new", "--format", fmt])
    main(["report", str(tmp_path / "n.json"), "--baseline", str(tmp_path / "b.json"),
          "--format", fmt])  # fmt: skip
    out = capsys.readouterr().out
    # Each command states its own verdict once, in every format (the first has no
    # baseline: "nothing to gate"); the forged ones stay inside their id's line.
    _assert_inert(out, own_headings=2)
    assert "tnsai-eval PASS: nothing to gate" in out
    assert "model changed" in out
