"""The ``@norm`` class decorator and how declared norms are read back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tnsai_eval.errors import ConditionError
from tnsai_eval.norms._conditions import ConditionEvaluator
from tnsai_eval.norms._types import NormEntry, NormType, named_error

__all__ = ["declared_norms", "norm"]

_C = TypeVar("_C", bound=type)

# Each decorated class keeps only its *own* norms, in its own __dict__, so that
# decorating a subclass never changes what its parent declares.
_OWN_NORMS = "__tnsai_norms__"
# The builtin, for use inside ``norm``, whose keyword ``type`` (the contract's
# name) shadows it there.
_builtin_type = type


def norm(
    *,
    type: NormType,
    action: str,
    condition: str = "",
    description: str = "",
    priority: int = 0,
) -> Callable[[_C], _C]:
    """Declare a norm on an agent class; stack several for several norms.

    ``condition`` is CEL, compiled here: a condition that is not valid CEL
    raises ``ConditionError`` when the class is decorated, not at the first
    check. (For conditions in another language, decided by a predicate, build
    ``NormEntry`` records and a ``NormEngine`` directly.)

    Norms keep the order in which they are written, top to bottom, even though
    Python applies stacked decorators bottom-up. A subclass inherits its bases'
    norms (bases first, in method resolution order reversed) and adds its own
    after them; its decorators never touch the base class.

    >>> @norm(type=NormType.PROHIBITION, action="delete_user",
    ...       condition="hasConsent == false", description="No deletion without consent")
    ... @norm(type=NormType.OBLIGATION, action="log_access", priority=5)
    ... class SupportAgent:
    ...     pass
    >>> [entry.action for entry in declared_norms(SupportAgent)]
    ['delete_user', 'log_access']
    """
    entry = NormEntry(
        type=type,
        condition=condition,
        action=action,
        description=description,
        priority=priority,
    )
    try:
        ConditionEvaluator(cache_size=1).check(condition)
    except ConditionError as exc:
        raise named_error(entry, exc, "@norm") from None

    def decorate(cls: _C) -> _C:
        if not isinstance(cls, _builtin_type):
            raise TypeError(f"@norm decorates classes, got {cls!r}")
        own: tuple[NormEntry, ...] = cls.__dict__.get(_OWN_NORMS, ())
        # The decorator nearest the class runs first; prepending puts the
        # topmost decorator first, which is the order a reader sees.
        setattr(cls, _OWN_NORMS, (entry, *own))
        return cls

    return decorate


def declared_norms(cls: type) -> tuple[NormEntry, ...]:
    """Every norm declared on ``cls`` and its bases: bases first, each in written order."""
    entries: list[NormEntry] = []
    for klass in reversed(cls.__mro__):
        entries.extend(klass.__dict__.get(_OWN_NORMS, ()))
    return tuple(entries)
