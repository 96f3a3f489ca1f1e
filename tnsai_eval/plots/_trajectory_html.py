"""The HTML page's view of what an agent did: each case's steps, and a flipped case's two runs.

A case of a target keeps its ``TrajectorySummary`` in the report. On the
page each such case row holds a collapsed ``<details>`` with every step (the
model turn's text; the tool's name, arguments and result or error), so a page
of 2,500 cases stays one table the browser lays out once and the reader opens
the cases they care about. A flipped case's block shows the baseline's and
this run's tool calls side by side, the first divergence marked, in the words
of the terminal and the pull-request comment (``reports.ToolDivergence``).
Every text goes through ``esc`` (masked, encodable, HTML-escaped).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from tnsai_eval._util.secrets import mask
from tnsai_eval._util.text import no_surrogates
from tnsai_eval.records import CaseRecord, StepSummary, TrajectorySummary
from tnsai_eval.reports import MARK, CaseChange

__all__ = ["TRAJECTORY_STYLE", "divergence_block", "esc", "steps_cell", "tools_text"]

TRAJECTORY_STYLE = """
ol.steps { margin: 0.3em 0; padding-left: 1.6em; max-width: 60em; }
ol.steps li { margin: 0.15em 0; }
ol.steps li.turn { color: #555; }
ol.steps li.err code.name { color: #d62728; }
ol.steps .res { color: #2f6f3e; } ol.steps .err-text { color: #d62728; }
table.runs td { font-family: ui-monospace, monospace; font-size: 0.9em; }
table.runs tr.diverge td { background: #fff5d6; font-weight: bold; }
table.runs td.gap { color: #aaa; }
p.violations { font-size: 0.9em; }
"""


def esc(value: object) -> str:
    """Any text bound for the page: masked, encodable, HTML-escaped."""
    return html.escape(no_surrogates(mask(str(value))))


def tools_text(trajectory: TrajectorySummary) -> str:
    """The tools called, in order (``-`` for none), as a table cell shows them."""
    tools = " > ".join(trajectory.tools) or "-"
    return tools + (f" (+{trajectory.dropped} steps)" if trajectory.dropped else "")


def _step(step: StepSummary) -> str:
    if not step.is_tool_call:
        text = esc(step.text) if step.text else "<i>(asked for tools)</i>"
        return f'<li class="turn">model: {text}</li>'
    outcome = (
        f' <span class="err-text">error: {esc(step.error)}</span>'
        if step.error is not None
        else f' <span class="res">-&gt; {esc(step.result)}</span>'
        if step.result is not None
        else ""
    )
    css = "tool err" if step.error is not None else "tool"
    return (
        f'<li class="{css}"><code class="name">{esc(step.name)}</code>'
        f"(<code>{esc(step.arguments)}</code>){outcome}</li>"
    )


def steps_cell(case: CaseRecord) -> str:
    """A case's run as a collapsed list of its steps ("" for a case without one)."""
    run = case.trajectory
    if run is None:
        return ""
    summary = (
        f"{len(run.steps)} step(s), {len(run.tool_calls)} tool call(s), {run.stop_reason.value}"
    )
    dropped = f"<li><i>... {run.dropped} more step(s) not kept</i></li>" if run.dropped else ""
    return (
        f'<details><summary>{summary}</summary><ol class="steps">'
        + "".join(_step(step) for step in run.steps)
        + dropped
        + "</ol></details>"
    )


def _call(step: StepSummary | None) -> str:
    if step is None:
        return '<td class="gap">-</td>'
    text = step.describe() + (f" -> error: {step.error}" if step.error is not None else "")
    return f"<td>{esc(text)}</td>"


def divergence_block(change: CaseChange, names: Sequence[str] = ("baseline", "this run")) -> str:
    """A flipped case's two runs: the divergence sentence, the tool calls side by side
    (the first divergence marked), and the norm violations gained or lost."""
    found = change.divergence
    if found is None:
        return ""

    def code(text: str) -> str:
        return f"<code>{esc(text)}</code>"

    sentence, sequences = found.describe(code), found.sequences(code)
    rows = "".join(
        (
            f'<tr class="diverge"><td>{n + 1}</td>{_call(row.base)}{_call(row.head)}'
            f"<td>{esc(MARK)}</td></tr>"
        )
        if n == found.index
        else f"<tr><td>{n + 1}</td>{_call(row.base)}{_call(row.head)}<td></td></tr>"
        for n, row in enumerate(found.rows)
    )
    table = (
        f'<table class="runs"><thead><tr><th>#</th><th>{esc(names[0])}</th>'
        f"<th>{esc(names[1])}</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else "<p><i>(no tool calls in either run)</i></p>"
    )
    parts = [f'<p class="divergence">{sentence}<br>{sequences}</p>', table]
    gained, lost = change.violations_gained, change.violations_lost
    if gained or lost:
        parts.append(
            '<p class="violations">norm violations gained: '
            f"{esc('; '.join(gained)) or 'none'}; lost: {esc('; '.join(lost)) or 'none'}</p>"
        )
    return "".join(parts)
