"""NormEngine: which norms are active, and which actions break them."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeAlias

from tnsai_eval.errors import ConditionError, ConfigError
from tnsai_eval.norms._conditions import ConditionEvaluator
from tnsai_eval.norms._decorator import declared_norms
from tnsai_eval.norms._types import CheckResult, NormEntry, NormType, NormViolation, named_error

__all__ = ["NormEngine", "Predicate"]

Predicate: TypeAlias = Callable[[str], bool]
"""Decides whether a norm is active, given the text of its (non-blank) condition."""

_VALUE_LIMIT = 60  # characters of a state value quoted in a violation reason


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    # Only ``*`` is special, so action names may contain ``?`` or ``[`` freely
    # (fnmatch would treat those as wildcards too).
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def _matches(pattern: str, action: str) -> bool:
    if "*" not in pattern:
        return pattern == action
    return _glob(pattern).fullmatch(action) is not None


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _VALUE_LIMIT else text[: _VALUE_LIMIT - 3] + "..."


class _Activity:
    """Decides, once per condition within one call, which norms are active and why."""

    def __init__(
        self,
        method: str,
        predicate: Predicate | None,
        state: Mapping[str, object] | None,
        evaluator: ConditionEvaluator,
    ) -> None:
        if (predicate is None) == (state is None):
            given = "both" if predicate is not None else "neither"
            raise TypeError(
                f"{method}() takes exactly one of `predicate` (a callable receiving the "
                f"condition text) or `state=` (a mapping the CEL condition is evaluated "
                f"against); {given} was given"
            )
        # Typed callers cannot get these wrong, but untyped ones (and tests
        # written in a hurry) pass a state dict positionally as the predicate.
        given_predicate: object = predicate
        given_state: object = state
        if given_predicate is not None and not callable(given_predicate):
            hint = " (to evaluate CEL against a mapping, pass state=...)"
            raise TypeError(
                f"{method}(): predicate must be callable, got {type(given_predicate).__name__}"
                + (hint if isinstance(given_predicate, Mapping) else "")
            )
        if given_state is not None and not isinstance(given_state, Mapping):
            raise TypeError(
                f"{method}(): state must be a mapping of names to values, "
                f"got {type(given_state).__name__}"
            )
        self._predicate = predicate
        self._state = state
        self._evaluator = evaluator
        self._held: dict[str, bool] = {}

    def is_active(self, entry: NormEntry) -> bool:
        condition = entry.condition
        if not condition.strip():
            return True
        if condition not in self._held:
            try:
                self._held[condition] = self._decide(condition)
            except ConditionError as exc:
                raise named_error(entry, exc) from None
        return self._held[condition]

    def _decide(self, condition: str) -> bool:
        if self._state is not None:
            return self._evaluator.evaluate(condition, self._state)
        assert self._predicate is not None
        result = self._predicate(condition)
        # A predicate that forgets to return gives None, which would quietly
        # switch every norm off; refuse anything but a real bool.
        if not isinstance(result, bool):
            raise TypeError(
                f"predicate returned {result!r} for condition {condition!r}; expected True or False"
            )
        return result

    def why(self, entry: NormEntry) -> str:
        """Why ``entry`` is active, for a violation's reason."""
        condition = entry.condition
        if not condition.strip():
            return "it always applies (no condition)"
        if self._state is None:
            return f"its condition `{condition}` holds"
        names = sorted(name for name in self._evaluator.names(condition) if name in self._state)
        values = ", ".join(f"{name}={_short(self._state[name])}" for name in names)
        return f"its condition `{condition}` holds" + (f" with {values}" if values else "")


def _action_names(actions: object, *, what: str) -> list[str]:
    # A bare string is iterable too, but its characters are not actions.
    if isinstance(actions, str | bytes) or not isinstance(actions, Iterable):
        raise TypeError(f"{what} must be a collection of action names, got {actions!r}")
    names = list(actions)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must hold action names (str), found {name!r}")
    return names


