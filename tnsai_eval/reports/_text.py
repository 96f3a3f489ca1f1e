"""The comparison as text: for a terminal, or as Markdown for a pull-request comment.

Both say the same things in the same order: the verdict and the gate's mode,
the regressed metrics, then for each test the cases that flipped (broken ones
first, worst drop first) next to the prompts that changed, then the cases left
out because they had no recorded reply. Every case text is masked for secrets
before it is cut to fit a line; test ids, case ids and metric names are masked
and kept on one line too, and in Markdown every value is escaped, so that a
crafted id can neither add a line (a forged "PASS" heading) nor a table cell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tnsai_eval._util.text import escape_markdown, shown_label, shown_line
from tnsai_eval.reports._costs import COST_METRICS, cost_line, format_cost
from tnsai_eval.reports._model import Report, TrackedTest, score_interval, shown_text

if TYPE_CHECKING:
    from tnsai_eval.reports._cases import CaseChange, CaseComparison, PromptChange
    from tnsai_eval.reports._compare import Comparison, MetricChange

__all__ = [
    "format_comparison",
    "format_summary",
    "format_table",
    "markdown_table",
    "prompt_diff",
    "summary_rows",
    "verdict_line",
]

#: How many diff lines a terminal shows of a changed prompt (Markdown and HTML show all).
TERMINAL_DIFF_LINES = 16


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table; every data cell is escaped (``escape_markdown``).

    >>> print(markdown_table(("a", "b"), [("1", "x|y")]))
    | a | b |
    |---|---|
    | 1 | x\\|y |
    """

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(escape_markdown(c, inline=True) for c in cells) + " |"

    # The headers are ours: only a "|" could break them.
    head = "| " + " | ".join(h.replace("|", "\\|") for h in headers) + " |"
    return "\n".join([head, "|" + "---|" * len(headers), *(line(r) for r in rows)])


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool) -> str:
    if markdown:
        return markdown_table(headers, rows)
    return format_table(headers, rows, indent=2)


