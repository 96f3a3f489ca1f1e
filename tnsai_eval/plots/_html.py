"""``tnsai-eval report --html out.html``: one self-contained page for a run.

The page holds the run's configuration and totals, the per-test table, a
figure of the scores, and with a baseline the comparison table (regressions
first, highlighted) and the baseline-vs-current figure. Below, per test, a
table of its cases with filters (flipped, failing, violating a norm,
unrecorded) and, for flipped cases, the baseline's and this run's outputs
side by side. A target's cases also show the tools each called and, collapsed,
every step of its run; a flipped one both runs' tool calls side by side with
the first divergence marked (``_trajectory_html``). Figures
are embedded as base64 PNG, the style sheet and the few lines of filter
script are inline, so the file can be attached to a CI run or mailed and
opened anywhere, offline. Every text on the page (case texts, test and case
ids, metric names, the configuration) is masked for secrets.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from tnsai_eval import frames
from tnsai_eval._util.secrets import frozen_secrets
from tnsai_eval.plots._base import to_png
from tnsai_eval.plots._reports import plot_report_comparison, plot_report_scores
from tnsai_eval.plots._trajectory_html import (
    TRAJECTORY_STYLE,
    divergence_block,
    esc,
    steps_cell,
    tools_text,
)
from tnsai_eval.reports import (
    COST_METRICS,
    CaseChange,
    Comparison,
    ModelComparison,
    PromptChange,
    Report,
    TrackedTest,
    compare,
    cost_line,
    format_cost,
    masked,
    read_report,
    shown_text,
    was_run,
)

__all__ = ["render_html", "write_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
th { background: #f4f4f4; }
tr.regressed td, tr.failed td, tr.error td { background: #ffebe9; }
.verdict-fail { color: #d62728; font-weight: bold; } .verdict-pass { color: #2ca02c; }
img { max-width: 100%; }
code { background: #f4f4f4; padding: 0 0.2em; }
tr.broken td { background: #ffebe9; } tr.fixed td { background: #e6ffec; }
tr.unrecorded td { color: #888; font-style: italic; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 0.5em; margin: 0.4em 0 1em; }
.side pre { background: #f8f8f8; padding: 0.4em; white-space: pre-wrap; margin: 0; }
.filters label { margin-right: 1em; font-size: 0.85em; }
tr.dropped td { background: #fff5d6; } tr.inconclusive td { background: #eee; }
tr.improved td { background: #e6ffec; }
.verdict-warn { color: #9a6700; font-weight: bold; }
pre.diff { background: #f8f8f8; padding: 0.4em; white-space: pre-wrap; font-size: 0.85em; }
pre.diff .add { background: #e6ffec; display: block; }
pre.diff .del { background: #ffebe9; display: block; }
pre.diff .hunk { color: #6f42c1; display: block; }
ul.power li, ul.missing li { font-size: 0.9em; margin: 0.2em 0; }
"""

# Shows only the rows of a case table whose class matches the chosen filter.
_SCRIPT = """
function tnsaiFilter(input) {
  var table = document.getElementById(input.name);
  var rows = table.querySelectorAll("tbody tr");
  for (var i = 0; i < rows.length; i++) {
    var kinds = rows[i].getAttribute("data-kinds").split(" ");
    var shown = input.value === "all" || kinds.indexOf(input.value) >= 0;
    rows[i].style.display = shown ? "" : "none";
  }
}
"""
_FILTERS = ("all", "flipped", "failing", "violating", "unrecorded")

# Columns of the per-test table, in the order the terminal summary shows them.
_TEST_COLUMNS = ("nodeid", "status", "score", "score_low", "score_high", "case_pass_rate",
                 "sample_pass_rate", "cases", "unrecorded", "iterations", "calls", "tokens",
                 "cache_hits", "duration_s",
                 "model", "tokens_in", "tokens_out", "cost",
                 "live_calls", "latency_p50_s", "latency_p95_s")  # fmt: skip