class NormEngine:
    """Holds norms and checks actions against them.

    Every query takes either ``predicate`` (a callable that receives a norm's
    condition text and says whether it holds) or ``state=`` (a mapping the
    condition is evaluated against as CEL with ``ConditionEvaluator``): exactly
    one of the two. A blank condition is always active. A PERMISSION never
    overrides a PROHIBITION: an action that an active prohibition matches is a
    violation whatever the permissions say. Action names match exactly; ``*``
    in a norm's action matches any run of characters.

    >>> engine = NormEngine.of(
    ...     NormEntry(NormType.PROHIBITION, "hasConsent == false", "delete_user",
    ...               "Never delete a user without consent"),
    ...     NormEntry(NormType.OBLIGATION, "", "log_access", "Always log access"),
    ... )
    >>> engine.check_action("delete_user", state={"hasConsent": False}).is_violation
    True
    >>> engine.check_action("delete_user", state={"hasConsent": True}).is_allowed
    True
    >>> print(engine.check_obligations([], lambda condition: True))
    1 norm violation:
    - obligatory action 'log_access' was not performed: Always log access; \
it always applies (no condition)

    Not thread-safe while norms are being added; queries only read.
    """

    def __init__(
        self, norms: Iterable[NormEntry] = (), *, evaluator: ConditionEvaluator | None = None
    ) -> None:
        self._norms: list[NormEntry] = []
        self._evaluator = evaluator if evaluator is not None else ConditionEvaluator()
        for entry in norms:
            self.add_norm(entry)

    @classmethod
    def of(cls, *entries: NormEntry, evaluator: ConditionEvaluator | None = None) -> NormEngine:
        """An engine holding ``entries``, in that order."""
        return cls(entries, evaluator=evaluator)

    @classmethod
    def from_class(
        cls, agent_class: type | object, *, evaluator: ConditionEvaluator | None = None
    ) -> NormEngine:
        """An engine holding the norms declared with ``@norm`` on a class (or an instance's class).

        Raises ``ConfigError`` when the class declares none: checking against
        no norms at all would let every action pass unnoticed.
        """
        klass = agent_class if isinstance(agent_class, type) else type(agent_class)
        entries = declared_norms(klass)
        if not entries:
            raise ConfigError(
                f"{klass.__qualname__} declares no norms; decorate it with "
                "@norm(type=..., action=...) or build the engine with NormEngine.of(...)"
            )
        return cls(entries, evaluator=evaluator)

    def add_norm(self, entry: NormEntry) -> None:
        """Add ``entry`` after the norms already held."""
        if not isinstance(entry, NormEntry):
            raise TypeError(f"add_norm() takes a NormEntry, got {entry!r}")
        self._norms.append(entry)

    def check_conditions(self) -> None:
        """Compile every norm's condition as CEL now; ``ConditionError`` names the first bad norm.

        For engines used with ``state=``: a bad condition is reported when the
        engine is built rather than at the first check. (Engines used with a
        predicate may hold conditions in any language; do not call this there.)
        """
        for entry in self._norms:
            try:
                self._evaluator.check(entry.condition)
            except ConditionError as exc:
                raise named_error(entry, exc) from None

    def get_all_norms(self) -> list[NormEntry]:
        """Every norm held, in the order added (a copy)."""
        return list(self._norms)

    def __len__(self) -> int:
        return len(self._norms)

    def __iter__(self) -> Iterator[NormEntry]:
        return iter(list(self._norms))

    def __repr__(self) -> str:
        return f"NormEngine({len(self._norms)} norms)"

    def get_active_obligations(
        self, predicate: Predicate | None = None, *, state: Mapping[str, object] | None = None
    ) -> list[NormEntry]:
        """Active obligations, highest priority first; equal priorities in declaration order."""
        activity = _Activity("get_active_obligations", predicate, state, self._evaluator)
        return self._active(NormType.OBLIGATION, activity)

    def get_active_prohibitions(
        self, predicate: Predicate | None = None, *, state: Mapping[str, object] | None = None
    ) -> list[NormEntry]:
        """Active prohibitions, ordered like the obligations (by priority, then declaration)."""
        activity = _Activity("get_active_prohibitions", predicate, state, self._evaluator)
        return self._active(NormType.PROHIBITION, activity)

    def get_active_permissions(
        self, predicate: Predicate | None = None, *, state: Mapping[str, object] | None = None
    ) -> list[NormEntry]:
        """Active permissions, ordered like the obligations (by priority, then declaration)."""
        activity = _Activity("get_active_permissions", predicate, state, self._evaluator)
        return self._active(NormType.PERMISSION, activity)

    def check_action(
        self,
        action: str,
        predicate: Predicate | None = None,
        *,
        state: Mapping[str, object] | None = None,
    ) -> CheckResult:
        """Whether performing ``action`` breaks an active prohibition."""
        if not isinstance(action, str):
            raise TypeError(f"check_action(): action must be an action name, got {action!r}")
        activity = _Activity("check_action", predicate, state, self._evaluator)
        return CheckResult(tuple(self._prohibited([action], activity)))

    def check_obligations(
        self,
        performed_actions: Iterable[str],
        predicate: Predicate | None = None,
        *,
        state: Mapping[str, object] | None = None,
    ) -> CheckResult:
        """Which active obligations ``performed_actions`` leaves unmet (highest priority first)."""
        performed = _action_names(performed_actions, what="performed_actions")
        activity = _Activity("check_obligations", predicate, state, self._evaluator)
        return CheckResult(tuple(self._unmet(performed, activity)))

    def check_agent(
        self,
        agent: object,
        predicate: Predicate | None = None,
        *,
        state: Mapping[str, object] | None = None,
    ) -> CheckResult:
        """Check what an agent did: each recorded action against the active
        prohibitions, then the whole record against the active obligations.

        ``agent`` is anything with an ``actions`` attribute listing action names
        in the order performed, such as ``tnsai_eval.agents.Agent`` (whose
        ``actions`` are the tools it called). Prohibition violations come first,
        one per offending call in call order, then unmet obligations by
        priority. ``str(result)`` is written to serve as a test-failure message.
        """
        if not hasattr(agent, "actions"):
            raise TypeError(
                f"check_agent() needs an object with an `actions` attribute (the names of "
                f"the actions it performed), got {type(agent).__name__}"
            )
        performed = _action_names(agent.actions, what=f"{type(agent).__name__}.actions")
        activity = _Activity("check_agent", predicate, state, self._evaluator)
        violations = self._prohibited(performed, activity) + self._unmet(performed, activity)
        return CheckResult(tuple(violations))

    def _active(self, norm_type: NormType, activity: _Activity) -> list[NormEntry]:
        # sorted() is stable, so equal priorities keep declaration order.
        return sorted(
            (e for e in self._norms if e.type is norm_type and activity.is_active(e)),
            key=lambda entry: -entry.priority,
        )

    def _prohibited(self, actions: list[str], activity: _Activity) -> list[NormViolation]:
        # Permissions are deliberately not consulted: they never lift a prohibition.
        prohibitions = self._active(NormType.PROHIBITION, activity)
        violations: list[NormViolation] = []
        for action in actions:
            for entry in prohibitions:
                if _matches(entry.action, action):
                    covered = "" if entry.action == action else f" (by {entry.action!r})"
                    reason = (
                        f"action {action!r} is prohibited{covered}: {entry.label}; "
                        f"{activity.why(entry)}"
                    )
                    violations.append(NormViolation(entry, action, reason))
        return violations

    def _unmet(self, performed: list[str], activity: _Activity) -> list[NormViolation]:
        violations: list[NormViolation] = []
        for entry in self._active(NormType.OBLIGATION, activity):
            if not any(_matches(entry.action, action) for action in performed):
                reason = (
                    f"obligatory action {entry.action!r} was not performed: {entry.label}; "
                    f"{activity.why(entry)}"
                )
                violations.append(NormViolation(entry, entry.action, reason))
        return violations
