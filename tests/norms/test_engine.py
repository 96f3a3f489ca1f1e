"""NormEngine: every query in both the predicate and the state= form."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.norms.conftest import (
    ADMIN_MAY_DELETE,
    AUDIT,
    CLEANUP,
    LOG,
    NO_CONSENT,
    NORMS,
    NOTIFY,
    Activity,
)
from tnsai_eval.errors import ConditionError
from tnsai_eval.norms import CheckResult, NormEngine, NormEntry, NormType

BUSY = "busy_admin_without_consent"
QUIET = "quiet_user_with_consent"


def test_of_and_add_norm_keep_insertion_order() -> None:
    engine = NormEngine.of(NO_CONSENT, LOG)
    engine.add_norm(CLEANUP)
    assert engine.get_all_norms() == [NO_CONSENT, LOG, CLEANUP]
    assert len(engine) == 3
    assert list(engine) == [NO_CONSENT, LOG, CLEANUP]


def test_get_all_norms_returns_a_copy(engine: NormEngine) -> None:
    engine.get_all_norms().clear()
    assert engine.get_all_norms() == list(NORMS)


def test_add_norm_refuses_other_objects(engine: NormEngine) -> None:
    with pytest.raises(TypeError, match="NormEntry"):
        engine.add_norm("delete_user")  # type: ignore[arg-type]


def test_active_obligations_by_priority_ties_in_declaration_order(
    engine: NormEngine, activity: Activity
) -> None:
    # NOTIFY and AUDIT share priority 5: NOTIFY was declared first.
    assert engine.get_active_obligations(**activity(BUSY)) == [CLEANUP, NOTIFY, AUDIT, LOG]
    assert engine.get_active_obligations(**activity(QUIET)) == [AUDIT, LOG]


def test_ties_follow_declaration_order_whichever_comes_first() -> None:
    first = NormEntry(NormType.OBLIGATION, action="b", priority=2)
    second = NormEntry(NormType.OBLIGATION, action="a", priority=2)
    assert NormEngine.of(first, second).get_active_obligations(state={}) == [first, second]
    assert NormEngine.of(second, first).get_active_obligations(state={}) == [second, first]


def test_active_prohibitions_and_permissions(engine: NormEngine, activity: Activity) -> None:
    assert engine.get_active_prohibitions(**activity(BUSY)) == [NO_CONSENT]
    assert engine.get_active_permissions(**activity(BUSY)) == [ADMIN_MAY_DELETE]
    assert engine.get_active_prohibitions(**activity(QUIET)) == []
    assert engine.get_active_permissions(**activity(QUIET)) == []


def test_check_action(engine: NormEngine, activity: Activity) -> None:
    blocked = engine.check_action("delete_user", **activity(BUSY))
    assert blocked.is_violation
    [violation] = blocked.violations
    assert violation.norm == NO_CONSENT
    assert violation.action == "delete_user"
    assert "Never delete a user without consent" in violation.reason
    assert "hasConsent == false" in violation.reason

    assert engine.check_action("delete_user", **activity(QUIET)).is_allowed
    assert engine.check_action("read_user", **activity(BUSY)).is_allowed


def test_permission_never_overrides_prohibition(engine: NormEngine, activity: Activity) -> None:
    # In BUSY both the prohibition and the admin permission are active.
    assert engine.get_active_permissions(**activity(BUSY)) == [ADMIN_MAY_DELETE]
    assert engine.check_action("delete_user", **activity(BUSY)).is_violation
    # Declaring the permission first, with a higher priority, changes nothing.
    eager = NormEntry(NormType.PERMISSION, "", "delete_user", "Always allowed", 100)
    reordered = NormEngine.of(eager, NO_CONSENT)
    assert reordered.check_action("delete_user", **activity(BUSY)).is_violation


def test_check_obligations(engine: NormEngine, activity: Activity) -> None:
    result = engine.check_obligations(["log_access", "notify_user"], **activity(BUSY))
    assert [v.norm for v in result.violations] == [CLEANUP, AUDIT]
    assert [v.action for v in result.violations] == ["cleanup", "audit"]
    assert "Admins clean up" in result.violations[0].reason
    assert "was not performed" in result.violations[0].reason

    done = engine.check_obligations(
        ("cleanup", "notify_user", "audit", "log_access"), **activity(BUSY)
    )
    assert done.is_allowed
    # Only the unconditional obligations apply when nothing else holds.
    assert engine.check_obligations({"audit", "log_access"}, **activity(QUIET)).is_allowed


def test_positional_predicate_as_in_the_contract(engine: NormEngine) -> None:
    always: Callable[[str], bool] = lambda condition: True  # noqa: E731
    assert engine.check_action("delete_user", always).is_violation
    assert engine.check_obligations([], always).is_violation
    assert engine.get_active_obligations(always)[0] == CLEANUP
    assert engine.get_active_prohibitions(always) == [NO_CONSENT]
    assert engine.get_active_permissions(always) == [ADMIN_MAY_DELETE]


def test_predicate_receives_condition_text_never_blank() -> None:
    seen: list[str] = []

    def predicate(condition: str) -> bool:
        seen.append(condition)
        return False

    engine = NormEngine.of(NO_CONSENT, LOG, NOTIFY, AUDIT)
    assert engine.get_active_obligations(predicate) == [AUDIT, LOG]
    assert seen == ["count > 3"]


def test_predicate_may_use_any_condition_language() -> None:
    entry = NormEntry(NormType.PROHIBITION, "the user is a minor", "sell_alcohol")
    engine = NormEngine.of(entry)
    assert engine.check_action("sell_alcohol", lambda c: c == "the user is a minor").is_violation


def test_each_condition_is_decided_once_per_call() -> None:
    calls: list[str] = []

    def predicate(condition: str) -> bool:
        calls.append(condition)
        return True

    shared = "x == 1"
    engine = NormEngine.of(
        NormEntry(NormType.PROHIBITION, shared, "a"),
        NormEntry(NormType.PROHIBITION, shared, "b"),
        NormEntry(NormType.OBLIGATION, shared, "c"),
    )

    class Agent:
        actions = ("a", "b", "a")

    assert len(engine.check_agent(Agent(), predicate).violations) == 4
    assert calls == [shared]


QUERIES: list[tuple[str, Callable[..., Any]]] = [
    ("check_action", lambda e, **kw: e.check_action("delete_user", **kw)),
    ("check_obligations", lambda e, **kw: e.check_obligations([], **kw)),
    ("get_active_obligations", lambda e, **kw: e.get_active_obligations(**kw)),
    ("get_active_prohibitions", lambda e, **kw: e.get_active_prohibitions(**kw)),
    ("get_active_permissions", lambda e, **kw: e.get_active_permissions(**kw)),
    ("check_agent", lambda e, **kw: e.check_agent(_Recorded(["x"]), **kw)),
]


class _Recorded:
    def __init__(self, actions: Sequence[str]) -> None:
        self.actions = actions


@pytest.mark.parametrize(("name", "query"), QUERIES)
def test_exactly_one_of_predicate_or_state(
    engine: NormEngine, name: str, query: Callable[..., Any]
) -> None:
    with pytest.raises(TypeError, match=rf"{name}\(\) takes exactly one of .*neither"):
        query(engine)
    with pytest.raises(TypeError, match=rf"{name}\(\) takes exactly one of .*both"):
        query(engine, predicate=lambda c: True, state={})


@pytest.mark.parametrize(("name", "query"), QUERIES)
def test_state_dict_passed_as_predicate_gets_a_hint(
    engine: NormEngine, name: str, query: Callable[..., Any]
) -> None:
    with pytest.raises(TypeError, match=r"predicate must be callable.*pass state="):
        query(engine, predicate={"hasConsent": False})


def test_state_must_be_a_mapping(engine: NormEngine) -> None:
    with pytest.raises(TypeError, match=r"state must be a mapping.*list"):
        engine.check_action("delete_user", state=[("hasConsent", False)])  # type: ignore[arg-type]


def test_predicate_must_return_a_bool(engine: NormEngine) -> None:
    with pytest.raises(TypeError, match=r"returned None for condition 'hasConsent == false'"):
        engine.check_action("delete_user", lambda condition: None)  # type: ignore[arg-type,return-value]


def test_broken_condition_raises_instead_of_disabling_the_norm() -> None:
    engine = NormEngine.of(NormEntry(NormType.PROHIBITION, "hasConsnt == false", "delete_user"))
    with pytest.raises(ConditionError, match="unknown name 'hasConsnt'") as caught:
        engine.check_action("delete_user", state={"hasConsent": False})
    assert caught.value.condition == "hasConsnt == false"


def test_performed_actions_must_not_be_a_bare_string(engine: NormEngine) -> None:
    with pytest.raises(TypeError, match="collection of action names"):
        engine.check_obligations("log_access", state={})


def test_action_must_be_a_string(engine: NormEngine) -> None:
    with pytest.raises(TypeError, match="action name"):
        engine.check_action(None, state={})  # type: ignore[arg-type]


def test_glob_actions() -> None:
    no_deletes = NormEntry(NormType.PROHIBITION, "", "delete_*", "Nothing is deleted")
    log_something = NormEntry(NormType.OBLIGATION, "", "log_*", "Log something")
    literal = NormEntry(NormType.PROHIBITION, "", "what?[x]", "Literal name")
    engine = NormEngine.of(no_deletes, log_something, literal)

    result = engine.check_action("delete_user", state={})
    assert result.is_violation
    assert "'delete_user' is prohibited (by 'delete_*')" in result.violations[0].reason
    assert engine.check_action("undelete_user", state={}).is_allowed
    assert engine.check_obligations(["log_access"], state={}).is_allowed
    assert engine.check_obligations(["catalog_access"], state={}).is_violation
    # Only * is special: ? and [ ] match themselves.
    assert engine.check_action("what?[x]", state={}).is_violation
    assert engine.check_action("whatx", state={}).is_allowed


def test_reason_names_the_state_values_that_made_the_norm_active(engine: NormEngine) -> None:
    result = engine.check_action("delete_user", state={"hasConsent": False, "count": 9})
    assert result.violations[0].reason == (
        "action 'delete_user' is prohibited: Never delete a user without consent; "
        "its condition `hasConsent == false` holds with hasConsent=False"
    )


def test_unconditional_reason_says_so() -> None:
    engine = NormEngine.of(NormEntry(NormType.PROHIBITION, action="rm_rf"))
    result: CheckResult = engine.check_action("rm_rf", lambda c: False)
    assert result.violations[0].reason == (
        "action 'rm_rf' is prohibited: prohibition of 'rm_rf'; it always applies (no condition)"
    )


def test_engine_uses_the_given_evaluator() -> None:
    from tnsai_eval.norms import ConditionEvaluator

    evaluator = ConditionEvaluator(cache_size=4)
    engine = NormEngine.of(NO_CONSENT, evaluator=evaluator)
    engine.check_action("delete_user", state={"hasConsent": True})
    engine.check_action("delete_user", state={"hasConsent": False})
    assert evaluator.cache_info().misses == 1
    assert evaluator.cache_info().hits >= 1