def _metric_rows(changes: Sequence[MetricChange]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for c in changes:
        if math.isnan(c.current):  # nothing in common with the baseline
            rows.append(
                (shown_label(c.nodeid), shown_label(c.metric), f"{c.baseline:.3f}", "-", "-", "-")
            )
            continue
        current = f"{c.current:.3f}"
        if c.current_low != c.current_high:
            current += f" [{c.current_low:.3f}, {c.current_high:.3f}]"
        rows.append(
            (
                shown_label(c.nodeid),
                shown_label(c.metric),
                f"{c.baseline:.3f}",
                current,
                f"{c.delta:+.3f}",
                "-" if c.p_value is None else f"{c.p_value:.3g}",
            )
        )
    return rows


_METRIC_HEADERS = ("test", "metric", "baseline", "current", "delta", "sign test p")


def _metric_block(changes: Sequence[MetricChange], markdown: bool) -> list[str]:
    """Scores as a table; each cost or latency change as a line naming its ratio and limit."""
    scores = [c for c in changes if c.metric not in COST_METRICS]
    costs = [c for c in changes if c.metric in COST_METRICS]
    block = [_table(_METRIC_HEADERS, _metric_rows(scores), markdown)] if scores else []
    if costs:
        bullet = "- " if markdown else "  "
        block.append(
            "\n".join(
                f"{bullet}{_name(c.nodeid, markdown)}: "
                + (escape_markdown(cost_line(c), inline=True) if markdown else cost_line(c))
                for c in costs
            )
        )
    return block


_CASE_HEADERS = ("flip", "case", "input", "expected", "before", "after", "delta")


def _case_rows(cases: Sequence[CaseChange], markdown: bool) -> list[tuple[str, ...]]:
    width = 60 if markdown else 40
    return [
        (
            c.flip,
            shown_label(c.id),
            shown_text(c.input, width),
            shown_text(c.expected, 30),
            f"{c.baseline_score:.2f} {shown_text(c.baseline_output or '', width)!r}",
            f"{c.current_score:.2f} {shown_text(c.current_output or '', width)!r}",
            f"{c.delta:+.2f}",
        )
        for c in cases
    ]


def prompt_diff(change: PromptChange, *, markdown: bool = False) -> list[str]:
    """The unified diff of a changed prompt: shortened for a terminal, collapsible in Markdown.

    Each line is masked (a report written elsewhere may hold a key), made
    encodable and rid of control characters before it is shown, in a
    terminal and inside the Markdown code block alike.
    """
    diff = [shown_line(line) for line in change.diff()]
    if not diff:
        return ["(same text: the template or the call settings changed)"]
    if markdown:
        # A fence longer than any backtick run in the diff cannot be closed by it.
        fence = "`" * max(3, _longest_backticks(diff) + 1)
        return [
            "",
            "<details><summary>prompt diff</summary>",
            "",
            f"{fence}diff",
            *diff,
            fence,
            "",
            "</details>",
        ]
    shown = diff[:TERMINAL_DIFF_LINES]
    if len(diff) > len(shown):
        shown.append(
            f"... ({len(diff) - len(shown)} more diff line(s) in the Markdown/HTML report)"
        )
    # Long lines are cut for a terminal.
    return [shown_text(line, 120) if len(line) > 120 else line for line in shown]


def _longest_backticks(lines: Sequence[str]) -> int:
    longest = run = 0
    for line in lines:
        run = 0
        for ch in line:
            run = run + 1 if ch == "`" else 0
            longest = max(longest, run)
    return longest


def _name(text: str, markdown: bool) -> str:
    """An id or a name for one line of output: masked, flat, escaped in Markdown.

    Escaped as if it started a line (it may follow a list's bullet).
    """
    return escape_markdown(text) if markdown else shown_label(text)


def _code_span(text: str) -> str:
    """``text`` (one line) as a Markdown code span that nothing in it can close.

    Inside a code span nothing is Markdown; only a run of backticks as long as
    the fence would end it, so the fence is one longer than any run inside.
    """
    fence = "`" * (_longest_backticks([text]) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _case_heading(cmp: CaseComparison, markdown: bool) -> list[str]:
    low, high = cmp.delta_interval
    lines = [
        f"{_name(cmp.nodeid, markdown)} ({_name(cmp.metric, markdown)}): "
        f"{len(cmp.broken)} broken, {len(cmp.fixed)} fixed "
        f"of {len(cmp.changes)} common case(s); mean {cmp.baseline_mean:.3f} -> "
        f"{cmp.current_mean:.3f} (delta {cmp.mean_delta:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}]); "
        f"sign test p={cmp.p_worse:.3g} (one-sided, worse)"
    ]
    change = cmp.prompt_change
    if change is not None:
        name = _code_span(shown_label(change.name)) if markdown else f"`{shown_label(change.name)}`"
        lines.append(
            f"prompt {name} changed ({change.baseline_hash} -> {change.current_hash}): "
            f"{len(cmp.fixed)} case(s) fixed, {len(cmp.broken)} broken"
        )
        lines.extend(
            ("" if markdown else "  ") + line for line in prompt_diff(change, markdown=markdown)
        )
    if cmp.new or cmp.vanished:
        lines.append(f"{len(cmp.new)} new case(s), {len(cmp.vanished)} vanished case(s)")
    return lines


def verdict_line(comparison: Comparison) -> str:
    """The comparison's verdict in one line: what failed it, or what it passed under."""
    gate = f"gate: {comparison.gate.value}"
    if comparison.gate.value == "paired":
        gate += f", alpha {comparison.alpha:g}"
    missing = "; ".join(str(s) for s in comparison.shortfalls)
    if comparison.regressions:
        line = (
            f"{len(comparison.regressions)} regression(s) beyond tolerance "
            f"{comparison.tolerance:g} ({gate})"
        )
        return f"{line}; also missing evidence: {missing}" if missing else line
    if comparison.shortfalls:
        return (
            f"missing evidence in {len(comparison.shortfalls)} test metric(s), not a pass "
            f"({gate}): {missing}"
        )
    line = f"no regressions beyond tolerance {comparison.tolerance:g} ({gate})"
    if comparison.dropped:
        line += f"; {len(comparison.dropped)} dropped score(s), not significant"
    return line


def _power_lines(changes: Sequence[MetricChange], markdown: bool) -> list[str]:
    bullet = "- " if markdown else "  "

    return [
        f"{bullet}{_name(c.nodeid, markdown)} ({_name(c.metric, markdown)}) {c.kind.value}: "
        f"{c.detectability.describe()}"
        for c in changes
        if c.detectability is not None
    ]


def format_comparison(comparison: Comparison, *, markdown: bool = False) -> str:
    """The comparison for a terminal (``markdown=False``) or a Markdown document."""
    lines: list[str] = []
    verdict = verdict_line(comparison)
    if comparison.regressions:
        verdict += ":"
    # The verdict names tests (user text): inert in Markdown, on one line in a terminal.
    verdict = shown_label(verdict)
    lines.append(f"**{escape_markdown(verdict)}**" if markdown else verdict)
    if comparison.regressions:
        lines.extend(_metric_block(comparison.regressions, markdown))
    if comparison.inconclusive:
        lines.append(
            f"{len(comparison.inconclusive)} inconclusive score(s): fewer than "
            f"{comparison.min_common:.0%} of the baseline's cases in common; never a pass:"
        )
        lines.extend(_metric_block(comparison.inconclusive, markdown))
    if comparison.dropped:
        lines.append(
            f"{len(comparison.dropped)} dropped score(s): the mean fell beyond the tolerance, "
            f"but the sign test is not significant at {comparison.alpha:g} (not failing):"
        )
        lines.extend(_metric_block(comparison.dropped, markdown))
    if comparison.improved:
        lines.append(f"{len(comparison.improved)} improvement(s):")
        lines.extend(_metric_block(comparison.improved, markdown))
    power = _power_lines([*comparison.dropped, *comparison.unchanged], markdown)
    if power:
        lines.append(f"what the suite can see (one-sided sign test, alpha {comparison.alpha:g}):")
        lines.append("\n".join(power))
    flipped = [cmp for cmp in comparison.cases if cmp.flipped or cmp.prompt_change]
    total = len(comparison.flipped)
    if comparison.cases:
        broken = sum(len(cmp.broken) for cmp in comparison.cases)
        lines.append(
            f"flipped cases: {total} ({broken} broken, {total - broken} fixed)"
            + ("; flips alone never fail the run" if total else "")
        )
    for cmp in flipped:
        heading = _case_heading(cmp, markdown)
        lines.append(f"#### {heading[0]}" if markdown else f"  {heading[0]}")
        body = [("" if markdown else "  ") + h for h in heading[1:]]
        if body:
            lines.append("\n".join(body))
        if cmp.flipped:
            lines.append(_table(_CASE_HEADERS, _case_rows(cmp.flipped, markdown), markdown))
    # A note names a test (user text): escaped like every id.
    lines.extend(f"note: {_name(note, markdown)}" for note in comparison.notes)
    unrecorded = comparison.unrecorded
    if unrecorded:
        lines.append(
            f"unrecorded (no reply in the store, or refused by the call budget; left out of "
            f"the comparison): {len(unrecorded)}"
        )
        lines.append(
            "\n".join(
                f"{'-' if markdown else ' '} {_name(nodeid, markdown)} case {_name(i, markdown)}"
                for nodeid, i in unrecorded
            )
        )
    for title, names in (
        ("new (not in baseline)", comparison.new),
        ("vanished", comparison.vanished),
    ):
        if names:
            lines.append(f"{title}: {len(names)}")
            lines.append(
                "\n".join(f"{'-' if markdown else ' '} {_name(name, markdown)}" for name in names)
            )
    # Markdown needs a blank line before a table or a heading to render them.
    return ("\n\n" if markdown else "\n").join(lines)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[str]], *, indent: int = 0) -> str:
    """A plain fixed-width text table (left-aligned columns, a dashed rule under the header)."""
    body = [tuple(str(cell) for cell in row) for row in rows]
    widths = [len(h) for h in headers]
    for row in body:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    pad = " " * indent

    def line(cells: Sequence[str]) -> str:
        return pad + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join(
        [line(headers), pad + "  ".join("-" * w for w in widths), *(line(r) for r in body)]
    )


