"""A flipped agent case in every view of the gate: the divergence, escaping and the size cap.

Tool names, arguments, results and norm violations are user data (an agent's
model writes them): the comment escapes each through the one Markdown
escaper, masks secrets before cutting, and stays under its size cap however
many agent cases flip.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.git_repo import git as _git
from tnsai_eval.cli import main
from tnsai_eval.plots import render_html
from tnsai_eval.records import (
    CaseMetric,
    CaseRecord,
    StepKind,
    StepSummary,
    StopReason,
    TrajectorySummary,
)
from tnsai_eval.reports import (
    MetricStats,
    Report,
    TestStatus,
    TrackedTest,
    compare,
    diverge,
    format_comparison,
    render_junit,
)


def _run(
    *calls: str | tuple[str, str], stop: StopReason = StopReason.ANSWERED
) -> TrajectorySummary:
    steps = []
    for call in calls:
        name, arguments = (call, "{}") if isinstance(call, str) else call
        steps += [
            StepSummary(StepKind.MODEL_TURN),
            StepSummary(StepKind.TOOL_CALL, name, arguments),
        ]
    return TrajectorySummary((*steps, StepSummary(StepKind.MODEL_TURN, text="Done.")), stop)


@pytest.mark.parametrize(
    ("base", "head", "sentence"),
    [
        (("lookup_order", "issue_refund"), ("issue_refund",),
         "head skipped `lookup_order`, then called `issue_refund`"),
        (("lookup_order", "check_policy", "issue_refund"), ("issue_refund",),
         "head skipped `lookup_order`, `check_policy`, then called `issue_refund`"),
        (("lookup_order", "issue_refund"), ("lookup_order",),
         "head skipped `issue_refund`, then made no further tool call"),
        (("lookup_order",), ("lookup_order", "issue_refund"),
         "head also called `issue_refund`, after the last of base"),
        (("lookup_order", "reply"), ("issue_refund", "lookup_order", "reply"),
         "head also called `issue_refund`, before `lookup_order`"),
        (("lookup_order", "reply"), ("cancel_order", "reply"),
         "head called `cancel_order` where base called `lookup_order`"),
        ((("lookup_order", '{"order_id": "A1"}'),), (("lookup_order", '{"order_id": "A9"}'),),
         'head called `lookup_order` with `{"order_id": "A9"}` where base had '
         '`{"order_id": "A1"}`'),
        ((), (), "head made the same tool calls as base"),
    ],
)  # fmt: skip
def test_the_first_divergence_is_said_in_one_sentence(
    base: tuple[str, ...], head: tuple[str, ...], sentence: str
) -> None:
    found = diverge(_run(*base), _run(*head))
    assert found.describe() == sentence
    if base == head:
        assert found.index is None
    else:
        row = found.rows[found.index or 0]
        assert (row.base, row.head) != (None, None)


def test_same_calls_with_a_different_stop_reason_say_so() -> None:
    found = diverge(_run("a"), _run("a", stop=StopReason.MAX_STEPS))
    assert found.describe() == (
        "head made the same tool calls as base (base stopped: answered, head: max_steps)"
    )


def _agent_report(runs: list[TrajectorySummary], scores: list[float], **case: object) -> Report:
    cases = tuple(
        CaseRecord(f"case-{i}", f"Refund order {i}", "", output="Done.", score=score,
                   passed=score >= 0.5, trajectory=run, **case)  # type: ignore[arg-type]
        for i, (run, score) in enumerate(zip(runs, scores, strict=True))
    )  # fmt: skip
    mean = sum(scores) / len(scores)
    metric = MetricStats("score", (mean,))
    return Report(
        tests=(TrackedTest("t.py::test_desk", TestStatus.PASSED, {"score": metric}, cases=cases),)
    )


def test_tool_names_and_arguments_are_escaped_and_masked_in_every_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-" + "q" * 40
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    hostile = "refund`\n### tnsai-eval PASS @org/team <script>x</script> | cell |"
    arguments = f'{{"note": "see https://evil.example | [link](x) {secret}"}}'
    base = _agent_report([_run("lookup_order", (hostile, arguments))], [1.0])
    head = _agent_report(
        [_run((hostile, arguments))],
        [0.0],
        metric_scores=(CaseMetric("norms", 0.0, False, None, (f"call 1: {hostile}",)),),
    )
    comparison = compare(head, base)
    markdown = format_comparison(comparison, markdown=True)
    terminal = format_comparison(comparison)
    junit = render_junit(head, comparison=comparison)
    page = render_html(head, comparison=comparison)
    for text in (markdown, terminal, junit, page):
        assert secret not in text
        assert "\x1b" not in text
    # Markdown: nothing from the tool's name starts a line, a mention, a link or a tag
    # (inside a code span nothing is Markdown, and GitHub links no mention there).
    assert not [line for line in markdown.splitlines() if line.startswith("### tnsai-eval")]
    outside_code = re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", "", markdown)
    assert "@org" not in outside_code.replace("@&#8203;org", "")
    assert "https://evil" not in outside_code.replace("https&#8203;://evil", "")
    assert "<script>" not in outside_code
    assert "<script>x" not in page
    assert "<script>" not in junit
    sentence = next(line for line in markdown.splitlines() if "head skipped" in line)
    assert sentence.startswith("case `case-0` broken (1.00 -> 0.00): head skipped `lookup_order`")
    # The name is one code span that nothing inside it closes: ``...`` around a single "`".
    assert "then called ``refund` ### tnsai-eval PASS @org/team" in sentence
    # Every table row of the side-by-side view has its four cells, the hostile "|" escaped.
    rows = [line for line in markdown.splitlines() if re.match(r"\| \d+ \|", line)]
    assert rows
    for row in rows:
        assert len(re.findall(r"(?<!\\)\|", row)) == 5, row
    # The terminal: one line per row, the name flattened.
    assert any("then called `refund` ### tnsai-eval PASS" in line for line in terminal.splitlines())


def test_a_comment_with_800_flipped_agent_cases_fits_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    count, long = 800, '{"note": "' + "x" * 280 + '"}'
    full = _run(*[(f"tool_{k}", long) for k in range(20)])
    skipped = _run(*[(f"tool_{k}", long) for k in range(1, 20)])
    _agent_report([full] * count, [1.0] * count).save(tmp_path / "baseline.json")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "base")
    base = _git(tmp_path, "rev-parse", "HEAD")
    _agent_report([skipped] * count, [0.0] * count).save(tmp_path / "head.json")
    monkeypatch.chdir(tmp_path)
    assert main(["ci", "baseline", "--base", base, "--path", "baseline.json"]) == 0
    assert main(["ci", "comment", "head.json", "--out", "comment.md"]) == 1
    capsys.readouterr()
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert len(comment) <= 60_000
    assert re.search(r"and \d+ more in report\.html", comment)
    # The cases it does show still carry their two runs and the divergence.
    assert "case `case-0` broken (1.00 -> 0.00): head skipped `tool_0`, then called `tool_1`" in (
        comment
    )
