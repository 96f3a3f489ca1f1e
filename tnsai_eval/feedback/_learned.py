"""The ``# Learned Behavior`` block an agent's system prompt gains from its feedback."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tnsai_eval.feedback._types import Feedback, FeedbackType

__all__ = ["DEFAULT_MAX_LEARNED_ITEMS", "learned_behavior_section", "render_learned"]


# How many items each section of the learned prompt keeps (the most recent distinct ones).
DEFAULT_MAX_LEARNED_ITEMS = 20


def learned_behavior_section(
    feedback: Iterable[Feedback], *, max_items: int = DEFAULT_MAX_LEARNED_ITEMS
) -> str:
    """The ``# Learned Behavior`` block for ``feedback`` ('' when it adds nothing).

    CORRECTION content becomes ``## Rules``, PREFERENCE content ``## Preferences``,
    each item as given. Each section keeps the ``max_items`` most recent
    distinct texts (a text given twice is kept once, at its newest position),
    oldest first, so the prompt stays bounded however much feedback arrives.
    A subsection with no items is left out, and so is the whole block when
    both are empty: POSITIVE and NEGATIVE feedback (tool calls among them)
    never reach the prompt.

    >>> from tnsai_eval.feedback import Feedback
    >>> items = [Feedback.correction(t) for t in ("a", "b", "a", "c")]
    >>> print(learned_behavior_section(items, max_items=2))
    # Learned Behavior
    <BLANKLINE>
    ## Rules
    - a
    - c
    """
    newest_first = list(feedback)[::-1]
    rules = recent_distinct(
        (fb.content for fb in newest_first if fb.type is FeedbackType.CORRECTION), max_items
    )
    preferences = recent_distinct(
        (fb.content for fb in newest_first if fb.type is FeedbackType.PREFERENCE), max_items
    )
    return render_learned(rules, preferences)


def recent_distinct(newest_first: Iterable[str], limit: int) -> list[str]:
    """The last ``limit`` distinct texts, oldest first; reads from the newest and stops early."""
    kept: dict[str, None] = {}
    for text in newest_first:
        if len(kept) >= limit:
            break
        kept.setdefault(text, None)
    return list(reversed(kept))


def render_learned(rules: Sequence[str], preferences: Sequence[str]) -> str:
    """The block for these rules and preferences, as given ('' for none of either).

    >>> render_learned([], ["Be brief."])
    '# Learned Behavior\\n\\n## Preferences\\n- Be brief.'
    """
    parts = []
    for title, lines in (("## Rules", rules), ("## Preferences", preferences)):
        if lines:
            parts.append(title + "\n" + "\n".join(f"- {line}" for line in lines))
    if not parts:
        return ""
    return "# Learned Behavior\n\n" + "\n\n".join(parts)
