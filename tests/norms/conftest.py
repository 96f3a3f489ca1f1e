"""Shared norms and the two ways of saying which conditions hold."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from tnsai_eval.norms import NormEngine, NormEntry, NormType

NO_CONSENT = NormEntry(
    NormType.PROHIBITION,
    "hasConsent == false",
    "delete_user",
    "Never delete a user without consent",
)
ADMIN_MAY_DELETE = NormEntry(
    NormType.PERMISSION, "isAdmin == true", "delete_user", "Admins may delete users"
)
LOG = NormEntry(NormType.OBLIGATION, "", "log_access", "Always log access", 1)
NOTIFY = NormEntry(NormType.OBLIGATION, "count > 3", "notify_user", "Notify after 3 requests", 5)
AUDIT = NormEntry(NormType.OBLIGATION, "", "audit", "Audit every session", 5)
CLEANUP = NormEntry(NormType.OBLIGATION, "isAdmin == true", "cleanup", "Admins clean up", 10)
NORMS = (NO_CONSENT, ADMIN_MAY_DELETE, LOG, NOTIFY, AUDIT, CLEANUP)

# Two situations, each described both as a CEL state and as the set of
# condition texts a predicate would call true.
SITUATIONS: dict[str, tuple[Mapping[str, object], frozenset[str]]] = {
    "busy_admin_without_consent": (
        {"hasConsent": False, "isAdmin": True, "count": 5},
        frozenset({"hasConsent == false", "isAdmin == true", "count > 3"}),
    ),
    "quiet_user_with_consent": (
        {"hasConsent": True, "isAdmin": False, "count": 1},
        frozenset(),
    ),
}

Activity = Callable[[str], dict[str, Any]]


@pytest.fixture
def engine() -> NormEngine:
    return NormEngine.of(*NORMS)


@pytest.fixture(params=["predicate", "state"])
def activity(request: pytest.FixtureRequest) -> Activity:
    """``activity(situation)`` gives the keyword arguments for either form."""

    def for_situation(name: str) -> dict[str, Any]:
        state, holding = SITUATIONS[name]
        if request.param == "state":
            return {"state": state}
        return {"predicate": lambda condition: condition in holding}

    return for_situation
