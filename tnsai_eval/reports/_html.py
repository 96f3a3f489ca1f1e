"""``tnsai-eval report --html out.html``: one self-contained page for a run.

The page holds the run's configuration and totals, the per-test table, a
figure of the scores, and with a baseline the comparison table (regressions
first, highlighted) and the baseline-vs-current figure. Figures are embedded
as base64 PNG and the style sheet is inline, so the file can be attached to a
CI run or mailed and opened anywhere, offline.
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from tnsai_eval import frames, plots
from tnsai_eval.reports import Report, compare, read_report, report_dataframe

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
"""

# Columns of the per-test table, in the order the terminal summary shows them.
_TEST_COLUMNS = ("nodeid", "status", "score", "score_low", "score_high", "pass_rate",
                 "iterations", "calls", "tokens", "cache_hits", "duration_s")  # fmt: skip


def _img(fig: Figure, alt: str) -> str:
    data = base64.b64encode(plots.to_png(fig)).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _table(frame: pd.DataFrame, *, row_class: str | None = None) -> str:
    """An escaped HTML table; ``row_class`` names a column whose value becomes each row's class."""
    if frame.empty:
        return "<p><i>(none)</i></p>"
    shown = list(frame.columns)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown)
    rows = []
    for _, row in frame.iterrows():
        css = f' class="{html.escape(str(row[row_class]))}"' if row_class else ""
        cells = "".join(f"<td>{_cell(row[c])}</td>" for c in shown)
        rows.append(f"<tr{css}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return html.escape(str(value))


def render_html(
    report: Report | str | os.PathLike[str],
    *,
    baseline: Report | str | os.PathLike[str] | None = None,
    tolerance: float = 0.05,
    title: str | None = None,
) -> str:
    """The page for ``report`` (a ``Report`` or a JSON path), compared with ``baseline``."""
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
        f"<title>{html.escape(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(name)}</h1>",
        f"<p>created {html.escape(run.created or '-')} · schema {run.schema_version} · "
        f"{html.escape(config)}</p>",
        f"<p>{totals['tests']} test(s), {totals['failed']} failed · {totals['calls']} call(s), "
        f"{totals['tokens']} token(s), {totals['cache_hits']} cache hit(s)</p>",
    ]
    if baseline is not None:
        comparison = compare(run, read_report(baseline), tolerance=tolerance)
        changes = frames.comparison_frame(comparison)
        verdict = (
            '<span class="verdict-pass">no regressions</span>'
            if comparison.passed
            else f'<span class="verdict-fail">{len(comparison.regressions)} regression(s)</span>'
        )
        parts += [
            f"<h2>Against the baseline (tolerance {tolerance:g}): {verdict}</h2>",
            _img(plots.plot_report_comparison(changes), "baseline vs current"),
            _table(changes, row_class="kind"),
        ]
    tests = report_dataframe(run)
    parts.append("<h2>Tests</h2>")
    if not tests.empty:
        if tests["score"].notna().any():
            parts.append(_img(plots.plot_report_scores(tests), "scores by test"))
        shown = [c for c in _TEST_COLUMNS if c in tests.columns]
        parts.append(_table(tests.loc[:, shown], row_class="status"))
    else:
        parts.append("<p><i>(no tracked tests)</i></p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html(
    path: str | os.PathLike[str],
    report: Report | str | os.PathLike[str],
    *,
    baseline: Report | str | os.PathLike[str] | None = None,
    tolerance: float = 0.05,
) -> Path:
    """Write ``render_html(...)`` to ``path`` (parent folders created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(report, baseline=baseline, tolerance=tolerance), encoding="utf-8")
    return target
