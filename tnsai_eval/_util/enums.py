"""Parsing the library's closed sets (enums) from user input.

Every enum whose members users may name in configuration, on the command
line or in API calls (``FeedbackType``, ``LearningStrategy``, ``NormType``,
``RecordMode``, ``PromptStrategy``) reads names the same way, through
``parse_member`` (their ``parse``, from ``ParsedEnum``): the member itself,
or its value in any case, with surrounding spaces ignored and ``-`` or
spaces between words read as ``_`` (``"chain-of-thought"`` names
``chain_of_thought``). Anything else is a ``ConfigError`` naming the bad
value and the choices.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Self, TypeVar

from tnsai_eval.errors import ConfigError

__all__ = ["ParsedEnum", "parse_member"]

_E = TypeVar("_E", bound=Enum)
_SEPARATORS = re.compile(r"[\s-]+")
_WORDS = re.compile(r"(?<!^)(?=[A-Z])")


def parse_member(cls: type[_E], value: object, *, what: str) -> _E:
    """The member of ``cls`` that ``value`` names; ``what`` names the set in errors.

    >>> from tnsai_eval.norms import NormType
    >>> parse_member(NormType, " Obligation ", what="norm type")
    <NormType.OBLIGATION: 'obligation'>
    >>> parse_member(NormType, "maybe", what="norm type")
    Traceback (most recent call last):
    ...
    tnsai_eval.errors.ConfigError: norm type 'maybe' is not one of \
'obligation', 'prohibition', 'permission' (any case)
    """
    if isinstance(value, cls):
        return value
    choices = ", ".join(repr(member.value) for member in cls)
    if not isinstance(value, str):
        raise ConfigError(
            f"{what} must be a {cls.__name__} or one of {choices}, "
            f"got {type(value).__name__} {value!r}"
        )
    key = _SEPARATORS.sub("_", value.strip()).lower()
    for member in cls:
        if member.value == key:
            return member
    raise ConfigError(f"{what} {value!r} is not one of {choices} (any case)")


class ParsedEnum(Enum):
    """An enum whose ``parse`` reads a member as ``parse_member`` does; errors call
    the set by the class's name in words (``FeedbackType``: "feedback type")."""

    @classmethod
    def parse(cls, value: Self | str) -> Self:
        """The member ``value`` names, in any case (``-`` or spaces for ``_``).

        Raises ``ConfigError`` (a ``ValueError``) naming the value and the
        accepted names for anything else.
        """
        return parse_member(cls, value, what=_WORDS.sub(" ", cls.__name__).lower())
