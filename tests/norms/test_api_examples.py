"""The Norms section of API.md, translated to Python, one example per statement."""

from __future__ import annotations

import re

import pytest

from tnsai_eval.errors import ConditionError
from tnsai_eval.norms import (
    CheckResult,
    ConditionEvaluator,
    NormEngine,
    NormEntry,
    NormType,
    NormViolation,
    norm,
)


def test_norm_types() -> None:
    assert {NormType.OBLIGATION, NormType.PROHIBITION, NormType.PERMISSION} == set(NormType)


def test_norm_entry_field_order_and_defaults() -> None:
    entry = NormEntry(NormType.PROHIBITION, "hasConsent == false", "share_data", "No sharing", 2)
    assert entry.condition == "hasConsent == false"
    assert entry.action == "share_data"
    default = NormEntry(NormType.OBLIGATION, action="greet")
    assert (default.condition, default.description, default.priority) == ("", "", 0)


@norm(type=NormType.OBLIGATION, action="verify_identity", priority=10, description="Verify first")
@norm(
    type=NormType.PROHIBITION,
    action="share_data",
    condition="hasConsent == false && count > 3",
    description="Do not share data without consent after repeated requests",
)
@norm(type=NormType.PERMISSION, action="share_data", condition="isAdmin == true")
@norm(type=NormType.OBLIGATION, action="log_request", priority=1)
class PrivacyAgent:
    def __init__(self) -> None:
        self.actions: list[str] = []


def test_repeatable_order_preserving_decorator() -> None:
    engine = NormEngine.from_class(PrivacyAgent)
    assert [(n.type, n.action) for n in engine.get_all_norms()] == [
        (NormType.OBLIGATION, "verify_identity"),
        (NormType.PROHIBITION, "share_data"),
        (NormType.PERMISSION, "share_data"),
        (NormType.OBLIGATION, "log_request"),
    ]


def test_of_and_add_norm() -> None:
    engine = NormEngine.of(NormEntry(NormType.PROHIBITION, action="rm"))
    engine.add_norm(NormEntry(NormType.OBLIGATION, action="backup"))
    assert [n.action for n in engine.get_all_norms()] == ["rm", "backup"]


def test_predicate_receives_the_condition_text_and_blank_is_always_active() -> None:
    engine = NormEngine.from_class(PrivacyAgent)
    never = engine.get_active_obligations(lambda condition: False)
    assert [n.action for n in never] == ["verify_identity", "log_request"]  # both blank


def test_active_obligations_highest_priority_first() -> None:
    engine = NormEngine.from_class(PrivacyAgent)
    assert [n.priority for n in engine.get_active_obligations(state={})] == [10, 1]


def test_check_action_and_obligations_in_both_forms() -> None:
    engine = NormEngine.from_class(PrivacyAgent)
    state = {"hasConsent": False, "count": 5, "isAdmin": True}
    by_state = engine.check_action("share_data", state=state)
    by_predicate = engine.check_action("share_data", lambda c: c != "isAdmin == true")
    for result in (by_state, by_predicate):
        assert isinstance(result, CheckResult)
        assert result.is_violation
        assert not result.is_allowed
        violation = result.violations[0]
        assert isinstance(violation, NormViolation)
        assert violation.action == "share_data"
        assert "Do not share data without consent" in violation.reason
        assert violation.timestamp.tzinfo is not None

    unmet = engine.check_obligations(["log_request"], state=state)
    assert [v.action for v in unmet.violations] == ["verify_identity"]
    assert engine.check_obligations(["verify_identity", "log_request"], state=state).is_allowed


def test_permission_never_overrides_prohibition() -> None:
    engine = NormEngine.from_class(PrivacyAgent)
    state = {"hasConsent": False, "count": 5, "isAdmin": True}
    assert [n.action for n in engine.get_active_permissions(state=state)] == ["share_data"]
    assert [n.action for n in engine.get_active_prohibitions(state=state)] == ["share_data"]
    assert engine.check_action("share_data", state=state).is_violation


def test_condition_evaluator() -> None:
    evaluator = ConditionEvaluator()
    assert evaluator.evaluate("hasConsent == false && count > 3", {"hasConsent": False, "count": 4})
    assert evaluator.evaluate("", {})
    for bad in ("hasConsent == ", "undefinedName == 1"):
        with pytest.raises(ConditionError, match=re.escape(repr(bad))):
            evaluator.evaluate(bad, {"hasConsent": False})


def test_check_agent() -> None:
    agent = PrivacyAgent()
    agent.actions += ["verify_identity", "share_data"]
    engine = NormEngine.from_class(agent)
    result = engine.check_agent(agent, state={"hasConsent": False, "count": 4, "isAdmin": False})
    assert [v.action for v in result.violations] == ["share_data", "log_request"]
