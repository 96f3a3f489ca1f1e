"""The norm_check and refine_until markers, run inside pytester (in process)."""

from __future__ import annotations

import pytest

NORM_TESTS = """
import pytest
from pytest_plugin import norm_check
from tnsai_eval.feedback import Agent
from tnsai_eval.norms import NormEngine, NormEntry, NormType, norm


@norm(type=NormType.PROHIBITION, action="delete_user", condition="hasConsent == false",
      description="Never delete a user without consent")
@norm(type=NormType.OBLIGATION, action="log_access", description="Every session is logged")
class DataAgent(Agent):
    pass


def delete_user(user_id: str) -> str:
    return f"deleted {user_id}"


def log_access() -> str:
    return "logged"


TOOLS = [delete_user, log_access]


@norm_check(DataAgent, state={"hasConsent": False})
def test_violation_fails_with_description_action_and_condition(agent):
    bot = agent("You manage user data.", TOOLS)
    assert type(bot) is DataAgent
    bot.call_tool("log_access")
    bot.call_tool("delete_user", user_id="u1")


@norm_check(DataAgent, state={"hasConsent": True})
def test_allowed_when_the_condition_does_not_hold(agent):
    bot = agent("You manage user data.", TOOLS)
    bot.call_tool("log_access")
    bot.call_tool("delete_user", user_id="u1")


@norm_check(DataAgent, state={"hasConsent": True})
def test_unmet_obligation_fails(agent):
    agent("", TOOLS).call_tool("delete_user", user_id="u1")


ENGINE = NormEngine.of(NormEntry(NormType.PROHIBITION, "", "send_email", "No email in tests"))


@norm_check(ENGINE)
def test_engine_and_recorded_actions(norm_actions, norm_engine):
    assert len(norm_engine) == 1
    norm_actions.record("send_email")


@norm_check([NormEntry(NormType.PROHIBITION, "vip", "refund", "No refunds for VIPs")])
def test_entries_and_state_updated_by_the_test(norm_actions):
    norm_actions.state["vip"] = True
    norm_actions.record("refund")


@pytest.mark.norm_check(ENGINE, state={"x": 1})
def test_plain_pytest_mark_works(norm_actions):
    norm_actions.record("read")


@norm_check(ENGINE)
def test_nothing_to_check():
    pass


@norm_check("DataAgent")
def test_bad_target(norm_actions):
    pass


@pytest.mark.norm_check(ENGINE, state=["hasConsent"])
def test_bad_state(norm_actions):
    pass


@pytest.mark.norm_check(ENGINE, stat={"hasConsent": True})
def test_misspelt_state(norm_actions):
    pass
"""


def test_norm_check(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\nfrom tnsai_eval.testing import ScriptedLLM\n\n"
        "@pytest.fixture(scope='session')\ndef llm():\n    return ScriptedLLM(default='ok')\n"
    )
    pytester.makepyfile(test_norms=NORM_TESTS)
    result = pytester.runpytest_inprocess("--strict-markers", "-rA")
    result.assert_outcomes(passed=2, failed=5, errors=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*test_violation_fails_with_description_action_and_condition*",
            "*1 norm violation:*",
            "*action 'delete_user' is prohibited: Never delete a user without consent;*"
            "hasConsent == false*hasConsent=False*",
        ]
    )
    assert "Every session is logged" in out  # the unmet obligation
    # The first line (all that pytest's short summary shows) names what was
    # broken, rather than just "1 norm violation:".
    assert "@norm_check: norms broken on delete_user\n1 norm violation:" in out
    assert "@norm_check: norms broken on log_access\n" in out
    assert "No email in tests" in out
    assert "No refunds for VIPs; its condition `vip` holds with vip=True" in out
    assert "During handling" not in out
    assert "made no agent with the `agent` fixture and recorded no actions" in out
    assert "@norm_check: 'DataAgent' is not valid; expected an agent class" in out
    assert "@norm_check: state=['hasConsent'] is not valid; expected a mapping" in out
    assert "@norm_check: unknown argument(s) stat (did you mean state?)" in out
    for passing in (
        "test_allowed_when_the_condition_does_not_hold",
        "test_plain_pytest_mark_works",
    ):
        assert f"PASSED test_norms.py::{passing}" in out