def format_summary(report: Report) -> str:
    """One row per tracked test: score [95% interval], status, cases, calls, tokens, cache hits."""
    return format_table(*summary_rows(report))


def summary_rows(report: Report) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The headers and rows of ``format_summary`` (one per test, then the totals)."""
    rows: list[tuple[str, ...]] = []
    # Runs against named models also show each record's token split and cost;
    # other runs keep the columns they always had.
    by_model = bool(report.models) or report.cost is not None
    # Latency only where calls reached a model: replayed replies have none.
    timed = report.timed
    for test in report.tests:
        interval = score_interval(test)
        if interval is None:
            shown = "-"
        elif interval[1] != interval[2]:
            shown = f"{interval[0]:.3f} [{interval[1]:.3f}, {interval[2]:.3f}]"
        else:
            shown = f"{interval[0]:.3f}"
        status = test.status.value
        if test.samples > 1:
            status += f" ({test.passed_samples}/{test.samples})"
        case_rate = test.case_pass_rate
        cases = "-"
        if case_rate is not None:
            judged = {(c.metric, c.id) for c in test.cases} - {
                (c.metric, c.id) for c in test.unrecorded
            }
            cases = f"{round(case_rate * len(judged))}/{len(judged)}"
            if test.unrecorded:
                cases += f" ({len({(c.metric, c.id) for c in test.unrecorded})} unrecorded)"
        rows.append(
            (
                shown_label(test.nodeid),
                shown,
                status,
                cases,
                "-" if test.iterations is None else str(test.iterations),
                str(test.calls),
                str(test.tokens),
                str(test.cache_hits),
            )
            + (_cost_cells(test.tokens_in, test.tokens_out, test.cost) if by_model else ())
            + (_latency_cells(test) if timed else ())
        )
    totals = report.totals
    rows.append(
        (
            f"TOTAL ({totals['tests']} tests, {totals['failed']} failed)",
            "",
            "",
            "",
            "",
            str(totals["calls"]),
            str(totals["tokens"]),
            str(totals["cache_hits"]),
        )
        + (_cost_cells(totals["tokens_in"], totals["tokens_out"], report.cost) if by_model else ())
        + ((str(totals["live_calls"]), "") if timed else ())
    )
    headers: tuple[str, ...] = (
        "test",
        "score [95% CI]",
        "status",
        "cases passed",
        "iterations",
        "calls",
        "tokens",
        "cache hits",
    )
    if by_model:
        headers += ("tokens in/out", "cost")
    if timed:
        headers += ("live calls", "latency p50/p95 s")
    return headers, rows


def _latency_cells(test: TrackedTest) -> tuple[str, str]:
    if test.latency_p50_s is None or test.latency_p95_s is None:
        return str(test.live_calls), "-"
    return str(test.live_calls), f"{test.latency_p50_s:.3f}/{test.latency_p95_s:.3f}"


def _cost_cells(tokens_in: int, tokens_out: int, cost: float | None) -> tuple[str, str]:
    return f"{tokens_in}/{tokens_out}", format_cost(cost)
