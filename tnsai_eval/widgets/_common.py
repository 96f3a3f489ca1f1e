"""Rendering helpers shared by the widgets: tables, figures, text and diffs as widget values.

Views are filled with ``HTML`` and ``Image`` widgets rather than ``Output``
captures: their state is a plain value, which tests (and users) can read
without a browser or a kernel.
"""

from __future__ import annotations

import difflib
import html
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from tnsai_eval.plots import to_png

__all__ = ["DisplayMixin", "diff_html", "figure_png", "pre_html", "table_html"]

_PRE_STYLE = "white-space: pre-wrap; font-family: monospace; font-size: 12px; margin: 0"
_DIFF_COLORS = {"+": "#e6ffec", "-": "#ffebe9", "@": "#ddf4ff"}


def table_html(frame: pd.DataFrame, *, max_rows: int = 50, empty: str = "(no rows)") -> str:
    """``frame`` as an escaped HTML table (at most ``max_rows`` rows shown)."""
    if frame.empty:
        return f"<i>{html.escape(empty)}</i>"
    return frame.to_html(index=False, escape=True, max_rows=max_rows, na_rep="", border=0)


def pre_html(text: str) -> str:
    """Text shown verbatim (escaped, wrapped)."""
    return f'<pre style="{_PRE_STYLE}">{html.escape(text)}</pre>'


def diff_html(before: str, after: str, *, before_name: str, after_name: str) -> str:
    """A unified line diff of two texts, added lines green and removed lines red."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=before_name,
            tofile=after_name,
            lineterm="",
        )
    )
    if not lines:
        return "<i>identical to the previous iteration</i>"
    rows = []
    for line in lines:
        color = _DIFF_COLORS.get(line[:1], "") if not line.startswith(("+++", "---")) else ""
        style = f"background: {color}" if color else ""
        rows.append(f'<div style="{style}">{html.escape(line) or "&nbsp;"}</div>')
    return f'<div style="{_PRE_STYLE}">{"".join(rows)}</div>'


def figure_png(fig: Figure) -> bytes:
    """PNG bytes for an ``Image`` widget."""
    return to_png(fig, dpi=90)


class DisplayMixin:
    """Displays the object's ``widget`` (an ipywidgets container) in a notebook.

    The views wrap a container instead of subclassing one, so that their own
    attributes never collide with the traitlets of an ipywidgets class.
    """

    widget: Any

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
