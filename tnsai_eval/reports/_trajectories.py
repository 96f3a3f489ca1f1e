"""Two runs of one agent case, side by side: where the head's tool calls left the base's.

When an agent case flips, the first question is what the agent did
differently. ``diverge`` aligns the two runs' tool calls on their names
(``difflib``: calls both made line up, a call only one made faces a gap),
finds the first place they part (a call skipped, added or replaced, or the
same tool called with other arguments) and says it in one sentence:
"head skipped `lookup_order`, then called `issue_refund`". The terminal, the
pull-request comment, JUnit and the HTML page all show the same alignment
and the same sentence (``trajectory_lines``, in ``_trajectory_text``; the
page draws its own table from ``ToolDivergence.rows``).

>>> from tnsai_eval.records import StepKind, StepSummary, TrajectorySummary
>>> def run(*names: str) -> TrajectorySummary:
...     return TrajectorySummary(tuple(StepSummary(StepKind.TOOL_CALL, n) for n in names))
>>> diverge(run("lookup_order", "issue_refund"), run("issue_refund")).describe()
'head skipped `lookup_order`, then called `issue_refund`'
>>> diverge(run("lookup_order"), run("lookup_order", "issue_refund")).describe()
'head also called `issue_refund`, after the last of base'
>>> diverge(run("a", "b"), run("a", "b")).describe()
'head made the same tool calls as base'
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest

from tnsai_eval._util.text import shown_label
from tnsai_eval.records import StepSummary, TrajectorySummary

__all__ = ["CALL_CHARS", "MARK", "AlignedCall", "ToolDivergence", "diverge"]

#: How many characters of a call (``name(arguments)``) a table cell shows.
CALL_CHARS = 80
#: The mark beside the first row where the runs part.
MARK = "<- first divergence"


@dataclass(frozen=True, slots=True)
class AlignedCall:
    """One row of the side-by-side view: the base's call and the head's (``None``: a gap)."""

    base: StepSummary | None
    head: StepSummary | None


def _backticks(text: str) -> str:
    return f"`{shown_label(text)}`"


@dataclass(frozen=True, slots=True)
class ToolDivergence:
    """The two runs' tool calls aligned, and the first row where they part (``index``,
    ``None`` when they made the same calls with the same arguments)."""

    rows: tuple[AlignedCall, ...]
    index: int | None
    base_stop: str = "answered"
    head_stop: str = "answered"

    @property
    def base_tools(self) -> tuple[str, ...]:
        return tuple(r.base.name for r in self.rows if r.base is not None)

    @property
    def head_tools(self) -> tuple[str, ...]:
        return tuple(r.head.name for r in self.rows if r.head is not None)

    def sequences(self, code: Callable[[str], str] = _backticks) -> str:
        """Both tool sequences on one line: ``tool calls: base `a`, `b`; head `b```.

        >>> from tnsai_eval.records import StepKind, StepSummary, TrajectorySummary
        >>> base = TrajectorySummary((StepSummary(StepKind.TOOL_CALL, "a"),))
        >>> diverge(base, TrajectorySummary()).sequences()
        'tool calls: base `a`; head (none)'
        """

        def listed(names: tuple[str, ...]) -> str:
            return ", ".join(code(n) for n in names) if names else "(none)"

        return f"tool calls: base {listed(self.base_tools)}; head {listed(self.head_tools)}"

    def describe(self, code: Callable[[str], str] = _backticks) -> str:
        """The first divergence in one sentence; ``code`` shows a name or arguments
        (``code_span`` in Markdown, backticks in a terminal)."""
        if self.index is None:
            same = "head made the same tool calls as base"
            if self.base_stop != self.head_stop:
                same += f" (base stopped: {self.base_stop}, head: {self.head_stop})"
            return same
        row = self.rows[self.index]
        rest = self.rows[self.index :]
        if row.base is not None and row.head is not None:
            if row.base.name == row.head.name:
                return (
                    f"head called {code(row.head.name)} with {code(_arguments(row.head))} "
                    f"where base had {code(_arguments(row.base))}"
                )
            return f"head called {code(row.head.name)} where base called {code(row.base.name)}"
        if row.head is None:
            gap = dict.fromkeys(_leading(rest, base_side=True))
            names = ", ".join(code(n) for n in gap)
            after = next((r.head for r in rest if r.head is not None), None)
            then = (
                f", then called {code(after.name)}"
                if after is not None
                else ", then made no further tool call"
            )
            return f"head skipped {names}{then}"
        added = dict.fromkeys(_leading(rest, base_side=False))
        names = ", ".join(code(n) for n in added)
        before = next((r.base for r in rest if r.base is not None), None)
        where = (
            f", before {code(before.name)}" if before is not None else ", after the last of base"
        )
        return f"head also called {names}{where}"


def _leading(rows: Sequence[AlignedCall], *, base_side: bool) -> list[str]:
    """The names in the run of one-sided rows that opens ``rows`` (a skipped or added block)."""
    out: list[str] = []
    for row in rows:
        mine, other = (row.base, row.head) if base_side else (row.head, row.base)
        if mine is None or other is not None:
            break
        out.append(mine.name)
    return out


def _arguments(step: StepSummary) -> str:
    return step.arguments or "{}"


def diverge(base: TrajectorySummary, head: TrajectorySummary) -> ToolDivergence:
    """The two runs' tool calls aligned on their names, and where they first part."""
    before, after = base.tool_calls, head.tool_calls
    matcher = difflib.SequenceMatcher(
        None, [c.name for c in before], [c.name for c in after], autojunk=False
    )
    rows: list[AlignedCall] = []
    index: int | None = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for b, h in zip(before[i1:i2], after[j1:j2], strict=True):
                if index is None and b.arguments != h.arguments:
                    index = len(rows)
                rows.append(AlignedCall(b, h))
            continue
        if index is None:
            index = len(rows)
        if tag == "replace":
            pairs = zip_longest(before[i1:i2], after[j1:j2])
            rows.extend(AlignedCall(b, h) for b, h in pairs)
        elif tag == "delete":
            rows.extend(AlignedCall(b, None) for b in before[i1:i2])
        else:  # insert
            rows.extend(AlignedCall(None, h) for h in after[j1:j2])
    return ToolDivergence(tuple(rows), index, base.stop_reason.value, head.stop_reason.value)
