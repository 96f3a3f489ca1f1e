"""How an ``evaluate_prompt`` failure reads; the scoring itself is the core's.

``evaluate_prompt`` loads cases with ``tnsai_eval.datasets.load_cases`` and
scores them with ``tnsai_eval.optimizer.score_prompt`` (the optimizer's engine),
so a score here means what it means there. What the plugin adds is only the
test verdict and these messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tnsai_eval.reports import format_table

if TYPE_CHECKING:
    from tnsai_eval.optimizer import CaseScore, PromptEvaluation

__all__ = ["error_message", "excerpt", "failure_message"]


def excerpt(text: str, limit: int = 50) -> str:
    """``text`` on one line, cut to ``limit`` characters with "..." when longer."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def failure_message(result: PromptEvaluation, min_score: float, *, limit: int = 5) -> str:
    """Why the evaluation scored below ``min_score``, with its worst cases."""
    shown = min(limit, len(result.cases))
    return "\n".join(
        [
            f"prompt scored {result.mean_score:.3f} < min_score {min_score:g} "
            f"over {len(result.cases)} case(s)",
            f"worst {shown}:",
            _table(result.worst(limit)),
        ]
    )


def error_message(result: PromptEvaluation) -> str:
    """Which cases failed to run, and why (each error names its exception type)."""
    errors = result.errors
    lines = [f"{len(errors)} of {len(result.cases)} case(s) failed to run"]
    lines.extend(f"  - {c.input[:60]!r}: {c.error}" for c in errors)
    return "\n".join(lines)


def _table(cases: Sequence[CaseScore]) -> str:
    rows = [
        (
            excerpt(c.input),
            excerpt(c.expected),
            excerpt(c.output if c.output is not None else f"<error: {c.error}>"),
            "-" if c.score is None else f"{c.score:.3f}",
        )
        for c in cases
    ]
    return format_table(("input", "expected", "output", "score"), rows, indent=2)
