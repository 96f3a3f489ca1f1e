"""NormEngine.check_agent on anything with `.actions`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from tests.norms.conftest import AUDIT, CLEANUP, LOG, NO_CONSENT, NOTIFY, Activity
from tnsai_eval.norms import NormEngine, NormEntry, NormType


@dataclass
class Recorded:
    actions: Sequence[str]


def test_prohibited_calls_then_unmet_obligations(engine: NormEngine, activity: Activity) -> None:
    agent = Recorded(["lookup_user", "delete_user", "log_access", "delete_user"])
    result = engine.check_agent(agent, **activity("busy_admin_without_consent"))
    # One violation per offending call, in call order, then obligations by priority.
    assert [(v.norm, v.action) for v in result.violations] == [
        (NO_CONSENT, "delete_user"),
        (NO_CONSENT, "delete_user"),
        (CLEANUP, "cleanup"),
        (NOTIFY, "notify_user"),
        (AUDIT, "audit"),
    ]
    assert LOG not in [v.norm for v in result.violations]


def test_compliant_agent(engine: NormEngine, activity: Activity) -> None:
    agent = Recorded(("audit", "log_access", "delete_user"))
    assert engine.check_agent(agent, **activity("quiet_user_with_consent")).is_allowed


def test_failure_message_reads_as_a_test_failure(engine: NormEngine) -> None:
    agent = Recorded(["delete_user", "log_access", "audit"])
    result = engine.check_agent(agent, state={"hasConsent": False, "isAdmin": False, "count": 4})
    assert str(result) == "\n".join(
        [
            "2 norm violations:",
            "- action 'delete_user' is prohibited: Never delete a user without consent; "
            "its condition `hasConsent == false` holds with hasConsent=False",
            "- obligatory action 'notify_user' was not performed: Notify after 3 requests; "
            "its condition `count > 3` holds with count=4",
        ]
    )


def test_long_state_values_are_shortened_in_reasons() -> None:
    engine = NormEngine.of(NormEntry(NormType.OBLIGATION, "size(note) > 0", "reply"))
    result = engine.check_agent(Recorded([]), state={"note": "x" * 500})
    reason = result.violations[0].reason
    assert "note='xxxx" in reason
    assert reason.endswith("...")
    assert len(reason) < 200


def test_agent_without_actions_is_a_type_error(engine: NormEngine) -> None:
    with pytest.raises(TypeError, match=r"`actions` attribute.*got object"):
        engine.check_agent(object(), state={})


@pytest.mark.parametrize("actions", ["delete_user", None, ["ok", 3]])
def test_actions_must_be_names(engine: NormEngine, actions: object) -> None:
    with pytest.raises(TypeError, match=r"Recorded\.actions must"):
        engine.check_agent(Recorded(actions), state={})  # type: ignore[arg-type]
