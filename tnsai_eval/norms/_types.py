"""The records of the norms layer: norm types, norm entries, violations, results."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from tnsai_eval._util.enums import ParsedEnum
from tnsai_eval.errors import ConditionError, ConfigError

__all__ = ["CheckResult", "NormEntry", "NormType", "NormViolation", "named_error"]


class NormType(ParsedEnum):
    """What a norm says about its action (``parse`` reads it from a name in any case).

    A PERMISSION documents that an action is explicitly allowed; it never
    cancels an active PROHIBITION of the same action (deny wins, as in most
    policy languages), so a permission cannot open a hole in a prohibition.
    """

    OBLIGATION = "obligation"
    PROHIBITION = "prohibition"
    PERMISSION = "permission"


@dataclass(frozen=True, slots=True)
class NormEntry:
    """One norm: an action that is obligatory, prohibited or permitted under a condition.

    ``condition`` is a CEL expression over the agent's state (see
    ``ConditionEvaluator``) or any text a custom predicate understands; a blank
    condition means the norm is always active. ``action`` is an action name,
    matched exactly; a ``*`` in it matches any run of characters
    (``"delete_*"`` covers ``"delete_user"``), and no other character is special.
    Among obligations, a higher ``priority`` comes first.

    The fields keep the order of the original module, so ``action`` follows
    ``condition``; its default only exists for that reason and a blank action is
    refused.

    >>> entry = NormEntry(NormType.PROHIBITION, "hasConsent == false", "delete_user",
    ...                   "Never delete a user without consent")
    >>> entry.action, entry.priority
    ('delete_user', 0)
    >>> NormEntry(NormType.OBLIGATION, action="log_access", priority=5).condition
    ''
    """

    type: NormType
    condition: str = ""
    action: str = ""
    description: str = ""
    priority: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.type, NormType):
            raise ConfigError(
                f"NormEntry type must be a NormType (e.g. NormType.PROHIBITION), got {self.type!r}"
            )
        if not isinstance(self.action, str) or not self.action.strip():
            raise ConfigError(
                f"NormEntry action must be a non-blank action name, got {self.action!r}"
            )
        if not isinstance(self.condition, str):
            raise ConfigError(f"NormEntry condition must be a str, got {self.condition!r}")
        if not isinstance(self.description, str):
            raise ConfigError(f"NormEntry description must be a str, got {self.description!r}")
        # bool is an int subclass; True as a priority is a mistake, not a number.
        if not isinstance(self.priority, int) or isinstance(self.priority, bool):
            raise ConfigError(f"NormEntry priority must be an int, got {self.priority!r}")

    @property
    def label(self) -> str:
        """The description, or a generated one when the norm has none."""
        if self.description.strip():
            return self.description
        return f"{self.type.name.lower()} of {self.action!r}"


@dataclass(frozen=True, slots=True)
class NormViolation:
    """A norm that an action (or a missing action) broke.

    ``action`` is the action that was performed against a prohibition, or the
    obligatory action that was not performed. ``reason`` is a sentence meant to
    be read in a test failure: it names the action, the norm's description and
    the condition that made the norm active.
    """

    norm: NormEntry
    action: str
    reason: str
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of a norm check: every violation found, in the order found.

    >>> CheckResult().is_allowed
    True
    >>> str(CheckResult())
    'no norm violations'
    """

    violations: tuple[NormViolation, ...] = ()

    def __post_init__(self) -> None:
        # Accept any iterable (a list is the common case) but keep the record immutable.
        object.__setattr__(self, "violations", tuple(self.violations))

    @property
    def is_violation(self) -> bool:
        """True when at least one norm was violated."""
        return bool(self.violations)

    @property
    def is_allowed(self) -> bool:
        """True when no norm was violated."""
        return not self.violations

    def __str__(self) -> str:
        if not self.violations:
            return "no norm violations"
        count = len(self.violations)
        noun = "violation" if count == 1 else "violations"
        lines = [f"{count} norm {noun}:"]
        lines.extend(f"- {violation.reason}" for violation in self.violations)
        return "\n".join(lines)


def named_error(entry: NormEntry, exc: ConditionError, what: str = "norm") -> ConditionError:
    """``exc`` naming the norm whose condition it is about: a report (or a class) of
    many norms must say which one is at fault."""
    return ConditionError(
        f"{what} {entry.label!r} ({entry.type.name.lower()} of {entry.action!r}): {exc}",
        condition=entry.condition,
    )
