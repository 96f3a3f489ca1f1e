"""A flipped agent case as text: for a terminal (and JUnit) or as Markdown (the comment).

The divergence sentence, both tool sequences, the two runs' calls side by
side (the first divergence marked) and the norm violations gained or lost,
in the same words everywhere. Tool names, arguments and violations are user
data: every one goes through the one escaper (``_util.text``) on its way
out, masked before it is cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tnsai_eval._util.text import code_span, escape_markdown, shown_label
from tnsai_eval.records import StepSummary
from tnsai_eval.reports._model import shown_text
from tnsai_eval.reports._tables import format_table, markdown_table
from tnsai_eval.reports._trajectories import CALL_CHARS, MARK, _backticks

if TYPE_CHECKING:
    from tnsai_eval.reports._cases import CaseChange

__all__ = ["trajectory_lines"]


def _call(step: StepSummary | None) -> str:
    if step is None:
        return "-"
    text = step.describe()
    if step.error is not None:
        text += f" -> error: {step.error}"
    return shown_text(text, CALL_CHARS)


def trajectory_lines(
    change: CaseChange, *, markdown: bool = False, limit: int | None = None
) -> list[str]:
    """A flipped agent case for a terminal or Markdown: the divergence sentence, both
    tool sequences side by side with the first divergence marked, and the norm
    violations gained or lost. Empty for a case without both trajectories.

    ``limit`` bounds the rows shown (the divergence row is always among them).
    """
    found = change.divergence
    if found is None:
        return []
    code: Callable[[str], str] = (
        (lambda text: code_span(text, limit=CALL_CHARS)) if markdown else _backticks
    )
    label = f"case {code_span(change.id)}" if markdown else f"case {shown_label(change.id)}"
    lines = [
        f"{label} {change.flip} ({change.baseline_score:.2f} -> {change.current_score:.2f}): "
        f"{found.describe(code)}",
        f"{'' if markdown else '    '}{found.sequences(code)}",
    ]
    keep = len(found.rows) if limit is None else max(limit, (found.index or 0) + 1)
    rows = [
        (str(n), _call(r.base), _call(r.head), MARK if n - 1 == found.index else "")
        for n, r in enumerate(found.rows[:keep], 1)
    ]
    if rows:
        headers = ("#", "base", "head", "")
        table = markdown_table(headers, rows) if markdown else format_table(headers, rows, indent=4)
        lines.append(table)
    left = len(found.rows) - len(rows)
    if left:
        lines.append(f"{'' if markdown else '    '}... and {left} more tool call(s)")
    gained, lost = change.violations_gained, change.violations_lost
    if gained or lost:

        def shown(items: Sequence[str]) -> str:
            if not items:
                return "none"
            text = "; ".join(items)
            return (
                escape_markdown(text, inline=True, limit=400) if markdown else shown_text(text, 400)
            )

        lines.append(
            f"{'' if markdown else '    '}norm violations gained: {shown(gained)}; "
            f"lost: {shown(lost)}"
        )
    return lines
