"""The feedback and norm frames of ``tnsai_eval.frames`` (re-exported there)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from tnsai_eval.errors import ConfigError

if TYPE_CHECKING:
    from tnsai_eval.feedback import Feedback, FeedbackStore, LearningResult
    from tnsai_eval.norms import CheckResult

__all__ = [
    "FEEDBACK_COLUMNS",
    "LEARNING_COLUMNS",
    "NORM_CHECK_COLUMNS",
    "feedback_frame",
    "learning_frame",
    "norm_checks",
]

#: ``learning_frame``: ``kind`` is ``rule`` (a prompt adjustment), ``preference``
#: or ``example``; ``position`` is the item's index within its kind.
LEARNING_COLUMNS = ("kind", "position", "text")

#: ``feedback_frame``: ``type`` is the FeedbackType's lowercase name.
FEEDBACK_COLUMNS = ("id", "type", "content", "session_id", "timestamp")

#: ``norm_checks``: one row per violation, and one row with ``allowed=True`` and
#: empty norm fields for a check that found none. ``check`` is the name the
#: check was given, ``action`` the action that broke the norm (for an unmet
#: obligation: the obligated action), ``norm_type`` ``prohibition`` or
#: ``obligation``, ``norm_action`` the norm's action pattern.
NORM_CHECK_COLUMNS = (
    "check",
    "action",
    "allowed",
    "norm_type",
    "norm_action",
    "condition",
    "description",
    "priority",
    "reason",
)


def learning_frame(result: LearningResult) -> pd.DataFrame:
    """What a ``LearningResult`` learned, one row per item (``LEARNING_COLUMNS``).

    The result's ``feedback_analyzed`` count is kept in ``frame.attrs``.
    """
    kinds = (
        ("rule", "prompt_adjustments"),
        ("preference", "preferences"),
        ("example", "good_examples"),
    )
    if not all(hasattr(result, attr) for _, attr in kinds):
        raise ConfigError(f"expected a LearningResult, got {type(result).__name__}")
    rows = [
        (kind, position, str(text))
        for kind, attr in kinds
        for position, text in enumerate(getattr(result, attr))
    ]
    frame = pd.DataFrame(rows, columns=list(LEARNING_COLUMNS)).astype(
        {"kind": object, "position": int, "text": object}
    )
    frame.attrs["feedback_analyzed"] = int(getattr(result, "feedback_analyzed", 0))
    return frame


def feedback_frame(items: FeedbackStore | Iterable[Feedback]) -> pd.DataFrame:
    """Feedback items, one row each (``FEEDBACK_COLUMNS``), oldest first.

    ``items`` is a ``FeedbackStore`` (its ``get_all()``) or an iterable of ``Feedback``.
    """
    get_all = getattr(items, "get_all", None)
    feedback: Iterable[Any] = get_all() if callable(get_all) else items  # type: ignore[assignment]
    rows = []
    for fb in feedback:
        kind = getattr(fb.type, "name", str(fb.type)).lower()
        rows.append((fb.id, kind, fb.content, fb.session_id, fb.timestamp))
    return pd.DataFrame(rows, columns=list(FEEDBACK_COLUMNS))


def norm_checks(
    checks: Mapping[str, CheckResult] | Iterable[tuple[str, CheckResult]],
) -> pd.DataFrame:
    """Norm check results as rows (``NORM_CHECK_COLUMNS``).

    ``checks`` maps a name for each check (the action checked, ``"obligations"``,
    an agent's name...) to its ``CheckResult``, or is a sequence of ``(name,
    CheckResult)`` pairs when a name repeats. Each violation is a row; a check
    without violations is one row with ``allowed=True``, ``action`` set to the
    check's name and empty norm fields.
    """
    pairs = checks.items() if isinstance(checks, Mapping) else checks
    rows: list[tuple[Any, ...]] = []
    for name, result in pairs:
        violations = list(getattr(result, "violations", ()))
        if not violations:
            rows.append((name, name, True, None, None, None, None, None, None))
        for v in violations:
            norm = v.norm
            kind = getattr(norm.type, "name", str(norm.type)).lower()
            rows.append(
                (
                    name,
                    v.action,
                    False,
                    kind,
                    norm.action,
                    norm.condition,
                    norm.description,
                    norm.priority,
                    v.reason,
                )
            )
    return pd.DataFrame(rows, columns=list(NORM_CHECK_COLUMNS))