def _img(fig: Figure, alt: str) -> str:
    data = base64.b64encode(to_png(fig)).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def _table(frame: pd.DataFrame, *, row_class: str | None = None) -> str:
    """An escaped HTML table; ``row_class`` names a column whose value becomes each row's class."""
    if frame.empty:
        return "<p><i>(none)</i></p>"
    shown = list(frame.columns)
    head = "".join(f"<th>{esc(str(c))}</th>" for c in shown)
    rows = []
    for _, row in frame.iterrows():
        css = f' class="{esc(str(row[row_class]))}"' if row_class else ""
        cells = "".join(f"<td>{_cell(row[c], str(c))}</td>" for c in shown)
        rows.append(f"<tr{css}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cell(value: object, column: str = "") -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float) and column.startswith("cost"):  # "cost", "cost <model>"
        return format_cost(value)  # 0.0000456, where three decimals showed 0.000
    if isinstance(value, float):
        return f"{value:.3f}"
    return esc(str(value))


def _verdict(comparison: Comparison) -> str:
    """The gate's verdict in the words of the terminal and the Markdown: green only on a pass."""
    if comparison.regressions:
        return f'<span class="verdict-fail">{len(comparison.regressions)} regression(s)</span>'
    if comparison.shortfalls:
        return (
            '<span class="verdict-fail">missing evidence in '
            f"{len({(s.nodeid, s.metric) for s in comparison.shortfalls})} "
            "test metric(s): not a pass</span>"
        )
    if comparison.dropped:
        return (
            '<span class="verdict-warn">no regressions; '
            f"{len(comparison.dropped)} dropped score(s), not significant</span>"
        )
    return '<span class="verdict-pass">no regressions</span>'


def _evidence(comparison: Comparison) -> list[str]:
    """What is missing, and what the sign test could see next to each dropped or unchanged score."""
    parts: list[str] = []
    if comparison.shortfalls:
        items = "".join(f"<li>{esc(str(s))}</li>" for s in comparison.shortfalls)
        parts.append(f'<p>Missing evidence:</p><ul class="missing">{items}</ul>')
    power = [c for c in (*comparison.dropped, *comparison.unchanged) if c.detectability]
    if power:
        items = "".join(
            f"<li><code>{esc(c.nodeid)}</code> ({esc(c.metric)}) "
            f"<b>{c.kind.value}</b>: {esc(c.detectability.describe())}</li>"
            for c in power
            if c.detectability is not None
        )
        parts.append(
            f"<p>What the suite can see (one-sided sign test, alpha {comparison.alpha:g}):</p>"
            f'<ul class="power">{items}</ul>'
        )
    return parts


def _cost_lines(comparison: Comparison) -> list[str]:
    """Each judged cost or latency change as the terminal says it: ratio and limit."""
    changes = [
        c
        for c in (*comparison.regressions, *comparison.dropped, *comparison.improved)
        if c.metric in COST_METRICS
    ]
    if not changes:
        return []
    items = "".join(f"<li><code>{esc(c.nodeid)}</code>: {esc(cost_line(c))}</li>" for c in changes)
    return [f'<ul class="costs">{items}</ul>']


def _prompt_diffs(changes: tuple[PromptChange, ...]) -> list[str]:
    """Each changed prompt as a unified diff (the texts are already masked in the reports)."""
    parts: list[str] = []
    for change in changes:
        lines = change.diff() or ["(same text: the template or the call settings changed)"]
        body = "".join(
            f'<span class="{_diff_class(line)}">{esc(line)}</span>'
            if _diff_class(line)
            else esc(line) + "\n"
            for line in lines
        )
        parts.append(
            f"<h3>Prompt <code>{esc(change.name)}</code> changed "
            f"({esc(change.baseline_hash)} -> {esc(change.current_hash)})</h3>"
            f'<pre class="diff">{body}</pre>'
        )
    return parts


def _diff_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return ""
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "")


