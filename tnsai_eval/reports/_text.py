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
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from tnsai_eval._util.text import code_span, escape_markdown, shown_label, shown_line
from tnsai_eval.reports._costs import COST_METRICS, cost_line, format_cost
from tnsai_eval.reports._model import Report, TrackedTest, score_interval, shown_text
from tnsai_eval.reports._tables import format_table, markdown_table
from tnsai_eval.reports._trajectory_text import trajectory_lines

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

_T = TypeVar("_T")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool) -> str:
    if markdown:
        return markdown_table(headers, rows)
    return format_table(headers, rows, indent=2)


def _metric_rows(changes: Sequence[MetricChange]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for c in changes:
        head = (shown_label(c.nodeid), shown_label(c.metric), f"{c.baseline:.3f}")
        if math.isnan(c.current):  # nothing in common with the baseline
            rows.append((*head, "-", "-", "-"))
            continue
        current = _interval(c.current, c.current_low, c.current_high)
        p_value = "-" if c.p_value is None else f"{c.p_value:.3g}"
        rows.append((*head, current, f"{c.delta:+.3f}", p_value))
    return rows


def _interval(mean: float, low: float, high: float) -> str:
    """``0.500 [0.400, 0.600]``, or ``0.500`` when the interval is the value itself."""
    return f"{mean:.3f}" + (f" [{low:.3f}, {high:.3f}]" if low != high else "")


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


def prompt_diff(
    change: PromptChange, *, markdown: bool = False, limit: int | None = None
) -> list[str]:
    """The unified diff of a changed prompt: shortened for a terminal, collapsible in Markdown.

    Each line is masked (a report written elsewhere may hold a key), made
    encodable and rid of control characters before it is shown, in a
    terminal and inside the Markdown code block alike.
    """
    diff = [shown_line(line) for line in change.diff()]
    if not diff:
        return ["(same text: the template or the call settings changed)"]
    if markdown:
        shown, rest = _limited(diff, limit)
        if rest:
            diff = [*shown, f"... and {rest} more diff line(s) in report.html"]
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
    return max((len(run) for line in lines for run in re.findall("`+", line)), default=0)


def _name(text: str, markdown: bool) -> str:
    """An id or a name for one line of output: masked, flat, escaped in Markdown.

    Escaped as if it started a line (it may follow a list's bullet).
    """
    return escape_markdown(text) if markdown else shown_label(text)


def _case_heading(
    cmp: CaseComparison, markdown: bool, alpha: float, limit: int | None = None
) -> list[str]:
    low, high = cmp.delta_interval
    lines = [
        f"{_name(cmp.nodeid, markdown)} ({_name(cmp.metric, markdown)}): "
        f"{_movement(cmp, alpha)} over {len(cmp.changes)} common case(s); mean "
        f"{cmp.baseline_mean:.3f} -> {cmp.current_mean:.3f} (95% CI of the change "
        f"[{low:+.3f}, {high:+.3f}])"
    ]
    change = cmp.prompt_change
    if change is not None:
        name = code_span(change.name) if markdown else f"`{shown_label(change.name)}`"
        lines.append(
            f"prompt {name} changed ({change.baseline_hash} -> {change.current_hash}): "
            f"{len(cmp.fixed)} case(s) fixed, {len(cmp.broken)} broken"
        )
        lines.extend(
            ("" if markdown else "  ") + line
            for line in prompt_diff(change, markdown=markdown, limit=limit)
        )
    if cmp.new or cmp.vanished:
        lines.append(f"{len(cmp.new)} new case(s), {len(cmp.vanished)} vanished case(s)")
    return lines


def _movement(cmp: CaseComparison, alpha: float) -> str:
    """How the common cases moved, in the direction they moved: a rise is called a rise.

    ``fell -0.250, 3 broken, 0 fixed, not significant, p = 0.125``;
    ``rose +0.125, 6 fixed, 3 broken, not significant, p = 0.254`` (one-sided
    sign tests, each in the direction of the move).
    """
    broken, fixed, delta = len(cmp.broken), len(cmp.fixed), cmp.mean_delta
    if delta > 0 or (delta == 0 and fixed > broken):
        verb, counts, p = "rose", f"{fixed} fixed, {broken} broken", cmp.p_better
    elif delta < 0 or broken > fixed:
        verb, counts, p = "fell", f"{broken} broken, {fixed} fixed", cmp.p_worse
    else:
        return f"held {delta:+.3f}, {broken} broken, {fixed} fixed"
    significant = "significant" if p < alpha else "not significant"
    return f"{verb} {delta:+.3f}, {counts}, {significant}, p = {p:.3g}"


def verdict_line(comparison: Comparison, *, limit: int | None = None) -> str:
    """The comparison's verdict in one line: what failed it, or what it passed under.

    ``limit`` bounds how many shortfalls it names (the rest are counted).
    """
    gate = f"gate: {comparison.gate.value}"
    if comparison.gate.value == "paired":
        gate += f", alpha {comparison.alpha:g}"
    shown, rest = _limited(comparison.shortfalls, limit)
    missing = "; ".join(str(s) for s in shown) + (f"; and {rest} more" if rest else "")
    if comparison.regressions:
        line = (
            f"{len(comparison.regressions)} regression(s) beyond tolerance "
            f"{comparison.tolerance:g} ({gate})"
        )
        return f"{line}; also missing evidence: {missing}" if missing else line
    if comparison.shortfalls:
        metrics = len({(s.nodeid, s.metric) for s in comparison.shortfalls})
        return f"missing evidence in {metrics} test metric(s), not a pass ({gate}): {missing}"
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


def _limited(items: Sequence[_T], limit: int | None) -> tuple[Sequence[_T], int]:
    """The first ``limit`` of ``items`` (all when ``None``) and how many were left out."""
    if limit is None or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


def _more(rest: int, markdown: bool, where: str) -> list[str]:
    if not rest:
        return []
    return [f"{'- ' if markdown else '  '}... and {rest} more in {where}"]


def format_comparison(
    comparison: Comparison,
    *,
    markdown: bool = False,
    limit: int | None = None,
    more_in: str = "report.html",
) -> str:
    """The comparison for a terminal (``markdown=False``) or a Markdown document.

    ``limit`` bounds every list and table (flipped cases, worst first
    across all tests; the lines of each prompt diff; unrecorded, errored,
    new and vanished ones...): what is left out is counted, "and N more in
    ``more_in``". ``None`` shows everything.
    """
    lines: list[str] = []
    verdict = verdict_line(comparison, limit=limit)
    if comparison.regressions:
        verdict += ":"
    # The verdict names tests (user text): inert in Markdown, on one line in a terminal.
    lines.append(f"**{escape_markdown(verdict)}**" if markdown else shown_label(verdict))

    def table(changes: Sequence[MetricChange]) -> None:
        shown, rest = _limited(changes, limit)
        lines.extend(_metric_block(shown, markdown))
        lines.extend(_more(rest, markdown, more_in))

    if comparison.regressions:
        table(comparison.regressions)
    if comparison.inconclusive:
        lines.append(
            f"{len(comparison.inconclusive)} inconclusive score(s): fewer than "
            f"{comparison.min_common:.0%} of the baseline's cases in common; never a pass:"
        )
        table(comparison.inconclusive)
    if comparison.dropped:
        lines.append(
            f"{len(comparison.dropped)} dropped score(s): the mean fell beyond the tolerance, "
            f"but the sign test is not significant at {comparison.alpha:g} (not failing):"
        )
        table(comparison.dropped)
    if comparison.improved:
        lines.append(f"{len(comparison.improved)} improvement(s):")
        table(comparison.improved)
    power, rest = _limited(
        _power_lines([*comparison.dropped, *comparison.unchanged], markdown), limit
    )
    if power:
        lines.append(f"what the suite can see (one-sided sign test, alpha {comparison.alpha:g}):")
        lines.append("\n".join([*power, *_more(rest, markdown, more_in)]))
    lines.extend(_flip_sections(comparison, markdown, limit, more_in))
    # A note names a test (user text): escaped like every id.
    notes, rest = _limited(comparison.notes, limit)
    lines.extend(f"note: {_name(note, markdown)}" for note in notes)
    lines.extend(_more(rest, markdown, more_in))
    bullet = "-" if markdown else " "

    def listed(title: str, items: Sequence[_T], line: Callable[[_T], str]) -> None:
        shown, rest = _limited(items, limit)
        if shown:
            lines.append(f"{title}: {len(items)}")
            lines.append(
                "\n".join(
                    [f"{bullet} {line(item)}" for item in shown] + _more(rest, markdown, more_in)
                )
            )

    def case(nodeid: str, case_id: str) -> str:
        return f"{_name(nodeid, markdown)} case {_name(case_id, markdown)}"

    listed(
        "errored (the call failed or the evaluator raised; left out of the comparison, "
        "never a flip)",
        comparison.errored,
        lambda e: (
            f"{case(e[0], e[1])}: "
            + (escape_markdown(e[2], limit=200) if markdown else shown_text(e[2], 200))
        ),
    )
    listed(
        "unrecorded (no reply in the store, or refused by the call budget; left out of "
        "the comparison)",
        comparison.unrecorded,
        lambda u: case(*u),
    )
    listed("new (not in baseline)", comparison.new, lambda name: _name(name, markdown))
    listed("vanished", comparison.vanished, lambda name: _name(name, markdown))
    # Markdown needs a blank line before a table or a heading to render them.
    return ("\n\n" if markdown else "\n").join(lines)


def _flip_sections(
    comparison: Comparison, markdown: bool, limit: int | None, more_in: str
) -> list[str]:
    """The flipped cases, test by test (the test with the worst flip first), worst first.

    ``limit`` bounds the flipped rows shown over all tests together, and the
    diff lines of each changed prompt.
    """
    lines: list[str] = []
    total = len(comparison.flipped)
    if comparison.cases:
        broken = sum(len(cmp.broken) for cmp in comparison.cases)
        lines.append(
            f"flipped cases: {total} ({broken} broken, {total - broken} fixed)"
            + ("; flips alone never fail the run" if total else "")
        )
    flipped = [cmp for cmp in comparison.cases if cmp.flipped or cmp.prompt_change]
    # Worst first: a test's worst broken case (most negative delta) decides its place.
    flipped.sort(key=lambda cmp: min((c.delta for c in cmp.broken), default=0.0))
    budget = limit
    # An agent case flips in its headline metric and in each metric it failed:
    # its two runs are shown once, under the first.
    shown_runs: set[tuple[str, str]] = set()
    for cmp in flipped:
        heading = _case_heading(cmp, markdown, comparison.alpha, limit)
        lines.append(f"#### {heading[0]}" if markdown else f"  {heading[0]}")
        body = [("" if markdown else "  ") + h for h in heading[1:]]
        if body:
            lines.append("\n".join(body))
        rows, rest = _limited(cmp.flipped, budget)
        if rows:
            lines.append(_table(_CASE_HEADERS, _case_rows(rows, markdown), markdown))
        for change in rows:
            if (change.nodeid, change.id) not in shown_runs:
                block = trajectory_lines(change, markdown=markdown, limit=limit)
                if block:
                    shown_runs.add((change.nodeid, change.id))
                    lines.append(block[0] if markdown else "  " + block[0])
                    lines.extend(block[1:])
        lines.extend(_more(rest, markdown, more_in))
        if budget is not None:
            budget = max(budget - len(rows), 0)
    return lines


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
        shown = "-" if interval is None else _interval(*interval)
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
