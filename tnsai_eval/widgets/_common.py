"""Rendering helpers shared by the widgets: tables, figures, text and diffs as widget values.

Views are filled with ``HTML`` and ``Image`` widgets rather than ``Output``
captures: their state is a plain value, which tests (and users) can read
without a browser or a kernel.
"""

from __future__ import annotations

import difflib
import html
import math
import struct
from functools import partial
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from tnsai_eval.plots import to_png
from tnsai_eval.reports import format_cost

__all__ = [
    "DisplayMixin",
    "diff_html",
    "figure_png",
    "image_widget",
    "png_size",
    "pre_html",
    "set_png",
    "table_html",
]

_PRE_STYLE = "white-space: pre-wrap; font-family: monospace; font-size: 12px; margin: 0"
_DIFF_COLORS = {"+": "#e6ffec", "-": "#ffebe9", "@": "#ddf4ff"}


def table_html(
    frame: pd.DataFrame,
    *,
    max_rows: int = 50,
    empty: str = "(no rows)",
    max_chars: int = 80,
) -> str:
    """``frame`` as an escaped HTML table (at most ``max_rows`` rows shown).

    A text cell longer than ``max_chars`` is shortened with an ellipsis; its
    full text is the cell's tooltip (``title``), so that one long test name or
    prompt does not squeeze every other column. A number shows three decimals
    (a delta of ``-0.15000000000000002`` reads ``-0.150``), a cost three
    significant digits (``reports.format_cost``), as on the HTML report page.

    >>> page = table_html(pd.DataFrame({"name": ["a" * 10]}), max_chars=5)
    >>> '<span title="aaaaaaaaaa">aaaa…</span>' in page
    True
    >>> "<td>-0.150</td>" in table_html(pd.DataFrame({"delta": [0.7 - 0.85]}))
    True
    """
    if frame.empty:
        return f"<i>{html.escape(empty)}</i>"

    def cell(value: object, column: str) -> str:
        if isinstance(value, str) and len(value) > max_chars:
            shown = value[: max_chars - 1].rstrip() + "…"
            return f'<span title="{html.escape(value)}">{html.escape(shown)}</span>'
        if _missing(value):
            return ""
        if isinstance(value, float):
            return format_cost(value) if column.startswith("cost") else f"{value:.3f}"
        return html.escape(str(value))

    return frame.to_html(
        index=False,
        escape=False,
        max_rows=max_rows,
        border=0,
        # pandas writes a missing value as na_rep before any formatter sees it.
        na_rep="",
        formatters={c: partial(cell, column=str(c)) for c in frame.columns},
    )


def _missing(value: object) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


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


def png_size(png: bytes | memoryview) -> tuple[int, int]:
    """(width, height) in pixels of a PNG image, read from its header.

    >>> png_size(figure_png(Figure(figsize=(2, 1))))[1] > 0
    True
    """
    png = bytes(png[:24])  # an Image widget's value is a memoryview
    if len(png) < 24 or not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return (0, 0)
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def image_widget(png: bytes = b"") -> Any:
    """An ``Image`` widget shown at the PNG's own size (never stretched, shrunk to fit).

    In a ``VBox`` a plain ``Image`` is stretched to the cell's width, which
    blurs a small figure; here the width is the image's pixel width and the
    box never grows it (``align_self``), while ``max_width`` still shrinks it
    on a narrow screen.
    """
    import ipywidgets as w

    image = w.Image(
        format="png",
        layout=w.Layout(max_width="100%", height="auto", align_self="flex-start"),
    )
    set_png(image, png)
    return image


def set_png(image: Any, png: bytes) -> None:
    """Show ``png`` in ``image`` at its own pixel width (see ``image_widget``)."""
    width, _ = png_size(png)
    image.width = str(width) if width else ""
    image.value = png


class DisplayMixin:
    """Displays the object's ``widget`` (an ipywidgets container) in a notebook.

    The views wrap a container instead of subclassing one, so that their own
    attributes never collide with the traitlets of an ipywidgets class.
    """

    widget: Any

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict) and "text/plain" in bundle:
            # A viewer without the widget (GitHub, a terminal, JupyterLab before a
            # kernel starts) shows text/plain: say what this is rather than
            # ipywidgets' ``VBox(children=(IntProgress(...`` dump.
            bundle["text/plain"] = (
                f"{type(self).__name__}: an interactive view; run the notebook in Jupyter to use it"
            )
        return bundle