def _case_section(test: TrackedTest, index: int, flips: dict[tuple[str, str], CaseChange]) -> str:
    """The case table of one test, with its filter buttons and flipped outputs side by side."""
    table_id = f"cases-{index}"
    buttons = "".join(
        f'<label><input type="radio" name="{table_id}" value="{kind}"'
        f'{" checked" if kind == "all" else ""} onchange="tnsaiFilter(this)"> {kind}</label>'
        for kind in _FILTERS
    )
    # A target's cases (with runs) add the tools called and the steps, collapsed.
    agent = any(case.trajectory is not None for case in test.cases)
    headers = ("case", "metric", "state", "input", "expected", "output", "score", "passed",
               "flip", "tokens", "cached") + (("tools", "steps") if agent else ())  # fmt: skip
    head = "".join(f"<th>{h}</th>" for h in headers)
    rows = []
    for case in test.cases:
        change = flips.get((case.metric, case.id))
        kinds = ["all"]
        if change is not None:
            kinds += ["flipped", change.flip]
        if not was_run(case):
            kinds.append("unrecorded")
        elif not case.passed:
            kinds.append("failing")
        if case.violations:
            kinds.append("violating")
        cells = (
            case.id,
            case.metric,
            case.state.value,
            shown_text(case.input, 120),
            shown_text(case.expected, 60),
            shown_text(case.output or "", 120),
            "" if case.score is None else f"{case.score:.3f}",
            "" if case.passed is None else str(case.passed).lower(),
            "" if change is None else change.flip,
            str(case.tokens),
            str(case.cached).lower(),
        )
        css = " ".join(k for k in kinds if k in ("broken", "fixed", "unrecorded"))
        run = ""
        if agent:
            tools = "" if case.trajectory is None else tools_text(case.trajectory)
            run = f"<td>{esc(tools)}</td><td>{steps_cell(case)}</td>"
        rows.append(
            f'<tr class="{css}" data-kinds="{" ".join(kinds)}">'
            + "".join(f"<td>{esc(c)}</td>" for c in cells)
            + run
            + "</tr>"
        )
    parts = [
        f"<h3>{esc(test.nodeid)}: {len(test.cases)} case record(s)</h3>",
        f'<div class="filters">{buttons}</div>',
        f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table>",
    ]
    parts += _flip_blocks(flips.values(), "baseline", "this run")
    return "\n".join(parts)


def _flip_blocks(changes: Iterable[CaseChange], before_name: str, after_name: str) -> list[str]:
    """Each flipped case, broken ones first (worst drop first): its input, expected
    answer and scores, both outputs side by side and, for an agent's case, both runs'
    tool calls (each case's runs once, though it flips in several metrics)."""
    blocks = []
    shown: set[str] = set()
    for change in sorted(changes, key=lambda c: (c.flip != "broken", c.delta)):
        before = esc(masked(change.baseline_output) or "")
        after = esc(masked(change.current_output) or "")
        blocks.append(
            f"<p><b>{change.flip}</b> <code>{esc(change.id)}</code>: "
            f"{esc(shown_text(change.input, 200))} "
            f"(expected {esc(shown_text(change.expected, 80))}; "
            f"{change.baseline_score:.2f} -> {change.current_score:.2f})</p>"
            f'<div class="side"><div>{esc(before_name)}<pre>{before}</pre></div>'
            f"<div>{esc(after_name)}<pre>{after}</pre></div></div>"
            + ("" if change.id in shown else divergence_block(change, (before_name, after_name)))
        )
        if change.divergence is not None:
            shown.add(change.id)
    return blocks


def _model_section(result: ModelComparison) -> list[str]:
    """The model-against-model verdict: one row per test, each side's calls, tokens, cost."""
    rows = [
        {
            "test": row.nodeid,
            "verdict": row.verdict,
            f"score {result.baseline}": row.baseline_score,
            f"score {result.candidate}": row.candidate_score,
            "sign test p": row.p_value,
            "broken": row.broken,
            "fixed": row.fixed,
            **{
                f"{what} {name}": getattr(side, what) if side is not None else None
                for name, side in (
                    (result.baseline, row.baseline),
                    (result.candidate, row.candidate),
                )
                for what in ("calls", "tokens_in", "tokens_out", "cost")
            },
        }
        for row in result.rows
    ]
    verdict = (
        '<span class="verdict-pass">no regressions</span>'
        if result.passed
        else f'<span class="verdict-fail">{len(result.comparison.regressions)} regression(s)</span>'
    )
    frame = pd.DataFrame(rows)
    parts = [
        f"<h2>Model {esc(result.candidate)} against {esc(result.baseline)}: {verdict}</h2>",
        _table(frame, row_class="verdict"),
    ]
    # The cases that flipped between the two models, as a baseline comparison lists them.
    flipped = [cmp for cmp in result.comparison.cases if cmp.flipped]
    total = sum(len(cmp.flipped) for cmp in flipped)
    broken = sum(len(cmp.broken) for cmp in flipped)
    parts.append(
        f"<h3>Flipped cases, {esc(result.baseline)} (A) to {esc(result.candidate)} (B): "
        f"{total} ({broken} broken, {total - broken} fixed)</h3>"
    )
    for cmp in flipped:
        low, high = cmp.delta_interval
        parts.append(
            f"<h4><code>{esc(cmp.nodeid)}</code> ({esc(cmp.metric)}): {len(cmp.broken)} "
            f"broken, {len(cmp.fixed)} fixed of {len(cmp.changes)} common case(s); mean "
            f"{cmp.baseline_mean:.3f} -> {cmp.current_mean:.3f} (95% CI of the delta "
            f"[{low:+.3f}, {high:+.3f}]); sign test p={cmp.p_worse:.3g}</h4>"
        )
        parts += _flip_blocks(cmp.flipped, f"A: {result.baseline}", f"B: {result.candidate}")
    return parts