REFINE_TESTS = """
import pytest
from pytest_plugin import refine_until
from tnsai_eval.refinement import StopHook


@refine_until(task="Return the record as JSON", valid_json=True, must_contain='"id"')
def test_succeeds(refine):
    result = refine("id: 7")
    assert result.final_output == '{"id": 7}'


@refine_until(task="Say which city", must_contain="Madrid", max_iterations=2)
def test_fails_with_iterations(refine):
    refine("capital of Spain?")


@refine_until(task="Say which city", must_contain="Madrid", max_iterations=3)
def test_check_false_returns_the_result(refine):
    result = refine("capital of Spain?", check=False)
    assert result.status.name == "MAX_ITERATIONS"
    assert result.iteration_count == 3


@refine_until(task="Say anything", must_contain="x", stop=StopHook.on_score_above(0.0))
def test_stop_hook(refine):
    result = refine("no", check=False)
    assert result.status.name == "STOPPED"


@refine_until(task="Return JSON", valid_json=True, llm_check=("Is it a JSON record?", 0.8))
def test_llm_check_is_judged_by_the_llm_fixture(refine, llm):
    assert refine('{"id": 7}').iteration_count == 1
    assert any("strict reviewer" in call.prompt for call in llm.calls)


def test_keywords_without_a_mark(refine):
    refine("id: 7", task="JSON please", valid_json=True)


@refine_until(task="Anything", must_contain="x")
def test_never_calls_refine(refine):
    pass


@refine_until(task="Anything", must_contain="x")
def test_without_the_fixture():
    pass


@pytest.mark.refine_until(task="Anything", max_iteration=3, must_contain="x")
def test_misspelt_argument(refine):
    pass


@pytest.mark.refine_until(task="Anything", matches_pattern="(")
def test_bad_regex(refine):
    pass


@pytest.mark.refine_until(task="Anything")
def test_no_checks(refine):
    pass
"""


def test_refine_until(scripted: pytest.Pytester) -> None:
    scripted.makepyfile(test_refine=REFINE_TESTS)
    result = scripted.runpytest_inprocess("--strict-markers", "-rA")
    result.assert_outcomes(passed=5, failed=2, errors=4)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*refinement did not succeed: MAX_ITERATIONS after 2 iteration(s);"
            " score progression 0.00 -> 0.00*",
            "*iteration 1: score 0.00, output 'capital of Spain?'",
            "*x must_contain('Madrid')*",
            "*iteration 2: score 0.00, output 'Lisbon'",
        ]
    )
    assert "the test never called refine(draft)" in out
    assert "the test must take the `refine` fixture" in out
    assert (
        "@refine_until: unknown argument(s) max_iteration (did you mean max_iterations?); "
        "expected some of task," in out
    )
    assert "@refine_until: matches_pattern: '(' is not a valid regex" in out
    assert "@refine_until needs at least one completion check" in out
    # The summary tracks refinement: iterations and model calls per test.
    summary = out[out.index("== tnsai-eval ==") :]
    assert "test_refine.py::test_succeeds" in summary
    assert "test_refine.py::test_fails_with_iterations" in summary


def test_decorators_are_marks() -> None:
    from pytest_plugin import norm_check, refine_until

    class Agentish:
        pass

    # A single class argument is recorded, not decorated (pytest.mark would decorate it).
    mark = norm_check(Agentish).mark
    assert (mark.name, mark.args, mark.kwargs) == ("norm_check", (Agentish,), {})
    mark = refine_until(task="t", must_contain=["a", "b"], max_iterations=3).mark
    assert mark.kwargs == {"task": "t", "max_iterations": 3, "must_contain": ["a", "b"]}
    with pytest.raises(TypeError):
        refine_until(task="t", max_iteration=3)
