"""Plain text and Markdown tables: the one place a table of user values is laid out.

``markdown_table`` escapes every data cell with the one Markdown escaper
(``_util.text.escape_markdown``), so no value can add a cell, a line or a
link; ``format_table`` lays out a fixed-width table for a terminal (callers
give it cells already made safe to show: ``shown_label``, ``shown_text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tnsai_eval._util.text import escape_markdown

__all__ = ["format_table", "markdown_table"]


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