@frozen_secrets()  # one page, one reading of the secrets (every text on it is masked)
def render_html(
    report: Report | str | os.PathLike[str],
    *,
    baseline: Report | str | os.PathLike[str] | None = None,
    tolerance: float = 0.05,
    title: str | None = None,
    comparison: Comparison | None = None,
    settings: str = "",
    models: ModelComparison | None = None,
) -> str:
    """The page for ``report`` (a ``Report`` or a JSON path), compared with ``baseline``.

    ``comparison`` (from ``compare``) may be given instead of ``baseline``, so
    that the page shows the gate exactly as it was judged (mode, alpha);
    ``settings`` is the line saying where each gate setting came from
    (``GateSettings.describe()``), shown under the verdict.
    ``models`` (from ``compare_report_models``) adds the model-against-model verdict.
    """
    run = read_report(report)
    if title is not None:
        name = title
    elif isinstance(report, Report):
        name = "tnsai-eval report"
    else:
        name = f"tnsai-eval report: {Path(report).name}"
    config = ", ".join(f"{k}: {v}" for k, v in run.config.items()) or "(not recorded)"
    totals = run.totals
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(name)}</title><style>{_STYLE}{TRAJECTORY_STYLE}</style>",
        f"<script>{_SCRIPT}</script></head><body>",
        f"<h1>{esc(name)}</h1>",
        f"<p>created {esc(run.created or '-')} · schema {run.schema_version} · {esc(config)}</p>",
        f"<p>{totals['tests']} test(s), {totals['failed']} failed · {totals['calls']} call(s), "
        f"{totals['tokens']} token(s), {totals['cache_hits']} cache hit(s)"
        + ("" if run.cost is None else f" · estimated cost {format_cost(run.cost)}")
        + "</p>",
    ]
    if comparison is None and baseline is not None:
        comparison = compare(run, read_report(baseline), tolerance=tolerance)
    if comparison is not None:
        changes = frames.comparison_frame(comparison)
        alpha = f", alpha {comparison.alpha:g}" if comparison.gate.value == "paired" else ""
        parts += [
            f"<h2>Against the baseline (tolerance {comparison.tolerance:g}, gate "
            f"{comparison.gate.value}{alpha}): {_verdict(comparison)}</h2>",
            *([f"<p>{esc(settings)}</p>"] if settings else []),
            *_evidence(comparison),
            _img(plot_report_comparison(changes), "baseline vs current"),
            _table(changes, row_class="kind"),
            *_cost_lines(comparison),
            # Replayed replies have no latency: a note says why a gate left a test out.
            *(f'<p class="note">{html.escape(note)}</p>' for note in comparison.notes),
            *_prompt_diffs(comparison.prompt_changes),
        ]
    if models is not None:
        parts += _model_section(models)
    tests = run.to_dataframe()
    parts.append("<h2>Tests</h2>")
    if not tests.empty:
        if tests["score"].notna().any():
            parts.append(_img(plot_report_scores(tests), "scores by test"))
        shown = [c for c in _TEST_COLUMNS if c in tests.columns]
        parts.append(_table(tests.loc[:, shown], row_class="status"))
    else:
        parts.append("<p><i>(no tracked tests)</i></p>")
    with_cases = [t for t in run.tests if t.cases]
    if with_cases:
        parts.append("<h2>Cases</h2>")
        for index, test in enumerate(with_cases):
            flips = {
                (c.metric, c.id): c
                for cmp in (comparison.cases if comparison is not None else ())
                if cmp.nodeid == test.nodeid
                for c in cmp.flipped
            }
            parts.append(_case_section(test, index, flips))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html(
    path: str | os.PathLike[str],
    report: Report | str | os.PathLike[str],
    *,
    baseline: Report | str | os.PathLike[str] | None = None,
    tolerance: float = 0.05,
    comparison: Comparison | None = None,
    settings: str = "",
    models: ModelComparison | None = None,
) -> Path:
    """Write ``render_html(...)`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(
        report,
        baseline=baseline,
        tolerance=tolerance,
        comparison=comparison,
        settings=settings,
        models=models,
    )
    target.write_text(page, encoding="utf-8")
    return target
